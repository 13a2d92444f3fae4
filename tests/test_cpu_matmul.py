"""Inference's float32 products through oneDNN or weight-first through the BLAS
(`transcli.inference.cpu_matmul`): the same values as x @ W^T + b written out, the same
model outputs, and training left on torch's path."""

from __future__ import annotations

import copy
import shutil
import subprocess

import pytest
import torch
from helpers import PAIRS
from helpers.memorised import memorised_model, pad
from torch import nn

from transcli.inference import cpu_matmul as cpulinear
from transcli.inference.cpu_matmul import (
    FEW_ROWS,
    ONEDNN,
    BlasLinear,
    OneDnnLinear,
    blas_linear,
    blas_output_product,
    bucket,
    cpu_linears,
    cpu_vendor,
    linear,
    output_product,
    use_onednn,
)
from transcli.model.kvcache import StepBuffers
from transcli.model.vocab import BOS_ID, EOS_ID


@pytest.mark.parametrize("shape, transpose", [((7, 16), False), ((2, 5, 16), False),
                                              ((5, 2, 16), True), ((3, 1, 16), False),
                                              ((17, 16), False), ((3, 11, 16), True),
                                              ((1, 16), False), ((5, 9, 16), True)])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("product", [linear, blas_linear])
def test_linear_is_x_times_w_transposed_plus_b(shape, transpose, with_bias, product):
    torch.manual_seed(0)
    x = torch.randn(*shape, dtype=torch.float64)
    x = x.transpose(0, 1) if transpose else x  # a non-contiguous input too
    w, b = torch.randn(24, 16, dtype=torch.float64), torch.randn(24, dtype=torch.float64)
    expected = (x @ w.t() + (b if with_bias else 0)).float()
    with torch.inference_mode():
        got = product(x.float(), w.float(), b.float() if with_bias else None)
    assert got.shape == expected.shape and got.dtype == torch.float32 and got.is_contiguous()
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows", [1, 2, 3, FEW_ROWS, FEW_ROWS + 1, 70])
@pytest.mark.parametrize("into", [False, True])
def test_blas_output_product_is_hidden_times_w_transposed(rows, into):
    """2 to FEW_ROWS rows take the weight-first order, others the usual one; both give
    hidden Wᵀ, and into the step's buffer when given the buffers."""
    torch.manual_seed(0)
    hidden, w = torch.randn(rows, 16, dtype=torch.float64), torch.randn(50, 16, dtype=torch.float64)
    buffers = StepBuffers() if into else None
    with torch.inference_mode():
        got = blas_output_product(hidden.float(), w.float(), buffers)
    assert got.shape == (rows, 50) and got.is_contiguous()
    assert not into or got.data_ptr() == buffers.held["logits"].data_ptr()
    torch.testing.assert_close(got, (hidden @ w.t()).float(), rtol=1e-5, atol=1e-5)


def test_bucket_sizes_are_few_and_close_above():
    # Hand-worked: rows < 16 are kept; from 16 on, the step is rows' highest power of two / 8.
    rows = [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100, 150, 1000, 4097]
    assert [bucket(n) for n in rows] == [1, 2, 3, 7, 8, 9, 15, 16, 18, 32, 36, 104, 160,
                                         1024, 4608]
    sizes = {bucket(n) for n in range(1, 8193)}
    assert len(sizes) == 16 + 8 * 9  # 1..16, then 8 per power of two up to 8192
    assert all(n <= bucket(n) <= n * 1.125 for n in range(1, 8193))


@pytest.mark.parametrize("vendor, capability, expected", [
    ("AuthenticAMD", "AVX512", ONEDNN), ("AuthenticAMD", "AVX2", False),
    ("GenuineIntel", "AVX512", False), ("", "AVX512", False)])
def test_auto_takes_onednn_on_amd_cpus_with_avx512(monkeypatch, vendor, capability, expected):
    monkeypatch.setattr(cpulinear, "cpu_vendor", lambda: vendor)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    assert use_onednn("auto") == expected
    assert use_onednn("blas") is False and use_onednn("onednn") is True


@pytest.mark.skipif(shutil.which("lscpu") is None, reason="no lscpu here")
def test_cpu_vendor_is_the_one_lscpu_names():
    lines = subprocess.run(["lscpu"], capture_output=True, text=True,
                           env={"LC_ALL": "C"}).stdout.splitlines()
    named = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Vendor ID:")]
    assert cpu_vendor() == (named[0] if named else "")


@pytest.mark.parametrize("kind", [OneDnnLinear, BlasLinear])
def test_training_keeps_autograd(kind):
    """With grad enabled the layer is torch's own F.linear: the same gradients as a plain
    nn.Linear with the same weights."""
    torch.manual_seed(0)
    layer, plain = kind(8, 4), nn.Linear(8, 4)
    plain.load_state_dict(layer.state_dict())
    x = torch.randn(3, 8)
    (layer(x) * torch.arange(4.0)).sum().backward()
    (plain(x) * torch.arange(4.0)).sum().backward()
    assert torch.equal(layer.weight.grad, plain.weight.grad)
    assert torch.equal(layer.bias.grad, plain.bias.grad)


SWAPS = [pytest.param(True, OneDnnLinear, output_product, marks=pytest.mark.skipif(
             not ONEDNN, reason="this torch build has no oneDNN")),
         pytest.param(False, BlasLinear, blas_output_product)]


@pytest.mark.slow
@pytest.mark.parametrize("onednn, kind, product", SWAPS)
def test_a_swapped_model_gives_the_same_log_probs(tiny_spm, tiny_tokenizer, onednn, kind,
                                                  product):
    """Teacher forcing (many rows per product) and decoding steps of three sentences (few
    rows) give the unswapped model's log-probs."""
    model = copy.deepcopy(memorised_model(tiny_spm, tuple(PAIRS)))
    src = pad([ids + [EOS_ID] for ids in tiny_tokenizer.encode([en for en, _ in PAIRS])])
    tgt = pad([[BOS_ID] + ids for ids in tiny_tokenizer.encode([es for _, es in PAIRS])])
    with torch.inference_mode():
        before, steps_before = model(src, tgt), decode_steps(model, src[:3], tgt[:3])
        keys = model.state_dict().keys()
        swapped = cpu_linears(model, onednn)
        after, steps_after = swapped(src, tgt), decode_steps(swapped, src[:3], tgt[:3])
    assert swapped.state_dict().keys() == keys
    assert not any(type(m) is nn.Linear for m in swapped.modules())
    assert any(isinstance(m, kind) for m in swapped.modules())
    assert swapped.output_product is product  # the tied output layer's product too
    torch.testing.assert_close(after, before, rtol=0, atol=1e-4)
    torch.testing.assert_close(steps_after, steps_before, rtol=0, atol=1e-4)


def decode_steps(model: nn.Module, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """Log-probs [rows, steps, V] of cached decoding steps fed `tgt`'s tokens."""
    state = model.start_decoding(model.encode(src))
    return torch.stack([model.step(tgt[:, i], state) for i in range(tgt.size(1))], dim=1)


@pytest.mark.skipif(not ONEDNN, reason="this torch build has no oneDNN")
def test_packed_weights_give_onednn_s_own_sums_and_one_row_those_of_many():
    """`linear` lays each weight out once (`cpu_matmul.packed`): bit for bit the sums of
    oneDNN given the plain matrix, at every row count from two; a single row is padded to
    two, so it gets the sums it gets among others (alone, oneDNN sums it another way)."""
    torch.manual_seed(0)
    w, b = torch.randn(300, 64), torch.randn(300)
    x = torch.randn(40, 64)

    def plain(rows: torch.Tensor) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(rows, w, b, "none", [], "")

    with torch.inference_mode():
        every = plain(x)
        for rows in (2, 3, 16, 17, 33, 40):
            assert torch.equal(linear(x[:rows], w, b), plain(x[:rows]))
            assert torch.equal(linear(x[:rows], w, b), every[:rows])
        assert torch.equal(linear(x[:1], w, b), every[:1])


@pytest.mark.skipif(not ONEDNN, reason="this torch build has no oneDNN")
def test_a_weight_changed_in_place_is_packed_again():
    torch.manual_seed(0)
    layer, x = OneDnnLinear(16, 8), torch.randn(4, 16)
    with torch.inference_mode():
        before = layer(x)
    with torch.no_grad():
        layer.weight.mul_(2.0)
    with torch.inference_mode():
        after = layer(x)
    torch.testing.assert_close(after - layer.bias, 2 * (before - layer.bias))
