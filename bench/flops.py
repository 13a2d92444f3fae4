"""The benchmarks' one MFU formula: model FLOPs of a training pass, the devices' peaks.

MFU: model FLOPs of one forward+backward pass (3x the forward's multiply-adds x 2 FLOPs):

- dense: 6 x (matrix parameters a token passes through) x tokens. Encoder layers and the
  decoder's cross-attention key/value projection act on source positions; the decoder's
  other projections and the output layer (V x d_model) on target positions. Biases,
  LayerNorms, softmax and embedding look-ups are not matrix products and are left out
  (under 0.5% of the total for the base model).
- attention: Q K^T and the weighted sum of V, 2 x 2 x d_model FLOPs per (query, key) pair
  per layer forward, x3 with backward: 12 x d_model x (enc_layers x s^2 + dec_layers x
  (t^2 + t x s)) per sentence pair of s source and t target positions. The causal mask's
  skipped half is counted, as kernels that pad to full tiles mostly compute it anyway.

MFU is those FLOPs per second over the device's dense (no 2:4 sparsity) bf16 tensor peak.
`tests/test_flops.py` checks the count against torch's FlopCounterMode on a real model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from transcli.config.schema import ModelConfig

# Dense bf16 tensor-core peaks, FLOP/s, by device name as torch.cuda.get_device_name()
# gives it. Vendor datasheets list these "with sparsity", twice the dense figure:
# H100 SXM (torch: "NVIDIA H100 80GB HBM3") 1,979 TFLOPS and H100 PCIe 1,513 (NVIDIA H100
# Tensor Core GPU datasheet); H200 SXM ("NVIDIA H200") has the H100 SXM's rates with more
# memory (NVIDIA H200 datasheet); A100 312 dense (NVIDIA A100 datasheet, 624 with
# sparsity). NVL and other variants are left unknown: MFU prints n/a.
DENSE_BF16_PEAKS: list[tuple[str, float]] = [
    (r"\bH100\b.*\bPCIe\b", 756e12),
    (r"\bH100\b.*\b(SXM|HBM3)\b", 989.4e12),
    (r"\bH200( SXM.*)?$", 989.4e12),
    (r"\bA100\b", 312e12),
]


def dense_bf16_peak(device_name: str) -> Optional[float]:
    """The device's dense bf16 peak in FLOP/s, or None for a device not in the table."""
    for pattern, peak in DENSE_BF16_PEAKS:
        if re.search(pattern, device_name):
            return peak
    return None


@dataclass(frozen=True)
class Lengths:
    """Sums over sentence pairs of the positions fed to the model (source rows with EOS,
    target rows with BOS): what the FLOP count needs to know about a batch or a corpus."""

    src: float
    tgt: float
    src_sq: float
    tgt_sq: float
    cross: float  # sum of s x t

    @classmethod
    def of(cls, src_lengths: Sequence[int] | np.ndarray,
           tgt_lengths: Sequence[int] | np.ndarray) -> Lengths:
        s = np.asarray(src_lengths, dtype=np.float64)
        t = np.asarray(tgt_lengths, dtype=np.float64)
        return cls(float(s.sum()), float(t.sum()), float((s * s).sum()), float((t * t).sum()),
                   float((s * t).sum()))

    def per_target_token(self) -> Lengths:
        """The same sums divided by the target positions: FLOPs per target token."""
        return Lengths(*(v / self.tgt for v in (self.src, self.tgt, self.src_sq, self.tgt_sq,
                                                 self.cross)))


def training_flops(cfg: ModelConfig, vocab: int, lengths: Lengths) -> float:
    """Model FLOPs of one forward+backward pass over `lengths` (see the module docstring)."""
    d, ff = cfg.d_model, cfg.d_ff
    enc_per_src = cfg.enc_layers * (4 * d * d + 2 * d * ff)  # QKV + out, FFN
    dec_per_src = cfg.dec_layers * 2 * d * d  # cross-attention keys and values of the memory
    dec_per_tgt = cfg.dec_layers * (6 * d * d + 2 * d * ff) + vocab * d  # + output layer
    dense = 6 * ((enc_per_src + dec_per_src) * lengths.src + dec_per_tgt * lengths.tgt)
    attention = 12 * d * (cfg.enc_layers * lengths.src_sq
                          + cfg.dec_layers * (lengths.tgt_sq + lengths.cross))
    return dense + attention


def mfu_text(flops_per_s: float, device_name: str) -> str:
    """'41.3% of 989 TFLOP/s', or 'n/a (unknown peak for <device>)'."""
    peak = dense_bf16_peak(device_name)
    if peak is None:
        return f"n/a (no dense bf16 peak known for {device_name!r})"
    return f"{100 * flops_per_s / peak:.1f}% of {peak / 1e12:.0f} TFLOP/s"


def parameters_per_token(model: Any) -> int:
    """The parameters one target token's pass goes through, in the short count (6 FLOPs
    per parameter per target token, the source side taken as long as the target): every
    parameter but the embedding tables, plus the output projection (V x d_model, the
    target table itself when the output is tied to it)."""
    tables = {id(e.table.weight): e.table.weight for e in (model.src_embed, model.tgt_embed)}
    total = sum(p.numel() for p in model.parameters() if id(p) not in tables)
    tied = id(model.output_weight) in tables
    return total + (model.output_weight.numel() if tied else 0)
