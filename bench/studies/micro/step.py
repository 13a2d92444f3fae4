"""Time of one cached decoding step at a fixed number of rows, per CPU product path.

    .venv/bin/python -m bench.studies.micro step [--config configs/cpu-1h.yaml] [--threads 1 2]

A model of the config's shape (random weights) decodes `--rows` sentences of `--src-len`
source tokens, `--position` tokens in; the same step is then timed again and again with
the products of
- `plain`: torch's `F.linear`, as in training;
- `blas`: what the torch engine runs with `decode.cpu_gemm=blas` (`cpu_products.BlasLinear`:
  products of at most `cpu_products.FEW_ROWS` rows weight-first);
- `onednn`: `decode.cpu_gemm=onednn` (`cpu_products.OneDnnLinear`).
The paths alternate in rounds (`fastest`), so background load hits all alike; the fastest
round is printed, in ms per step, with plain's time over each path's. A batch's last
steps, when most of its sentences have finished, run at few rows.
"""

from __future__ import annotations

import copy
import os
from typing import Callable

import torch
from torch import Tensor

from bench.studies.micro import fastest
from bench.studies.micro.decoding import decoding_parser, decoding_state, random_model
from transcli.inference.cpu_products import ONEDNN, cpu_linears
from transcli.model.kvcache import DecoderState
from transcli.model.transformer import Transformer


def next_step(model: Transformer, state: DecoderState, tokens: Tensor) -> Callable[[], None]:
    """The state's next step, as a call that can be repeated."""
    position = state.position

    def step() -> None:
        state.position = position  # the same step again: its cache slot is overwritten
        model.step(tokens, state)

    return step


def main() -> None:
    parser = decoding_parser(__doc__, rows=[1, 2, 4, 8, 16, 32, 64, 128])
    parser.add_argument("--steps", type=int, default=10, help="steps timed per round")
    args = parser.parse_args()
    plain = random_model(args)
    paths = {"plain": plain, "blas": cpu_linears(copy.deepcopy(plain), onednn=False)}
    if ONEDNN:
        paths["onednn"] = cpu_linears(copy.deepcopy(plain), onednn=True)
    print(f"{'thr':>3} {'rows':>5} " + " ".join(f"{name:>16}" for name in paths))
    with torch.inference_mode():
        for threads in args.threads:
            torch.set_num_threads(threads)
            for rows in args.rows:
                steps = {name: next_step(model, *decoding_state(model, rows, args.src_len,
                                                                 args.position))
                         for name, model in paths.items()}
                best = fastest(steps, args.rounds, args.steps)
                cells = [f"{1000 * best[name]:7.2f} ms {best['plain'] / best[name]:4.2f}x"
                         for name in paths]
                print(f"{threads:>3} {rows:>5} " + " ".join(f"{c:>16}" for c in cells),
                      flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")

