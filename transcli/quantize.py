"""int8 weights for the torch engine on the CPU (`decode.quantize: int8`, `--int8`).

`quantize_int8` gives every Linear layer int8 weights through torch's dynamic
quantization (fbgemm on x86): the weights are quantized once, each product's input on
the fly. The output layer is not a Linear when it is tied to the target embedding, so
it gets its own int8 copy of that matrix (`Int8OutputProduct`), with one scale per word:
a vocabulary's rows differ in size, and it is the largest product of a decoding step.
"""

from __future__ import annotations

import warnings
from typing import Optional

import torch
from torch import Tensor, nn
from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

from transcli.errors import UserError
from transcli.model import Transformer


class Int8OutputProduct:
    """hidden Wᵀ with W, the output layer's [vocab, d_model] matrix, in int8 (one scale
    per row): a quantized model's `Transformer.output_product`."""

    def __init__(self, weight: Tensor):
        linear = nn.Linear(weight.size(1), weight.size(0), bias=False)
        linear.weight = nn.Parameter(weight.detach(), requires_grad=False)
        self.linear = quantize_dynamic(nn.Sequential(linear),
                                       {nn.Linear: per_channel_dynamic_qconfig},
                                       dtype=torch.qint8)[0]

    def __call__(self, hidden: Tensor, weight: Tensor, out: Optional[Tensor] = None) -> Tensor:
        """The product for `hidden` [..., d_model]. `weight`, the float matrix, is the one
        this was quantized from; `out` goes unused: the kernel makes its own result."""
        return self.linear(hidden)


def quantize_int8(model: Transformer) -> Transformer:
    """A copy of the model with int8 weights in every nn.Linear and in the output layer
    (activations quantized on the fly)."""
    if next(model.parameters()).device.type != "cpu":
        raise UserError("decode.quantize=int8 with the torch engine runs on the CPU only "
                        "(use --device cpu, or --engine ct2)")
    # An untied output layer is a Linear too; it is quantized with the tied one's
    # settings below, and keeps its float weight for `output_weight`.
    linears = {name for name, module in model.named_modules()
               if isinstance(module, nn.Linear) and module is not model.generator}
    with warnings.catch_warnings():  # torch.ao.quantization's deprecation notices
        warnings.simplefilter("ignore")
        quantized = quantize_dynamic(model, linears, dtype=torch.qint8)
        quantized.output_product = Int8OutputProduct(quantized.output_weight)
    return quantized
