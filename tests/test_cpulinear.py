"""Inference's float32 products through oneDNN (`transcli.cpulinear`): the same values
as x @ W^T + b written out, the same model outputs, and training left on torch's path."""

from __future__ import annotations

import copy

import pytest
import torch
from conftest import PAIRS
from memorised import memorised_model, pad
from torch import nn

from transcli.cpulinear import ONEDNN, OneDnnLinear, linear, onednn_linears
from transcli.vocab import BOS_ID, EOS_ID

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


@pytest.mark.parametrize("shape, transpose", [((7, 16), False), ((2, 5, 16), False),
                                              ((5, 2, 16), True), ((3, 1, 16), False)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_is_x_times_w_transposed_plus_b(shape, transpose, with_bias):
    torch.manual_seed(0)
    x = torch.randn(*shape, dtype=torch.float64)
    x = x.transpose(0, 1) if transpose else x  # a non-contiguous input too
    w, b = torch.randn(24, 16, dtype=torch.float64), torch.randn(24, dtype=torch.float64)
    expected = (x @ w.t() + (b if with_bias else 0)).float()
    with torch.inference_mode():
        got = linear(x.float(), w.float(), b.float() if with_bias else None)
    assert got.shape == expected.shape and got.dtype == torch.float32
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_training_keeps_autograd():
    layer = OneDnnLinear(8, 4)
    out = layer(torch.randn(3, 8))
    assert out.grad_fn is not None  # grad enabled: torch's own F.linear
    out.sum().backward()
    assert layer.weight.grad is not None


@pytest.mark.skipif(not ONEDNN, reason="this torch build has no oneDNN")
def test_a_swapped_model_gives_the_same_log_probs(tiny_spm, tiny_tokenizer):
    model = copy.deepcopy(memorised_model(tiny_spm, tuple(PAIRS)))
    src = pad([ids + [EOS_ID] for ids in tiny_tokenizer.encode([en for en, _ in PAIRS])])
    tgt = pad([[BOS_ID] + ids for ids in tiny_tokenizer.encode([es for _, es in PAIRS])])
    with torch.inference_mode():
        before = model(src, tgt)
        keys = model.state_dict().keys()
        swapped = onednn_linears(model)
        after = swapped(src, tgt)
    assert swapped.state_dict().keys() == keys
    assert not any(type(m) is nn.Linear for m in swapped.modules())
    assert any(isinstance(m, OneDnnLinear) for m in swapped.modules())
    assert swapped.output_product is linear  # the tied output layer's product too
    torch.testing.assert_close(after, before, rtol=0, atol=1e-4)
