"""A few rows times a weight, x Wᵀ + b, in a small C kernel with oneDNN's sums, bit for bit.

A sentence decoded alone feeds one row to every product of a decoding step, and a batch
near its end a few. oneDNN (`cpu_matmul.linear`) pays about 17 us of set-up per product,
gets a single row padded to two (alone it sums another way), and its kernels stream the
weights of a few rows' product at about half the speed of this one: the products of one
to four rows cost about half as much here, of eight about three quarters; from 12 rows
on oneDNN is as fast (the CPU recipe's decoder products, one thread, this AMD AVX512 CPU).
So `cpu_matmul.linear` sends products of up to `MOST_ROWS` rows here.

The kernel sums each output as oneDNN's kernels do on the AVX512 CPU here: the products in
the order of the inputs, each added with one rounding (a fused multiply-add), in parts of
1,024 inputs whose sums are then added in order, the bias last. That is a property of
oneDNN's kernels, found by trying, not a promise, so every weight is checked before the
kernel takes it (`RowWeight.of`): on random rows, with and without a bias, its results
must equal oneDNN's bit for bit, with parts of 1,024 inputs or of another of `PARTS`;
else that weight stays with oneDNN. Each row's sums do not depend on the rows beside
it, so a sentence gets the numbers it gets in any batch, as before.

The kernel reads each weight in a layout of its own, made on first use: another copy of the
weights it takes, at most the model's size again (peak memory of `bench.translate_speed`'s
torch worker, cpu-1h model: 625 MiB against 558 before).

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
MOST_ROWS = 8  # products of up to this many rows go to the kernel (see above)
# The parts of its inputs the kernel may sum apart (then add), tried in turn: oneDNN's
# kernels on the AVX512 CPU here sum 1,024 inputs at a time.
PARTS = (1024, 512, 256, 2048, 4096)

SOURCE = r"""
#include <math.h>
#define BLOCK 64
#define GROUP 4

/* Rows x[0], ..., x[G-1] (each K long, one after the other) times one block of w, written
   to y's rows (each N long) at its `outputs` columns: y[i][n] = x[i][0] w[n][0] + ...
   + x[i][K-1] w[n][K-1] + b[n], the inputs taken in parts of `part`, each part's products
   summed in input order, each added with one rounding (fmaf); the parts' sums added in
   order, then the bias. Each row's sums are the same whatever G is: G only says how many
   rows share a reading of the block (inlined for each G, their sums stay in registers). */
static inline __attribute__((always_inline)) void block_rows(
        const float *x, const int G, const float *block, const float *b, float *y, long K,
        long N, long outputs, long part) {
    float total[GROUP][BLOCK], sum[GROUP][BLOCK];
    for (long start = 0; start < K; start += part) {
        long end = K - start < part ? K : start + part;
        for (int i = 0; i < G; i++)
            for (int j = 0; j < BLOCK; j++)
                sum[i][j] = x[i * K + start] * block[start * BLOCK + j];
        for (long k = start + 1; k < end; k++) {
            const float *wk = block + k * BLOCK;
            for (int i = 0; i < G; i++) {
                const float xk = x[i * K + k];
                for (int j = 0; j < BLOCK; j++) sum[i][j] = fmaf(xk, wk[j], sum[i][j]);
            }
        }
        for (int i = 0; i < G; i++)
            for (int j = 0; j < BLOCK; j++)
                total[i][j] = start ? total[i][j] + sum[i][j] : sum[i][j];
    }
    for (int i = 0; i < G; i++)
        for (long j = 0; j < outputs; j++) y[i * N + j] = b ? total[i][j] + b[j] : total[i][j];
}

/* y = x wT + b for R rows of x: w is laid out in blocks of BLOCK outputs, w[n][k] at
   (n / BLOCK) * K * BLOCK + k * BLOCK + n % BLOCK, so that a block's loop reads consecutive
   memory; up to GROUP rows at a time share each reading of a block. */
void rows_product(const float *x, const float *w, const float *b, float *y, long R, long K,
                  long N, long part) {
    for (long first = 0; first < N; first += BLOCK) {
        const float *block = w + first * K, *bias = b ? b + first : 0;
        long outputs = N - first < BLOCK ? N - first : BLOCK;
        for (long row = 0; row < R; row += GROUP) {
            const float *xs = x + row * K;
            float *ys = y + row * N + first;
            switch (R - row) {
                case 1: block_rows(xs, 1, block, bias, ys, K, N, outputs, part); break;
                case 2: block_rows(xs, 2, block, bias, ys, K, N, outputs, part); break;
                case 3: block_rows(xs, 3, block, bias, ys, K, N, outputs, part); break;
                default: block_rows(xs, GROUP, block, bias, ys, K, N, outputs, part);
            }
        }
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
    with tempfile.TemporaryDirectory(prefix="transcli-fewrows-", ignore_cleanup_errors=True
                                     ) as folder:
        source, library = Path(folder) / "fewrows.c", Path(folder) / "fewrows.so"
        source.write_text(SOURCE, encoding="ascii")
        try:
            subprocess.run([cc, *FLAGS, str(source), "-o", str(library)], check=True,
                           capture_output=True, timeout=120)
            function = ctypes.CDLL(str(library)).rows_product  # loaded: the file may go
        except (OSError, subprocess.SubprocessError):
            return None
    function.restype = None
    function.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_long] * 4
    return function


def blocked(weight: Tensor) -> Tensor:
    """[N, K] as the kernel reads it: [ceil(N / BLOCK), K, BLOCK], zeros past N."""
    outputs, inputs = weight.shape
    padded = weight.new_zeros(-(-outputs // BLOCK) * BLOCK, inputs)
    padded[:outputs] = weight
    return padded.view(-1, BLOCK, inputs).transpose(1, 2).contiguous()


class RowWeight:
    """A float32 CPU weight [N, K] laid out for the kernel, which sums its inputs in parts
    of `part`."""

    def __init__(self, weight: Tensor, run: Callable[..., None], part: int):
        self.outputs, self.inputs = weight.shape
        self.layout = blocked(weight.detach())
        self.run, self.part = run, part

    def __call__(self, x: Tensor, bias: Optional[Tensor] = None) -> Tensor:
        """x [rows, K] (contiguous float32) Wᵀ + bias -> [rows, N]."""
        y = x.new_empty(x.size(0), self.outputs)
        self.run(x.data_ptr(), self.layout.data_ptr(),
                 None if bias is None else bias.data_ptr(), y.data_ptr(),
                 x.size(0), self.inputs, self.outputs, self.part)
        return y

    @classmethod
    def of(cls, weight: Tensor, reference: Callable[[Tensor, Tensor, Optional[Tensor]], Tensor]
           ) -> Optional[RowWeight]:
        """`weight` laid out for the kernel, with the first of `PARTS` (or all its inputs
        in one part) whose sums are those of `reference(x, weight, bias)`, bit for bit, on
        random rows with and without a bias (a different order of the sums shows in such
        a row almost surely); None if none is."""
        run = kernel()
        if run is None or weight.dtype != torch.float32 or weight.device.type != "cpu":
            return None
        outputs, inputs = weight.shape
        generator = torch.Generator().manual_seed(0)
        cases = [(torch.randn(1, inputs, generator=generator), bias) for _ in range(2)
                 for bias in (torch.randn(outputs, generator=generator), None)]
        expected = [reference(x, weight, bias) for x, bias in cases]
        row_weight = cls(weight, run, inputs)
        for part in dict.fromkeys(min(part, inputs) for part in (*PARTS, inputs)):
            row_weight.part = part
            if all(torch.equal(row_weight(x, bias), y) for (x, bias), y in zip(cases, expected)):
                return row_weight
        return None


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
