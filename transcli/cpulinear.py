"""Inference's float32 matrix products on the CPU through oneDNN.

torch's CPU `F.linear` in float32 goes to the BLAS it was built with (MKL in the x86
wheels); on some CPUs oneDNN, which torch also ships, does the same products in about
half the time (README, "Benchmarks": `bench/translate_speed.py`). oneDNN is what
CTranslate2 uses on such CPUs. Only work without autograd and without autocast takes
this path: training, and bf16 validation, keep torch's own kernels.

It is opt-in (`decode.cpu_gemm: onednn`): oneDNN keeps memory for every input shape it
has seen, so a long translation job's resident memory grows with the batch shapes.
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


def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """`F.linear(x, weight, bias)`, through oneDNN for float32 CPU inference."""
    if (ONEDNN and x.device.type == "cpu" and x.dtype == weight.dtype == torch.float32
            and not torch.is_grad_enabled() and not torch.is_autocast_enabled("cpu")):
        return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")
    return F.linear(x, weight, bias)


class OneDnnLinear(nn.Linear):
    """An `nn.Linear` whose forward is `linear`: the same parameters and state dict."""

    def forward(self, x: Tensor) -> Tensor:
        return linear(x, self.weight, self.bias)


def onednn_linears(model: nn.Module) -> nn.Module:
    """Every plain `nn.Linear` of `model` made an `OneDnnLinear`, in place (a class swap:
    the parameters are the same objects), and the Transformer's tied output product
    `linear`. For translation models only: quantization
    (`torch.ao.quantization.quantize_dynamic`) recognises plain `nn.Linear` alone."""
    for module in model.modules():
        if type(module) is nn.Linear:
            module.__class__ = OneDnnLinear
        if hasattr(module, "output_product"):
            module.output_product = linear
    return model
