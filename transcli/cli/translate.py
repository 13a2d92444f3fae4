"""`transcli translate`: files, pipes and the terminal.

`translate_file` streams a file or a pipe through a `Translator` in chunks, so a
pipe into `head` works and memory stays bounded however long the input; at a
terminal it translates each line as Enter is pressed (`translate_typed`), since a
chunk of 1000 lines would never fill there.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

import typer

from transcli.cli.options import (
    BelowOpt,
    CheckpointOpt,
    ConfidenceOpt,
    DecodeSetOpt,
    Device,
    MinConfidenceOpt,
    ModelOpt,
    device_option,
    setting,
    with_decoding,
)
from transcli.system.errors import UserError
from transcli.system.outputs import check_output
from transcli.system.text import count_lines, open_text, text_lines

if TYPE_CHECKING:
    from transcli.documents.formats import DocumentFormat
    from transcli.inference.attention import AttentionWriter
    from transcli.inference.confidence import Trust
    from transcli.inference.streaming import Output
    from transcli.inference.translator import Translator
    from transcli.rundir.run import RunDir

PROMPT = "en> "


@with_decoding
def translate(
    *,
    model: Path = ModelOpt,
    checkpoint: str = CheckpointOpt,
    input: str = typer.Option("-", "--input", "-i", help="Input file, or - for stdin."),
    output: str = typer.Option("-", "--output", "-o", help="Output file, or - for stdout."),
    fmt: Optional[str] = typer.Option(
        None, "--format", help="text, html, markdown, srt, vtt, po or docx: the input's, "
        "and the output's (by default from -i's extension; text for stdin)."),
    decoding: list[tuple[str, Any]],
    n_best: Optional[int] = setting(
        "decode.n_best", "K > 1 writes K lines per input line as TSV: line index (from 0), "
        "hypothesis, score (length-penalised log-prob, plus any word reward); K <= beam "
        "size, or K samples."),
    attention: Optional[Path] = typer.Option(
        None, help="Write each line's encoder-decoder attention heatmaps (PNG) and "
        "alignment (Pharaoh i-j) into this directory (empty or new, unless --force)."),
    force: bool = typer.Option(
        False, "--force", help="Write into a non-empty --attention directory (replacing "
        "the files translate wrote there, never others); in a PO catalogue, translate the "
        "messages that have a translation too."),
    confidence: bool = ConfidenceOpt,
    min_confidence: Optional[float] = MinConfidenceOpt,
    below: str = BelowOpt,
    device: Device = device_option(),
    sets: Optional[list[str]] = DecodeSetOpt,
) -> None:
    """Translate English lines to Spanish, in input order, from a file or stdin.

    At a terminal, each line is translated as Enter is pressed (Ctrl-D ends); files and
    pipes are read in chunks. Stopped by a signal (Ctrl-C), an output file keeps the lines
    translated so far. Defaults come from the run's config (decode
    section). An empty line gives an empty line; a sentence too long for the model is
    translated in halves. Every translated sentence is checked (its numbers, URLs, names
    and prices, not cut, not empty): one that fails is translated again another way, or
    written as its source, and a line at the end says how many.

    Examples:

    \b
      transcli translate -m run -i news.en -o news.es
      echo "I like trees." | transcli translate -m run --greedy
      transcli translate -m run --checkpoint avg --beam-size 5 -i news.en.gz -o news.es
      transcli translate -m run                      # at a terminal: type, press Enter
      transcli translate -m run -i page.html -o page.es.html     # markup kept as it is
      transcli translate -m run -i news.en --confidence --min-confidence 0.3

    Documents (HTML, Markdown, SRT and WebVTT subtitles, PO catalogues, Word .docx) are
    written back in their format with only their text translated: docs/INFERENCE.md,
    "Documents".
    """
    overrides = [*decoding, *([("decode.n_best", n_best)] if n_best is not None else []),
                 *(sets or [])]
    from transcli.inference.confidence import Trust

    if below not in ("source", "mark"):
        raise typer.BadParameter(f"'{below}': --below is source or mark")
    translate_file(model, checkpoint, input, output, overrides, device or "auto", attention,
                   force, fmt, Trust(confidence, min_confidence, below))


def translate_file(model_dir: Path, checkpoint: str, input: str, output: str,
                   overrides: list[str], device: str, attention: Path | None = None,
                   force: bool = False, fmt: Optional[str] = None,
                   trust: Optional[Trust] = None) -> None:
    """Translate `input` (a path or - for stdin) into `output` (a path or - for stdout),
    one line per input line. With decode.n_best > 1 each input line gives n_best TSV
    lines: line index (from 0), hypothesis, score. With `attention`, each line's
    cross-attention heatmaps and alignment are written there (`AttentionWriter`).
    `trust`: each line's confidence shown, or acted on (`confidence.Trust`).
    Stdin at a terminal is translated line by line as it is typed (`translate_typed`).
    A document (`fmt`, or the input's extension) goes to `translate_document`."""
    from transcli.documents.formats import document_format
    from transcli.inference.confidence import Trust

    trust = trust or Trust()
    document = document_format(input, output, fmt)
    _check_output_name(output, document)
    if document.name != "text":
        return translate_document(model_dir, checkpoint, input, output, overrides, device,
                                  attention, force, document, trust)
    from transcli.inference.streaming import Output, drain, stream
    from transcli.rundir.run import open_run_dir

    typed = input == "-" and sys.stdin.isatty()
    with contextlib.ExitStack() as stack:
        if not typed:
            lines, total = stack.enter_context(_open_input(input))
        run = open_run_dir(model_dir, overrides)
        _check_attention(attention, run, force)
        _check_trust(trust, run, attention)
        target = Output(output, [input, *run.inputs(checkpoint)], "translations")
        if output != "-":  # a wrong output is said before the model loads
            check_output(output, target.inputs, "translations")
        from transcli.inference.translator import load_translator  # torch loads here

        translator = load_translator(run, checkpoint, device)
        writer = stack.enter_context(_attention_writer(attention, translator, force))
        work = functools.partial(_translated, translator, writer, trust)
        if typed:
            translate_typed(work, target)
        else:
            drain(stream(lines, work, target, total=total, progress=total is not None))
    translator.tally.report()
    if summary := trust.summary():
        print(f"transcli: {summary}", file=sys.stderr)
    if note := run.young_note():  # after the work: an error there stays one line
        print(f"transcli: {note}", file=sys.stderr)


def _check_output_name(output: str, document: DocumentFormat) -> None:
    """An output named as translate writes it: uncompressed (a .gz written as plain text
    misleads every reader of it), and a Word document in a file named as one (a zip in
    a .txt opens as nothing)."""
    from transcli.documents.formats import by_extension
    from transcli.system.text import DECOMPRESSORS

    suffix = Path(output).suffix.lower() if output != "-" else ""
    if suffix in DECOMPRESSORS:
        raise UserError(f"{output}: translate writes plain text, not {suffix}: give -o "
                        f"{output[:-len(suffix)]} and compress it after (gzip FILE)")
    named = by_extension(output) if suffix else None
    if document.binary and named is not None and named.name != document.name:
        raise UserError(f"{output}: the output is {document.title}, as the input, but its "
                        f"name says {named.title}: name it {document.extensions[0]}")


def translate_document(model_dir: Path, checkpoint: str, input: str, output: str,
                       overrides: list[str], device: str, attention: Path | None,
                       force: bool, document: DocumentFormat, trust: Trust) -> None:
    """Translate a document into the same format (`documents.translating`): its text
    only, in units, markup kept. The document is read through before the run dir opens
    and the model loads, so that bad input is one line at once, and no output."""
    from transcli.documents.translating import Document
    from transcli.inference.streaming import Output

    if attention is not None:
        raise UserError(f"--attention works on plain text, not on {document.title}")
    if trust.shown:
        raise UserError(f"--confidence writes a column to plain text, not to {document.title}"
                        f" (--min-confidence works on its units)")
    if input == "-" and sys.stdin.isatty():
        raise UserError(f"--format {document.name} reads a file (-i FILE) or a pipe, not "
                        "the terminal")
    if document.binary and output == "-" and sys.stdout.isatty():
        raise UserError(f"a {document.title} is not written to the terminal: give -o FILE")
    opened = Document(document, input, force=force)  # bad input: said before torch loads
    from transcli.rundir.run import open_run_dir

    run = open_run_dir(model_dir, overrides)
    if run.config.decode.n_best > 1:
        raise UserError(f"--n-best works on plain text, not on {document.title}")
    _check_trust(trust, run, None)
    target = Output(output, [input, *run.inputs(checkpoint)], "translation", streamed=False)
    if output != "-":
        check_output(output, target.inputs, "translation")
    from transcli.inference.translator import load_translator  # torch loads here

    translator = load_translator(run, checkpoint, device)
    counts = opened.translate(target, functools.partial(_translated, translator, None, trust),
                              align=translator.alignments)
    translator.tally.report()
    if summary := trust.summary():
        print(f"transcli: {input}: {summary}", file=sys.stderr)
    if summary := counts.summary():  # units whose markup did not survive the model
        print(f"transcli: {input}: {summary}", file=sys.stderr)
    if note := run.young_note():
        print(f"transcli: {note}", file=sys.stderr)


def translate_typed(work: Callable[[list[str], int], list[str]], output: Output) -> None:
    """The interactive mode: a prompt on stderr, each line translated and written out
    (flushed) as soon as Enter is pressed. Ctrl-D ends the session (exit status 0); a stop
    signal (Ctrl-C, SIGTERM) ends it with 128+N, an output file then holding every line
    translated so far (`output_file`'s `streamed`)."""
    from transcli.inference.streaming import drain, stream

    print("transcli: type English and press Enter to translate; Ctrl-D ends", file=sys.stderr)
    typed = text_lines(_typed(PROMPT), "<stdin>")
    try:
        drain(stream(typed, work, output, progress=False, lines=1))
    except KeyboardInterrupt:
        print(file=sys.stderr)  # leave the terminal on a fresh line for the stop's line
        raise


def _typed(prompt: str) -> Iterator[bytes]:
    """Lines typed at the terminal, each after a prompt on stderr, until end of input."""
    while True:
        sys.stderr.write(prompt)
        sys.stderr.flush()
        line = sys.stdin.buffer.readline()
        if not line:
            sys.stderr.write("\n")
            return
        yield line


def _translated(translator: Translator, writer: AttentionWriter | None, trust: Trust,
                lines: list[str], first: int) -> list[str]:
    """The output lines of `lines` (the first is input line `first`): one each (with its
    confidence, or as `trust` says below its least), or n-best TSV."""
    if trust.needed:
        return [trust.written(line, done) for line, done
                in zip(lines, translator.translate_lines(lines, first))]
    results = (writer.translate(lines, first) if writer is not None
               else translator.translate_nbest(lines, first))
    if translator.decode.n_best > 1:
        return _nbest_tsv(results, first)
    return [hyps[0][0] for hyps in results]


def _check_trust(trust: Trust, run: RunDir, attention: Path | None) -> None:
    """Refuse confidence options the run cannot answer, before the model loads."""
    if not trust.needed:
        return
    from transcli.inference.confidence import CALIBRATION_FILE

    if attention is not None or run.config.decode.n_best > 1:
        raise UserError("--confidence and --min-confidence give each line's best "
                        "translation: not with --attention or --n-best")
    if not (run.path / CALIBRATION_FILE).is_file():
        raise UserError(f"{run.path}: this run has no confidence calibration "
                        f"({CALIBRATION_FILE}); fit one with: transcli calibrate {run.path}")


def _check_attention(folder: Path | None, run: RunDir, force: bool) -> None:
    """Refuse --attention with settings it cannot work with, or a folder it may not
    write into, before loading the model."""
    if folder is not None:
        from transcli.inference.attention import check_decode, check_folder

        check_decode(run.config.decode)
        run.check_outside(folder, "--attention")
        check_folder(folder, force, "--attention")


def _attention_writer(folder: Path | None, translator: Translator, force: bool
                      ) -> contextlib.AbstractContextManager[AttentionWriter | None]:
    if folder is None:
        return contextlib.nullcontext()
    from transcli.inference.attention import AttentionWriter

    return AttentionWriter(folder, translator, force)


def _nbest_tsv(results: list[list[tuple[str, float]]], first: int) -> list[str]:
    """A hypothesis's tabs become spaces: a protected span keeps the source's (a tab in
    `code`), and a fourth column would shift the score for every TSV reader."""
    return [f"{first + i}\t{text.replace(chr(9), ' ')}\t{score:.4f}"
            for i, hyps in enumerate(results) for text, score in hyps]


@contextlib.contextmanager
def _open_input(name: str) -> Iterator[tuple[Iterator[str], int | None]]:
    """Lines of a file or stdin (`system.text`'s rule), and the file's line count (None for
    stdin or a compressed file: no total in the progress bar)."""
    if name == "-":
        yield text_lines(sys.stdin.buffer, "<stdin>"), None
        return
    path = Path(name)
    total = count_lines(path)
    with open_text(path) as handle:
        yield text_lines(handle, path), total
