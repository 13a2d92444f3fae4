"""The fused output-layer loss against the plain log-softmax reference, and the
learning-rate schedules at hand-computed points."""

from __future__ import annotations

import math

import pytest
import torch

from transcli.training import objective
from transcli.training.objective import LossSums, label_smoothed_nll, output_loss
from transcli.training.schedules import decay_clock, learning_rate


def _case(dtype: torch.dtype, rows: int = 700, vocab: int = 53, d: int = 16, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(3, rows, d, generator=g, dtype=dtype, requires_grad=True)
    weight = torch.randn(vocab, d, generator=g, dtype=dtype, requires_grad=True)
    target = torch.randint(0, vocab, (3, rows), generator=g)
    target[:, -7:] = 0  # padding
    return hidden, weight, target


@pytest.fixture(params=["eager", "compiled"])
def epilogue(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each chunk's softmax and gradient as plain torch ops, or compiled (as on the CPU for
    large chunks): every chunk compiled here, however small."""
    if request.param == "compiled":
        if objective.compiled_epilogue() is None:
            pytest.skip("no C++ compiler for torch.compile here")
        monkeypatch.setattr(objective, "COMPILE_MIN_LOGITS", 0)
    return request.param


@pytest.mark.parametrize("eps,epilogue", [(0.0, "eager"), (0.1, "eager"), (0.1, "compiled")],
                         indirect=["epilogue"])
def test_output_loss_equals_log_softmax_reference_and_its_gradients(eps: float,
                                                                   epilogue: str) -> None:
    """More rows than one chunk, padding included: values and both gradients agree with
    plain autograd through log_softmax + label_smoothed_nll (an independent path), with
    the chunks' epilogue eager or compiled."""
    hidden, weight, target = _case(torch.float32)
    ref = label_smoothed_nll(torch.log_softmax(hidden @ weight.t(), -1), target, eps, pad_id=0)
    (ref[0] * 0.3).backward()
    ref_grads = hidden.grad.clone(), weight.grad.clone()
    hidden.grad = weight.grad = None
    fused = output_loss(hidden, weight, target, eps, pad_id=0)
    (fused[0] * 0.3).backward()
    assert fused.tolist() == pytest.approx([r.item() for r in ref], rel=1e-5)
    assert torch.allclose(hidden.grad, ref_grads[0], atol=1e-5)
    assert torch.allclose(weight.grad, ref_grads[1], atol=1e-4)


def test_output_loss_by_hand_on_one_row() -> None:
    """logits [2, 0, 0], gold 0, eps 0.1: loss = log Z - 0.9 * 2 - 0.1 * mean(logits)."""
    hidden = torch.tensor([[1.0, 0.0]])
    weight = torch.tensor([[2.0, 0.0], [0.0, 1.0], [0.0, -1.0]])  # logits 2, 0, 0
    loss, nll, tokens, correct = output_loss(hidden, weight, torch.tensor([0]), 0.1, 5).tolist()
    log_z = math.log(math.exp(2) + 2)
    assert nll == pytest.approx(log_z - 2)
    assert loss == pytest.approx(0.9 * (log_z - 2) + 0.1 * (log_z - 2 / 3))
    assert (tokens, correct) == (1.0, 1.0)


def test_output_loss_under_bf16_autocast_is_close_and_without_grad_computes_none(
        epilogue: str) -> None:
    hidden, weight, target = _case(torch.float32, rows=40)
    exact = output_loss(hidden, weight, target, 0.1, 0)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = output_loss(hidden, weight, target, 0.1, 0)
    mixed[0].backward()
    assert mixed[0].item() == pytest.approx(exact[0].item(), rel=2e-2)
    assert hidden.grad.dtype == torch.float32 and weight.grad.dtype == torch.float32
    with torch.no_grad():
        assert not output_loss(hidden, weight, target, 0.1, 0).requires_grad


def test_loss_sums_means() -> None:
    sums = LossSums.of(torch.tensor([6.0, 4.0, 2.0, 1.0]))
    sums.add(LossSums(2.0, 2.0, 2.0, 1.0))
    assert sums.means() == pytest.approx({"loss": 2.0, "nll": 1.5, "ppl": math.exp(1.5),
                                          "acc": 0.5})


def test_schedules_share_the_warm_up_and_peak_then_decay_as_named() -> None:
    peak = 2.0 * 256 ** -0.5 * 100 ** -0.5  # factor 2, d_model 256, warm-up 100
    args = dict(d_model=256, warmup=100, factor=2.0, total=1100)
    for schedule in ("noam", "linear", "cosine"):
        assert learning_rate(schedule, 50, **args) == pytest.approx(peak / 2)
        assert learning_rate(schedule, 100, **args) == pytest.approx(peak)
    assert learning_rate("noam", 400, **args) == pytest.approx(peak / 2)  # (400/100)^-0.5
    assert learning_rate("linear", 600, **args) == pytest.approx(peak / 2)  # half way down
    assert learning_rate("cosine", 600, **args) == pytest.approx(peak / 2)  # cos(pi/2) = 0
    assert learning_rate("cosine", 350, **args) == pytest.approx(peak * (1 + 2 ** -0.5) / 2)
    assert learning_rate("linear", 1100, **args) == 0.0
    assert learning_rate("linear", 1100, **args, final=0.1) == pytest.approx(peak / 10)
    assert learning_rate("cosine", 5000, **args) == pytest.approx(0.0, abs=1e-12)


def test_a_time_budget_ends_the_decay_when_it_runs_ahead_of_the_steps() -> None:
    peak = 2.0 * 256 ** -0.5 * 100 ** -0.5
    args = dict(d_model=256, warmup=100, factor=2.0, total=1100)
    # Warm-up ended 60 s in; a 10-minute budget leaves 540 s: 330 s is half of it.
    clock = decay_clock(seconds=330.0, warmup_seconds=60.0, budget_minutes=10)
    assert clock == pytest.approx(0.5)
    assert learning_rate("linear", 200, **args, clock=clock) == pytest.approx(peak / 2)
    steps_ahead = learning_rate("linear", 850, **args, clock=clock)  # 3/4 of the steps
    assert steps_ahead == pytest.approx(peak / 4)
    assert learning_rate("linear", 50, **args, clock=0.9) == pytest.approx(peak / 2)  # warming up
    assert learning_rate("linear", 200, **args, clock=decay_clock(700.0, 60.0, 10)) == 0.0
    assert decay_clock(330.0, 60.0, budget_minutes=0) == 0.0  # no budget: steps alone
    assert decay_clock(30.0, 60.0, 10) == 0.0
    assert decay_clock(700.0, 700.0, 10) == 1.0  # warm-up outlasted the budget


def test_the_loss_over_real_rows_only_equals_the_loss_over_every_row() -> None:
    """TeacherForcing given the batch's real rows (`Batch.rows`) skips padding before the
    output layer: the same sums and gradients as scoring every row with padding masked."""
    from transcli.config.schema import ModelConfig
    from transcli.data.batching import assemble, rows_from_lists
    from transcli.model.transformer import Transformer
    from transcli.model.vocab import PAD_ID
    from transcli.training.objective import TeacherForcing

    torch.manual_seed(0)
    model = Transformer(ModelConfig(enc_layers=1, dec_layers=1, d_model=16, d_ff=32, heads=2,
                                    dropout=0.0), 50).double()
    g = torch.Generator().manual_seed(1)
    seqs = [torch.randint(4, 50, (n,), generator=g).tolist() for n in (3, 9, 1, 6)]
    batch = assemble(rows_from_lists(seqs[::-1]), rows_from_lists(seqs, 8))
    assert len(batch.rows) < batch.tgt_out.numel()  # there is padding to skip
    net = TeacherForcing(model, 0.1, PAD_ID)
    results = []
    for rows in (None, batch.rows):
        model.zero_grad()
        sums = net(batch.src, batch.tgt_in, batch.tgt_out, rows)
        sums[0].backward()
        results.append((sums.detach(), [p.grad.clone() for p in model.parameters()]))
    (full, full_grads), (real, real_grads) = results
    assert torch.allclose(full, real, rtol=1e-6, atol=1e-6)
    assert all(torch.allclose(a, b, rtol=1e-6, atol=1e-9) for a, b in zip(full_grads, real_grads))
