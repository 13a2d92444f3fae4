"""What the decoding micro-benchmarks (`step`, `drop`) share: their options, a model of a
config's shape with random weights (a step's cost does not depend on their values) and a
decoding state some tokens in."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import torch
from torch import Tensor

from bench.common import ROOT
from transcli.config.loading import load_config
from transcli.model.kvcache import DecoderState, StepBuffers
from transcli.model.transformer import Transformer


def decoding_parser(doc: str, rows: list[int]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "cpu-1h.yaml")
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--rows", type=int, nargs="+", default=rows)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--src-len", type=int, default=30)
    parser.add_argument("--position", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=7)
    return parser


def random_model(args: argparse.Namespace) -> Transformer:
    """--config's model with seeded random weights; prints what is timed."""
    torch.manual_seed(0)
    print(f"{args.config.name}, vocab {args.vocab}, source {args.src_len} tokens, position "
          f"{args.position}; {torch.backends.cpu.get_cpu_capability()}; load average "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    return Transformer(load_config(args.config).model, args.vocab).eval()


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
