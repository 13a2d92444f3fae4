"""What a device gets: the torch engine's precision, the batch budget and CTranslate2's
compute type, each from its `decode` key or, where that says auto (or 0), chosen for the
device.

- `decode.precision`: auto is bf16 on a CUDA device that has it, else fp16 there, and
  fp32 on the CPU. In half precision the model's weights and activations are bf16/fp16;
  its log-softmax runs in float32 and search keeps scores in float64, as in float32.
  fp32 on CUDA is full float32 (TF32 stays off): the switch for exactness checks. The
  CPU runs fp32 only: its products (`cpu_matmul`) and int8 are float32 paths.
- `decode.batch_tokens`: 0 is 4,096 source tokens per batch on the CPU (larger batches
  were no faster there); on CUDA, `CUDA_ROW_TOKENS` decoder-row tokens (source tokens x
  beams, or x samples), fewer where the card's free memory would not hold such a batch
  (`rows_fitting`). A set value is source tokens before beams, on any device.
- CTranslate2's compute type: "default" on the CPU (the export's own type: float32, or
  int8 with `--int8`); on CUDA the precision's ("bfloat16", "float16", "float32"), or
  "int8_float16" with `--int8`.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from transcli.config.schema import DecodeConfig, ModelConfig
from transcli.system.errors import UserError

CPU_BATCH_TOKENS = 4096
CUDA_ROW_TOKENS = 131072  # decoder-row tokens (source tokens x beams) per batch on CUDA
MEMORY_SHARE = 0.5  # of the card's free memory, what a batch's decoding may take
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
CT2_TYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def precision(decode: DecodeConfig, device: torch.device) -> str:
    """fp32, bf16 or fp16: what `decode.precision` means on `device` (see the docstring);
    a precision the device cannot run is a UserError."""
    asked = decode.precision
    if device.type != "cuda":
        if asked not in ("auto", "fp32"):
            raise UserError(f"decode.precision={asked}: the CPU translates in fp32 only "
                            f"(half precision is for CUDA; --int8 for smaller CPU products)")
        return "fp32"
    has_bf16 = torch.cuda.is_bf16_supported()
    if asked == "auto":
        return "bf16" if has_bf16 else "fp16"
    if asked == "bf16" and not has_bf16:
        raise UserError("decode.precision=bf16: this CUDA device has no bf16 (use fp16)")
    return asked


def model_dtype(decode: DecodeConfig, device: torch.device) -> torch.dtype:
    """The dtype the torch engine's model runs in on `device`."""
    return DTYPES[precision(decode, device)]


def ct2_compute_type(decode: DecodeConfig, device: torch.device) -> str:
    """CTranslate2's `compute_type` for `decode` on `device` (see the docstring)."""
    if device.type != "cuda":
        precision(decode, device)  # refuses half precision on the CPU
        return "default"
    if decode.quantize == "int8":
        return "int8_float16"
    return CT2_TYPES[precision(decode, device)]


def beams_of(decode: DecodeConfig) -> int:
    """Decoder rows per sentence: beams, samples, or one."""
    if decode.strategy == "beam":
        return decode.beam_size
    return decode.n_best if decode.strategy == "sample" else 1


def row_bytes(decode: DecodeConfig, model: ModelConfig, vocab: int, element: int) -> int:
    """What one decoder row of a sentence of two source tokens (the most rows a budget
    holds) may take at once: its step's [vocab] logits and float32 log-probs (with
    sampling's float64 copies), and its self-attention keys and values at its longest
    target, held twice while beams are followed."""
    per_vocab = element + 4 + (5 * 8 if decode.strategy == "sample" else 4)
    positions = min(model.max_positions, int(decode.max_len_a) + decode.max_len_b + 1)
    return vocab * per_vocab + 2 * 2 * model.dec_layers * model.d_model * element * positions


def rows_fitting(decode: DecodeConfig, model: ModelConfig, vocab: int,
                 device: torch.device) -> int:
    """Decoder rows whose decoding fits in `MEMORY_SHARE` of the card's free memory."""
    free, _ = torch.cuda.mem_get_info(device)
    element = torch.finfo(model_dtype(decode, device)).bits // 8
    return max(1, int(free * MEMORY_SHARE) // row_bytes(decode, model, vocab, element))


def batch_tokens(decode: DecodeConfig, model: ModelConfig, vocab: int,
                 device: torch.device) -> int:
    """`decode.batch_tokens`, or for 0 the budget chosen for `device` (see the docstring):
    source tokens per batch before beams. On CUDA a batch of B tokens holds at most B / 2
    sentences (each has a token and EOS), so B x beams / 2 rows."""
    if decode.batch_tokens:
        return decode.batch_tokens
    if device.type != "cuda":
        return CPU_BATCH_TOKENS
    beams = beams_of(decode)
    return max(CPU_BATCH_TOKENS, min(CUDA_ROW_TOKENS // beams,
                                     2 * rows_fitting(decode, model, vocab, device) // beams))


def fitted(decode: DecodeConfig, model: ModelConfig, vocab: int,
           device: torch.device) -> DecodeConfig:
    """`decode` with its batch budget chosen for `device` (checking its precision there)."""
    precision(decode, device)
    return replace(decode, batch_tokens=batch_tokens(decode, model, vocab, device))
