"""`transcli translate`: files, pipes and the terminal.

`translate_file` streams a file or a pipe through a `Translator` in chunks, so a
pipe into `head` works and memory stays bounded however long the input; at a
terminal it translates each line as Enter is pressed (`translate_typed`), since a
chunk of 1000 lines would never fill there.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Iterator, Optional, Sequence

import typer
from tqdm import tqdm

from transcli.cli.options import (
    CheckpointOpt,
    Device,
    ForceOpt,
    ModelOpt,
    SetOpt,
    device_option,
    setting,
    with_decoding,
)
from transcli.system.files import check_output, output_file
from transcli.system.text import count_lines, open_text, text_lines

if TYPE_CHECKING:
    from transcli.inference.attention import AttentionWriter
    from transcli.inference.translator import Translator

PROMPT = "en> "


@with_decoding
def translate(
    *,
    model: Path = ModelOpt,
    checkpoint: str = CheckpointOpt,
    input: str = typer.Option("-", "--input", "-i", help="Input file, or - for stdin."),
    output: str = typer.Option("-", "--output", "-o", help="Output file, or - for stdout."),
    decoding: list[tuple[str, Any]],
    n_best: Optional[int] = setting(
        "decode.n_best", "K > 1 writes K lines per input line as TSV: line index (from 0), "
        "hypothesis, score (length-penalised log-prob, plus any word reward); K <= beam "
        "size, or K samples."),
    attention: Optional[Path] = typer.Option(
        None, help="Write each line's encoder-decoder attention heatmaps (PNG) and "
        "alignment (Pharaoh i-j) into this directory (empty or new, unless --force)."),
    force: bool = ForceOpt,
    device: Device = device_option(),
    sets: Optional[list[str]] = SetOpt,
) -> None:
    """Translate English lines to Spanish, in input order, from a file or stdin.

    At a terminal, each line is translated as Enter is pressed (Ctrl-D or Ctrl-C ends);
    files and pipes are read in chunks. Defaults come from the run's config (decode
    section). An empty line gives an empty line; a line too long for the model is
    truncated, with one warning at the end.

    Examples:

    \b
      transcli translate -m run -i news.en -o news.es
      echo "I like trees." | transcli translate -m run --greedy
      transcli translate -m run --checkpoint avg --beam-size 5 -i news.en.gz -o news.es
      transcli translate -m run                      # at a terminal: type, press Enter
    """
    overrides = [*decoding, *([("decode.n_best", n_best)] if n_best is not None else []),
                 *(sets or [])]
    translate_file(model, checkpoint, input, output, overrides, device or "auto", attention,
                   force)


def translate_file(model_dir: Path, checkpoint: str, input: str, output: str,
                   overrides: list[str], device: str, attention: Path | None = None,
                   force: bool = False) -> None:
    """Translate `input` (a path or - for stdin) into `output` (a path or - for stdout),
    one line per input line. With decode.n_best > 1 each input line gives n_best TSV
    lines: line index (from 0), hypothesis, score. With `attention`, each line's
    cross-attention heatmaps and alignment are written there (`AttentionWriter`).
    Stdin at a terminal is translated line by line as it is typed (`translate_typed`)."""
    if input == "-" and sys.stdin.isatty():
        translate_typed(model_dir, checkpoint, output, overrides, device, attention, force)
        return
    from transcli.inference.translator import chunked, load_translator
    from transcli.rundir.layout import run_inputs

    with _open_input(input) as (lines, total):
        _check_attention(attention, model_dir, overrides, force)
        inputs = [input, *run_inputs(model_dir, checkpoint)]
        if output != "-":  # a wrong output is said before the model loads
            check_output(output, inputs, "translations")
        translator = load_translator(model_dir, checkpoint, overrides, device)
        with _open_output(output, inputs) as out, \
                _attention_writer(attention, translator, force) as writer, \
                tqdm(total=total, unit="line", file=sys.stderr, disable=not total) as progress:
            first = 0
            for chunk in chunked(lines):
                out.write(_translated(translator, writer, chunk, first))
                out.flush()
                first += len(chunk)
                progress.update(len(chunk))
    translator.warn_truncated()


PROMPT = "en> "


def translate_typed(model_dir: Path, checkpoint: str, output: str, overrides: list[str],
                    device: str, attention: Path | None = None, force: bool = False) -> None:
    """The interactive mode: a prompt on stderr, each line translated and written out
    (flushed) as soon as Enter is pressed. Ctrl-D or Ctrl-C ends the session quietly
    (exit status 0); an output file then holds every line translated so far."""
    from transcli.inference.translator import load_translator
    from transcli.rundir.layout import run_inputs

    _check_attention(attention, model_dir, overrides, force)
    try:
        translator = load_translator(model_dir, checkpoint, overrides, device)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return
    print("transcli: type English and press Enter to translate; Ctrl-D or Ctrl-C ends",
          file=sys.stderr)
    with _open_output(output, run_inputs(model_dir, checkpoint)) as out, \
            _attention_writer(attention, translator, force) as writer:
        try:
            for index, line in enumerate(text_lines(_typed(PROMPT), "<stdin>")):
                out.write(_translated(translator, writer, [line], index))
                out.flush()
        except KeyboardInterrupt:
            print(file=sys.stderr)  # leave the terminal on a fresh line
    translator.warn_truncated()


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


def _translated(translator: Translator, writer: AttentionWriter | None, lines: list[str],
                first: int) -> bytes:
    """The output of `lines` (the first is input line `first`): one line each, or n-best TSV."""
    results = (writer.translate(lines, first) if writer is not None
               else translator.translate_nbest(lines, first))
    if translator.decode.n_best > 1:
        return _nbest_tsv(results, first).encode()
    return "".join(hyps[0][0] + "\n" for hyps in results).encode()


def _check_attention(folder: Path | None, run_dir: Path, overrides: list[str],
                     force: bool) -> None:
    """Refuse --attention with settings it cannot work with, or a folder it may not
    write into, before loading the model."""
    if folder is not None:
        from transcli.inference.attention import check_decode, check_folder
        from transcli.rundir.layout import load_run_config

        check_decode(load_run_config(run_dir, overrides).decode)
        check_folder(folder, force, "--attention")


def _attention_writer(folder: Path | None, translator: Translator, force: bool
                      ) -> contextlib.AbstractContextManager[AttentionWriter | None]:
    if folder is None:
        return contextlib.nullcontext()
    from transcli.inference.attention import AttentionWriter

    return AttentionWriter(folder, translator, force)


def _nbest_tsv(results: list[list[tuple[str, float]]], first: int) -> str:
    return "".join(f"{first + i}\t{text}\t{score:.4f}\n"
                   for i, hyps in enumerate(results) for text, score in hyps)


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


def _open_output(name: str, inputs: Sequence[str | Path] = ()
                 ) -> contextlib.AbstractContextManager[BinaryIO]:
    """stdout, or a file that appears whole when translation ends; never one of the
    `inputs` (the input, the run's own files). When the reader of stdout goes away
    (`| head`), translation stops quietly."""
    return output_file(name, inputs, "translations", sys.stdout.buffer if name == "-" else None)
