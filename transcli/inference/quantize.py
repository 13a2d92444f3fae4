"""int8 weights for the torch engine on the CPU (`decode.quantize: int8`, `--int8`).

`quantize_int8` gives every Linear layer int8 weights through torch's dynamic
quantization (fbgemm on x86): the weights are quantized once, each product's input on
the fly. The output layer, the largest product of a decoding step, gets its own int8
copy of its matrix (`Int8OutputProduct`) with one scale per word, whether it is tied to
the target embedding (then it is no Linear layer) or not.
"""

from __future__ import annotations

import warnings
from typing import Optional

import torch
from torch import Tensor, nn
from torch.ao.nn.quantized.dynamic import Linear as DynamicInt8Linear
from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

from transcli.model.kvcache import StepBuffers
from transcli.model.transformer import Transformer
from transcli.system.errors import UserError


class Int8OutputProduct:
    """hidden Wᵀ with W, the output layer's [vocab, d_model] matrix, in int8 (one scale
    per row): a quantized model's `Transformer.output_product`."""

    def __init__(self, weight: Tensor):
        linear = nn.Linear(weight.size(1), weight.size(0), bias=False, device="meta")
        linear.weight = nn.Parameter(weight.detach(), requires_grad=False)
        linear.qconfig = per_channel_dynamic_qconfig
        with warnings.catch_warnings():  # torch.ao.quantization's deprecation notices
            warnings.simplefilter("ignore")
            self.linear = DynamicInt8Linear.from_float(linear)

    def __call__(self, hidden: Tensor, weight: Tensor,
                 buffers: Optional[StepBuffers] = None) -> Tensor:
        """The product for `hidden` [..., d_model]. `weight` is the float matrix this was
        quantized from; the kernel makes its own result tensor, so it takes no memory
        from `buffers`."""
        return self.linear(hidden)


def linear_names(model: Transformer) -> set[str]:
    """The Linear layers torch's dynamic quantization converts, by name: all but an
    untied output layer, whose converted Linear would have no float weight for
    `Transformer.output_weight` (`Int8OutputProduct` quantizes it instead)."""
    return {name for name, module in model.named_modules()
            if type(module) is nn.Linear and module is not model.generator}


def quantize_int8(model: Transformer) -> Transformer:
    """A copy of the model with int8 weights in every Linear layer and in the output
    layer (activations quantized on the fly)."""
    if next(model.parameters()).device.type != "cpu":
        raise UserError("decode.quantize=int8 with the torch engine runs on the CPU only "
                        "(use --device cpu, or --engine ct2)")
    with warnings.catch_warnings():  # torch.ao.quantization's deprecation notices
        warnings.simplefilter("ignore")
        quantized = quantize_dynamic(model, linear_names(model), dtype=torch.qint8)
    quantized.output_product = Int8OutputProduct(quantized.output_weight)
    return quantized
