"""Inference's float32 matrix products on the CPU: through oneDNN, or through the BLAS.

torch's CPU `F.linear` in float32 goes to the BLAS it was built with (MKL in the x86
wheels). On AMD CPUs with AVX512, oneDNN, which torch also ships, does the same products
much faster; on an AVX2-only AMD CPU it was a little slower (README, "Benchmarks":
`bench/translate_speed.py`). `decode.cpu_gemm: auto` (the default) therefore takes oneDNN
on AMD CPUs with AVX512 only, as CTranslate2 takes oneDNN on every CPU but Intel's; `blas`
and `onednn` choose. Only work without autograd and without autocast takes these paths:
training, and bf16 validation, keep torch's own kernels.

oneDNN keeps memory for every input shape it has met, so `linear` pads the rows to one of
a few sizes (`bucket`): a long translation job's memory stays bounded.

oneDNN's kernels read the weights in a blocked layout of their own. Given a plain [out, in]
matrix, every product first copies all of it into that layout: at a decoding step of a few
rows the copy costs more than the arithmetic (a step of 16 rows of the CPU recipe's model
spent most of its time there). `linear` therefore takes each weight laid out once
(`packed`): the same sums, bit for bit, at any number of rows but one. A single row goes
to a matrix-vector kernel that sums in another order, so it is padded to two: a sentence
decoded alone gets the same numbers as in a batch (tests/test_cpu_matmul.py). Better still,
products of a few rows go to `fewrows`'s kernel where it gives oneDNN's sums (checked per
weight): from about half the cost of oneDNN's.

With the BLAS, a product of few rows -- a decoding step near the end of a batch, when
most sentences have finished -- is computed the other way round, as (W xᵀ)ᵀ
(`blas_linear`): the same sums, which MKL did faster that way round for 2 to 32 rows
(`bench/step_speed.py`; README, "Benchmarks").
"""

from __future__ import annotations

import weakref
from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transcli.inference.fewrows import MOST_ROWS, RowWeights
from transcli.model.kvcache import StepBuffers
from transcli.model.transformer import output_product as model_output_product


def _onednn_available() -> bool:
    return (torch.backends.mkldnn.is_available()
            and hasattr(torch.ops.mkldnn, "_linear_pointwise")
            and hasattr(torch.ops.mkldnn, "_reorder_linear_weight"))


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


FEW_ROWS = 32  # products of 2 to this many rows go weight-first (`blas_linear`)


def _cpu_inference(x: Tensor, weight: Tensor) -> bool:
    """Whether x Wᵀ is float32 CPU work outside autograd and autocast."""
    return (x.device.type == "cpu" and x.dtype == weight.dtype == torch.float32
            and not torch.is_grad_enabled() and not torch.is_autocast_enabled("cpu"))


PACK_ROWS = 32  # the row count oneDNN lays a weight out for; every count gets the same sums


class _Packs:
    """Each weight in oneDNN's layout (`packed`), made on first use and again if the weight
    changes; dropped with the weight. A tensor made under `torch.inference_mode` counts no
    changes, so it is used as it is (the same sums, only slower)."""

    def __init__(self) -> None:
        self.held: dict[int, tuple[weakref.ref, int, Tensor]] = {}

    def __call__(self, weight: Tensor) -> Tensor:
        if weight.is_inference():
            return weight
        key = id(weight)
        entry = self.held.get(key)
        if entry is None or entry[0]() is not weight or entry[1] != weight._version:
            layout = torch.ops.mkldnn._reorder_linear_weight(weight.detach(), PACK_ROWS)
            entry = (weakref.ref(weight, lambda _, k=key: self.held.pop(k, None)),
                     weight._version, layout)
            self.held[key] = entry
        return entry[2]


packed = _Packs()


def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """`F.linear(x, weight, bias)`, through oneDNN with the `packed` weight for float32 CPU
    inference (`onednn_linear`); a few rows through `fewrows`'s kernel where it sums as
    oneDNN does (`few_rows`), at about half the cost."""
    if ONEDNN and _cpu_inference(x, weight):
        flat = x if x.dim() == 2 else x.reshape(-1, x.size(-1))
        row_weight = (few_rows(weight) if flat.size(0) <= MOST_ROWS and _plain(bias)
                      else None)
        out = (row_weight(flat.contiguous(), bias) if row_weight is not None
               else onednn_linear(flat, weight, bias))
        return out if x.dim() == 2 else out.view(*x.shape[:-1], weight.size(0))
    return F.linear(x, weight, bias)


def onednn_linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """x [rows, in] Wᵀ + b through oneDNN with the `packed` weight. The rows are padded to a
    `bucket` size (oneDNN keeps memory for every shape it meets), and a single row to two
    (see the module's docstring)."""
    rows = x.size(0)
    extra = max(bucket(rows), 2) - rows
    padded = _padded(x, rows + extra) if extra else x
    out = torch.ops.mkldnn._linear_pointwise(padded, packed(weight), bias, "none", [], "")
    return out[:rows] if extra else out


def _padded(x: Tensor, rows: int) -> Tensor:
    """x [n, in] followed by zero rows up to `rows`; only those are zeroed (`F.pad` fills
    all of its result first: 3% of the CPU time of greedy search of 200 Tatoeba lines in
    one call, in torch.profiler)."""
    padded = x.new_empty(rows, x.size(1))
    padded[:x.size(0)] = x
    padded[x.size(0):] = 0.0
    return padded


def _plain(bias: Optional[Tensor]) -> bool:
    """Whether `fewrows`'s kernel can read `bias`: none, or contiguous float32."""
    return bias is None or (bias.dtype == torch.float32 and bias.is_contiguous())


few_rows = RowWeights(onednn_linear)  # each weight for `fewrows`'s kernel, checked against oneDNN


def output_product(hidden: Tensor, weight: Tensor,
                   buffers: Optional[StepBuffers] = None) -> Tensor:
    """The Transformer's output product (`model.output_product`) through `linear`; oneDNN
    makes its own result tensor, so it takes no memory from `buffers`."""
    return linear(hidden, weight)


def _weight_first(x: Tensor, weight: Tensor) -> bool:
    """Whether `blas_linear` computes x Wᵀ weight-first: float32 CPU inference on 2 to
    `FEW_ROWS` rows."""
    return 1 < x.numel() // x.size(-1) <= FEW_ROWS and _cpu_inference(x, weight)


def blas_linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """`F.linear(x, weight, bias)` through the BLAS; for float32 CPU inference on 2 to
    `FEW_ROWS` rows computed as (W xᵀ)ᵀ, weight first, and made contiguous again (one row
    goes to a matrix-vector product either way, faster the usual way round)."""
    if not _weight_first(x, weight):
        return F.linear(x, weight, bias)
    flat = x if x.dim() == 2 else x.reshape(-1, x.size(-1))
    y_t = (torch.mm(weight, flat.t()) if bias is None
           else torch.addmm(bias[:, None], weight, flat.t()))
    out = y_t.t().contiguous()
    return out if x.dim() == 2 else out.view(*x.shape[:-1], weight.size(0))


def blas_output_product(hidden: Tensor, weight: Tensor,
                        buffers: Optional[StepBuffers] = None) -> Tensor:
    """The Transformer's output product (`model.output_product`) in `blas_linear`'s
    order, into the step's `buffers` ("logits", for hidden [rows, d_model]) if given."""
    if buffers is None:
        return blas_linear(hidden, weight)
    if not _weight_first(hidden, weight):
        return model_output_product(hidden, weight, buffers)
    out = buffers.get("logits", hidden.size(0), weight.size(0), hidden)
    return out.copy_(torch.mm(weight, hidden.t()).t())


def row_linear(module: nn.Module) -> Callable[[Tensor], Tensor]:
    """One row [1, in] through the linear layer `module`, made ready for many calls (a
    decoding step of one sentence): `fewrows`'s kernel where `linear` would take it, else
    the module's own forward (without a module call's cost)."""
    if type(module) is OneDnnLinear and ONEDNN:
        weight, bias = module.weight, module.bias
        row_weight = few_rows(weight) if _cpu_inference(weight, weight) and _plain(bias) else None
        if row_weight is not None:
            return lambda x: row_weight(x.contiguous(), bias)
    return module.forward


class OneDnnLinear(nn.Linear):
    """An `nn.Linear` whose forward is `linear`: the same parameters and state dict."""

    def forward(self, x: Tensor) -> Tensor:
        return linear(x, self.weight, self.bias)


class BlasLinear(nn.Linear):
    """An `nn.Linear` whose forward is `blas_linear`: the same parameters and state dict."""

    def forward(self, x: Tensor) -> Tensor:
        return blas_linear(x, self.weight, self.bias)


def cpu_linears(model: nn.Module, onednn: bool) -> nn.Module:
    """Every plain `nn.Linear` of `model` made an `OneDnnLinear` (with `onednn`) or a
    `BlasLinear`, in place (a class swap: the parameters are the same objects), and the
    Transformer's tied output product the matching one. For translation models only:
    quantization (`torch.ao.quantization.quantize_dynamic`) recognises plain `nn.Linear`
    alone."""
    kind, product = (OneDnnLinear, output_product) if onednn else (BlasLinear,
                                                                   blas_output_product)
    for module in model.modules():
        if type(module) is nn.Linear:
            module.__class__ = kind
        if hasattr(module, "output_product"):
            module.output_product = product
    return model
