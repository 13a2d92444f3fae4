"""Inference's float32 matrix products on the CPU through oneDNN.

torch's CPU `F.linear` in float32 goes to the BLAS it was built with (MKL in the x86
wheels). On AMD CPUs with AVX512, oneDNN, which torch also ships, does the same products
much faster; on an AVX2-only AMD CPU it was a little slower (README, "Benchmarks":
`bench/translate_speed.py`). `decode.cpu_gemm: auto` (the default) therefore takes oneDNN
on AMD CPUs with AVX512 only, as CTranslate2 takes oneDNN on every CPU but Intel's; `blas`
and `onednn` choose. Only work without autograd and without autocast takes this path:
training, and bf16 validation, keep torch's own kernels.

oneDNN keeps memory for every input shape it has met, so `linear` pads the rows to one of
a few sizes (`bucket`): a long translation job's memory stays bounded.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def _onednn_available() -> bool:
    return (torch.backends.mkldnn.is_available()
            and hasattr(torch.ops.mkldnn, "_linear_pointwise"))


ONEDNN = _onednn_available()


def cpu_vendor() -> str:
    """The CPU's vendor string (e.g. AuthenticAMD, GenuineIntel); "" where Linux's
    /proc/cpuinfo does not say."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def use_onednn(cpu_gemm: str) -> bool:
    """Whether the torch engine's float32 CPU products go through oneDNN, for
    `decode.cpu_gemm` blas, onednn or auto (oneDNN on AMD CPUs with AVX512)."""
    if cpu_gemm == "auto":
        return (ONEDNN and torch.backends.cpu.get_cpu_capability() == "AVX512"
                and cpu_vendor() == "AuthenticAMD")
    return cpu_gemm == "onednn"


def bucket(rows: int) -> int:
    """`rows` rounded up to one of 8 sizes per power of two (at most 12.5% more)."""
    step = 1 << max(0, rows.bit_length() - 4)
    return -(-rows // step) * step


def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """`F.linear(x, weight, bias)`, through oneDNN for float32 CPU inference. The rows are
    padded to a `bucket` size: oneDNN keeps memory for every shape it meets."""
    if (ONEDNN and x.device.type == "cpu" and x.dtype == weight.dtype == torch.float32
            and not torch.is_grad_enabled() and not torch.is_autocast_enabled("cpu")):
        flat = x.reshape(-1, x.size(-1))
        rows, extra = flat.size(0), bucket(flat.size(0)) - flat.size(0)
        padded = F.pad(flat, (0, 0, 0, extra)) if extra else flat
        out = torch.ops.mkldnn._linear_pointwise(padded, weight, bias, "none", [], "")
        return out[:rows].reshape(*x.shape[:-1], weight.size(0))
    return F.linear(x, weight, bias)


def output_product(hidden: Tensor, weight: Tensor, out: Optional[Tensor] = None) -> Tensor:
    """The Transformer's output product (`model.output_product`) through `linear`; oneDNN
    makes its own result tensor, so `out` goes unused."""
    return linear(hidden, weight)


class OneDnnLinear(nn.Linear):
    """An `nn.Linear` whose forward is `linear`: the same parameters and state dict."""

    def forward(self, x: Tensor) -> Tensor:
        return linear(x, self.weight, self.bias)


def onednn_linears(model: nn.Module) -> nn.Module:
    """Every plain `nn.Linear` of `model` made an `OneDnnLinear`, in place (a class swap:
    the parameters are the same objects), and the Transformer's tied output product
    `output_product`. For translation models only: quantization
    (`torch.ao.quantization.quantize_dynamic`) recognises plain `nn.Linear` alone."""
    for module in model.modules():
        if type(module) is nn.Linear:
            module.__class__ = OneDnnLinear
        if hasattr(module, "output_product"):
            module.output_product = output_product
    return model
