"""Checkpoint files: old parameter names, tied tensors, and what a load refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from transcli.config.schema import ModelConfig
from transcli.model.transformer import Transformer
from transcli.rundir.checkpoints import load_weights, save_weights
from transcli.system.errors import UserError

CFG = ModelConfig(enc_layers=2, dec_layers=2, d_model=16, d_ff=32, heads=2, max_positions=32)


def model(seed: int) -> Transformer:
    torch.manual_seed(seed)
    return Transformer(CFG, 50)


def legacy_name(name: str) -> str:
    """The name the parameter had when residual blocks were a list `sub`."""
    for stack, blocks in (("encoder", ["self_attn_block", "ffn_block"]),
                          ("decoder", ["self_attn_block", "cross_attn_block", "ffn_block"])):
        for i, block in enumerate(blocks):
            name = name.replace(f".{block}.", f".sub.{i}.") if name.startswith(stack) else name
    return name


def test_a_checkpoint_with_the_old_block_names_loads(tmp_path: Path) -> None:
    source = model(0)
    old = {legacy_name(k): v.clone() for k, v in source.state_dict().items()
           if k != "src_embed.table.weight"}  # tied: stored once, as save_model does
    assert any(".sub.2." in k for k in old) and not any("_block" in k for k in old)
    save_file(old, str(tmp_path / "old.safetensors"))
    target = model(1)
    load_weights(target, tmp_path / "old.safetensors")
    for name, tensor in source.state_dict().items():
        assert torch.equal(target.state_dict()[name], tensor), name
    assert target.src_embed.table.weight is target.tgt_embed.table.weight


def test_round_trip_keeps_the_tie(tmp_path: Path) -> None:
    save_weights(model(0), tmp_path / "w.safetensors")
    target = model(1)
    load_weights(target, tmp_path / "w.safetensors")
    assert torch.equal(target.output_weight, model(0).output_weight)
    assert target.src_embed.table.weight is target.tgt_embed.table.weight


@pytest.mark.parametrize("change, message", [
    (lambda w: w.pop("decoder.1.ffn.inner.bias"), 'Missing key.*"decoder.1.ffn.inner.bias"'),
    (lambda w: w.update(extra=torch.zeros(1)), 'Unexpected key.*"extra"'),
    (lambda w: w.update({"encoder.0.ffn.inner.weight": torch.zeros(3, 3)}), "shape"),
    (lambda w: w.update({"encoder.0.ffn.inner.bias": torch.zeros(32, dtype=torch.int64)}),
     "not a floating-point"),
    (lambda w: w["encoder.0.ffn.inner.bias"].fill_(float("nan")), "NaN"),
])
def test_a_mismatched_or_poisoned_file_is_one_line(tmp_path: Path, change, message) -> None:
    weights = {k: v.clone() for k, v in model(0).state_dict().items()
               if k != "src_embed.table.weight"}
    change(weights)
    save_file(weights, str(tmp_path / "bad.safetensors"))
    with pytest.raises(UserError, match=message):
        load_weights(model(1), tmp_path / "bad.safetensors")
