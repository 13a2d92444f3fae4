"""Hugging Face export: a `MarianMTModel` directory for `transformers`.

`MarianMTModel.from_pretrained(DIR)` and `MarianTokenizer.from_pretrained(DIR)`
load it and `transformers.pipeline("translation", model=DIR)` runs it. Marian is
transcli's architecture (post-norm, ReLU, sqrt(d_model)-scaled embeddings plus
sinusoidal positions, tied joint embeddings) but for one thing: Marian regenerates
its position table as [sin | cos] halves, where transcli interleaves sin and cos.

A permutation of the d_model axis makes the two identical: every hidden vector of
the Marian model is transcli's with its components reordered by `hf_order`
(even components first, then odd). Applied consistently — embedding columns,
the input columns of every projection that reads the residual stream, the output
rows and biases of every projection that writes it, LayerNorm weights and biases
(LayerNorm itself does not care about order) — the network computes exactly the
same function, and the logits, whose projection reads permuted columns, come out
in vocabulary order. Attention heads are untouched: Q/K/V outputs are not
permuted, only their inputs.

Pre-norm models are refused: Marian has no pre-norm variant.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Optional

import torch
from torch import Tensor, nn

from transcli.config.schema import Config
from transcli.data.tokenizer import Tokenizer
from transcli.model.transformer import Transformer
from transcli.model.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from transcli.system.errors import UserError
from transcli.system.extras import require

EXTRA = "hf"


def check_options(quantize: Optional[str]) -> None:
    if quantize is not None:
        raise UserError(f"--quantize {quantize}: the hf format is exported in float32 "
                        f"(quantize applies to --format ct2)")


def check(cfg: Config) -> None:
    if cfg.model.pre_norm:
        raise UserError("model.pre_norm=true cannot be exported exactly to hf: Marian is "
                        "post-norm only (use --format ct2)")


def write(model: Transformer, tokenizer: Tokenizer, cfg: Config, directory: Path,
          quantize: Optional[str]) -> None:
    """Fill `directory` with config.json, model.safetensors, generation_config.json and
    the tokenizer files (source.spm, target.spm, vocab.json, tokenizer_config.json)."""
    transformers = require("transformers", EXTRA)
    progress_bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()
    try:
        marian_model(model, cfg).save_pretrained(str(directory))
    finally:
        if progress_bars:
            transformers.utils.logging.enable_progress_bar()
    pieces = {tokenizer.sp.IdToPiece(i): i for i in range(tokenizer.vocab_size)}
    (directory / "vocab.json").write_text(json.dumps(pieces, ensure_ascii=False, indent=1),
                                          encoding="utf-8")
    for name in ("source.spm", "target.spm"):  # one joint model on both sides
        (directory / name).write_bytes(tokenizer.model_bytes)
    special = [tokenizer.sp.IdToPiece(i) for i in (UNK_ID, EOS_ID, PAD_ID)]
    with warnings.catch_warnings():  # "Recommended: pip install sacremoses": not used here
        warnings.simplefilter("ignore")
        hf_tokenizer = transformers.MarianTokenizer(
            str(directory / "source.spm"), str(directory / "target.spm"),
            str(directory / "vocab.json"), source_lang=cfg.data.src_lang,
            target_lang=cfg.data.tgt_lang, unk_token=special[0], eos_token=special[1],
            pad_token=special[2], model_max_length=cfg.model.max_positions - 1)  # 1 for EOS
    hf_tokenizer.save_pretrained(str(directory))


def marian_model(model: Transformer, cfg: Config) -> Any:
    """A `MarianMTModel` computing what `model` computes, with the run's decode defaults."""
    transformers = require("transformers", EXTRA)
    m = cfg.model
    config = transformers.MarianConfig(
        vocab_size=model.vocab_size, decoder_vocab_size=model.vocab_size,
        d_model=m.d_model, encoder_layers=m.enc_layers, decoder_layers=m.dec_layers,
        encoder_attention_heads=m.heads, decoder_attention_heads=m.heads,
        encoder_ffn_dim=m.d_ff, decoder_ffn_dim=m.d_ff, activation_function="relu",
        max_position_embeddings=m.max_positions, scale_embedding=True,
        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
        share_encoder_decoder_embeddings=m.share_embeddings,
        tie_word_embeddings=m.tie_output, pad_token_id=PAD_ID, eos_token_id=EOS_ID,
        bos_token_id=BOS_ID, decoder_start_token_id=BOS_ID, forced_eos_token_id=None)
    marian = transformers.MarianMTModel(config).eval()
    with torch.no_grad():
        copy_weights(model, marian)
    marian.generation_config = generation_config(cfg)
    return marian


def generation_config(cfg: Config) -> Any:
    """The run's decode settings, as far as `generate` has them: the strategy, beam width
    and length penalty (Hugging Face divides by length ** alpha, not GNMT's
    ((5 + length) / 6) ** alpha, so beam results may differ; greedy is exact), sampling
    settings (its own generator), and one maximum length for every sentence instead of
    a * source length + b. `decode.word_reward` has no counterpart there and is left out."""
    transformers = require("transformers", EXTRA)
    d = cfg.decode
    options: dict[str, Any] = dict(
        decoder_start_token_id=BOS_ID, bos_token_id=BOS_ID, eos_token_id=EOS_ID,
        pad_token_id=PAD_ID, forced_eos_token_id=None, max_length=cfg.model.max_positions,
        num_beams=1, do_sample=False)
    if d.strategy == "beam" and d.beam_size > 1:
        options.update(num_beams=d.beam_size, length_penalty=d.length_penalty)
    elif d.strategy == "sample":
        options.update(do_sample=True, temperature=d.temperature, top_k=d.top_k,
                       top_p=d.top_p)  # top_k 0: no limit, in both
    return transformers.GenerationConfig(**options)


def hf_order(d_model: int) -> Tensor:
    """Marian's component j is transcli's component hf_order[j]: sin(pos * w_i) sits at
    2i in transcli's table and at i in Marian's, cos(pos * w_i) at 2i + 1 and d/2 + i."""
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


def copy_weights(model: Transformer, marian: Any) -> None:
    """Copy `model`'s parameters into `marian`, d_model axis permuted by `hf_order`."""
    order = hf_order(model.cfg.d_model)
    cols = lambda w: w[:, order]  # noqa: E731 - reads the residual stream
    rows = lambda w: w[order]  # noqa: E731 - writes the residual stream
    inner = marian.model
    inner.encoder.embed_tokens.weight.copy_(cols(model.src_embed.table.weight))
    inner.decoder.embed_tokens.weight.copy_(cols(model.tgt_embed.table.weight))
    if model.cfg.share_embeddings:
        inner.shared.weight.copy_(cols(model.tgt_embed.table.weight))
    marian.lm_head.weight.copy_(cols(model.output_weight))
    marian.final_logits_bias.zero_()
    for ours, theirs in zip(model.encoder, inner.encoder.layers):
        qkv = ours.self_attn.qkv
        _attention(theirs.self_attn, qkv.weight.chunk(3), qkv.bias.chunk(3), ours.self_attn.out,
                   cols, rows)
        _norm(theirs.self_attn_layer_norm, ours.self_attn_block.norm, order)
        _ffn(theirs, ours.ffn, cols, rows)
        _norm(theirs.final_layer_norm, ours.ffn_block.norm, order)
    for ours, theirs in zip(model.decoder, inner.decoder.layers):
        qkv = ours.self_attn.qkv
        _attention(theirs.self_attn, qkv.weight.chunk(3), qkv.bias.chunk(3), ours.self_attn.out,
                   cols, rows)
        _norm(theirs.self_attn_layer_norm, ours.self_attn_block.norm, order)
        cross = ours.cross_attn
        weights = (cross.q.weight, *cross.kv.weight.chunk(2))
        biases = (cross.q.bias, *cross.kv.bias.chunk(2))
        _attention(theirs.encoder_attn, weights, biases, cross.out, cols, rows)
        _norm(theirs.encoder_attn_layer_norm, ours.cross_attn_block.norm, order)
        _ffn(theirs, ours.ffn, cols, rows)
        _norm(theirs.final_layer_norm, ours.ffn_block.norm, order)


def _attention(attn: Any, weights: tuple[Tensor, ...], biases: tuple[Tensor, ...],
               out: nn.Linear, cols: Any, rows: Any) -> None:
    for proj, weight, bias in zip((attn.q_proj, attn.k_proj, attn.v_proj), weights, biases):
        proj.weight.copy_(cols(weight))
        proj.bias.copy_(bias)
    attn.out_proj.weight.copy_(rows(out.weight))
    attn.out_proj.bias.copy_(rows(out.bias))


def _ffn(layer: Any, ffn: nn.Module, cols: Any, rows: Any) -> None:
    layer.fc1.weight.copy_(cols(ffn.inner.weight))
    layer.fc1.bias.copy_(ffn.inner.bias)
    layer.fc2.weight.copy_(rows(ffn.outer.weight))
    layer.fc2.bias.copy_(rows(ffn.outer.bias))


def _norm(theirs: nn.LayerNorm, ours: nn.LayerNorm, order: Tensor) -> None:
    theirs.weight.copy_(ours.weight[order])
    theirs.bias.copy_(ours.bias[order])
