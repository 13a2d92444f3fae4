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

ROOT = Path(__file__).resolve().parent.parent
GPU_CHECK = ROOT / "bench" / "gpu_check.py"
NO_CUDA = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no GPU, even on a GPU machine


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=NO_CUDA, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("stage", ["check", "e2e"])
def test_without_cuda_gpu_check_says_so_in_one_line(stage: str) -> None:
    proc = run(str(GPU_CHECK), stage)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith("gpu-check: no CUDA device here (torch ")
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_without_torch_gpu_check_says_so_in_one_line() -> None:
    proc = run("-S", str(GPU_CHECK), "check")  # -S: no site-packages, so no torch
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith(f"gpu-check: {sys.executable} cannot import torch")
    assert proc.stderr.count("\n") == 1


def test_the_cli_and_the_gpu_benchmark_never_import_datasets() -> None:
    code = ("import sys\n"
            "import transcli.cli, transcli.prepare, transcli.train, transcli.translate\n"
            "import transcli.evaluate\n"
            "sys.path.insert(0, 'bench')\n"
            "import gpu_bench\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'datasets'))\n")
    proc = run("-c", code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == "[]\n"


def prepare_without_datasets(dataset: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    code = ("import sys\n"
            "sys.modules['datasets'] = None  # as if not installed\n"
            "from transcli.cli import main\n"
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
