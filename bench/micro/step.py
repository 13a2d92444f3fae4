"""Time of one cached decoding step at a fixed number of rows, per CPU product path.

    .venv/bin/python bench/step_speed.py [--config configs/cpu-1h.yaml] [--threads 1 2]

A model of the config's shape (random weights: a step's cost does not depend on their
values) decodes `--rows` sentences of `--src-len` source tokens, `--position` tokens in;
the same step is then timed again and again with the products of
- `plain`: torch's `F.linear`, as in training;
- `blas`: what the torch engine runs with `decode.cpu_gemm=blas` (`cpulinear.BlasLinear`:
  products of at most `cpulinear.FEW_ROWS` rows weight-first);
- `onednn`: `decode.cpu_gemm=onednn` (`cpulinear.OneDnnLinear`).
The paths alternate in rounds (`alternate.fastest`), so background load hits all alike;
the fastest round is printed, in ms per step, with plain's time over each path's. A
batch's last steps, when most of its sentences have finished, run at few rows.
"""

from __future__ import annotations

import argparse
import copy
import os
from pathlib import Path
from typing import Callable

import torch
from torch import Tensor

from bench.common import ROOT, fastest
from transcli.config.loading import load_config
from transcli.inference.cpu_products import ONEDNN, cpu_linears
from transcli.model.kvcache import DecoderState, StepBuffers
from transcli.model.transformer import Transformer


def decoding_state(model: Transformer, rows: int, src_len: int,
                   position: int) -> tuple[DecoderState, Tensor]:
    """A state of `rows` random sentences `position` tokens in, and the next tokens."""
    src = torch.randint(4, model.vocab_size, (rows, src_len))
    tokens = torch.randint(4, model.vocab_size, (rows,))
    state = model.start_decoding(model.encode(src, packed=True))
    state.buffers = StepBuffers()
    for _ in range(position):
        model.step(tokens, state)
    return state, tokens


def next_step(model: Transformer, state: DecoderState, tokens: Tensor) -> Callable[[], None]:
    """The state's next step, as a call that can be repeated."""
    position = state.position

    def step() -> None:
        state.position = position  # the same step again: its cache slot is overwritten
        model.step(tokens, state)

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "cpu-1h.yaml")
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64, 128])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--src-len", type=int, default=30)
    parser.add_argument("--position", type=int, default=20)
    parser.add_argument("--steps", type=int, default=10, help="steps timed per round")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    torch.manual_seed(0)
    plain = Transformer(load_config(args.config).model, args.vocab).eval()
    paths = {"plain": plain, "blas": cpu_linears(copy.deepcopy(plain), onednn=False)}
    if ONEDNN:
        paths["onednn"] = cpu_linears(copy.deepcopy(plain), onednn=True)
    print(f"{args.config.name}, vocab {args.vocab}, source {args.src_len} tokens, position "
          f"{args.position}; {torch.backends.cpu.get_cpu_capability()}; load average "
          f"{os.getloadavg()[0]:.2f}", flush=True)
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


if __name__ == "__main__":
    main()
