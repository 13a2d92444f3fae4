"""What a device gets (`transcli.inference.device_defaults`): precision, batch budget and
CTranslate2's compute type on the CPU; the CUDA side is in tests/test_gpu.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from transcli.config.schema import DecodeConfig, ModelConfig
from transcli.inference import device_defaults as defaults
from transcli.inference.translator import load_translator
from transcli.rundir.run import open_run_dir
from transcli.system.errors import UserError

CPU = torch.device("cpu")


def test_auto_is_fp32_on_the_cpu_and_half_precision_is_refused_there() -> None:
    for asked in ("auto", "fp32"):
        decode = DecodeConfig(precision=asked)
        assert defaults.precision(decode, CPU) == "fp32"
        assert defaults.model_dtype(decode, CPU) == torch.float32
        assert defaults.ct2_compute_type(decode, CPU) == "default"
    for asked in ("bf16", "fp16"):
        with pytest.raises(UserError, match=f"decode.precision={asked}: the CPU"):
            defaults.precision(DecodeConfig(precision=asked), CPU)
        with pytest.raises(UserError, match="fp32 only"):
            defaults.ct2_compute_type(DecodeConfig(precision=asked, engine="ct2"), CPU)


def test_a_set_budget_is_kept_and_zero_is_4096_source_tokens_on_the_cpu() -> None:
    model = ModelConfig()
    assert defaults.batch_tokens(DecodeConfig(batch_tokens=700), model, 8000, CPU) == 700
    for decode in (DecodeConfig(), DecodeConfig(strategy="greedy", beam_size=1)):
        assert defaults.batch_tokens(decode, model, 8000, CPU) == defaults.CPU_BATCH_TOKENS
        assert defaults.fitted(decode, model, 8000, CPU).batch_tokens == 4096


def test_a_row_s_memory_by_hand() -> None:
    """Vocabulary 1,000 and 2 decoder layers of d_model 8 in fp16 (2 bytes), targets of at
    most 1.0 x 1 + 5 tokens (+ BOS): logits 2 + log-probs 4 + top-k's 4 bytes per word,
    and keys + values held twice, 2 x 2 x 2 layers x 8 x 2 bytes x 7 positions."""
    model = ModelConfig(dec_layers=2, d_model=8, max_positions=64)
    decode = DecodeConfig(max_len_a=1.0, max_len_b=5)
    assert defaults.row_bytes(decode, model, 1000, 2) == 1000 * 10 + 2 * 2 * 2 * 8 * 2 * 7
    sampling = replace(decode, strategy="sample")  # float64 copies of the distribution
    assert defaults.row_bytes(sampling, model, 1000, 2) == 1000 * 46 + 2 * 2 * 2 * 8 * 2 * 7
    assert defaults.beams_of(decode) == 4 and defaults.beams_of(sampling) == 1
    assert defaults.beams_of(replace(sampling, n_best=3)) == 3


def test_loading_a_translator_in_half_precision_on_the_cpu_is_one_error(run_dir: Path) -> None:
    with pytest.raises(UserError, match="decode.precision=fp16: the CPU translates in fp32"):
        load_translator(open_run_dir(run_dir, ["decode.precision=fp16"]), "last", "cpu")


def test_an_unknown_precision_names_the_choices(run_dir: Path) -> None:
    with pytest.raises(UserError, match="'decode.precision' must be one of auto, fp32, bf16"):
        open_run_dir(run_dir, ["decode.precision=fp8"])
