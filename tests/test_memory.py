"""The training memory estimate against the real model: its parameter count, and the bytes
autograd saves for the backward pass (measured with saved-tensor hooks), and the one-line
refusal when the estimate exceeds free memory."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
from helpers import ROOT

from transcli.config.loading import load_config
from transcli.config.schema import ModelConfig
from transcli.model.transformer import Transformer, count_parameters
from transcli.model.vocab import PAD_ID
from transcli.system.errors import UserError
from transcli.training import memory
from transcli.training.memory import (
    TYPICAL_LENGTH,
    available_memory,
    check_training_memory,
    parameter_count,
    training_estimate,
)
from transcli.training.objective import TeacherForcing

SHAPES = [
    {},
    {"pre_norm": True},
    {"share_embeddings": False},
    {"share_embeddings": False, "tie_output": False},
    {"tie_output": False, "enc_layers": 3, "dec_layers": 1},
]


def small(**changes: object) -> ModelConfig:
    cfg = ModelConfig(enc_layers=2, dec_layers=2, d_model=32, d_ff=96, heads=4, dropout=0.0,
                      max_positions=TYPICAL_LENGTH)
    return replace(cfg, **changes)


@pytest.mark.parametrize("changes", SHAPES)
def test_parameter_count_equals_the_models(changes: dict) -> None:
    cfg = small(**changes)
    assert parameter_count(cfg, 211) == count_parameters(Transformer(cfg, 211))


def test_parameter_count_of_the_base_model() -> None:
    assert parameter_count(load_config(ROOT / "configs" / "base.yaml").model, 32000) == 60_522_496


def saved_bytes(cfg: ModelConfig, vocab: int, sentences: int, length: int) -> int:
    """Bytes of the tensors autograd keeps for backward in one training forward pass
    (each storage once; the parameters themselves excluded)."""
    torch.manual_seed(0)
    model = Transformer(cfg, vocab).train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    src = torch.randint(4, vocab, (sentences, length))
    tgt = torch.randint(4, vocab, (sentences, length))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        TeacherForcing(model, 0.1, PAD_ID)(src, tgt, tgt)  # what training runs
    return sum(size for pointer, size in storages.items() if pointer not in params)


@pytest.mark.parametrize("changes", [{}, {"dropout": 0.1}, {"d_model": 64, "heads": 8},
                                     {"d_ff": 256, "enc_layers": 3}, {"pre_norm": True}])
def test_activations_match_what_autograd_saves(changes: dict) -> None:
    """Sentences of the estimate's assumed length: the estimate is within 5% of the
    measurement, whatever the shape."""
    cfg, vocab, sentences = small(**changes), 300, 6
    estimate = training_estimate(cfg, vocab, sentences * TYPICAL_LENGTH)
    measured = saved_bytes(cfg, vocab, sentences, TYPICAL_LENGTH)
    output_weight_grad = 4 * vocab * cfg.d_model  # saved by the fused loss, fp32
    assert estimate.activations + output_weight_grad == pytest.approx(measured, rel=0.05)


def test_estimate_scales_with_batch_and_precision() -> None:
    cfg = load_config(ROOT / "configs" / "small.yaml").model
    one, two = (training_estimate(cfg, 8000, tokens) for tokens in (4096, 8192))
    assert two.activations == 2 * one.activations and two.weights == one.weights
    half = training_estimate(cfg, 8000, 4096, activation_bytes=2)
    assert half.activations * 2 == one.activations and half.output_layer == one.output_layer
    assert one.weights == 16 * parameter_count(cfg, 8000)  # fp32 weights, grads, 2 moments


def test_available_memory_is_what_free_reports_here() -> None:
    """`free -b`'s "available" column (procps reads MemAvailable itself), lowered to the
    cgroup's room when the process runs under a memory limit."""
    import subprocess

    header, mem = subprocess.run(["free", "-b"], capture_output=True, text=True,
                                 check=True).stdout.splitlines()[:2]
    expected = int(mem.split()[header.split().index("available") + 1])
    limit = Path("/sys/fs/cgroup/memory.max")
    if limit.is_file() and limit.read_text().strip() != "max":
        used = int(Path("/sys/fs/cgroup/memory.current").read_text())
        expected = min(expected, int(limit.read_text()) - used)
    free = available_memory("cpu")
    assert free is not None and abs(free - expected) <= 0.05 * expected


def test_a_run_too_big_for_the_machine_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = load_config(ROOT / "configs" / "base.yaml")
    monkeypatch.setattr(memory, "available_memory", lambda device: 8 * 2**30)
    with pytest.raises(UserError) as info:
        check_training_memory(cfg, 32000, "cpu")
    message = str(info.value)
    assert "\n" not in message and "8.0 GiB is free" in message
    assert "train.batch_tokens (25,000)" in message and "d_model 512" in message
    small_cfg = load_config(ROOT / "configs" / "small.yaml")
    assert check_training_memory(small_cfg, 8000, "cpu").total < 8 * 2**30
    with pytest.raises(UserError, match="on cpu .*x 16 processes"):
        check_training_memory(small_cfg, 8000, torch.device("cpu"), processes=16)


def test_unknown_free_memory_never_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "available_memory", lambda device: None)
    huge = load_config(None, ["model.d_model=32768", "model.heads=8"])
    assert check_training_memory(huge, 32000).total > 2**40
