"""A few rows times a weight in `fewrows`'s C kernel: x Wᵀ + b, each row summed alike
whatever rows are beside it, taken for a weight only where it gives the reference's sums
bit for bit, and nothing at all without a C compiler."""

from __future__ import annotations

from typing import Optional

import pytest
import torch
from torch import Tensor

from transcli.inference import fewrows
from transcli.inference.cpu_matmul import ONEDNN, linear, onednn_linear
from transcli.inference.fewrows import BLOCK, MOST_ROWS, RowWeight, RowWeights, blocked

needs_kernel = pytest.mark.skipif(fewrows.kernel() is None, reason="no C compiler here")


def sequential_sums(x: Tensor, weight: Tensor, bias: Optional[Tensor], part: int = 0
                    ) -> Tensor:
    """x Wᵀ + b summed as the kernel sums: input by input, each product added with one
    rounding to float32 (exact in float64, then rounded), in parts of `part` inputs (0: one
    part) whose sums are added in order, the bias last."""
    inputs = x.size(1)
    part = part or inputs
    products = x[0].double()[None, :] * weight.double()  # exact
    total = None
    for start in range(0, inputs, part):
        sum_ = products[:, start].float()
        for k in range(start + 1, min(start + part, inputs)):
            sum_ = (sum_.double() + products[:, k]).float()
        total = sum_ if total is None else total + sum_
    return (total if bias is None else total + bias)[None]


def test_blocked_lays_out_blocks_of_outputs_padded_with_zeros():
    weight = torch.arange(70 * 3, dtype=torch.float32).view(70, 3)
    layout = blocked(weight)
    assert layout.shape == (2, 3, BLOCK) and layout.is_contiguous()
    assert torch.equal(layout[0], weight[:BLOCK].t()) and torch.equal(layout[1, :, :6],
                                                                      weight[BLOCK:].t())
    assert not layout[1, :, 6:].any()


@needs_kernel
@pytest.mark.parametrize("outputs, inputs, part", [(70, 5, 5), (BLOCK, 16, 16), (3, 40, 40),
                                                   (130, 1, 1), (70, 40, 16), (20, 48, 24)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_the_kernel_sums_input_by_input_in_parts_then_adds_the_bias(outputs, inputs, part,
                                                                     with_bias):
    torch.manual_seed(0)
    x, weight = torch.randn(1, inputs), torch.randn(outputs, inputs)
    bias = torch.randn(outputs) if with_bias else None
    got = RowWeight(weight, fewrows.kernel(), part)(x, bias)
    assert got.shape == (1, outputs)
    assert torch.equal(got, sequential_sums(x, weight, bias, part))
    torch.testing.assert_close(got, torch.nn.functional.linear(x, weight, bias))


@needs_kernel
def test_a_weight_is_taken_only_where_the_kernel_sums_as_the_reference():
    torch.manual_seed(0)
    weight = torch.randn(40, 24)
    assert RowWeight.of(weight, sequential_sums).part == 24
    in_parts = RowWeight.of(weight, lambda x, w, b: sequential_sums(x, w, b, 8))
    assert in_parts is None  # 8 is none of PARTS
    wide = torch.randn(8, 1500)
    assert RowWeight.of(wide, lambda x, w, b: sequential_sums(x, w, b, 1024)).part == 1024
    assert RowWeight.of(wide, lambda x, w, b: sequential_sums(x, w, b, 512)).part == 512
    in_float64 = lambda x, w, b: torch.nn.functional.linear(  # noqa: E731
        x.double(), w.double(), None if b is None else b.double()).float()
    assert RowWeight.of(weight, in_float64) is None  # rounded once: other sums
    assert RowWeight.of(weight.double(), sequential_sums) is None


@needs_kernel
def test_a_weight_changed_in_place_is_laid_out_again():
    torch.manual_seed(0)
    weights, weight, x = RowWeights(sequential_sums), torch.randn(8, 16), torch.randn(1, 16)
    before = weights(weight)
    assert weights(weight) is before
    with torch.no_grad():
        weight.mul_(2.0)
    assert torch.equal(weights(weight)(x), sequential_sums(x, weight, None))
    with torch.inference_mode():
        made_there = torch.randn(8, 16)
    assert weights(made_there) is None  # it counts no changes


def test_without_a_compiler_there_is_no_kernel(monkeypatch):
    monkeypatch.setenv("CC", "no-such-compiler-here")
    fewrows.kernel.cache_clear()
    try:
        assert fewrows.kernel() is None
        assert RowWeight.of(torch.randn(8, 16), sequential_sums) is None
    finally:
        fewrows.kernel.cache_clear()


@needs_kernel
@pytest.mark.parametrize("part", [24, 10])
def test_each_row_gets_the_sums_it_gets_alone(part):
    """Rows go through the kernel in groups of up to four: any number of rows gives each
    the sums of `sequential_sums`, as alone."""
    torch.manual_seed(0)
    x, weight, bias = torch.randn(11, 24), torch.randn(70, 24), torch.randn(70)
    row_weight = RowWeight(weight, fewrows.kernel(), part)
    alone = torch.cat([sequential_sums(x[i:i + 1], weight, bias, part) for i in range(11)])
    for rows in range(1, 12):
        assert torch.equal(row_weight(x[:rows], bias), alone[:rows])


@pytest.mark.skipif(not ONEDNN, reason="this torch build has no oneDNN")
def test_a_few_rows_get_the_sums_oneDNN_gives_them_among_others():
    """Where the kernel takes a weight, it gives up to MOST_ROWS rows the numbers oneDNN
    gives them in a batch; where it does not, oneDNN does (a single row padded to two)."""
    torch.manual_seed(0)
    for weight in (torch.randn(960, 320), torch.randn(8000, 320), torch.randn(320, 1280)):
        bias, rows = torch.randn(weight.size(0)), torch.randn(40, weight.size(1))
        with torch.inference_mode():
            every, unbiased = onednn_linear(rows, weight, bias), onednn_linear(rows, weight)
            for count in (1, 2, 3, 5, MOST_ROWS):
                assert torch.equal(linear(rows[:count], weight, bias), every[:count])
                assert torch.equal(linear(rows[:count], weight), unbiased[:count])
