"""Forward+backward speed of transcli's Transformer vs torch.nn.Transformer.

Both models get the same dimensions, the same embeddings-scaled-plus-positions
input, the same tied output layer + log-softmax and the same padded batch, so
the ratio compares the attention/FFN stacks. Measurements alternate between
the two models in rounds so that background load hits both alike.

    python -m bench.model_speed                   # tiny, small, base on CPU
    python -m bench.model_speed --configs small --seconds 20
On CUDA it also runs base in bf16 and reports MFU (bench/flops.py: FLOPs counted, peaks).
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from torch import nn

from bench.common import ROOT
from bench.flops import Lengths, mfu_text, training_flops
from bench.reference import Reference
from transcli.config.loading import load_config
from transcli.model.transformer import Transformer, count_parameters
from transcli.model.vocab import BOS_ID, EOS_ID, PAD_ID

VOCAB = {"tiny": 300, "small": 8000, "base": 32000}
# Target tokens per batch: what the configs feed one device (base is cut down on CPU).
BATCH_TOKENS = {"tiny": 512, "small": 4096, "base": 2048}


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
