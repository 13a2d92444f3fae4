"""Will a training run fit in memory? An estimate made before anything is allocated.

A config typo (`d_model: 51200`, `batch_tokens: 25000000`) otherwise shows up as the
machine swapping, or as a CUDA out-of-memory traceback minutes in. `check_training_memory`
compares `training_estimate` with the memory the device has free and refuses with one
line. The estimate counts what is certain to be held: weights, gradients and Adam's two
moments; the positional table; the activations autograd saves for one batch's backward
pass (per layer and token, as the model's own saved tensors measure them, see
tests/test_memory.py), the output layer's gradients the fused loss keeps
(`objective.output_loss`), and the one chunk of logits it computes at a time. Allocator
slack, the framework itself and the loader are not counted, so a run the check lets
through can still be tight.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from transcli.config.schema import Config, ModelConfig
from transcli.system.errors import UserError
from transcli.system.runtime import training_precision
from transcli.training.objective import chunk_rows

FP32 = 4
# Attention weights grow with the padded sentence length, which batching decides later;
# sentence-level batches are rarely padded beyond this many tokens.
TYPICAL_LENGTH = 64


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes a training process holds at the peak of one update, by what holds them."""

    weights: int  # parameters, their gradients and Adam's two moments (fp32)
    positions: int  # the sinusoidal table
    activations: int  # saved for the backward pass of one batch
    # The fused loss: its chunk of [rows, vocab] logits and probabilities, and the fp32
    # gradient of the output weights it accumulates.
    output_layer: int

    @property
    def total(self) -> int:
        return self.weights + self.positions + self.activations + self.output_layer

    def describe(self) -> str:
        return (f"weights+gradients+Adam {gib(self.weights)}, activations "
                f"{gib(self.activations)}, output layer {gib(self.output_layer)}")


def parameter_count(model: ModelConfig, vocab_size: int) -> int:
    """The Transformer's trainable parameters, computed from its shape (equal to
    `count_parameters(Transformer(model, vocab_size))`)."""
    d, d_ff = model.d_model, model.d_ff
    attention = 4 * d * d + 4 * d  # Q, K, V and output projections with biases
    ffn = 2 * d * d_ff + d_ff + d
    norm = 2 * d
    encoder = model.enc_layers * (attention + ffn + 2 * norm)
    decoder = model.dec_layers * (2 * attention + ffn + 3 * norm)
    tables = (1 if model.share_embeddings else 2) + (0 if model.tie_output else 1)
    final_norms = 2 * norm if model.pre_norm else 0
    return tables * vocab_size * d + encoder + decoder + final_norms


def training_estimate(model: ModelConfig, vocab_size: int, batch_tokens: int,
                      activation_bytes: int = FP32, device_type: str = "cpu") -> MemoryEstimate:
    """Peak training memory for batches of `batch_tokens` padded positions per side (the
    batch plan counts padding in that budget); `activation_bytes` is 2 under bf16/fp16
    autocast (the loss's logits stay fp32), whose chunk size depends on `device_type`."""
    d, heads = model.d_model, model.heads
    length = min(model.max_positions, TYPICAL_LENGTH)
    drop = 1 if model.dropout > 0 else 0  # each dropout site keeps its mask
    # Floats saved per token and layer.
    encoder = 8 * d + model.d_ff + heads * length + 2 * drop * d
    decoder = 12 * d + model.d_ff + 2 * heads * length + 3 * drop * d
    memory_kv = 2 * d  # each decoder layer's cross-attention keys and values, per source token
    embeddings = (1 + drop) * d
    per_src = model.enc_layers * encoder + model.dec_layers * memory_kv + embeddings
    per_tgt = model.dec_layers * decoder + embeddings + 1 * d  # + the output layer's input grad
    return MemoryEstimate(
        weights=4 * FP32 * parameter_count(model, vocab_size),
        positions=FP32 * model.max_positions * d,
        activations=activation_bytes * batch_tokens * (per_src + per_tgt),
        output_layer=FP32 * vocab_size * (
            2 * min(batch_tokens, chunk_rows(device_type, vocab_size)) + d))


def available_memory(device: str = "cpu") -> Optional[int]:
    """Bytes free for a new process on `device` ("cpu", "cuda" or "cuda:N"); None when
    unknown. On the CPU: MemAvailable, lowered to a cgroup (container) limit if any."""
    if device.startswith("cuda"):
        import torch

        return int(torch.cuda.mem_get_info(torch.device(device))[0])
    free = _meminfo_available()
    if free is None:
        try:
            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
    limit = _cgroup_room()
    return free if limit is None else min(free, limit)


def check_training_memory(cfg: Config, vocab_size: int, device: str | Any = "cpu",
                          processes: int = 1) -> MemoryEstimate:
    """Refuse, with one line, a config whose training cannot fit in `device`'s free memory
    (`processes` ranks sharing it, as DDP ranks share one CPU). Returns the estimate.
    `device`: "cpu", "cuda", "cuda:N" or a torch.device."""
    device = str(device)
    precision = training_precision("cuda" if device.startswith("cuda") else "cpu",
                                   cfg.train.precision, cfg.train.cpu_precision)
    estimate = training_estimate(cfg.model, vocab_size, cfg.train.batch_tokens,
                                 2 if precision in ("bf16", "fp16") else FP32,
                                 "cuda" if device.startswith("cuda") else "cpu")
    free = available_memory(device)
    if free is not None and estimate.total * processes > free:
        m = cfg.model
        raise UserError(
            f"training needs about {gib(estimate.total * processes)} on {device} "
            f"({estimate.describe()}{f', x {processes} processes' if processes > 1 else ''}) "
            f"but {gib(free)} is free: lower train.batch_tokens ({cfg.train.batch_tokens:,}) "
            f"or the model (d_model {m.d_model}, d_ff {m.d_ff}, "
            f"{m.enc_layers}+{m.dec_layers} layers, vocabulary {vocab_size:,})")
    return estimate


def gib(size: int) -> str:
    return f"{size / 2**30:.1f} GiB"


def _meminfo_available() -> Optional[int]:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_room() -> Optional[int]:
    """cgroup v2 memory.max minus memory.current, when a limit is set."""
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit == "max":
            return None
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        return max(int(limit) - used, 0)
    except (OSError, ValueError):
        return None
