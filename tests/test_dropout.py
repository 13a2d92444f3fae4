"""transcli.model.dropout: the CPU mask drawn 16 bits an element, checked against the
binomial statistics of a Bernoulli(p) mask and the definition of dropout's gradient."""

from __future__ import annotations

import math

import pytest
import torch

from transcli.model.dropout import LEVELS, Dropout, drop_rate

COUNT = 400_000  # elements: the rate's standard error is about 5e-4 at p = 0.1


def dropped(p: float, count: int = COUNT, seed: int = 0) -> torch.Tensor:
    torch.manual_seed(seed)
    return Dropout(p).train()(torch.ones(count)) == 0


def within(observed: float, rate: float, count: int, sigmas: float = 5.0) -> bool:
    return abs(observed - rate) <= sigmas * math.sqrt(rate * (1 - rate) / count)


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_each_element_is_dropped_with_probability_p(p: float) -> None:
    assert within(dropped(p).float().mean().item(), p, COUNT)


def test_the_lanes_of_one_random_word_are_independent() -> None:
    """Four elements share a 64-bit word: each lane alone, and every pair of lanes
    together, must drop at Bernoulli rates (p, and p squared)."""
    p = 0.3
    lanes = dropped(p).view(-1, 4).float()
    words = lanes.size(0)
    for i in range(4):
        assert within(lanes[:, i].mean().item(), p, words)
        for j in range(i + 1, 4):
            assert within((lanes[:, i] * lanes[:, j]).mean().item(), p * p, words)


def test_kept_values_are_scaled_to_keep_the_expectation() -> None:
    p = 0.1
    torch.manual_seed(1)
    x = torch.full((1000,), 3.0)
    y = Dropout(p).train()(x)
    kept = y[y != 0]
    assert torch.allclose(kept, torch.full_like(kept, 3.0 / (1 - drop_rate(p))))
    assert drop_rate(p) == 6554 / LEVELS and abs(drop_rate(p) - p) < 1 / LEVELS


def test_the_gradient_is_the_same_mask_and_scale() -> None:
    torch.manual_seed(2)
    x = torch.randn(64, 32, requires_grad=True)
    y = Dropout(0.25).train()(x)
    upstream = torch.randn(64, 32)
    y.backward(upstream)
    factor = y.detach() / x.detach()  # 0 where dropped, 1 / (1 - rate) where kept
    assert torch.allclose(x.grad, upstream * factor, atol=1e-6)


def test_bf16_stays_bf16() -> None:
    torch.manual_seed(3)
    y = Dropout(0.1).train()(torch.ones(4096, dtype=torch.bfloat16))
    assert y.dtype == torch.bfloat16
    kept = torch.tensor(1 / (1 - drop_rate(0.1))).bfloat16().item()
    assert set(y.unique().tolist()) == {0.0, kept}


def test_the_same_seed_draws_the_same_mask_and_eval_is_the_identity() -> None:
    assert torch.equal(dropped(0.1, 10_000, seed=5), dropped(0.1, 10_000, seed=5))
    assert not torch.equal(dropped(0.1, 10_000, seed=5), dropped(0.1, 10_000, seed=6))
    x = torch.randn(10, 7)
    assert Dropout(0.1).eval()(x) is x and Dropout(0.0).train()(x) is x


def test_odd_sizes_and_extreme_rates() -> None:
    torch.manual_seed(4)
    assert Dropout(0.5).train()(torch.ones(3, 5, 7)).shape == (3, 5, 7)
    assert drop_rate(0.0) == 0.0 and drop_rate(0.9999999) == (LEVELS - 1) / LEVELS
    assert dropped(1e-9, 10_000).sum() == 0
