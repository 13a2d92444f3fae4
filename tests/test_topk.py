"""`topk.top_k` against each row sorted in plain Python: the k largest values, largest
first, at the columns that hold them; with k = 1 the first column holding the maximum."""

from __future__ import annotations

import pytest
import torch

from transcli.inference.topk import CHUNK, FEW_ROWS, top_k


def expected(row: list[float], k: int) -> list[float]:
    return sorted(row, reverse=True)[:k]


@pytest.mark.parametrize("rows", [1, FEW_ROWS - 1, FEW_ROWS, 33])
@pytest.mark.parametrize("columns", [3 * CHUNK, 8000, 8003, CHUNK * 11 + 1])
@pytest.mark.parametrize("k", [1, 2, 10])
def test_largest_values_at_their_columns(rows: int, columns: int, k: int) -> None:
    generator = torch.Generator().manual_seed(rows * columns + k)
    x = torch.randn(rows, columns, generator=generator).log_softmax(dim=-1)
    values, indices = top_k(x, k)
    assert values.shape == indices.shape == (rows, k)
    for row, got, at in zip(x.tolist(), values.tolist(), indices.tolist()):
        assert got == expected(row, k)
        assert len(set(at)) == k
        assert [row[i] for i in at] == got


@pytest.mark.parametrize("columns", [8000, 8003])
def test_one_largest_is_the_first_on_a_tie(columns: int) -> None:
    rows = 2 * FEW_ROWS
    x = torch.randn(rows, columns, generator=torch.Generator().manual_seed(3))
    top = float(x.max()) + 1.0
    ties = [(5, 900), (CHUNK - 1, CHUNK), (700, columns - 1), (0, columns - 2),
            (4 * CHUNK + 3, 4 * CHUNK + 9), (columns - 2, columns - 1)]
    for row, tie in enumerate(ties * 2):
        for column in tie:
            x[row, column] = top
    values, indices = top_k(x, 1)
    for row, got, at in zip(x.tolist(), values[:, 0].tolist(), indices[:, 0].tolist()):
        assert got == max(row)
        assert at == row.index(max(row))


def test_masked_entries_and_ties_among_the_k() -> None:
    x = torch.full((FEW_ROWS + 1, 1000), float("-inf"))
    x[:, 10:20] = 2.0  # ten equal entries, in one chunk
    x[:, 500] = 3.0
    x[:, 999] = 1.0  # past the last whole chunk
    values, indices = top_k(x, 12)
    for got, at in zip(values.tolist(), indices.tolist()):
        assert got == [3.0] + [2.0] * 10 + [1.0]
        assert at[0] == 500 and sorted(at[1:11]) == list(range(10, 20)) and at[11] == 999


def test_a_strided_input_gives_torchs_values() -> None:
    """A transposed (non-contiguous) matrix: the values of `torch.topk`, at columns
    holding them."""
    x = torch.randn(700, 20, generator=torch.Generator().manual_seed(9)).t()
    for k in (1, 3, 10):
        values, indices = top_k(x, k)
        assert torch.equal(values, x.topk(k, dim=-1).values)
        assert torch.equal(x.gather(1, indices), values)
