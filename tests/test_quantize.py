"""The torch engine's int8 weights (`decode.quantize: int8`): every Linear layer and the
output layer, tied to the embedding or not, against int8 arithmetic written out by hand."""

from __future__ import annotations

import math

import pytest
import torch
from helpers import PAIRS
from torch import nn

from transcli.config.schema import DecodeConfig, ModelConfig
from transcli.inference.quantize import Int8OutputProduct, quantize_int8
from transcli.inference.scoring import forced_logprobs
from transcli.inference.translator import Translator
from transcli.model.kvcache import StepBuffers
from transcli.model.transformer import Transformer

# fbgemm, torch's x86 quantized kernels, keeps a dynamically quantized input to 7 bits
# (`reduce_range`); other engines (qnnpack on ARM) use 8.
X86 = torch.backends.quantized.engine in ("x86", "fbgemm")


def tiny(tie_output: bool, vocab_size: int = 90) -> Transformer:
    torch.manual_seed(0)
    cfg = ModelConfig(enc_layers=2, dec_layers=2, d_model=32, d_ff=64, heads=4, dropout=0.0,
                      max_positions=64, tie_output=tie_output, share_embeddings=tie_output)
    return Transformer(cfg, vocab_size=vocab_size).eval()


@pytest.mark.skipif(not X86, reason="fbgemm's input range (7 bits) is x86's")
def test_output_product_is_int8_arithmetic_with_one_scale_per_word():
    torch.manual_seed(1)
    weight = torch.randn(300, 32) * torch.rand(300, 1)  # rows of different sizes
    hidden = torch.randn(5, 32) * 2 + 0.3
    # By hand: each row of the weight to int8 with its own scale, max |w| / 127.5 ...
    w_scale = weight.abs().amax(1) / 127.5
    w_int = torch.clamp(torch.round(weight * (1 / w_scale[:, None])), -128, 127).double()
    # ... the input to 7 bits with one scale and zero point over its range (and 0) ...
    low, high = min(hidden.min().item(), 0.0), max(hidden.max().item(), 0.0)
    x_scale = (high - low) / 127
    zero = round(-low / x_scale)
    x_int = torch.clamp(torch.round(hidden / x_scale) + zero, 0, 127)
    # ... and integer products scaled back.
    expected = x_scale * ((x_int - zero).double() @ w_int.t()) * w_scale.double()
    got = Int8OutputProduct(weight)(hidden, weight)
    assert torch.allclose(got.double(), expected, atol=1e-4)
    assert not torch.allclose(got, hidden @ weight.t(), atol=1e-2)  # not float products


@pytest.mark.parametrize("tie_output", [True, False])
def test_quantized_model_has_int8_weights_everywhere_and_decodes_close_to_float(tie_output):
    model = tiny(tie_output)
    linears = sum(type(m) is nn.Linear for m in model.modules()) - (not tie_output)
    quantized = quantize_int8(model)
    assert sum(isinstance(m, torch.ao.nn.quantized.dynamic.Linear)
               for m in quantized.modules()) == linears
    assert isinstance(quantized.output_product, Int8OutputProduct)
    assert all(type(m) is not torch.ao.nn.quantized.dynamic.Linear for m in model.modules())

    src = torch.tensor([[5, 9, 17, 30, 2], [44, 8, 2, 0, 0]])
    tokens = torch.tensor([1, 1])
    steps = []
    with torch.inference_mode():
        for m in (model, quantized):  # an untied output layer once failed here (int8)
            state = m.start_decoding(m.encode(src, packed=True))
            state.buffers = StepBuffers()
            steps.append(torch.stack([m.step(tokens, state).clone() for _ in range(3)]))
    float_steps, int8_steps = steps
    error = (int8_steps - float_steps).abs().max().item()
    assert 0 < error < 0.2


@pytest.mark.parametrize("tie_output", [True, False])
def test_output_layer_int8_matrix_is_the_model_s_own(tie_output):
    """The embedding when tied, the untied layer's own matrix otherwise: each row within
    half of its scale (one step of int8) of the float row."""
    quantized = quantize_int8(tiny(tie_output))
    weight = quantized.output_weight
    assert weight is (quantized.tgt_embed.table.weight if tie_output
                      else quantized.generator.weight)
    int8 = quantized.output_product.linear.weight().dequantize()
    half_step = weight.abs().amax(1, keepdim=True) / 127.5 / 2
    assert ((int8 - weight).abs() <= half_step * 1.001).all()


@pytest.mark.parametrize("tie_output", [True, False])
def test_int8_model_translates_and_scores_with_every_search(tie_output, tiny_tokenizer):
    """Through `Translator` as `--int8` runs it: greedy, beam with n-best, sampling; and
    teacher-forced scores (the decoder over 3-D hidden states) near float32's."""
    model = tiny(tie_output, vocab_size=tiny_tokenizer.sp.GetPieceSize())
    quantized = quantize_int8(model)
    lines = [en for en, _ in PAIRS[:4]] + [""]
    searches = [DecodeConfig(strategy="greedy", max_len_b=6),
                DecodeConfig(strategy="beam", beam_size=3, n_best=2, max_len_b=6),
                DecodeConfig(strategy="sample", n_best=2, max_len_b=6)]
    for decode in searches:
        found = Translator(quantized, tiny_tokenizer, decode, "cpu").translate_nbest(lines)
        assert [len(h) for h in found[:-1]] == [decode.n_best] * 4 and found[-1][0][0] == ""
    sources = tiny_tokenizer.encode([en for en, _ in PAIRS])
    targets = tiny_tokenizer.encode([es for _, es in PAIRS])
    for (int8, tokens), (float32, _) in zip(forced_logprobs(quantized, sources, targets, 512),
                                            forced_logprobs(model, sources, targets, 512)):
        assert math.isfinite(int8) and abs(int8 - float32) / tokens < 0.2
