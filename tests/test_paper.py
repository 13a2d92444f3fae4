"""The defining formulas of Vaswani et al. (2017) and of the search, each pinned against
an independent reference rather than against transcli's own code:

- encoder and decoder layers, post-norm (the paper) and pre-norm, against
  `torch.nn.TransformerEncoderLayer` / `TransformerDecoderLayer` with copied weights;
- the whole model (embeddings scaled by sqrt(d_model), sinusoidal positions, both stacks,
  the output layer tied to the embedding) against a composition of torch's modules;
- the sinusoidal table against the paper's formula evaluated with `math`;
- label smoothing and the Noam schedule at hand-computed points;
- teacher forcing's shift right, on a batch built from known token lists;
- the GNMT length penalty at hand-computed points, and in the scores beam search reports.

Float64 throughout, so that a tolerance of 1e-9 leaves no room for a planted bug.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import PAIRS
from helpers.memorised import UNSEEN, memorised_model, pad
from torch import nn

from transcli.config.schema import ModelConfig
from transcli.data.batching import collate
from transcli.data.encoded import EncodedSplit, EncodedWriter
from transcli.data.tokenizer import Tokenizer
from transcli.inference.search import beam_search, length_penalty
from transcli.model.transformer import DecoderLayer, EncoderLayer, Transformer, sinusoidal_table
from transcli.model.vocab import BOS_ID, EOS_ID, PAD_ID
from transcli.training.objective import label_smoothed_nll, output_loss
from transcli.training.schedules import noam_lr

D, HEADS, D_FF, VOCAB = 32, 4, 64, 53


def config(pre_norm: bool, **changes: object) -> ModelConfig:
    cfg = ModelConfig(enc_layers=2, dec_layers=2, d_model=D, d_ff=D_FF, heads=HEADS,
                      dropout=0.0, max_positions=40, pre_norm=pre_norm)
    for key, value in changes.items():
        setattr(cfg, key, value)
    return cfg


def paper_positions(length: int, d_model: int) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i / d_model)), PE(pos, 2i + 1) = cos(same), section 3.5,
    evaluated one entry at a time."""
    table = [[0.0] * d_model for _ in range(length)]
    for pos in range(length):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            table[pos][2 * i] = math.sin(angle)
            table[pos][2 * i + 1] = math.cos(angle)
    return torch.tensor(table, dtype=torch.float64)


# ----------------------------------------------------------------------------- layers


def copy_linear(target: nn.Linear, *sources: nn.Linear) -> None:
    """target <- the sources' weights stacked row-wise (torch keeps Q, K, V in one matrix)."""
    with torch.no_grad():
        target.weight.copy_(torch.cat([s.weight for s in sources]))
        target.bias.copy_(torch.cat([s.bias for s in sources]))


def copy_norm(target: nn.LayerNorm, source: nn.LayerNorm) -> None:
    with torch.no_grad():
        target.weight.copy_(source.weight)
        target.bias.copy_(source.bias)


def torch_encoder_layer(ours: EncoderLayer, pre_norm: bool) -> nn.TransformerEncoderLayer:
    ref = nn.TransformerEncoderLayer(D, HEADS, D_FF, dropout=0.0, batch_first=True,
                                     norm_first=pre_norm).double()
    with torch.no_grad():
        ref.self_attn.in_proj_weight.copy_(ours.self_attn.qkv.weight)
        ref.self_attn.in_proj_bias.copy_(ours.self_attn.qkv.bias)
    copy_linear(ref.self_attn.out_proj, ours.self_attn.out)
    copy_linear(ref.linear1, ours.ffn.inner)
    copy_linear(ref.linear2, ours.ffn.outer)
    copy_norm(ref.norm1, ours.self_attn_block.norm)
    copy_norm(ref.norm2, ours.ffn_block.norm)
    return ref


def torch_decoder_layer(ours: DecoderLayer, pre_norm: bool) -> nn.TransformerDecoderLayer:
    ref = nn.TransformerDecoderLayer(D, HEADS, D_FF, dropout=0.0, batch_first=True,
                                     norm_first=pre_norm).double()
    with torch.no_grad():
        ref.self_attn.in_proj_weight.copy_(ours.self_attn.qkv.weight)
        ref.self_attn.in_proj_bias.copy_(ours.self_attn.qkv.bias)
        # Cross-attention: queries from the decoder, keys and values from the memory.
        ref.multihead_attn.in_proj_weight.copy_(
            torch.cat([ours.cross_attn.q.weight, ours.cross_attn.kv.weight]))
        ref.multihead_attn.in_proj_bias.copy_(
            torch.cat([ours.cross_attn.q.bias, ours.cross_attn.kv.bias]))
    copy_linear(ref.self_attn.out_proj, ours.self_attn.out)
    copy_linear(ref.multihead_attn.out_proj, ours.cross_attn.out)
    copy_linear(ref.linear1, ours.ffn.inner)
    copy_linear(ref.linear2, ours.ffn.outer)
    copy_norm(ref.norm1, ours.self_attn_block.norm)
    copy_norm(ref.norm2, ours.cross_attn_block.norm)
    copy_norm(ref.norm3, ours.ffn_block.norm)
    return ref


def randomise(module: nn.Module, seed: int) -> nn.Module:
    """Every parameter random (LayerNorm gains and biases too), so that nothing that
    should be applied can hide behind an initial value of 1 or 0."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator,
                                        dtype=torch.float64) * 0.5)
    return module


def states(seed: int, batch: int = 3, length: int = 7) -> torch.Tensor:
    return torch.randn(batch, length, D, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)


def source_padding(batch: int = 3, length: int = 7) -> torch.Tensor:
    """True at padded source positions (rows of 7, 5 and 3 real tokens)."""
    real = torch.tensor([7, 5, 3])[:batch, None]
    return torch.arange(length)[None, :] >= real


@pytest.mark.parametrize("pre_norm", [False, True], ids=["post-norm", "pre-norm"])
def test_encoder_layer_equals_torchs(pre_norm: bool) -> None:
    ours = randomise(EncoderLayer(config(pre_norm)).double(), 1)
    ref = torch_encoder_layer(ours, pre_norm)
    x, padded = states(2), source_padding()
    expected = ref(x, src_key_padding_mask=padded)
    got = ours(x, (~padded)[:, None, None, :])
    assert torch.allclose(got, expected, atol=1e-9, rtol=0)


@pytest.mark.parametrize("pre_norm", [False, True], ids=["post-norm", "pre-norm"])
def test_decoder_layer_equals_torchs(pre_norm: bool) -> None:
    ours = randomise(DecoderLayer(config(pre_norm)).double(), 3)
    ref = torch_decoder_layer(ours, pre_norm)
    y, memory, padded = states(4, length=6), states(5), source_padding()
    causal = nn.Transformer.generate_square_subsequent_mask(6, dtype=torch.float64)
    expected = ref(y, memory, tgt_mask=causal, memory_key_padding_mask=padded,
                   tgt_is_causal=True)
    got = ours(y, ours.cross_attn.memory_kv(memory), (~padded)[:, None, None, :])
    assert torch.allclose(got, expected, atol=1e-9, rtol=0)


# ----------------------------------------------------------------------------- the model


def reference_decoder(model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor
                      ) -> torch.Tensor:
    """The paper's model built from torch's modules with `model`'s weights, up to the
    output layer: token embeddings times sqrt(d_model) plus the sinusoids, then torch's
    encoder and decoder stacks (a final LayerNorm on each only when pre-norm)."""
    cfg = model.cfg
    pre_norm = cfg.pre_norm
    table = model.src_embed.table.weight
    assert table is model.tgt_embed.table.weight  # one shared, tied embedding
    encoder_norm = decoder_norm = None
    if pre_norm:
        encoder_norm, decoder_norm = nn.LayerNorm(D).double(), nn.LayerNorm(D).double()
        copy_norm(encoder_norm, model.enc_norm)
        copy_norm(decoder_norm, model.dec_norm)
    encoder = nn.TransformerEncoder(torch_encoder_layer(model.encoder[0], pre_norm), 2,
                                    norm=encoder_norm, enable_nested_tensor=False)
    decoder = nn.TransformerDecoder(torch_decoder_layer(model.decoder[0], pre_norm), 2,
                                    norm=decoder_norm)
    encoder.layers[1] = torch_encoder_layer(model.encoder[1], pre_norm)
    decoder.layers[1] = torch_decoder_layer(model.decoder[1], pre_norm)

    def embed(ids: torch.Tensor) -> torch.Tensor:
        return table[ids] * math.sqrt(D) + paper_positions(ids.size(1), D)

    padded = src == PAD_ID
    memory = encoder(embed(src), src_key_padding_mask=padded)
    causal = nn.Transformer.generate_square_subsequent_mask(tgt_in.size(1), dtype=torch.float64)
    return decoder(embed(tgt_in), memory, tgt_mask=causal, memory_key_padding_mask=padded,
                   tgt_is_causal=True)


@pytest.mark.parametrize("pre_norm", [False, True], ids=["post-norm", "pre-norm"])
def test_the_whole_model_equals_the_paper_built_from_torch_modules(pre_norm: bool) -> None:
    torch.manual_seed(6)
    model = randomise(Transformer(config(pre_norm), VOCAB).double().eval(), 7)
    # The model's float32 table is pinned by its own test; here the exact one, so that
    # the rest of the model can be held to float64 precision.
    for embedding in (model.src_embed, model.tgt_embed):
        embedding.positions = paper_positions(model.cfg.max_positions, D)
    src = torch.randint(4, VOCAB, (3, 7), generator=torch.Generator().manual_seed(8))
    src[source_padding()] = PAD_ID
    tgt_in = torch.randint(4, VOCAB, (3, 6), generator=torch.Generator().manual_seed(9))
    tgt_in[:, 0] = BOS_ID
    with torch.no_grad():
        expected = reference_decoder(model, src, tgt_in)
        hidden = model.decode_hidden(tgt_in, model.encode(src))
        log_probs = model(src, tgt_in)
    assert torch.allclose(hidden, expected, atol=1e-9, rtol=0)
    # The output layer is the shared embedding matrix, then log-softmax (float32 out).
    table = model.tgt_embed.table.weight
    reference = torch.log_softmax(expected @ table.T, dim=-1)
    assert torch.allclose(log_probs.double(), reference, atol=1e-5, rtol=0)


def test_sinusoidal_table_is_the_papers_formula() -> None:
    for length, d_model in ((50, 16), (40, 6), (30, 512)):
        assert torch.allclose(sinusoidal_table(length, d_model).double(),
                              paper_positions(length, d_model), atol=2e-5, rtol=0)


def test_embeddings_are_scaled_by_sqrt_d_model_and_add_positions() -> None:
    """Section 3.4: "we multiply those weights by sqrt(d_model)"; then the positions."""
    torch.manual_seed(0)
    model = Transformer(config(False, d_model=64, heads=4), VOCAB).double()
    ids = torch.tensor([[5, 9, 17, PAD_ID]])
    expected = model.tgt_embed.table.weight[ids] * 8.0 + paper_positions(4, 64)
    assert torch.allclose(model.tgt_embed(ids), expected, atol=2e-5, rtol=0)
    shifted = model.tgt_embed(ids[:, 1:2], offset=1)  # a decoding step at position 1
    assert torch.allclose(shifted, expected[:, 1:2], atol=2e-5, rtol=0)


# ----------------------------------------------------------------------------- training


def fused_loss(log_probs: torch.Tensor, target: torch.Tensor, eps: float,
               pad_id: int) -> list[torch.Tensor]:
    """The training loss as train.py computes it, fused with the output layer: with an
    identity output matrix the logits are `log_probs` (normalised, so log-softmax keeps them)."""
    vocab = log_probs.size(-1)
    return list(output_loss(log_probs, torch.eye(vocab, dtype=log_probs.dtype), target, eps,
                            pad_id))


@pytest.mark.parametrize("loss_fn", [label_smoothed_nll, fused_loss], ids=["reference", "fused"])
def test_label_smoothing_at_hand_computed_points(loss_fn) -> None:
    """q = (1 - eps) one-hot + eps / V (Szegedy et al. 2016, the paper's eps_ls = 0.1);
    loss = -sum_v q_v log p_v. By hand, for p = (0.5, 0.2, 0.1, 0.1, 0.1), gold 0:
    q = (0.92, 0.02, 0.02, 0.02, 0.02), loss = 0.92 ln 2 + 0.02 ln 5 + 0.06 ln 10 = 0.8080393."""
    probs = torch.tensor([[0.5, 0.2, 0.1, 0.1, 0.1], [0.2] * 5, [0.1, 0.6, 0.1, 0.1, 0.1]],
                         dtype=torch.float64)
    target = torch.tensor([0, 3, 2])  # the last row is padding (pad id 2 here)
    loss, nll, tokens, _ = loss_fn(probs.log(), target, 0.1, pad_id=2)
    uniform = math.log(5)  # a uniform prediction costs ln V whatever the smoothing
    assert loss.item() == pytest.approx(0.8080393 + uniform, abs=1e-6)  # fused: float32
    assert nll.item() == pytest.approx(math.log(2) + uniform, abs=1e-6)
    assert tokens.item() == 2


@pytest.mark.parametrize("loss_fn", [label_smoothed_nll, fused_loss], ids=["reference", "fused"])
def test_label_smoothing_is_smallest_at_the_smoothed_target(loss_fn) -> None:
    """Cross-entropy against q is smallest where p = q, and there equals q's entropy."""
    eps, vocab, gold = 0.1, 6, 4
    q = torch.full((vocab,), eps / vocab, dtype=torch.float64)
    q[gold] += 1 - eps
    entropy = -(q * q.log()).sum().item()
    at_q, *_ = loss_fn(q.log()[None], torch.tensor([gold]), eps, pad_id=0)
    assert at_q.item() == pytest.approx(entropy, abs=1e-6)
    generator = torch.Generator().manual_seed(0)
    for _ in range(20):
        other = (q + 0.05 * torch.rand(vocab, generator=generator, dtype=torch.float64))
        other /= other.sum()
        worse, *_ = loss_fn(other.log()[None], torch.tensor([gold]), eps, pad_id=0)
        assert worse.item() > entropy + 1e-5


@pytest.mark.parametrize("step, d_model, warmup, factor, expected", [
    # lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), section 5.3
    (1, 512, 4000, 1.0, 1.7469281e-07),  # 512^-0.5 / 4000^1.5
    (1000, 512, 4000, 1.0, 1.7469281e-04),  # warm-up: linear in the step
    (4000, 512, 4000, 1.0, 6.9877124e-04),  # the peak: (512 * 4000)^-0.5
    (10000, 512, 4000, 1.0, 4.4194174e-04),  # 512^-0.5 / 100
    (100000, 512, 4000, 1.0, 1.3975425e-04),  # the last step of the base run
    (400, 256, 400, 0.5, 1.5625e-03),  # configs/small.yaml's peak: 0.5 / 16 / 20
])
def test_noam_schedule_at_hand_computed_points(step: int, d_model: int, warmup: int,
                                               factor: float, expected: float) -> None:
    assert noam_lr(step, d_model, warmup, factor) == pytest.approx(expected, rel=1e-7)


def test_teacher_forcing_shifts_the_target_right(tmp_path: Path) -> None:
    """The decoder reads BOS y1 .. yn and must predict y1 .. yn EOS (section 3.1: "output
    embeddings are offset by one position")."""
    src_ids, tgt_ids = [[11, 12, 13], [21], [31, 32]], [[41, 42], [51, 52, 53, 54], [61]]
    writer = EncodedWriter(tmp_path, "train", vocab_size=100)
    writer.add(src_ids, tgt_ids)
    writer.close()
    batch = collate(EncodedSplit(tmp_path, "train"), np.arange(3))
    P, B, E = PAD_ID, BOS_ID, EOS_ID
    assert batch.src.tolist() == [[11, 12, 13, E], [21, E, P, P], [31, 32, E, P]]
    assert batch.tgt_in.tolist() == [[B, 41, 42, P, P], [B, 51, 52, 53, 54], [B, 61, P, P, P]]
    assert batch.tgt_out.tolist() == [[41, 42, E, P, P], [51, 52, 53, 54, E], [61, E, P, P, P]]


# ----------------------------------------------------------------------------- search


@pytest.mark.parametrize("length, alpha, expected", [
    # GNMT (Wu et al. 2016): lp(Y) = (5 + |Y|)^alpha / (5 + 1)^alpha
    (1, 0.6, 1.0), (7, 0.6, 1.5157166), (25, 0.6, 2.6265278),  # 2^0.6, 5^0.6
    (10, 1.0, 2.5), (3, 2.0, 1.7777778), (40, 0.0, 1.0),
])
def test_gnmt_length_penalty_at_hand_computed_points(length: int, alpha: float,
                                                     expected: float) -> None:
    assert length_penalty(length, alpha) == pytest.approx(expected, rel=1e-7)


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.5])
def test_beam_scores_are_log_probs_over_the_gnmt_penalty(tiny_spm: Path, alpha: float) -> None:
    """Every hypothesis' score is its log-prob / ((5 + len) / 6)^alpha, len counting EOS,
    and the hypotheses come best score first."""
    model = memorised_model(tiny_spm, tuple(PAIRS))
    tokenizer = Tokenizer(tiny_spm)
    sources = [ids + [EOS_ID] for ids in tokenizer.encode([PAIRS[0][0], *UNSEEN[:3]])]
    with torch.inference_mode():
        found = beam_search(model, pad(sources), 3, alpha, 40, 3)
    for hyps in found:
        for h in hyps:
            length = len(h.tokens) + (1 if h.eos else 0)
            assert h.score == pytest.approx(h.logprob / ((5 + length) / 6) ** alpha, rel=1e-9)
        finished = [h.score for h in hyps if h.eos]
        assert finished == sorted(finished, reverse=True)
    assert all(h.eos for h in found[0])  # the memorised pair ends: EOS is scored too
