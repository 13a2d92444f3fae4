"""Forward+backward speed of transcli's Transformer vs torch.nn.Transformer.

Both models get the same dimensions, the same embeddings-scaled-plus-positions
input, the same tied output layer + log-softmax and the same padded batch, so
the ratio compares the attention/FFN stacks. Measurements alternate between
the two models in rounds so that background load hits both alike.

    python bench/model_speed.py                   # tiny, small, base on CPU
    python bench/model_speed.py --configs small --seconds 20
On CUDA it also runs base in bf16 and reports MFU (bench/flops.py: FLOPs counted, peaks).
"""

from __future__ import annotations

import argparse
import math
import time

import torch
import torch.nn.functional as F
from torch import nn

from bench.common import ROOT, Lengths, mfu_text, training_flops
from transcli.config.loading import load_config
from transcli.config.schema import ModelConfig
from transcli.model.transformer import Transformer, count_parameters, sinusoidal_table
from transcli.model.vocab import BOS_ID, EOS_ID, PAD_ID

VOCAB = {"tiny": 300, "small": 8000, "base": 32000}
# Target tokens per batch: what the configs feed one device (base is cut down on CPU).
BATCH_TOKENS = {"tiny": 512, "small": 4096, "base": 2048}


class Reference(nn.Module):
    """torch.nn.Transformer with the same embedding and output layers as ours."""

    def __init__(self, cfg: ModelConfig, vocab: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, cfg.d_model, padding_idx=PAD_ID)
        nn.init.normal_(self.embed.weight, std=cfg.d_model ** -0.5)
        self.register_buffer("pe", sinusoidal_table(cfg.max_positions, cfg.d_model))
        self.scale = math.sqrt(cfg.d_model)
        self.core = nn.Transformer(cfg.d_model, cfg.heads, cfg.enc_layers, cfg.dec_layers,
                                   cfg.d_ff, cfg.dropout, batch_first=True,
                                   norm_first=cfg.pre_norm)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        x = self.drop(self.embed(src) * self.scale + self.pe[: src.size(1)])
        y = self.drop(self.embed(tgt_in) * self.scale + self.pe[: tgt_in.size(1)])
        causal = nn.Transformer.generate_square_subsequent_mask(tgt_in.size(1), device=src.device)
        pad = src == PAD_ID
        h = self.core(x, y, tgt_mask=causal, src_key_padding_mask=pad,
                      memory_key_padding_mask=pad, tgt_is_causal=True)
        return F.log_softmax(F.linear(h, self.embed.weight).float(), dim=-1)


def make_batch(target_tokens: int, vocab: int, device: str, seed: int = 0
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sentences of 10-40 sub-words (source ~0.9x target), padded as a real batch is."""
    g = torch.Generator().manual_seed(seed)
    lengths = []
    while sum(lengths) < target_tokens:
        lengths.append(int(torch.randint(10, 41, (1,), generator=g)))
    src_len = [max(2, int(n * 0.9)) for n in lengths]
    src = torch.full((len(lengths), max(src_len) + 1), PAD_ID)
    tgt = torch.full((len(lengths), max(lengths) + 1), PAD_ID)
    for i, (s, t) in enumerate(zip(src_len, lengths)):
        src[i, :s] = torch.randint(4, vocab, (s,), generator=g)
        src[i, s] = EOS_ID
        tgt[i, 0] = BOS_ID
        tgt[i, 1:t + 1] = torch.randint(4, vocab, (t,), generator=g)
    return src.to(device), tgt[:, :-1].to(device), tgt[:, 1:].to(device)


def train_step(model: nn.Module, batch: tuple, autocast: bool) -> None:
    src, tgt_in, tgt_out = batch
    with torch.autocast(src.device.type, dtype=torch.bfloat16, enabled=autocast):
        log_probs = model(src, tgt_in)
    loss = F.nll_loss(log_probs.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD_ID)
    loss.backward()
    model.zero_grad(set_to_none=True)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def measure(models: dict[str, nn.Module], batch: tuple, seconds: float, device: str,
            autocast: bool = False, rounds: int = 4) -> dict[str, float]:
    """Steps/s per model, alternating models in `rounds` slices of the time budget."""
    for model in models.values():  # warm-up (allocator, kernels, autotuning)
        for _ in range(2):
            train_step(model, batch, autocast)
    sync(device)
    steps = {name: 0 for name in models}
    spent = {name: 0.0 for name in models}
    for _ in range(rounds):
        for name, model in models.items():
            start = time.perf_counter()
            while time.perf_counter() - start < seconds / rounds / len(models):
                train_step(model, batch, autocast)
                steps[name] += 1
            sync(device)
            spent[name] += time.perf_counter() - start
    return {name: steps[name] / spent[name] for name in models}


def batch_lengths(batch: tuple) -> Lengths:
    """The real (unpadded) positions of each row, for the FLOP count."""
    src, tgt_in, _ = batch
    return Lengths.of((src != PAD_ID).sum(1).tolist(), (tgt_in != PAD_ID).sum(1).tolist())


def run(name: str, device: str, seconds: float, autocast: bool = False) -> None:
    cfg = load_config(ROOT / "configs" / f"{name}.yaml").model
    vocab = VOCAB[name]
    torch.manual_seed(0)
    ours = Transformer(cfg, vocab).to(device).train()
    reference = Reference(cfg, vocab).to(device).train()
    tokens = BATCH_TOKENS[name] * (8 if device == "cuda" else 1)
    batch = make_batch(tokens, vocab, device)
    n_tgt = int((batch[2] != PAD_ID).sum())
    rates = measure({"transcli": ours, "nn.Transformer": reference}, batch, seconds,
                    device, autocast)
    precision = "bf16" if autocast else "fp32"
    print(f"{name:5s} {device}/{precision}  params {count_parameters(ours) / 1e6:6.2f}M  "
          f"batch {batch[0].size(0)} sents / {n_tgt} tgt tokens")
    for label, rate in rates.items():
        print(f"  {label:15s} {rate * n_tgt:10,.0f} tgt tok/s  ({rate:.2f} steps/s)")
    print(f"  ratio transcli / nn.Transformer = {rates['transcli'] / rates['nn.Transformer']:.2f}")
    if device == "cuda":
        flops = training_flops(cfg, vocab, batch_lengths(batch)) * rates["transcli"]
        print(f"  model FLOP/s {flops / 1e12:.1f} T  MFU "
              f"{mfu_text(flops, torch.cuda.get_device_name())}  peak memory "
              f"{torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", nargs="+", default=["tiny", "small", "base"])
    parser.add_argument("--seconds", type=float, default=12.0, help="per config, both models")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    for name in args.configs:
        run(name, "cpu", args.seconds)
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = True
        print(f"GPU: {torch.cuda.get_device_name()}")
        run("base", "cuda", args.seconds, autocast=True)


if __name__ == "__main__":
    main()
