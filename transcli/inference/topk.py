"""The k largest entries of each row of a wide matrix: what search picks from next-token
log-probs [rows, vocab] every step.

`torch.topk` and `torch.max` along a row of thousands of entries run a scalar loop on
the CPU; `Tensor.amax` is vectorized. `top_k` first takes the maximum of each chunk of
`CHUNK` consecutive entries with `amax`, then looks for the k largest entries only in
the k chunks with the largest maxima (plus the columns past the last whole chunk): every
value of the top k is found there, since a chunk holding one has a maximum at least as
large, so it ranks among the k best chunks or ties with one holding an equal value. So a
step reads its log-probs once, plus k x CHUNK entries per row (`bench/topk_speed.py`;
README, "Benchmarks").
"""

from __future__ import annotations

import torch
from torch import Tensor

CHUNK = 64  # consecutive entries per chunk
FEW_ROWS = 8  # below this many rows, torch's max or topk: the chunks would cost more


def top_k(x: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """`x.topk(k, dim=-1)` for a 2-D `x` [rows, n]: the values [rows, k], largest first,
    and their column indices. With k = 1, the first column holding the row's maximum, as
    `x.max(dim=-1)` picks it; with k > 1, tied entries come in some order, as from
    `torch.topk`."""
    rows, n = x.shape
    chunks = n // CHUNK
    # torch's own: off the CPU, for a few rows, or where every chunk would be a candidate.
    if x.device.type != "cpu" or rows < FEW_ROWS or chunks <= k:
        values, indices = x.max(dim=-1, keepdim=True) if k == 1 else x.topk(k, dim=-1)
        return values, indices
    whole = chunks * CHUNK
    maxima = x[:, :whole].reshape(rows, chunks, CHUNK).amax(dim=-1)
    best = _largest(maxima, k)  # [rows, k] chunks
    columns = (best[:, :, None] * CHUNK
               + torch.arange(CHUNK, device=x.device)).view(rows, k * CHUNK)
    if whole < n:  # the columns past the last whole chunk are always candidates
        tail = torch.arange(whole, n, device=x.device).expand(rows, n - whole)
        columns = torch.cat([columns, tail], dim=1)
    candidates = x.gather(1, columns)
    pick = _largest(candidates, k)
    return candidates.gather(1, pick), columns.gather(1, pick)


def top_1(x: Tensor) -> tuple[Tensor, Tensor]:
    """`x.max(dim=-1)` for a 2-D `x` [rows, n]: each row's largest value and the first
    column holding it, [rows] each (`top_k` with k = 1)."""
    if x.device.type != "cpu" or x.size(0) < FEW_ROWS or x.size(1) // CHUNK <= 1:
        return x.max(dim=-1)
    values, indices = top_k(x, 1)
    return values[:, 0], indices[:, 0]


def _largest(x: Tensor, k: int) -> Tensor:
    """The column indices [rows, k] of each row's k largest entries, largest first; for
    k = 1 the first maximum (columns are in ascending order, so it is the leftmost)."""
    if k == 1:
        return x.argmax(dim=-1, keepdim=True)
    return x.topk(k, dim=-1).indices
