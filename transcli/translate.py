"""Translating sentences, files and pipes with a trained model.

`Translator` holds a model in memory and turns a list of lines into translations:
lines are encoded, sorted by length into token-budget batches, searched by an
engine (`engines.py`: the strategy `decode.strategy` names on the torch model, or
CTranslate2) and put back in input order; empty lines stay empty. `translate` and
`evaluate` build one from a run dir, the training loop from the model it trains.
`translate_file` streams a file or a pipe through it in chunks, so a pipe into
`head` works and memory stays bounded however long the input; at a terminal it
translates each line as Enter is pressed (`translate_typed`), since a chunk of
1000 lines would never fill there.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Iterator, Sequence

import torch
from tqdm import tqdm

from transcli.checkpoint import load_trained
from transcli.config import DecodeConfig
from transcli.cpulinear import cpu_linears, use_onednn
from transcli.engines import Ct2Engine, Engine, TorchEngine
from transcli.errors import UserError
from transcli.files import count_lines, output_file, source_lines
from transcli.model import Transformer
from transcli.quantize import quantize_int8
from transcli.rundir import load_run_config, run_inputs
from transcli.runtime import inference_setup, pick_device
from transcli.search import Hypothesis
from transcli.sentences import split_sentences
from transcli.tokenizer import TOKENIZER_FILE, Tokenizer
from transcli.vocab import EOS_ID

if TYPE_CHECKING:
    from transcli.explain import AttentionWriter

CHUNK_LINES = 1000  # lines read, translated and written at a time


class Translator:
    """An engine (transcli's model, or CTranslate2), its tokenizer and search settings:
    lines in, lines out.

    Nothing here touches the disk, so the training loop can call it for
    validation BLEU as often as it likes.
    """

    def __init__(self, model: Transformer | Engine, tokenizer: Tokenizer, decode: DecodeConfig,
                 device: str | torch.device | None = None, *, cached: bool = True):
        """`model`: a Transformer (searched by `TorchEngine` on `device`, with the decoder
        cache unless `cached` is False) or any other `Engine`."""
        self.engine = (TorchEngine(model, decode, device, cached)
                       if isinstance(model, torch.nn.Module) else model)
        self.tokenizer = tokenizer
        self.decode = decode
        self.truncated = 0  # input lines cut to fit the model's positions, so far
        self.target_tokens = 0  # tokens of the best hypotheses so far, EOS excluded

    def translate(self, lines: list[str], first: int = 0) -> list[str]:
        """The best translation of each line, in input order."""
        return [hyps[0][0] for hyps in self.translate_nbest(lines, first)]

    def translate_nbest(self, lines: list[str], first: int = 0) -> list[list[tuple[str, float]]]:
        """Up to `decode.n_best` (text, score) pairs per line, best first; an empty
        line gets empty hypotheses with score 0. `first` is the index of `lines[0]` in
        the whole input: sampling seeds each line by its index.

        With `decode.split_sentences` each line's sentences (`sentences.split_sentences`)
        are translated apart and their translations joined by a space, scored by the
        sum of their scores (n_best is 1 then)."""
        indices = range(first, first + len(lines))
        if not self.decode.split_sentences:
            return self.texts(self.search_lines(lines, indices)[1])
        parts = [split_sentences(line) for line in lines]
        # Every sentence of line i is seeded by i: a line's samples do not depend on others.
        found = iter(self.texts(self.search_lines(
            [s for part in parts for s in part],
            [index for index, part in zip(indices, parts) for _ in part])[1]))
        joined = []
        for part in parts:
            best = [next(found)[0] for _ in part]
            joined.append([(" ".join(text for text, _ in best), sum(score for _, score in best))])
        return joined

    def search_lines(self, lines: list[str], indices: Sequence[int]
                     ) -> tuple[list[list[int]], list[list[Hypothesis]]]:
        """Each line's source ids (with EOS; [] for a blank line) and its hypotheses, best
        first ([] for a blank line); `indices[i]` is line i's index (it seeds sampling)."""
        sources = self._encode(lines)
        found: list[list[Hypothesis]] = [[] for _ in lines]
        todo = [i for i, ids in enumerate(sources) if ids]
        for batch in token_batches([len(sources[i]) for i in todo], self.decode.batch_tokens):
            picked = [todo[j] for j in batch]
            for i, hyps in zip(picked, self._search([sources[i] for i in picked],
                                                    [indices[i] for i in picked])):
                found[i] = hyps
        return sources, found

    def texts(self, found: list[list[Hypothesis]]) -> list[list[tuple[str, float]]]:
        """(text, score) of each hypothesis; a line without any gets n_best empty ones."""
        texts = iter(self.tokenizer.decode([h.tokens for hyps in found for h in hyps]))
        empty = [("", 0.0)] * self.decode.n_best
        return [[(next(texts), h.score) for h in hyps] if hyps else list(empty)
                for hyps in found]

    def warn_truncated(self) -> None:
        """One line on stderr if any input was cut to fit the model (never a crash)."""
        if self.truncated:
            print(f"transcli: warning: {self.truncated} input line(s) longer than the model's "
                  f"{self.engine.max_positions} positions were truncated to fit",
                  file=sys.stderr)

    def _encode(self, lines: list[str]) -> list[list[int]]:
        """Source ids + EOS per line ([] for a blank line), cut to the positional table."""
        room = self.engine.max_positions - 1  # one position is EOS's
        sources = []
        for ids, line in zip(self.tokenizer.encode(lines), lines):
            if not line.strip() or not ids:
                sources.append([])
                continue
            if len(ids) > room:
                ids = ids[:room]
                self.truncated += 1
            sources.append(ids + [EOS_ID])
        return sources

    def _search(self, sources: list[list[int]], indices: list[int]) -> list[list[Hypothesis]]:
        """One batch through the engine; max target length per sentence is
        a * (source tokens without EOS) + b, EOS included, within the model's positions."""
        d = self.decode
        max_len = [max(1, min(int(d.max_len_a * (len(ids) - 1) + d.max_len_b),
                              self.engine.max_positions)) for ids in sources]
        found = self.engine.search(sources, max_len, indices)
        self.target_tokens += sum(len(hyps[0].tokens) for hyps in found)
        return found


def token_batches(lengths: list[int], budget: int) -> list[list[int]]:
    """Indices into `lengths`, longest first, grouped so that each batch's padded size
    (sentences x longest) stays within `budget` (a longer sentence goes alone)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for i in order:
        if batches and (len(batches[-1]) + 1) * lengths[batches[-1][0]] <= budget:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def load_translator(run_dir: str | Path, checkpoint: str = "best",
                    overrides: list[str] | None = None, device: str = "auto") -> Translator:
    """A Translator for a run dir's checkpoint, with the run's `decode` settings and the
    engine `decode.engine` names. On the CPU it sets torch's threads to `decode.threads`."""
    target = pick_device(device)
    cfg = load_run_config(run_dir, overrides)
    inference_setup(target, cfg.decode.threads)
    if cfg.decode.engine == "ct2":
        from transcli.export.ct2 import cached_export

        model_dir = cached_export(Path(run_dir), checkpoint, cfg.decode.quantize)
        tokenizer = Tokenizer(Path(run_dir) / TOKENIZER_FILE)
        engine = Ct2Engine(model_dir, tokenizer, cfg.decode, cfg.model.max_positions, target)
        return Translator(engine, tokenizer, cfg.decode)
    model, tokenizer, cfg = load_trained(run_dir, checkpoint, target, overrides)
    if cfg.decode.quantize == "int8":
        model = quantize_int8(model)
    elif target.type == "cpu":
        model = cpu_linears(model, use_onednn(cfg.decode.cpu_gemm))
    return Translator(model, tokenizer, cfg.decode, target)


def translate_lines(run_dir: Path, checkpoint: str, lines: list[str], overrides: list[str],
                    device: str, progress: bool = False) -> list[str]:
    """Translate in-memory lines with a run dir's model (used by `evaluate --model`),
    with a progress bar on stderr when `progress`."""
    translator = load_translator(run_dir, checkpoint, overrides, device)
    translations: list[str] = []
    with tqdm(total=len(lines), unit="line", file=sys.stderr, disable=not progress) as bar:
        for first in range(0, len(lines), CHUNK_LINES):
            chunk = lines[first:first + CHUNK_LINES]
            translations += translator.translate(chunk, first)
            bar.update(len(chunk))
    translator.warn_truncated()
    return translations


def translate_file(model_dir: Path, checkpoint: str, input: str, output: str,
                   overrides: list[str], device: str, attention: Path | None = None) -> None:
    """Translate `input` (a path or - for stdin) into `output` (a path or - for stdout),
    one line per input line. With decode.n_best > 1 each input line gives n_best TSV
    lines: line index (from 0), hypothesis, score. With `attention`, each line's
    cross-attention heatmaps and alignment are written there (`explain.AttentionWriter`).
    Stdin at a terminal is translated line by line as it is typed (`translate_typed`)."""
    if input == "-" and sys.stdin.isatty():
        translate_typed(model_dir, checkpoint, output, overrides, device, attention)
        return
    with _open_input(input) as (lines, total):
        _check_attention(attention, model_dir, overrides)
        translator = load_translator(model_dir, checkpoint, overrides, device)
        inputs = [input, *run_inputs(model_dir, checkpoint)]
        with _open_output(output, inputs) as out, \
                _attention_writer(attention, translator) as writer, \
                tqdm(total=total, unit="line", file=sys.stderr, disable=not total) as progress:
            first = 0
            while chunk := list(itertools.islice(lines, CHUNK_LINES)):
                out.write(_translated(translator, writer, chunk, first))
                out.flush()
                first += len(chunk)
                progress.update(len(chunk))
    translator.warn_truncated()


PROMPT = "en> "


def translate_typed(model_dir: Path, checkpoint: str, output: str, overrides: list[str],
                    device: str, attention: Path | None = None) -> None:
    """The interactive mode: a prompt on stderr, each line translated and written out
    (flushed) as soon as Enter is pressed. Ctrl-D or Ctrl-C ends the session quietly
    (exit status 0); an output file then holds every line translated so far."""
    _check_attention(attention, model_dir, overrides)
    try:
        translator = load_translator(model_dir, checkpoint, overrides, device)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return
    print("transcli: type English and press Enter to translate; Ctrl-D or Ctrl-C ends",
          file=sys.stderr)
    with _open_output(output, run_inputs(model_dir, checkpoint)) as out, \
            _attention_writer(attention, translator) as writer:
        try:
            for index, line in enumerate(source_lines(_typed(PROMPT), "<stdin>")):
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


def _check_attention(folder: Path | None, run_dir: Path, overrides: list[str]) -> None:
    """Refuse --attention with settings it cannot work with, before loading the model."""
    if folder is not None:
        from transcli.explain import check_decode

        check_decode(load_run_config(run_dir, overrides).decode)


def _attention_writer(folder: Path | None, translator: Translator
                      ) -> contextlib.AbstractContextManager[AttentionWriter | None]:
    if folder is None:
        return contextlib.nullcontext()
    from transcli.explain import AttentionWriter

    return AttentionWriter(folder, translator)


def _nbest_tsv(results: list[list[tuple[str, float]]], first: int) -> str:
    return "".join(f"{first + i}\t{text}\t{score:.4f}\n"
                   for i, hyps in enumerate(results) for text, score in hyps)


@contextlib.contextmanager
def _open_input(name: str) -> Iterator[tuple[Iterator[str], int | None]]:
    """Lines of a file or stdin, and the file's line count (None for stdin: no progress
    bar). Only '\\n' ends a line, so odd characters inside a line never shift the order."""
    if name == "-":
        yield source_lines(sys.stdin.buffer, "<stdin>"), None
        return
    path = Path(name)
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise UserError(f"{path}: cannot read input ({exc.strerror or exc})") from None
    with handle:
        yield source_lines(handle, str(path)), count_lines(path)


def _open_output(name: str, inputs: Sequence[str | Path] = ()
                 ) -> contextlib.AbstractContextManager[BinaryIO]:
    """stdout, or a file that appears whole when translation ends; never one of the
    `inputs` (the input, the run's own files). When the reader of stdout goes away
    (`| head`), translation stops quietly."""
    return output_file(name, inputs, "translations", sys.stdout.buffer if name == "-" else None)
