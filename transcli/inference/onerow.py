"""One row times a weight, x Wᵀ + b, in a small C kernel with oneDNN's sums, bit for bit.

A sentence decoded alone feeds one row to every product of a decoding step. oneDNN
(`cpu_matmul.linear`) gets it padded to two rows (alone it sums another way): each call
pays about 17 us of set-up, and its kernel for a few rows streams the weights at about
half the speed a plain matrix-vector loop reaches, so the products of one row cost about
twice those of this kernel (`bench.translate_speed --batch-rows 1`).

The kernel sums each output as oneDNN's does for rows of the CPU recipe's widths: the
products in the order of the inputs, each added with one rounding (a fused multiply-add),
the bias last. That is a property of oneDNN's kernels, not a promise, so every weight is
checked before the kernel takes it (`RowWeight.of`): on random rows, with and without a
bias, its results must equal oneDNN's bit for bit, else that weight stays with oneDNN (on
the CPU here, the feed-forward output, of 1,280 inputs, which oneDNN sums in parts). A
sentence alone therefore gets the numbers it gets in a batch, as before.

The C source is compiled on first use, by the system's C compiler for this CPU (`cc`, or
$CC), into a temporary folder (about 0.1 s). Without a compiler, or where it fails, there is
no kernel and every product stays with oneDNN.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import tempfile
import weakref
from pathlib import Path
from typing import Callable, Optional

import torch
from torch import Tensor

BLOCK = 64  # outputs computed together: the weights are laid out in blocks of this many

SOURCE = r"""
#include <math.h>
#define BLOCK 64

/* y[n] = (x[0] w[n][0] + x[1] w[n][1] + ... + x[K-1] w[n][K-1]) + b[n] for n < N: the
   products summed in input order, each added with one rounding (fmaf), then the bias.
   w is laid out in blocks of BLOCK outputs, w[n][k] at (n / BLOCK) * K * BLOCK
   + k * BLOCK + n % BLOCK, so that a block's loop reads consecutive memory. */
void row_product(const float *x, const float *w, const float *b, float *y, long K, long N) {
    for (long first = 0; first < N; first += BLOCK) {
        const float *block = w + first * K;
        float sum[BLOCK];
        for (int j = 0; j < BLOCK; j++) sum[j] = x[0] * block[j];
        for (long k = 1; k < K; k++) {
            const float xk = x[k];
            const float *wk = block + k * BLOCK;
            for (int j = 0; j < BLOCK; j++) sum[j] = fmaf(xk, wk[j], sum[j]);
        }
        long outputs = N - first < BLOCK ? N - first : BLOCK;
        for (long j = 0; j < outputs; j++) y[first + j] = b ? sum[j] + b[first + j] : sum[j];
    }
}
"""

# -ffp-contract=off: no multiply-add fused but those written as fmaf.
FLAGS = ["-O3", "-march=native", "-ffp-contract=off", "-fno-math-errno", "-shared", "-fPIC"]


def compiler() -> Optional[str]:
    """The C compiler: $CC, else the first of cc, gcc, clang found on the PATH."""
    if os.environ.get("CC"):
        return shutil.which(os.environ["CC"])
    return next((found for name in ("cc", "gcc", "clang") if (found := shutil.which(name))),
                None)


@functools.lru_cache(maxsize=1)
def kernel() -> Optional[Callable[..., None]]:
    """`row_product` compiled and loaded (once per process); None where it cannot be."""
    cc = compiler()
    if cc is None:
        return None
    with tempfile.TemporaryDirectory(prefix="transcli-onerow-", ignore_cleanup_errors=True
                                     ) as folder:
        source, library = Path(folder) / "onerow.c", Path(folder) / "onerow.so"
        source.write_text(SOURCE, encoding="ascii")
        try:
            subprocess.run([cc, *FLAGS, str(source), "-o", str(library)], check=True,
                           capture_output=True, timeout=120)
            function = ctypes.CDLL(str(library)).row_product  # loaded: the file may go
        except (OSError, subprocess.SubprocessError):
            return None
    function.restype = None
    function.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_long] * 2
    return function


def blocked(weight: Tensor) -> Tensor:
    """[N, K] as the kernel reads it: [ceil(N / BLOCK), K, BLOCK], zeros past N."""
    outputs, inputs = weight.shape
    padded = weight.new_zeros(-(-outputs // BLOCK) * BLOCK, inputs)
    padded[:outputs] = weight
    return padded.view(-1, BLOCK, inputs).transpose(1, 2).contiguous()


class RowWeight:
    """A float32 CPU weight [N, K] laid out for the kernel."""

    def __init__(self, weight: Tensor, run: Callable[..., None]):
        self.outputs, self.inputs = weight.shape
        self.layout = blocked(weight.detach())
        self.run = run

    def __call__(self, x: Tensor, bias: Optional[Tensor] = None) -> Tensor:
        """x [1, K] (contiguous float32) Wᵀ + bias -> [1, N]."""
        y = x.new_empty(1, self.outputs)
        self.run(x.data_ptr(), self.layout.data_ptr(),
                 None if bias is None else bias.data_ptr(), y.data_ptr(),
                 self.inputs, self.outputs)
        return y

    @classmethod
    def of(cls, weight: Tensor, reference: Callable[[Tensor, Tensor, Optional[Tensor]], Tensor]
           ) -> Optional[RowWeight]:
        """`weight` laid out for the kernel if the kernel sums as `reference(x, weight,
        bias)` does, bit for bit, on random rows with and without a bias (a different order
        of the sums shows in such a row almost surely); else None."""
        run = kernel()
        if run is None or weight.dtype != torch.float32 or weight.device.type != "cpu":
            return None
        row_weight = cls(weight, run)
        generator = torch.Generator().manual_seed(0)
        for _ in range(2):
            x = torch.randn(1, row_weight.inputs, generator=generator)
            bias = torch.randn(row_weight.outputs, generator=generator)
            for b in (bias, None):
                if not torch.equal(row_weight(x, b), reference(x, weight, b)):
                    return None
        return row_weight


class RowWeights:
    """Each weight's `RowWeight` (or None where the kernel does not sum as the reference
    does), made on first use and again if the weight changes; dropped with the weight. A
    tensor made under `torch.inference_mode` counts no changes: it gets None."""

    def __init__(self, reference: Callable[[Tensor, Tensor, Optional[Tensor]], Tensor]):
        self.reference = reference
        self.held: dict[int, tuple[weakref.ref, int, Optional[RowWeight]]] = {}

    def __call__(self, weight: Tensor) -> Optional[RowWeight]:
        if weight.is_inference():  # it counts no changes: it could change unseen
            return None
        key = id(weight)
        entry = self.held.get(key)
        if entry is None or entry[0]() is not weight or entry[1] != weight._version:
            entry = (weakref.ref(weight, lambda _, k=key: self.held.pop(k, None)),
                     weight._version, RowWeight.of(weight, self.reference))
            self.held[key] = entry
        return entry[2]
