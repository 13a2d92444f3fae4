"""CPU attention kernels side by side: torch's plain ("math") kernel and its flash kernel,
forward only (translation, validation) and forward + backward (training).

    .venv/bin/python -m bench.studies.micro attention [--threads 1 2] [--rounds 5]

Each shape is a batch of about --batch-tokens tokens of sentences of one length, heads
and d_k of --config's model, with a padding mask that hides the last quarter of every
other sentence, as `transcli.model.transformer.attention` gets it in the encoder. The
kernels alternate in rounds (`fastest`), so background load hits both alike.
`transcli.model.transformer.CPU_ATTENTION` takes flash without autograd, where it is faster
at most lengths, and math for training (the CPU flash kernel has no dropout).
"""

from __future__ import annotations

import argparse
import functools
import os

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from bench.common import ROOT
from bench.studies.micro import fastest
from transcli.config.loading import load_config

KERNELS = {"math": SDPBackend.MATH, "flash": SDPBackend.FLASH_ATTENTION}


def inputs(sentences: int, length: int, heads: int, d_k: int,
           grad: bool) -> tuple[list[torch.Tensor], torch.Tensor]:
    """q, k, v [sentences, heads, length, d_k], views of one [sentences, length, 3 x heads x
    d_k] projection as in `transcli.model.transformer.SelfAttention`, and the key mask
    [sentences, 1, 1, length]."""
    generator = torch.Generator().manual_seed(length)
    fused = torch.randn(sentences, length, 3 * heads * d_k, generator=generator)
    fused.requires_grad_(grad)
    qkv = [t.view(sentences, length, heads, d_k).transpose(1, 2) for t in fused.chunk(3, -1)]
    lengths = torch.full((sentences,), length)
    lengths[1::2] = max(1, length * 3 // 4)
    mask = (torch.arange(length)[None, :] < lengths[:, None])[:, None, None, :]
    return qkv, mask


def run(kernel: SDPBackend, qkv: list[torch.Tensor], mask: torch.Tensor, grad: bool) -> None:
    with torch.set_grad_enabled(grad), sdpa_kernel(kernel):
        out = F.scaled_dot_product_attention(*qkv, attn_mask=mask)
        if grad:
            out.sum().backward()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(ROOT / "configs" / "cpu-1h.yaml"))
    parser.add_argument("--lengths", type=int, nargs="+", default=[10, 25, 60, 120])
    parser.add_argument("--batch-tokens", type=int, default=4096)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    model = load_config(args.config).model
    d_k = model.d_model // model.heads
    print(f"torch {torch.__version__}, {torch.backends.cpu.get_cpu_capability()}; "
          f"heads {model.heads}, d_k {d_k}; load average {os.getloadavg()[0]:.2f}")
    print("threads  pass              length  sentences      math     flash  math/flash")
    for threads in args.threads:
        torch.set_num_threads(threads)
        for grad in (False, True):
            for length in args.lengths:
                sentences = max(1, args.batch_tokens // length)
                qkv, mask = inputs(sentences, length, model.heads, d_k, grad)
                calls = {name: functools.partial(run, kernel, qkv, mask, grad)
                         for name, kernel in KERNELS.items()}
                best = fastest(calls, args.rounds, args.repeats)
                label = "forward+backward" if grad else "forward"
                print(f"{threads:7d}  {label:16s} {length:7d} {sentences:10d} "
                      f"{best['math'] * 1e3:6.2f} ms {best['flash'] * 1e3:6.2f} ms "
                      f"{best['math'] / best['flash']:10.2f}", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")

