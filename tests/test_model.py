"""The Transformer: size, causality, padding, cached decoding, gradients, first loss."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from helpers import ROOT
from torch.nn.attention import SDPBackend, sdpa_kernel

from transcli.config.loading import load_config
from transcli.config.schema import ModelConfig
from transcli.model.kvcache import StepBuffers
from transcli.model.transformer import Transformer, attention, count_parameters
from transcli.model.vocab import BOS_ID, EOS_ID, PAD_ID

VOCAB = 97


def tiny(**changes: object) -> ModelConfig:
    cfg = ModelConfig(enc_layers=2, dec_layers=2, d_model=32, d_ff=64, heads=4,
                      dropout=0.0, max_positions=64)
    for key, value in changes.items():
        setattr(cfg, key, value)
    return cfg


def model_for(cfg: ModelConfig, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(cfg, VOCAB).eval()


def batch(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, VOCAB, (3, 9), generator=g)
    src[:, -1] = EOS_ID
    tgt = torch.randint(4, VOCAB, (3, 7), generator=g)
    tgt[:, 0] = BOS_ID
    return src, tgt


def analytic_count(vocab: int, d: int, d_ff: int, n_enc: int, n_dec: int) -> int:
    """Weights + biases of the paper's base model with one tied embedding matrix."""
    attention = 4 * (d * d + d)  # W_Q, W_K, W_V, W_O
    ffn = d * d_ff + d_ff + d_ff * d + d
    norm = 2 * d
    encoder_layer = attention + ffn + 2 * norm
    decoder_layer = 2 * attention + ffn + 3 * norm
    return vocab * d + n_enc * encoder_layer + n_dec * decoder_layer


def test_base_parameter_count_matches_the_analytic_count() -> None:
    cfg = load_config(ROOT / "configs" / "base.yaml").model
    model = Transformer(cfg, 32000)
    expected = analytic_count(32000, 512, 2048, 6, 6)
    assert count_parameters(model) == expected == 60_522_496


def test_untying_adds_exactly_the_extra_matrices() -> None:
    tied = count_parameters(model_for(tiny()))
    untied = count_parameters(model_for(tiny(share_embeddings=False, tie_output=False)))
    pre = count_parameters(model_for(tiny(pre_norm=True)))
    assert untied - tied == 2 * VOCAB * 32
    assert pre - tied == 2 * 2 * 32  # final LayerNorm after each stack


@pytest.mark.parametrize("pre_norm", [False, True])
def test_decoder_is_causal(pre_norm: bool) -> None:
    model = model_for(tiny(pre_norm=pre_norm))
    src, tgt = batch()
    before = model(src, tgt)
    changed = tgt.clone()
    changed[:, 4] = (changed[:, 4] + 1 - 4) % (VOCAB - 4) + 4
    after = model(src, changed)
    assert torch.allclose(before[:, :4], after[:, :4], atol=1e-6)
    assert not torch.allclose(before[:, 4:], after[:, 4:], atol=1e-3)


@pytest.mark.parametrize("pre_norm", [False, True])
def test_padding_leaves_real_positions_unchanged(pre_norm: bool) -> None:
    model = model_for(tiny(pre_norm=pre_norm))
    src, tgt = batch()
    plain = model(src, tgt)
    pad_src = torch.cat([src, torch.full((3, 5), PAD_ID)], dim=1)
    pad_tgt = torch.cat([tgt, torch.full((3, 4), PAD_ID)], dim=1)
    padded = model(pad_src, pad_tgt)
    assert torch.allclose(plain, padded[:, :7], atol=1e-5)


def written_out_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                          mask: torch.Tensor | None, causal: bool) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d_k)) V in float64, masked where `mask` is False."""
    scores = q.double() @ k.double().transpose(-1, -2) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    if causal:
        future = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    return (scores.softmax(dim=-1) @ v.double()).float()


@pytest.mark.parametrize("grad", [True, False])
def test_cpu_attention_kernels_compute_the_papers_formula(grad: bool) -> None:
    """Training's kernel (autograd on) and inference's (off) alike, with a padding mask
    and causally."""
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 4, 6, 8, generator=g) for _ in range(3))
    mask = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    mask[1, ..., 4:] = False
    for key_mask, causal in ((mask, False), (None, True)):
        with torch.set_grad_enabled(grad):
            out = attention(q, k, v, key_mask, causal, 0.0)
        assert torch.allclose(out, written_out_attention(q, k, v, key_mask, causal), atol=1e-5)


def relative_error(got: torch.Tensor, expected: torch.Tensor) -> float:
    return ((got.double() - expected.double()).norm() / expected.double().norm()).item()


def test_bf16_training_attention_is_the_formula_within_bf16_rounding(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Large bf16 inputs with autograd on (training in bf16 on the CPU) take the attention
    written out in bf16 (here any size does): its output and the gradients of Q, K and V
    within 1% of the float64 formula's on the same inputs (the float32 kernel's output
    rounded to bf16 is about 0.2% off; a missing scale or mask is tens of percent). A row
    whose keys are all masked is finite, so it cannot poison the gradients of the
    weights. Below the size, torch's float32 kernel runs, as without bf16."""
    from transcli.model import transformer
    from transcli.model.transformer import low_precision_attention

    g = torch.Generator().manual_seed(6)
    q, k, v = (torch.randn(3, 4, 9, 16, generator=g).bfloat16().requires_grad_()
               for _ in range(3))
    upstream = torch.randn(3, 4, 9, 16, generator=g)
    mask = torch.ones(3, 1, 1, 9, dtype=torch.bool)
    mask[1, ..., 5:] = False
    small = attention(q, k, v, mask, False, 0.0)
    with sdpa_kernel([SDPBackend.MATH]):
        assert torch.equal(small, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    monkeypatch.setattr(transformer, "LOW_PRECISION_MIN", q.numel())
    for key_mask, causal in ((mask, False), (None, True)):
        out = attention(q, k, v, key_mask, causal, 0.0)
        assert torch.equal(out, low_precision_attention(q, k, v, key_mask, causal))
        grads = torch.autograd.grad((out.double() * upstream).sum(), (q, k, v))
        exact = [t.detach().double().requires_grad_() for t in (q, k, v)]
        reference = written_out_attention(*exact, key_mask, causal).double()
        expected = torch.autograd.grad((reference * upstream).sum(), exact)
        assert relative_error(out, reference) < 1e-2
        assert all(relative_error(a, b) < 1e-2 for a, b in zip(grads, expected))
    hidden = torch.zeros(3, 1, 1, 9, dtype=torch.bool)
    assert torch.isfinite(attention(q, k, v, hidden, False, 0.0)).all()


def test_attention_dropout_without_autograd_still_runs() -> None:
    """A training-mode pass under no_grad: torch's CPU flash kernel has no dropout, so the
    math kernel must take over."""
    model = Transformer(tiny(attn_dropout=0.5), VOCAB).train()
    src, tgt = batch()
    with torch.no_grad():
        out = model(src, tgt)
    assert torch.isfinite(out).all()


def test_source_padding_is_masked_not_attended() -> None:
    """Changing what sits under the pad positions must not matter: the mask, not the
    pad embedding being zero, is what hides them."""
    model = model_for(tiny())
    src, tgt = batch()
    src[:, 6:] = PAD_ID
    memory = model.encode(src)
    out = model.decode(tgt, memory)
    memory.states[:, 6:] = 1e3
    assert torch.allclose(out, model.decode(tgt, memory), atol=1e-5)


@pytest.mark.parametrize("pre_norm", [False, True])
def test_cached_steps_reproduce_the_full_forward(pre_norm: bool) -> None:
    model = model_for(tiny(pre_norm=pre_norm))
    src, tgt = batch()
    src[0, 5:] = PAD_ID
    full = model(src, tgt)
    with torch.inference_mode():
        state = model.start_decoding(model.encode(src))
        steps = torch.stack([model.step(tgt[:, t], state) for t in range(tgt.size(1))], dim=1)
    assert state.position == tgt.size(1)
    assert (full - steps).abs().max().item() <= 1e-5


def test_steps_into_kept_buffers_give_the_same_log_probs() -> None:
    """With `state.buffers` the output layer writes into memory kept from step to step
    (a dropped row leaves the first rows in place); the log-probs stay those of fresh
    tensors, and the teacher-forced forward's."""
    model = model_for(tiny())
    src, tgt = batch()
    full = model(src, tgt)
    with torch.inference_mode():
        plain = model.start_decoding(model.encode(src))
        kept = model.start_decoding(model.encode(src))
        kept.buffers = StepBuffers()
        places = set()
        for t in range(tgt.size(1) - 1):
            expected = model.step(tgt[:, t], plain)
            got = model.step(tgt[:, t], kept)
            places.add(got.data_ptr())
            assert torch.equal(got, expected)
            assert (got - full[:, t]).abs().max().item() <= 1e-5
        for state in (plain, kept):
            state.reorder(torch.tensor([0, 2]))
        last = model.step(tgt[[0, 2], -1], kept)
        assert torch.equal(last, model.step(tgt[[0, 2], -1], plain))
    assert places == {last.data_ptr()}


def test_reorder_follows_the_selected_rows() -> None:
    model = model_for(tiny())
    src, tgt = batch()
    index = torch.tensor([2, 2, 0])
    with torch.inference_mode():
        state = model.start_decoding(model.encode(src))
        for t in range(3):
            model.step(tgt[:, t], state)
        state.reorder(index)
        reordered = model.step(tgt[index, 3], state)
        fresh = model.start_decoding(model.encode(src[index]))
        for t in range(4):
            expected = model.step(tgt[index, t], fresh)
    assert torch.allclose(reordered, expected, atol=1e-5)


def test_dropped_rows_filled_from_past_the_end_copy_only_those_rows() -> None:
    """With one row per sentence, `drop` moves the rows past the kept ones into the
    dropped rows' places (`kvcache.kept_in_place`): the caches stay where they are, and
    the steps after -- past a growth of the self-attention buffers, a second drop and a
    general reorder of the narrowed buffers -- equal decoding the final rows from scratch."""
    model = model_for(tiny())
    g = torch.Generator().manual_seed(5)
    src = torch.randint(4, VOCAB, (6, 9), generator=g)
    src[:, -1] = EOS_ID
    src[4, 5], src[4, 6:] = EOS_ID, PAD_ID
    tgt = torch.randint(4, VOCAB, (6, 24), generator=g)
    tgt[:, 0] = BOS_ID
    swap = torch.tensor([1, 0, 2])  # a general reorder
    with torch.inference_mode():
        state = model.start_decoding(model.encode(src))
        for t in range(4):
            model.step(tgt[:, t], state)
        places = [(c.cross_k_t.data_ptr(), c.self_v.data_ptr()) for c in state.layers]
        first = state.drop(torch.tensor([True, False, True, False, True, True]))
        assert first.tolist() == [0, 4, 2, 5]
        assert [(c.cross_k_t.data_ptr(), c.self_v.data_ptr()) for c in state.layers] == places
        for t in range(4, 20):  # the buffers grow past 16 positions
            model.step(tgt[first, t], state)
        second = state.drop(torch.tensor([False, True, True, True]))
        assert second.tolist() == [3, 1, 2]
        model.step(tgt[first[second], 20], state)
        state.reorder(swap)
        rows = first[second][swap]
        got = [model.step(tgt[rows, t], state) for t in (21, 22)]
        fresh = model.start_decoding(model.encode(src[rows]))
        expected = [model.step(tgt[rows, t], fresh) for t in range(23)][21:]
    for a, b in zip(got, expected):
        assert torch.allclose(a, b, atol=1e-5)


@pytest.mark.parametrize("changes", [{}, {"pre_norm": True},
                                     {"share_embeddings": False, "tie_output": False}])
def test_every_parameter_gets_a_gradient(changes: dict) -> None:
    model = model_for(tiny(dropout=0.1, **changes)).train()
    src, tgt = batch()
    model(src, tgt).mean().backward()
    missing = [name for name, p in model.named_parameters()
               if p.grad is None or not torch.any(p.grad != 0)]
    assert missing == []


def test_first_loss_is_near_log_vocab() -> None:
    cfg = load_config(ROOT / "configs" / "small.yaml").model
    torch.manual_seed(0)
    vocab = 8000
    model = Transformer(cfg, vocab).eval()
    src = torch.randint(4, vocab, (8, 20))
    tgt = torch.randint(4, vocab, (8, 21))
    log_probs = model(src, tgt[:, :-1])
    loss = torch.nn.functional.nll_loss(log_probs.reshape(-1, vocab), tgt[:, 1:].reshape(-1))
    assert abs(loss.item() - math.log(vocab)) < 1.5


def test_too_long_sequence_is_an_error_not_a_wrong_answer() -> None:
    model = model_for(tiny(max_positions=8))
    with pytest.raises(ValueError, match="max_positions"):
        model(torch.full((1, 9), 5), torch.full((1, 3), 5))


def test_beams_share_their_sentence_memory_and_reorder_without_copying_it() -> None:
    """A sentence's beams attend to one copy of its encoder keys/values: following beams
    within their sentences leaves that copy in place, dropping a sentence selects the
    rest, and every step equals decoding the same rows one row per copy."""
    model = model_for(tiny())
    src, tgt = batch()
    beams = torch.arange(3).repeat_interleave(2)  # 3 sentences x 2 beams
    within = torch.tensor([1, 1, 2, 3, 5, 4])  # each row keeps a beam of its sentence
    with torch.inference_mode():
        state = model.start_decoding(model.encode(src))
        state.reorder(beams)
        assert state.group == 2 and state.layers[0].cross_k_t.size(0) == 3
        for t in range(3):
            model.step(tgt[beams, t], state)
        memory = state.layers[0].cross_k_t.data_ptr()
        state.reorder(within)
        assert state.layers[0].cross_k_t.data_ptr() == memory  # not copied
        grouped = model.step(tgt[beams[within], 3], state)
        state.reorder(torch.tensor([2, 3, 4, 5]))  # sentence 0 finished
        assert state.group == 2 and state.layers[0].cross_k_t.size(0) == 2
        after_drop = model.step(tgt[beams[within][2:], 4], state)
        rows = beams[within]  # the same rows, each with its own copy of its memory
        fresh = model.start_decoding(model.encode(src[rows]))
        for t in range(4):
            expected = model.step(tgt[rows, t], fresh)
        fresh.reorder(torch.tensor([2, 3, 4, 5]))
        expected_after = model.step(tgt[rows[2:], 4], fresh)
    assert torch.allclose(grouped, expected, atol=1e-5)
    assert torch.allclose(after_drop, expected_after, atol=1e-5)


@pytest.mark.parametrize("pre_norm", [False, True])
def test_packed_encoder_equals_each_sentence_alone(pre_norm: bool) -> None:
    """Decoding's encoder runs its position-wise layers on the real tokens only: each
    sentence's states equal encoding that sentence alone, with no padding at all, and
    the padded positions hold zeros."""
    model = model_for(tiny(pre_norm=pre_norm)).eval()
    lengths = [9, 4, 6]
    src = torch.full((3, 9), PAD_ID)
    g = torch.Generator().manual_seed(3)
    for row, n in enumerate(lengths):
        src[row, :n] = torch.randint(4, VOCAB, (n,), generator=g)
        src[row, n - 1] = EOS_ID
    with torch.inference_mode():
        packed = model.encode(src, packed=True)
        for row, n in enumerate(lengths):
            alone = model.encode(src[row:row + 1, :n]).states[0]
            torch.testing.assert_close(packed.states[row, :n], alone, atol=1e-5, rtol=1e-5)
            assert bool((packed.states[row, n:] == 0).all())
        assert torch.equal(packed.mask, model.encode(src).mask)
