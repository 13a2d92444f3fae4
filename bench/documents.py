"""Documents: memory while a big document streams, inline tags through the model, and
real files written by others translated whole.

    python -m bench.documents memory [--mb 50] [--model RUN --checkpoint avg]
    python -m bench.documents tags --model RUN [--checkpoint avg] [--sentences 200]
                                   [--set decode.strategy=greedy ...] [--device cpu]
                                   [--out DIR]
    python -m bench.documents real --model RUN [--checkpoint avg] [--device cpu]
                                   [--out DIR]
    python -m bench.documents speed [--mb 1] [--base DIR]

`memory` writes the same English sentences (train.en of ../shared/corpora/en-es, cycled)
as a plain text file of --mb megabytes, as an HTML page of the same size (a paragraph per
sentence, some words in <b>, some in links with a title) and as a PO catalogue (a message
per sentence, every msgstr empty), then translates each in a process of its own, as
`transcli translate` does (the text through `inference.streaming`, the documents through
`documents.translating.Document`), and prints each one's peak RSS (the process's
ru_maxrss), its time and its peak over the plain text's. Without --model the
"translation" is the identity, so the figures are the reading, chunking and writing
alone (a model adds the same to each: its weights, and a chunk's batches); with --model
the run's model translates (keep --mb small on a CPU).

`tags` takes --sentences sentences of dev.tatoeba and dev.newstest2012 (half each; the
longer ones, 6 words or more), wraps words of each in inline tags (one <b> around a
word, and every other sentence a link around two words), translates them tagged as one
HTML page and untagged as plain lines with the run's model, and prints, with the tags
placed by position and by the model's attention (the same translations, placed both
ways):
- the share of outputs well-formed with the same tags and attributes as their input;
- the share of tags around the translation of their words, judged automatically: each
  tagged phrase is translated alone, and a tag is right where the words it holds and
  the words of that translation that the sentence's translation holds (once) share at
  least half their words (Jaccard >= 0.5); a tag whose phrase's translation shares no
  word with the sentence's cannot be judged so and is left out (the count is printed);
- BLEU and chrF of the tagged outputs (tags removed) against the untagged ones, and of
  both against the references.
It also writes the tagged inputs, both outputs and the references side by side (--out,
tags.tsv) for checking tag placement by hand.

`real` translates each file of tests/data/real (READMEs, documentation pages, gettext
catalogues, caption files, a Word document, collected from public repositories:
tests/data/real/SOURCES.md) with the run's model, as `transcli translate` would (a
catalogue with --force, so that every message is translated), and prints per file its
units, how many the model changed and were written translated, repaired or kept in
English, and each invariant of its format (`bench.document_invariants`: tags and
attributes in order, link targets, code, placeholders and msgfmt --check-format, cues and
timings, hyperlinks), then per format the share of units kept in English. --out writes
each translation there.

`speed` times the documents layer alone, every format: a file of about --mb megabytes
made of the corpus's files of that format (repeated; a Word document of their Markdown
paragraphs), read, translated by upper-casing its words (not placeholders or tags: so
that every unit is written, placed and checked, as a model's translation is) and
written, as `serve` does (`translate_bytes`), the best of six runs (three processes of two).
With --base DIR (a checkout of another commit, `git worktree add DIR COMMIT`) the same
files are timed with that tree's code too, the trees taken in turn so that the machine's
load weighs on both alike, and the ratio printed (above 1: this tree is faster).

The machine's load average is printed with the figures: on a shared machine times vary.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

if TYPE_CHECKING:
    from transcli.documents.translating import Align
    from transcli.inference.translator import Translator

Translate = Callable[[list[str], int], list[str]]

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT.parent / "shared" / "corpora" / "en-es"
FORMATS = {"text": ".txt", "html": ".html", "po": ".po"}


# ------------------------------------------------------------------ memory


def sentences() -> Iterator[str]:
    """train.en's lines, cycled, without those that hold markup already."""
    lines = [line.strip() for line in (CORPORA / "train.en").read_text(encoding="utf-8")
             .splitlines() if line.strip() and "<" not in line and "&" not in line]
    while True:
        yield from lines


def write_inputs(folder: Path, size: int) -> dict[str, Path]:
    """The same sentences as plain text, an HTML page and a PO catalogue of about
    `size` bytes each."""
    paths = {name: folder / f"input{ext}" for name, ext in FORMATS.items()}
    writers = {"text": lambda i, s: s + "\n", "html": _html_paragraph,
               "po": lambda i, s: f'#: app.c:{i}\nmsgid "{_po(s)}"\nmsgstr ""\n\n'}
    heads = {"text": "", "html": "<!DOCTYPE html>\n<html><head><title>Sample</title></head>"
             "<body>\n", "po": 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; '
             'charset=UTF-8\\n"\n\n'}
    for name, path in paths.items():
        with open(path, "w", encoding="utf-8") as out:
            out.write(heads[name])
            written = 0
            for i, sentence in enumerate(sentences()):
                written += out.write(writers[name](i, sentence))
                if written >= size:
                    break
            out.write("</body></html>\n" if name == "html" else "")
    return paths


def _html_paragraph(i: int, sentence: str) -> str:
    words = sentence.split(" ")
    if len(words) > 3 and i % 3 == 0:
        words[1] = f"<b>{words[1]}</b>"
    if len(words) > 5 and i % 5 == 0:
        words[3] = f'<a href="/page/{i}" title="More about it">{words[3]}'
        words[4] = f"{words[4]}</a>"
    return f"<p>{' '.join(words)}</p>\n"


def _po(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def worker(fmt: str, source: Path, target: Path, model: str, checkpoint: str) -> None:
    """One translation, as `transcli translate` runs it; prints its figures as JSON."""
    from transcli.documents.formats import FORMATS as DOCUMENTS
    from transcli.documents.translating import Document
    from transcli.inference.streaming import Output, drain, stream
    from transcli.system.text import count_lines, open_text, text_lines

    translate = _translator(model, checkpoint)
    start = time.perf_counter()
    if fmt == "text":
        with open_text(source) as handle:
            drain(stream(text_lines(handle, source), translate,
                         Output(target, [source], "translations"),
                         total=count_lines(source), progress=False))
    else:
        Document(DOCUMENTS[fmt], str(source)).translate(
            Output(target, [source], "translation"), translate, progress=False)
    print(json.dumps({"seconds": time.perf_counter() - start,
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def _translator(model: str, checkpoint: str, sets: tuple[str, ...] = ()) -> Translate:
    if not model:
        return lambda lines, first: list(lines)
    return _loaded(model, checkpoint, sets).translate


def _loaded(model: str, checkpoint: str, sets: tuple[str, ...] = (), device: str = "cpu"
            ) -> Translator:
    from transcli.inference.translator import load_translator
    from transcli.rundir.run import open_run_dir

    return load_translator(open_run_dir(Path(model), list(sets)), checkpoint, device)


def memory(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-documents-") as work:
        folder = Path(work)
        paths = write_inputs(folder, int(args.mb * (1 << 20)))
        print(f"# {args.mb} MB per file; translation: "
              f"{args.model + ' ' + args.checkpoint if args.model else 'identity'}; "
              f"load average {os.getloadavg()[0]:.2f} (shared machine: times vary)")
        print(f"{'format':<8}{'MB in':>8}{'seconds':>10}{'peak RSS MB':>14}{'over text':>12}")
        base = None
        for fmt, path in paths.items():
            result = subprocess.run(
                [sys.executable, "-m", "bench.documents", "_worker", fmt, str(path),
                 str(folder / f"out-{path.name}"), args.model or "", args.checkpoint],
                capture_output=True, text=True, cwd=ROOT,
                env={**os.environ, "XDG_STATE_HOME": str(folder / "state")})
            if result.returncode != 0:
                print(f"{fmt:<8} failed: {result.stderr.strip().splitlines()[-1:]}")
                continue
            figures = json.loads(result.stdout.strip().splitlines()[-1])
            base = figures["peak_mb"] if base is None else base
            print(f"{fmt:<8}{path.stat().st_size / (1 << 20):>8.1f}{figures['seconds']:>10.1f}"
                  f"{figures['peak_mb']:>14.0f}{figures['peak_mb'] - base:>+12.0f}")


# ------------------------------------------------------------------ tags


def tagged_sentences(count: int) -> list[tuple[str, str, str]]:
    """(tagged English, plain English, Spanish reference) for `count` dev sentences."""
    found = []
    for name in ("dev.tatoeba", "dev.newstest2012"):
        english = (CORPORA / f"{name}.en").read_text(encoding="utf-8").splitlines()
        spanish = (CORPORA / f"{name}.es").read_text(encoding="utf-8").splitlines()
        pairs = [(en, es) for en, es in zip(english, spanish) if len(en.split()) >= 6
                 and not re.search(r"[<>&]", en)][:(count + 1) // 2]
        found += [(_tagged(i, en), en, es) for i, (en, es) in enumerate(pairs)]
    return found[:count]


def _tagged(i: int, sentence: str) -> str:
    words = sentence.split(" ")
    bold = 1 + i % (len(words) - 2)
    words[bold] = f"<b>{words[bold]}</b>"
    if i % 2 == 0:
        link = (bold + 2) % (len(words) - 1)
        words[link] = f'<a href="/x{i}">{words[link]}'
        words[link + 1] = f"{words[link + 1]}</a>"
    return " ".join(words)


def tag_figures(rows: list[tuple[str, str, str]], translate: Translate, align: Optional[Align]
                ) -> dict[str, Any]:
    """The figures of `rows` ((tagged English, plain English, Spanish reference), as
    `tagged_sentences` gives them) translated as one HTML page by `translate`, its tags
    placed by position and by `align` (the same translations, placed both ways), and
    the plain sentences translated as lines: per placement, the share of outputs
    well-formed with the same tags and attributes as their input and the share of tags
    around the translation of their words (`enclosed`); BLEU and chrF of the tagged
    outputs (tags removed) against the plain ones, and of both against the references."""
    from sacrebleu.metrics import BLEU, CHRF

    from transcli.documents.formats import FORMATS as DOCUMENTS
    from transcli.documents.translating import translate_text

    page = "".join(f"<p>{row[0]}</p>\n" for row in rows)
    done: dict[tuple[str, ...], list[str]] = {}

    def once(lines: list[str], first: int) -> list[str]:  # both placements, one translation
        if tuple(lines) not in done:
            done[tuple(lines)] = translate(lines, first)
        return done[tuple(lines)]

    outputs = {"position": translate_text(page, DOCUMENTS["html"], once, "tags.html")}
    if align is not None:
        outputs["attention"] = translate_text(page, DOCUMENTS["html"], once, "tags.html",
                                              align=align)
    placed = {name: [line[3:-4] for line in page.splitlines()]
              for name, page in outputs.items()}
    stripped = [" ".join(re.sub(r"<[^>]+>", "", out).split()) for out in placed["position"]]
    plain = translate([row[1] for row in rows], 0)
    phrases = [re.sub(r"<[^>]+>", "", inner) for row in rows for inner in _held(row[0])]
    alone = dict(zip(phrases, translate(phrases, 0)))
    references = [[row[2] for row in rows]]
    figures: dict[str, Any] = {"sentences": len(rows), "tags": len(phrases), "outputs": placed}
    for name, outs in placed.items():
        figures[f"{name} well-formed"] = sum(_same_tags(out, row[0])
                                             for out, row in zip(outs, rows)) / len(rows)
        figures[f"{name} enclosed"], figures["judged"] = _enclosed(rows, outs, alone)
    for name, score in (("BLEU", BLEU()), ("chrF", CHRF())):
        figures[f"{name} tagged vs untagged"] = score.corpus_score(stripped, [plain]).score
        figures[f"{name} tagged"] = score.corpus_score(stripped, references).score
        figures[f"{name} untagged"] = score.corpus_score(plain, references).score
    return figures


def _same_tags(out: str, source: str) -> bool:
    """Well-formed, with the same tags (attributes and all) as `source`."""
    def tag_list(text: str) -> list[str]:
        return sorted(re.findall(r"<[^>]+>", text))

    return tag_list(out) == tag_list(source) and _nested(out)


def _enclosed(rows: list[tuple[str, str, str]], outputs: list[str], alone: dict[str, str]
              ) -> tuple[float, int]:
    """The share of tags whose words in the output are those of their English words
    translated alone, among the tags that can be judged so, and how many can: a tag is
    judged where the words of its phrase's translation (lowercased) that the sentence's
    translation holds once are not empty (`expected`); it is right where what it holds
    there and `expected` share at least half their words (Jaccard >= 0.5)."""
    right = judged = 0
    for row, out in zip(rows, outputs):
        text = _words(re.sub(r"<[^>]+>", "", out))
        for inner, held in zip(_held(row[0]), _held(out)):
            expected = {w for w in _words(alone[re.sub(r"<[^>]+>", "", inner)])
                        if text.count(w) == 1}
            if not expected:
                continue
            judged += 1
            got = set(_words(re.sub(r"<[^>]+>", "", held)))
            right += len(got & expected) >= 0.5 * len(got | expected)
    return (right / judged if judged else 0.0), judged


def _held(text: str) -> list[str]:
    """What each <b> and <a> of `text` holds, in the order they open (a tag left open:
    nothing)."""
    found = []
    for match in re.finditer(r"<(b|a)\b[^>]*>", text):
        end = text.find(f"</{match.group(1)}>", match.end())
        found.append(text[match.end():end] if end >= 0 else "")
    return found


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def tags(args: argparse.Namespace) -> None:
    translator = _loaded(args.model, args.checkpoint, tuple(args.set), args.device)
    rows = tagged_sentences(args.sentences)
    figures = tag_figures(rows, translator.translate, translator.alignments)
    print(f"# {len(rows)} sentences with {figures['tags']} inline tags; {args.model} "
          f"{args.checkpoint} {' '.join(args.set)}; load average {os.getloadavg()[0]:.2f}")
    print(f"{'placement':<12}{'well-formed, same tags':>24}{'tag around its words':>22}")
    for name in ("position", "attention"):
        print(f"{name:<12}{100 * figures[f'{name} well-formed']:>23.1f}%"
              f"{100 * figures[f'{name} enclosed']:>21.1f}%")
    print(f"(tags judged for the words they hold: {figures['judged']} of {figures['tags']}: "
          f"where the phrase translated alone shares words with the sentence's translation)")
    for name in ("BLEU", "chrF"):
        against = figures[f"{name} tagged vs untagged"]
        print(f"{name}: tagged (tags removed) vs untagged {against:.2f}; vs references: "
              f"tagged {figures[f'{name} tagged']:.2f}, untagged {figures[f'{name} untagged']:.2f}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        with open(args.out / "tags.tsv", "w", encoding="utf-8") as out:
            for row, *results in zip(rows, *figures["outputs"].values()):
                out.write("\t".join([row[0], *results, row[2]]) + "\n")


# ------------------------------------------------------------------ real files


REAL = ROOT / "tests" / "data" / "real"


def real_files() -> list[tuple[str, Path]]:
    """(format, path) of each file of the corpus; a Word document is a folder of its
    parts."""
    return [(fmt, path) for fmt in ("markdown", "html", "po", "srt", "vtt", "docx")
            for path in sorted((REAL / fmt).iterdir())]


def real_bytes(path: Path) -> bytes:
    """A corpus file's bytes: a Word document's folder zipped, its parts in name order."""
    if not path.is_dir():
        return path.read_bytes()
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for part in sorted(p for p in path.rglob("*") if p.is_file()):
            archive.write(part, part.relative_to(path).as_posix())
    return out.getvalue()


def translated_file(fmt: str, data: bytes, name: str, translate: Translate,
                    align: Optional[Align]) -> tuple[bytes, Any]:
    """A corpus file translated as `transcli translate` translates it (a catalogue with
    --force): the output and its `Document` (its units, its counts)."""
    from transcli.documents.formats import FORMATS as DOCUMENTS
    from transcli.documents.translating import Document

    document = Document(DOCUMENTS[fmt], data, name, force=fmt == "po")
    return document.translated(translate, align), document


def real(args: argparse.Namespace) -> None:
    from bench.document_invariants import invariants

    translator = _loaded(args.model, args.checkpoint, tuple(args.set), args.device)
    print(f"# tests/data/real with {args.model} {args.checkpoint} {' '.join(args.set)}; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'format':<9}{'file':<42}{'units':>6}{'transl.':>8}{'repaired':>9}{'kept':>5}"
          "  invariants")
    kept: dict[str, list[int]] = {}
    for fmt, path in real_files():
        data = real_bytes(path)
        out, document = translated_file(fmt, data, path.name, translator.translate,
                                        translator.alignments)
        units = sum(len(chunk.units) for chunk in document.chunks())
        counts = document.counts
        failed = [name for name, held in invariants(fmt, data, out).items() if not held]
        kept.setdefault(fmt, [0, 0])
        kept[fmt] = [kept[fmt][0] + counts.kept, kept[fmt][1] + units]
        print(f"{fmt:<9}{path.name:<42}{units:>6}{counts.translated:>8}{counts.repaired:>9}"
              f"{counts.kept:>5}  {'all hold' if not failed else 'FAILED: ' + ', '.join(failed)}")
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / (path.name + (".docx" if path.is_dir() else ""))).write_bytes(out)
    print("kept in English: " + "; ".join(f"{fmt} {k} of {n} units ({100 * k / max(n, 1):.1f}%)"
                                          for fmt, (k, n) in kept.items()))


# ------------------------------------------------------------------ speed


ROUNDS = 3  # processes per tree and format, taken in turn; each times two runs
SPEED_FORMATS = {"markdown": ".md", "html": ".html", "po": ".po", "srt": ".srt", "vtt": ".vtt",
                 "docx": ".docx"}
_TIMED = """
import sys, time
from pathlib import Path
from transcli.documents.formats import FORMATS
from transcli.documents.translating import translate_bytes
fmt, path = sys.argv[1], Path(sys.argv[2])
import re
data = path.read_bytes()
word = re.compile(r"(?<![%({<\\w)/.])[a-z]+")  # a word, not a placeholder's or a tag's
upper = lambda lines, first: [word.sub(lambda m: m.group().upper(), line) for line in lines]
best = float("inf")
for _ in range(2):
    start = time.perf_counter()
    translate_bytes(data, FORMATS[fmt], upper, path.name)
    best = min(best, time.perf_counter() - start)
print(best)
"""


def speed_input(fmt: str, size: int) -> bytes:
    """About `size` bytes of `fmt` made of the corpus's files of that format."""
    if fmt == "docx":
        return _word_of(size)
    files = [path.read_bytes() for found, path in real_files() if found == fmt]
    if fmt == "vtt":  # one header, the cues of every file after it
        files = [b"WEBVTT\n\n"] + [data.split(b"\n\n", 1)[1] + b"\n\n" for data in files]
    elif fmt == "srt":
        files = [data.rstrip(b"\n") + b"\n\n" for data in files]
    body = b"".join(files[1:] if fmt == "vtt" else files)
    head = files[0] if fmt == "vtt" else b""
    return head + body * -(-size // len(body))  # (rounded up)


def _word_of(size: int) -> bytes:
    """A Word document of the corpus's Markdown paragraphs, some words bold, of about
    `size` bytes of text."""
    import io

    import docx

    paragraphs = [block.strip() for _, path in real_files() if path.suffix == ".md"
                  for block in path.read_text(encoding="utf-8").split("\n\n")
                  if block.strip() and not block.startswith(("```", "<", "|"))]
    document, written = docx.Document(), 0
    while written < size:
        for text in paragraphs:
            words = text.split(" ")
            paragraph = document.add_paragraph(" ".join(words[:2]) + " ")
            paragraph.add_run(" ".join(words[2:4])).bold = True
            paragraph.add_run(" " + " ".join(words[4:]))
            written += len(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _timed(tree: Path, fmt: str, path: Path) -> float:
    result = subprocess.run([sys.executable, "-c", _TIMED, fmt, str(path)], capture_output=True,
                            text=True, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)})
    if result.returncode != 0:
        raise SystemExit(f"{tree}: {fmt}: {result.stderr.strip().splitlines()[-1:]}")
    return float(result.stdout.strip().splitlines()[-1])


def speed(args: argparse.Namespace) -> None:
    trees = [("this", ROOT)] + ([("base", args.base.resolve())] if args.base else [])
    print(f"# {args.mb} MB per format, words upper-cased, best of 6; trees: "
          f"{', '.join(f'{name} {tree}' for name, tree in trees)}; load average "
          f"{os.getloadavg()[0]:.2f} (shared machine: times vary)")
    print(f"{'format':<10}{'MB':>6}" + "".join(f"{name + ' MB/s':>12}" for name, _ in trees)
          + (f"{'this/base':>11}" if args.base else ""))
    with tempfile.TemporaryDirectory(prefix="bench-speed-") as work:
        for fmt, ext in SPEED_FORMATS.items():
            path = Path(work) / f"input{ext}"
            path.write_bytes(speed_input(fmt, int(args.mb * (1 << 20))))
            mb = path.stat().st_size / (1 << 20)
            best = [float("inf")] * len(trees)
            for _ in range(ROUNDS):  # the trees in turn, so that the machine's load
                for k, (_, tree) in enumerate(trees):  # weighs on both alike
                    best[k] = min(best[k], _timed(tree, fmt, path))
            rates = [mb / seconds for seconds in best]
            print(f"{fmt:<10}{mb:>6.2f}" + "".join(f"{rate:>12.2f}" for rate in rates)
                  + (f"{rates[0] / rates[1]:>11.2f}" if args.base else ""))


def _nested(text: str) -> bool:
    stack: list[str] = []
    for match in re.finditer(r"<(/?)(\w+)[^>]*>", text):
        if not match.group(1):
            stack.append(match.group(2))
        elif not stack or stack.pop() != match.group(2):
            return False
    return not stack


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.documents",
                                     description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    mem = commands.add_parser("memory", help="peak RSS of big documents against plain text")
    mem.add_argument("--mb", type=float, default=50.0)
    mem.add_argument("--model", default="")
    mem.add_argument("--checkpoint", default="avg")
    tag = commands.add_parser("tags", help="inline tags through the model")
    tag.add_argument("--model", required=True)
    tag.add_argument("--checkpoint", default="avg")
    tag.add_argument("--sentences", type=int, default=200)
    tag.add_argument("--out", type=Path)
    tag.add_argument("--device", default="cpu", help="where the model runs (cpu, cuda, auto)")
    tag.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                     help="a decode setting for the run (decode.strategy=greedy)")
    found = commands.add_parser("real", help="the real files of tests/data/real translated")
    found.add_argument("--model", required=True)
    found.add_argument("--checkpoint", default="avg")
    found.add_argument("--out", type=Path)
    found.add_argument("--device", default="cpu", help="where the model runs (cpu, cuda, auto)")
    found.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="a decode setting for the run (decode.strategy=greedy)")
    fast = commands.add_parser("speed", help="the documents layer's speed, every format")
    fast.add_argument("--mb", type=float, default=1.0)
    fast.add_argument("--base", type=Path, help="a checkout of another commit to time beside")
    return parser.parse_args(argv)


def main() -> None:
    if sys.argv[1:2] == ["_worker"]:
        fmt, source, target, model, checkpoint = sys.argv[2:7]
        return worker(fmt, Path(source), Path(target), model, checkpoint)
    args = parse_args()
    {"memory": memory, "tags": tags, "real": real, "speed": speed}[args.command](args)


if __name__ == "__main__":
    main()
