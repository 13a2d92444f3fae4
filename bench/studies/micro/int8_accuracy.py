"""What the torch engine's int8 weights cost in accuracy: references scored teacher-forced.

    python -m bench.studies.micro int8-accuracy --model RUN_DIR [--checkpoint avg] [--lines 1000]

Scores the first --lines pairs of ../shared/corpora/en-es/dev.tatoeba and
dev.newstest2012 (`score.forced_logprobs`, as `transcli score` does) with the run's model:
- `float32`: the model as trained;
- `int8`: what `--int8` runs (`quantize.quantize_int8`: every Linear layer and the output
  layer in int8);
- `int8, float32 output`: int8 Linear layers only, the output layer (the tied embedding)
  in float32, as `--int8` was before it quantized that layer too;
- `int8, rows`: `int8` with one scale per output row in the Linear layers too (they have
  one per matrix), the choice `quantize_int8` did not make.
Prints each one's NLL per reference token and the mean absolute change of a pair's
per-token log-prob from float32's; 1 thread. Pairs longer than the model's positions are
left out.
"""

from __future__ import annotations

import argparse
import os
import warnings

import torch
from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

from bench.common import CORPORA, DEV_SETS, read_lines
from transcli.data.tokenizer import Tokenizer
from transcli.inference.quantize import Int8OutputProduct, linear_names, quantize_int8
from transcli.inference.scoring import forced_logprobs
from transcli.model.transformer import Transformer, output_product
from transcli.rundir.run import open_run_dir


def float_output(model: Transformer) -> Transformer:
    model = quantize_int8(model)
    model.output_product = output_product
    return model


def per_row_linears(model: Transformer) -> Transformer:
    rows = quantize_dynamic(model, dict.fromkeys(linear_names(model),
                                                 per_channel_dynamic_qconfig), dtype=torch.qint8)
    rows.output_product = Int8OutputProduct(rows.output_weight)
    return rows


VARIANTS = {"int8": quantize_int8, "int8, float32 output": float_output,
            "int8, rows": per_row_linears}


def pair_logprobs(model: Transformer, tokenizer: Tokenizer, name: str,
                  lines: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each pair's log-prob total and scored tokens for the first `lines` of a set."""
    src, tgt = (read_lines(CORPORA / f"{name}.{lang}", lines) for lang in ("en", "es"))
    scored = forced_logprobs(model, tokenizer.encode(src), tokenizer.encode(tgt), 4096)
    totals, tokens = zip(*scored)
    return torch.tensor(totals, dtype=torch.float64), torch.tensor(tokens, dtype=torch.float64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="trained run dir")
    parser.add_argument("--checkpoint", default="avg")
    parser.add_argument("--lines", type=int, default=1000, help="pairs per test set")
    args = parser.parse_args()
    torch.set_num_threads(1)
    run = open_run_dir(args.model)
    model, tokenizer = run.model(run.checkpoint(args.checkpoint)), run.tokenizer
    print(f"model {args.model} ({args.checkpoint}); {args.lines} pairs per set; "
          f"load average {os.getloadavg()[0]:.2f}")
    with warnings.catch_warnings():  # torch.ao.quantization's deprecation notices
        warnings.simplefilter("ignore")
        variants = {variant: make(model) for variant, make in VARIANTS.items()}
    print(f"{'set':18s} {'weights':22s} {'NLL/token':>10s} {'mean |change|':>14s}")
    for name in DEV_SETS:
        reference, tokens = pair_logprobs(model, tokenizer, name, args.lines)
        scored = ~reference.isnan()
        print(f"{name:18s} {'float32':22s} "
              f"{-reference[scored].sum() / tokens[scored].sum():10.4f} {0:14.4f}", flush=True)
        for variant, quantized in variants.items():
            totals, tokens = pair_logprobs(quantized, tokenizer, name, args.lines)
            scored = ~totals.isnan()
            totals, tokens, base = totals[scored], tokens[scored], reference[scored]
            change = ((totals - base) / tokens).abs().mean().item()
            print(f"{name:18s} {variant:22s} {-totals.sum() / tokens.sum():10.4f} "
                  f"{change:14.4f}", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")

