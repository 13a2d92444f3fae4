"""The GPU path, checked where there is no GPU: `make gpu-check`'s refusal and the
packages the GPU image lacks.

GPU machines lent to this project have torch, sentencepiece, sacrebleu, typer, tqdm,
pyyaml, safetensors and matplotlib, but no `datasets` and no package registry:
transcli must train, translate and evaluate there from `PYTHONPATH=.` alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.common import Steady

ROOT = Path(__file__).resolve().parent.parent
GPU_CHECK = ("-m", "bench.gpu_check")
NO_CUDA = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no GPU, even on a GPU machine


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=NO_CUDA, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("stage", ["check", "e2e"])
def test_without_cuda_gpu_check_says_so_in_one_line(stage: str) -> None:
    proc = run(*GPU_CHECK, stage)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith("gpu-check: no CUDA device here (torch ")
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_without_torch_gpu_check_says_so_in_one_line() -> None:
    proc = run("-S", *GPU_CHECK, "check")  # -S: no site-packages, so no torch
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith(f"gpu-check: {sys.executable} cannot import torch")
    assert proc.stderr.count("\n") == 1


@pytest.mark.slow
def test_the_cli_and_the_gpu_benchmark_never_import_datasets() -> None:
    code = ("import sys\n"
            "import transcli.cli.app, transcli.data.prepare, transcli.training.loop\n"
            "import transcli.inference.translator, transcli.inference.bleu\n"
            "import bench.gpu_bench\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'datasets'))\n")
    proc = run("-c", code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == "[]\n"


def prepare_without_datasets(dataset: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    code = ("import sys\n"
            "sys.modules['datasets'] = None  # as if not installed\n"
            "from transcli.cli.app import main\n"
            f"sys.argv = ['transcli', 'prepare', '--config', {str(ROOT / 'configs/tiny.yaml')!r},"
            f" '--dataset', {str(dataset)!r}, '--out', {str(out)!r}, *{list(args)!r}]\n"
            "main()\n")
    return run("-c", code)


def test_a_dataset_source_without_datasets_is_one_line(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("en,es\nHi.,Hola.\n", encoding="utf-8")
    proc = prepare_without_datasets(pairs, tmp_path / "out")
    assert proc.returncode == 1
    assert proc.stderr == (f"transcli: error: dataset '{pairs}': dataset sources need the "
                           f"Hugging Face `datasets` package (pip install datasets); "
                           f"--src-file/--tgt-file and --tsv work without it\n")
    assert not (tmp_path / "out").exists()


def test_local_json_lines_need_no_datasets(tmp_path: Path) -> None:
    """transcli reads a local .jsonl itself (line numbers in its errors)."""
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(f'{{"translation": {{"en": "Line {i}.", "es": "Línea {i}."}}}}\n'
                             for i in range(40)), encoding="utf-8")
    proc = prepare_without_datasets(pairs, tmp_path / "out", "--set", "data.vocab_size=60",
                                    "--set", "data.valid_size=5", "--set", "data.test_size=5")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "manifest.json").is_file()


def gpu_bench():
    from bench import gpu_bench

    return gpu_bench


def test_the_measurement_starts_once_the_warm_up_seconds_have_passed() -> None:
    """Two log intervals of 10 s (slow first updates), then three of 1 s: with 15 s of
    warm-up, the measurement starts at the line that completes the second interval."""
    lines = [{"step": 0, "epoch": 0, "tgt_tokens": 0, "src_tokens": 0}]
    for i, rate in enumerate([100.0, 100.0, 1000.0, 1000.0, 1000.0], start=1):
        lines.append({"step": 5 * i, "epoch": 0, "tgt_tokens": 1000 * i,
                      "src_tokens": 900 * i, "tokens_per_s": rate, "pad_frac": 0.1})
    bench = gpu_bench()
    assert bench.warmup_end(lines, 15.0) == 2
    assert bench.warmup_end(lines, 0.0) == 1
    assert bench.warmup_end(lines, 1000.0) == len(lines) - 1  # nothing left to measure
    steady = Steady.of(lines[2:])
    assert (steady.steps, steady.seconds, steady.tgt_tokens) == (15, 3.0, 3000)


def test_a_measured_row_and_a_failed_one_print() -> None:
    """check's report lines render every key a measurement writes (no GPU needed)."""
    bench = gpu_bench()
    row = {"config": "base", "batch_tokens": 25000, "compiled": True, "tgt_tok_s": 1.5e5,
           "updates_s": 6.0, "pad_frac": 0.3,
           "tflop_s": 50.0, "mfu": "5.1% of 989 TFLOP/s", "peak_gib": 11.2, "recompiles": 1,
           "seconds": 20.0, "steps": 140, "warmup_steps": 120, "warmup_s": 60.0,
           "epoch_at_start": 0, "first_log_s": 30.0, "graphs": 2, "graph_breaks": 1,
           "recompile_reasons": ["forward: size mismatch"]}
    text = bench.format_row(row)
    assert "150,000 tgt tok/s" in text and "from epoch 0" in text and "size mismatch" in text
    failed = {"config": "small", "batch_tokens": 4096, "compiled": False,
              "error": "exit status 1: Boom"}
    table = bench.summary_table([row, failed], "NVIDIA H200")
    assert ("| base | 25000 | compiled | 6.0 | 150,000 | 5.1% of 989 TFLOP/s | 30.0% | 11.2 "
            "| 30 | 1 |") in table
    assert "| small | 4096 | eager | exit status 1: Boom |" in table
