"""`transcli score`: each given translation's log-probability under the model, as TSV."""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path
from typing import Iterator, Optional

import typer
from tqdm import tqdm

from transcli.cli.options import CheckpointOpt, Device, ModelOpt, device_option, setting
from transcli.system.errors import UserError
from transcli.system.files import count_lines, open_checked, output_file, source_lines


def score(
    model: Path = ModelOpt,
    src: Path = typer.Option(..., help="English sentences, one per line."),
    tgt: Path = typer.Option(..., help="Their Spanish translations, line by line."),
    output: str = typer.Option("-", "--output", "-o", help="Output TSV file, or - for stdout."),
    checkpoint: str = CheckpointOpt,
    batch_tokens: Optional[int] = setting(
        "decode.batch_tokens", "Tokens per batch and side, padding included."),
    device: Device = device_option(),
) -> None:
    """Log-probability of given translations under the model (forced decoding).

    One TSV line per pair, in input order: line index (from 0), total log-prob,
    log-prob per token, target tokens (end of sentence included). For filtering
    corpora and checking references.
    """
    score_files(model, checkpoint, src, tgt, output, batch_tokens, device or "auto")


def score_files(run_dir: Path, checkpoint: str, src: Path, tgt: Path, output: str,
                batch_tokens: int | None, device: str) -> None:
    """Write `index<TAB>total<TAB>per_token<TAB>tokens` for every line pair of `src` and
    `tgt` to `output` (a path, or - for stdout), in input order."""
    from transcli.inference.scoring import forced_logprobs
    from transcli.inference.translator import CHUNK_LINES
    from transcli.rundir.checkpoints import load_trained
    from transcli.rundir.layout import run_inputs
    from transcli.system.devices import pick_device
    from transcli.system.runtime import inference_setup

    pairs = _count_pairs(src, tgt)
    target = pick_device(device)
    model, tokenizer, cfg = load_trained(run_dir, checkpoint, target)
    inference_setup(target, cfg.decode.threads)
    budget = batch_tokens or cfg.decode.batch_tokens
    if budget < 1:
        raise UserError(f"--batch-tokens {budget}: must be at least 1")
    too_long = 0
    with open_checked(src) as src_handle, open_checked(tgt) as tgt_handle, \
            output_file(output, [src, tgt, *run_inputs(run_dir, checkpoint)], "scores",
                        sys.stdout.buffer) as out, \
            tqdm(total=pairs, unit="pair", file=sys.stderr) as progress:
        first = 0
        for chunk in _chunks(source_lines(src_handle, str(src)),
                             source_lines(tgt_handle, str(tgt)), CHUNK_LINES):
            scores = forced_logprobs(model, tokenizer.encode([s for s, _ in chunk]),
                                     tokenizer.encode([t for _, t in chunk]), budget)
            too_long += sum(math.isnan(total) for total, _ in scores)
            out.write("".join(f"{first + i}\t{total:.4f}\t{total / tokens:.4f}\t{tokens}\n"
                              for i, (total, tokens) in enumerate(scores)).encode())
            out.flush()
            first += len(chunk)
            progress.update(len(chunk))
    if too_long:
        print(f"transcli: warning: {too_long} pair(s) longer than the model's "
              f"{cfg.model.max_positions} positions were not scored (nan)", file=sys.stderr)


def _count_pairs(src: Path, tgt: Path) -> int:
    """The number of pairs: both files must have the same, non-zero number of lines."""
    counts = [count_lines(path) for path in (src, tgt)]
    if None in counts:
        raise UserError(f"{src if counts[0] is None else tgt}: --src and --tgt must be "
                        f"regular files")
    if counts[0] != counts[1]:
        raise UserError(f"line counts differ: {src} has {counts[0]} lines, "
                        f"{tgt} has {counts[1]}")
    if not counts[0]:
        raise UserError(f"{src} and {tgt} are empty: no pairs to score")
    return int(counts[0])  # type: ignore[arg-type]


def _chunks(sources: Iterator[str], targets: Iterator[str], size: int
            ) -> Iterator[list[tuple[str, str]]]:
    pairs = zip(sources, targets)
    while chunk := list(itertools.islice(pairs, size)):
        yield chunk
