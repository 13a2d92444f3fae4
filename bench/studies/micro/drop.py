"""Time of dropping finished rows from the decoder's cache, the two ways `reorder` can.

    .venv/bin/python -m bench.studies.micro drop [--config configs/cpu-1h.yaml] [--threads 1 2]

A model of the config's shape (random weights) decodes `--rows` sentences of `--src-len`
source tokens, `--position` tokens in, one row per sentence as in greedy search; one row
has finished already and been dropped; then `--drop` rows spread over the batch (the
first row when one) finish, and the state drops them:
- `select`: the live rows in their order, so every layer's cached keys/values are
  selected into new tensors (`DecoderState.reorder`, what greedy search did before);
- `fill`: `DecoderState.drop`, so only the rows from past the kept ones move
  into the dropped rows' places (`kvcache.LayerCache.fill`).
Each way has its own state (dropped the middle row its way); every call drops from it,
its tensors put back first. The two alternate in rounds (`fastest`) and the fastest round
is printed, in ms.
"""

from __future__ import annotations

import argparse
import os
from typing import Callable

import torch

from bench.studies.micro import fastest
from bench.studies.micro.decoding import decoding_parser, decoding_state, random_model
from transcli.model.kvcache import DecoderState
from transcli.model.transformer import Transformer

Way = Callable[[DecoderState, torch.Tensor], object]


def select(state: DecoderState, keep: torch.Tensor) -> None:
    """Drop as greedy search did before `DecoderState.drop`: reorder to the live rows."""
    state.reorder(keep.nonzero().squeeze(1))


WAYS: dict[str, Way] = {"select": select, "fill": DecoderState.drop}


def dropping(state: DecoderState, way: Way, keep: torch.Tensor) -> Callable[[], None]:
    """A call that drops the rows `keep` leaves out of `state` as it is now, `way`'s way:
    it puts the state's tensors back first (`fill` moves rows within them, which changes
    values, not the work)."""
    mask = state.src_mask
    kept = [(c.cross_k_t, c.cross_v, c.self_k, c.self_v) for c in state.layers]

    def drop() -> None:
        state.src_mask, state.group = mask, 1
        for cache, tensors in zip(state.layers, kept):
            cache.cross_k_t, cache.cross_v, cache.self_k, cache.self_v = tensors
        way(state, keep)

    return drop


def spread(rows: int, drop: int) -> torch.Tensor:
    """Which of `rows` rows stay when `drop` rows spread over them finish."""
    keep = torch.ones(rows, dtype=torch.bool)
    keep[torch.linspace(0, rows - 1, drop).long()] = False
    return keep


def after_a_drop(model: Transformer, rows: int, args: argparse.Namespace,
                 way: Way) -> DecoderState:
    """A state of `rows` rows that has dropped its middle row already, `way`'s way (a
    later drop starts from what the earlier ones left: new tensors or narrowed ones)."""
    state, _ = decoding_state(model, rows, args.src_len, args.position)
    middle = torch.ones(rows, dtype=torch.bool)
    middle[rows // 2] = False
    way(state, middle)
    return state


def main() -> None:
    parser = decoding_parser(__doc__, rows=[32, 128, 372])
    parser.add_argument("--drop", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--repeats", type=int, default=5, help="drops timed per round")
    args = parser.parse_args()
    model = random_model(args)
    print(f"{'thr':>3} {'rows':>5} {'drop':>5} {'select':>10} {'fill':>10} select/fill")
    with torch.inference_mode():
        for threads in args.threads:
            torch.set_num_threads(threads)
            for rows in args.rows:
                for drop in args.drop:
                    calls = {name: dropping(after_a_drop(model, rows, args, way), way,
                                            spread(rows - 1, drop))
                             for name, way in WAYS.items()}
                    best = fastest(calls, args.rounds, args.repeats)
                    print(f"{threads:>3} {rows:>5} {drop:>5} {1000 * best['select']:7.2f} ms "
                          f"{1000 * best['fill']:7.2f} ms {best['select'] / best['fill']:8.2f}x",
                          flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
