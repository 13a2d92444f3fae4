"""CTranslate2 export: a model directory `ctranslate2.Translator(DIR)` loads.

Written through CTranslate2's own spec API (`TransformerSpec` filled by a
`Converter` subclass), so CTranslate2 validates and serialises it. transcli's
layout maps onto the spec one to one: the fused self-attention QKV is the spec's
`linear[0]`, the cross-attention query and fused key/value are `linear[0]` and
`linear[1]`, each residual block's LayerNorm is the norm of the spec's sub-layer
(applied after the residual sum for post-norm, before the sub-layer for pre-norm,
where `enc_norm`/`dec_norm` become the stacks' final norms). What CTranslate2 does
differently by default is set explicitly:

- positions: CTranslate2's built-in sinusoidal table is [sin | cos] halves, not the
  paper's interleaved layout, so the model's own table is stored;
- vocabulary: the sentencepiece pieces in id order, so pad/unk/bos/eos keep
  transcli's ids; the source gets `</s>` appended (`add_source_eos`) and decoding
  starts from `<s>`, as in transcli;
- LayerNorm epsilon: torch's, not CTranslate2's default.

Decoding options that differ in form (length penalty, per-sentence length limit)
are mapped in `transcli.inference.engines.ct2_options`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from torch import Tensor, nn

from transcli.config.schema import Config
from transcli.data.tokenizer import Tokenizer
from transcli.model.transformer import Transformer
from transcli.model.vocab import BOS_ID, EOS_ID, UNK_ID
from transcli.system.errors import UserError
from transcli.system.extras import require

if TYPE_CHECKING:
    from transcli.rundir.run import RunDir

EXTRA = "ct2"
QUANTIZE = ("int8", "int16", "float16")
EXPORTER_VERSION = 1  # raise when a change here makes earlier cached exports stale


def check_options(quantize: Optional[str]) -> None:
    if quantize is not None and quantize not in QUANTIZE:
        raise UserError(f"--quantize {quantize}: must be one of {', '.join(QUANTIZE)}")


def check(cfg: Config) -> None:
    """Every transcli model variant has a CTranslate2 equivalent: nothing to refuse."""


def write(model: Transformer, tokenizer: Tokenizer, cfg: Config, directory: Path,
          quantize: Optional[str]) -> None:
    """Fill the empty `directory` with the CTranslate2 model (weights `quantize`d)."""
    converter = converter_for(model, tokenizer)
    directory.rmdir()  # the Converter creates the directory itself
    converter.convert(str(directory), quantization=quantize)


def converter_for(model: Transformer, tokenizer: Tokenizer) -> Any:
    """A `ctranslate2.converters.Converter` for this model (its class needs ctranslate2)."""
    converters = require("ctranslate2.converters", EXTRA)

    class TranscliConverter(converters.Converter):
        def _load(self) -> Any:
            return model_spec(model, tokenizer)

    return TranscliConverter()


def model_spec(model: Transformer, tokenizer: Tokenizer) -> Any:
    """The `TransformerSpec` holding `model`'s weights and vocabulary."""
    specs = require("ctranslate2.specs", EXTRA)
    cfg = model.cfg
    spec = specs.TransformerSpec.from_config(
        (cfg.enc_layers, cfg.dec_layers), cfg.heads, pre_norm=cfg.pre_norm,
        activation=specs.common_spec.Activation.RELU)
    positions = _array(model.src_embed.positions)
    _set_stack_inputs(spec.encoder, model.src_embed.table.weight, positions)
    _set_stack_inputs(spec.decoder, model.tgt_embed.table.weight, positions)
    for layer_spec, layer in zip(spec.encoder.layer, model.encoder):
        _set_self_attention(layer_spec.self_attention, layer.self_attn, layer.self_attn_block.norm)
        _set_ffn(layer_spec.ffn, layer.ffn, layer.ffn_block.norm)
    for layer_spec, layer in zip(spec.decoder.layer, model.decoder):
        _set_self_attention(layer_spec.self_attention, layer.self_attn, layer.self_attn_block.norm)
        _set_cross_attention(layer_spec.attention, layer.cross_attn, layer.cross_attn_block.norm)
        _set_ffn(layer_spec.ffn, layer.ffn, layer.ffn_block.norm)
    if cfg.pre_norm:
        _set_norm(spec.encoder.layer_norm, model.enc_norm)
        _set_norm(spec.decoder.layer_norm, model.dec_norm)
    spec.decoder.projection.weight = _array(model.output_weight)

    pieces = [tokenizer.sp.IdToPiece(i) for i in range(tokenizer.vocab_size)]
    spec.register_source_vocabulary(pieces)
    spec.register_target_vocabulary(pieces)
    config = spec.config
    config.unk_token, config.eos_token = pieces[UNK_ID], pieces[EOS_ID]
    config.bos_token = config.decoder_start_token = pieces[BOS_ID]
    config.add_source_eos = True
    config.layer_norm_epsilon = model.encoder[0].self_attn_block.norm.eps
    return spec


def _array(tensor: Tensor) -> Any:
    return tensor.detach().float().cpu().numpy().copy()


def _set_stack_inputs(spec: Any, table: Tensor, positions: Any) -> None:
    embeddings = spec.embeddings[0] if isinstance(spec.embeddings, list) else spec.embeddings
    embeddings.weight = _array(table)
    spec.scale_embeddings = True  # x sqrt(d_model), then + positions
    spec.position_encodings.encodings = positions


def _set_linear(spec: Any, linear: nn.Linear) -> None:
    spec.weight = _array(linear.weight)
    if linear.bias is not None:
        spec.bias = _array(linear.bias)


def _set_norm(spec: Any, norm: nn.LayerNorm) -> None:
    spec.gamma = _array(norm.weight)
    spec.beta = _array(norm.bias)


def _set_self_attention(spec: Any, attn: nn.Module, norm: nn.LayerNorm) -> None:
    _set_linear(spec.linear[0], attn.qkv)  # fused [Q; K; V] rows, as CTranslate2 expects
    _set_linear(spec.linear[1], attn.out)
    _set_norm(spec.layer_norm, norm)


def _set_cross_attention(spec: Any, attn: nn.Module, norm: nn.LayerNorm) -> None:
    _set_linear(spec.linear[0], attn.q)
    _set_linear(spec.linear[1], attn.kv)  # fused [K; V] rows
    _set_linear(spec.linear[2], attn.out)
    _set_norm(spec.layer_norm, norm)


def _set_ffn(spec: Any, ffn: nn.Module, norm: nn.LayerNorm) -> None:
    _set_linear(spec.linear_0, ffn.inner)
    _set_linear(spec.linear_1, ffn.outer)
    _set_norm(spec.layer_norm, norm)


def cached_export(run: RunDir, source: Path, quantize: str = "none") -> Path:
    """The CTranslate2 export of a run's checkpoint that `--engine ct2` translates with.

    It is kept in the run dir (`rundir.layout.ct2_cache_dir`), or, when the run dir is
    read-only, in the user's cache folder under the checkpoint's content hash. It is
    trusted only if the checkpoint's content and every cached file's content hash as
    recorded when it was made (a damaged cache would translate to garbage); otherwise it
    is made again."""
    from transcli.export import exported
    from transcli.system.outputs import file_digest, output_folder

    run_dir = run.path
    weights = None if quantize == "none" else quantize
    record = {"format": "ct2", "exporter": EXPORTER_VERSION, "quantize": weights,
              "source_sha256": file_digest(source)}
    target = _cache_dir(Path(run_dir), source, weights or "float32", record["source_sha256"])
    if exported(target).verified_record(record) is not None:  # every file as written
        return target
    model = run.model(source, "cpu")
    try:
        with output_folder(exported(target), "export", cache=True) as stage:
            write(model, run.tokenizer, run.config, stage.path, weights)
            stage.record.update(record)
    except UserError as exc:
        if target.is_relative_to(run_dir):
            raise
        raise UserError(f"{run_dir} is read-only and the cache folder cannot be written "
                        f"({exc}); set XDG_CACHE_HOME to a writable folder") from None
    return target


def remove_stale_caches(run_dir: Path) -> None:
    """Remove the caches of checkpoints that are gone (`layout.stale_ct2_caches`), each the
    size of a model: the files their record lists, still as written, then the folder,
    unless something else is left in it."""
    import contextlib

    from transcli.export import exported
    from transcli.rundir.layout import stale_ct2_caches

    for cache in stale_ct2_caches(run_dir):
        owner = exported(cache)
        owner.clear(owner.contents("cache"))
        with contextlib.suppress(OSError):
            cache.rmdir()


def _cache_dir(run_dir: Path, source: Path, weights: str, digest: str) -> Path:
    """The run dir's cache when the run dir takes writes, else the user's cache folder
    ($XDG_CACHE_HOME, or ~/.cache), named by the checkpoint's content."""
    import os

    from transcli.rundir.layout import ct2_cache_dir

    if os.access(run_dir, os.W_OK):
        return ct2_cache_dir(run_dir, source, weights)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "transcli" / "ct2" / f"{digest[:32]}-{weights}"
