"""Translating sentences, files and pipes with a trained model.

`Translator` holds a model in memory and turns a list of lines into translations:
lines are encoded, sorted by length into token-budget batches, searched by an
engine (`engines.py`: the strategy `decode.strategy` names on the torch model, or
CTranslate2) and put back in input order; empty lines stay empty. `translate` and
`evaluate` build one from a run dir, the training loop from the model it trains.
`translate_file` streams a file or stdin through it in chunks, so a pipe into
`head` works and memory stays bounded however long the input.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
from pathlib import Path
from typing import BinaryIO, Iterator, Sequence

import torch
from tqdm import tqdm

from transcli.checkpoint import load_trained
from transcli.config import DecodeConfig
from transcli.engines import Ct2Engine, Engine, TorchEngine, quantize_int8
from transcli.errors import UserError
from transcli.files import count_lines, output_file, source_lines
from transcli.model import Transformer
from transcli.rundir import load_run_config, run_inputs
from transcli.runtime import pick_device
from transcli.search import Hypothesis
from transcli.tokenizer import TOKENIZER_FILE, Tokenizer
from transcli.vocab import EOS_ID

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
        the whole input: sampling seeds each line by its index."""
        sources = self._encode(lines)
        found: list[list[Hypothesis]] = [[] for _ in lines]
        todo = [i for i, ids in enumerate(sources) if ids]
        for batch in token_batches([len(sources[i]) for i in todo], self.decode.batch_tokens):
            picked = [todo[j] for j in batch]
            for i, hyps in zip(picked, self._search([sources[i] for i in picked],
                                                    [first + i for i in picked])):
                found[i] = hyps
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
    engine `decode.engine` names."""
    target = pick_device(device)
    cfg = load_run_config(run_dir, overrides)
    if cfg.decode.engine == "ct2":
        from transcli.export.ct2 import cached_export

        model_dir = cached_export(Path(run_dir), checkpoint, cfg.decode.quantize)
        tokenizer = Tokenizer(Path(run_dir) / TOKENIZER_FILE)
        engine = Ct2Engine(model_dir, tokenizer, cfg.decode, cfg.model.max_positions, target)
        return Translator(engine, tokenizer, cfg.decode)
    model, tokenizer, cfg = load_trained(run_dir, checkpoint, target, overrides)
    if cfg.decode.quantize == "int8":
        model = quantize_int8(model)
    return Translator(model, tokenizer, cfg.decode, target)


def translate_lines(run_dir: Path, checkpoint: str, lines: list[str], overrides: list[str],
                    device: str) -> list[str]:
    """Translate in-memory lines with a run dir's model (used by `evaluate --model`)."""
    translator = load_translator(run_dir, checkpoint, overrides, device)
    translations = translator.translate(lines)
    translator.warn_truncated()
    return translations


def translate_file(model_dir: Path, checkpoint: str, input: str, output: str,
                   overrides: list[str], device: str) -> None:
    """Translate `input` (a path or - for stdin) into `output` (a path or - for stdout),
    one line per input line. With decode.n_best > 1 each input line gives n_best TSV
    lines: line index (from 0), hypothesis, score."""
    with _open_input(input) as (lines, total):
        translator = load_translator(model_dir, checkpoint, overrides, device)
        n_best = translator.decode.n_best
        inputs = [input, *run_inputs(model_dir, checkpoint)]
        with _open_output(output, inputs) as out, tqdm(total=total, unit="line", file=sys.stderr,
                                                       disable=not total) as progress:
            first = 0
            while chunk := list(itertools.islice(lines, CHUNK_LINES)):
                if n_best > 1:
                    out.write(_nbest_tsv(translator.translate_nbest(chunk, first), first).encode())
                else:
                    out.write("".join(t + "\n" for t in translator.translate(chunk, first))
                              .encode())
                out.flush()
                first += len(chunk)
                progress.update(len(chunk))
    translator.warn_truncated()


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
