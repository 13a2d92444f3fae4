"""One update without waiting for the device: a non-finite update is skipped on the device
(weights and Adam's moments as they were), and the sums are read once per log line."""

from __future__ import annotations

import math

import pytest
import torch

from transcli.config.schema import TrainConfig
from transcli.training.optimization import Optimization
from transcli.training.state import DeviceSums


def model_and_optimization(fused: bool) -> tuple[torch.nn.Module, Optimization]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Linear(4, 3))
    opt = Optimization(model, TrainConfig(warmup_steps=1), 16, torch.device("cpu"))
    if not fused:  # the fallback Adam, for builds without fused kernels
        opt.adam = torch.optim.Adam(model.parameters(), lr=0.0)
    assert bool(opt.adam.defaults.get("fused")) == fused
    return model, opt


def backward(model: torch.nn.Module, scale: float) -> None:
    (model(torch.ones(2, 6)).sum() * scale).backward()


@pytest.mark.parametrize("fused", [True, False])
def test_a_skipped_update_leaves_weights_and_moments_as_they_were(fused: bool) -> None:
    model, opt = model_and_optimization(fused)
    backward(model, 1.0)
    opt.step(1, skip=torch.tensor(False))  # a first real update: moments are not zero
    before = [p.detach().clone() for p in model.parameters()]
    moments = {k: v.clone() for k, v in opt.adam.state[next(model.parameters())].items()}
    backward(model, math.nan)
    opt.step(2, skip=torch.tensor(True))
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    state = opt.adam.state[next(model.parameters())]
    assert all(torch.equal(moments[k], state[k]) for k in moments)  # the step count too
    backward(model, 1.0)
    opt.step(3, skip=torch.tensor(False))
    assert not all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_the_device_sums_add_on_the_device_and_names_the_first_bad_update() -> None:
    tally = DeviceSums(torch.device("cpu"))
    tally.add(torch.tensor([2.0, 1.0, 4.0, 3.0]), torch.tensor(0.5), torch.tensor(False), 1)
    tally.add(torch.tensor([6.0, 3.0, 4.0, 1.0]), torch.tensor(0.7), torch.tensor(True), 2)
    tally.add(torch.tensor([1.0, 1.0, 2.0, 2.0, 0.5, 2.0]), torch.tensor(0.9),
              torch.tensor(True), 3)  # with guided alignment: its cost and rows too
    sums, aligned, norm, bad = tally.read()
    assert (sums.loss, sums.nll, sums.tokens, sums.correct) == (9.0, 5.0, 10.0, 6.0)
    assert (aligned.cost, aligned.rows) == (0.5, 2.0) and aligned.means() == {"align_loss": 0.25}
    assert norm == pytest.approx(0.9) and bad == 2
    sums, aligned, norm, bad = tally.read()  # read again: the sums start over, the norm stays
    assert (sums.tokens, aligned.rows, bad) == (0.0, 0.0, 0) and norm == pytest.approx(0.9)
    assert aligned.means() == {}


def test_weight_decay_is_adamw_s_by_hand() -> None:
    """One update from zero moments with lr 0.1 and train.weight_decay 0.5: AdamW moves
    each weight by -lr * g / (|g| + eps) (the bias-corrected moments are g and g^2) and
    shrinks it by lr * decay * w, the decay apart from the gradient (Loshchilov & Hutter)."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 2)
    tc = TrainConfig(warmup_steps=1, weight_decay=0.5, adam_eps=1e-8)
    opt = Optimization(layer, tc, 16, torch.device("cpu"))
    assert isinstance(opt.adam, torch.optim.AdamW)
    before = layer.weight.detach().clone()
    (layer(torch.ones(1, 3)) * torch.tensor([1.0, -2.0])).sum().backward()
    grad = layer.weight.grad.clone()
    lr = opt.step(1)
    expected = before * (1 - lr * 0.5) - lr * grad / (grad.abs() + 1e-8)
    assert torch.allclose(layer.weight, expected, atol=1e-6)
    plain = Optimization(torch.nn.Linear(3, 2), TrainConfig(), 16, torch.device("cpu"))
    assert type(plain.adam) is torch.optim.Adam  # no decay: the paper's Adam
