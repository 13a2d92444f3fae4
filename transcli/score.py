"""`transcli score`: how likely the model finds a given translation (forced decoding).

Each pair's target is fed teacher-forced, exactly as in training: the score is the sum of
log p(y_t | y_<t, source) over the target pieces and the end-of-sentence token, without
label smoothing. The per-token figure (the total divided by that count) compares pairs
of different lengths: low values flag misaligned or broken pairs when filtering a
corpus, or a reference the model disagrees with.

Pairs are batched by tokens and sorted by length like `Translator`'s lines; the output
keeps the input order and is written a chunk at a time, so a large corpus streams.
"""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path
from typing import Iterator

import torch
from tqdm import tqdm

from transcli.batching import assemble, rows_from_lists
from transcli.checkpoint import load_trained
from transcli.errors import UserError
from transcli.files import count_lines, open_checked, output_file, source_lines
from transcli.model import Transformer
from transcli.rundir import run_inputs
from transcli.runtime import inference_setup, pick_device
from transcli.translate import CHUNK_LINES, token_batches
from transcli.vocab import PAD_ID

ROWS_PER_CHUNK = 1024  # target positions whose [rows, V] log-probs exist at once


@torch.inference_mode()
def forced_logprobs(model: Transformer, sources: list[list[int]], targets: list[list[int]],
                    batch_tokens: int) -> list[tuple[float, int]]:
    """(total log-prob, scored tokens) per pair of source / target ids (without EOS; an
    empty target scores the end of sentence alone). Pairs too long for the model's
    positions get (nan, tokens)."""
    limit = model.cfg.max_positions
    results: list[tuple[float, int]] = [(math.nan, len(t) + 1) for t in targets]
    todo = [i for i, (s, t) in enumerate(zip(sources, targets))
            if len(s) + 1 <= limit and len(t) + 1 <= limit]
    lengths = [max(len(sources[i]), len(targets[i])) + 1 for i in todo]
    device = next(model.parameters()).device
    for batch in token_batches(lengths, batch_tokens):
        picked = [todo[j] for j in batch]
        totals = _batch_logprobs(model, [sources[i] for i in picked],
                                 [targets[i] for i in picked], device)
        for i, total in zip(picked, totals):
            results[i] = (total, len(targets[i]) + 1)
    return results


def _batch_logprobs(model: Transformer, sources: list[list[int]], targets: list[list[int]],
                    device: torch.device) -> list[float]:
    batch = assemble(rows_from_lists(sources), rows_from_lists(targets)).to(device)
    hidden = model.decode_hidden(batch.tgt_in, model.encode(batch.src))
    real = batch.tgt_out != PAD_ID
    rows = real.nonzero()[:, 0]  # the pair of each real target position
    states, gold = hidden[real], batch.tgt_out[real]
    picked = torch.cat([  # log-softmax a slice of positions at a time: [slice, V] each
        model.log_probs(states[i:i + ROWS_PER_CHUNK])
        .gather(1, gold[i:i + ROWS_PER_CHUNK, None])[:, 0]
        for i in range(0, len(gold), ROWS_PER_CHUNK)])
    totals = torch.zeros(len(sources), dtype=torch.float64, device=device)
    return totals.index_add_(0, rows, picked.double()).tolist()


def score_files(run_dir: Path, checkpoint: str, src: Path, tgt: Path, output: str,
                batch_tokens: int | None, device: str) -> None:
    """Write `index<TAB>total<TAB>per_token<TAB>tokens` for every line pair of `src` and
    `tgt` to `output` (a path, or - for stdout), in input order."""
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
                             source_lines(tgt_handle, str(tgt))):
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


def _chunks(sources: Iterator[str], targets: Iterator[str]) -> Iterator[list[tuple[str, str]]]:
    pairs = zip(sources, targets)
    while chunk := list(itertools.islice(pairs, CHUNK_LINES)):
        yield chunk
