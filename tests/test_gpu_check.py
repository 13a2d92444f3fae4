"""The GPU path, checked where there is no GPU: `make gpu-check`'s refusal and the
packages the GPU image lacks.

GPU machines lent to this project have torch, sentencepiece, sacrebleu, typer, tqdm,
pyyaml, safetensors and matplotlib, but no `datasets` and no package registry:
transcli must train, translate and evaluate there from `PYTHONPATH=.` alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
            "import bench.gpu_check, bench.train_speed, bench.quality, bench.translate_speed\n"
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
    proc = prepare_without_datasets(pairs, tmp_path / "out", "--set", "data.vocab_size=316",
                                    "--set", "data.valid_size=5", "--set", "data.test_size=5")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out" / "manifest.json").is_file()


def line(step: int, tokens: int, rate: float) -> dict:
    """A train line of metrics.jsonl: `tokens` target tokens so far, the interval's rate."""
    return {"step": step, "epoch": 0, "tgt_tokens": tokens, "src_tokens": tokens,
            "tokens_per_s": rate, "pad_frac": 0.05, "loss": 5.0}


def test_the_plan_lists_every_stage_within_540_seconds_without_a_gpu() -> None:
    proc = run(*GPU_CHECK, "check", "--plan")
    assert proc.returncode == 0, proc.stderr
    names = [text.split()[0] for text in proc.stdout.splitlines() if not text.startswith(" ")]
    assert names == ["setup", "table", "profile", "translate", "tests", "total"]
    assert "gpu-10m@12000 graphed" in proc.stdout and "base@25000 compiled" in proc.stdout
    total = int(proc.stdout.splitlines()[-1].split()[1])
    assert total <= 540
    assert "tests" not in run(*GPU_CHECK, "check", "--plan", "--no-tests").stdout


def test_the_rate_is_steady_from_the_line_that_ends_three_agreeing_windows() -> None:
    """Slow first intervals (compilation, the allocator growing), then a rate within 10%:
    steady from the first line ending three agreeing windows of 4 intervals whose first
    interval is never the first line's."""
    from bench.train_speed import steady_from

    rates = [50.0, 400.0, 700.0] + [1000.0, 1050.0, 980.0, 1020.0] * 6
    lines, tokens = [{"step": 0, "epoch": 0, "tgt_tokens": 0, "src_tokens": 0}], 0
    for i, rate in enumerate(rates, start=1):
        tokens += 1000
        lines.append(line(5 * i, tokens, rate))
    start = steady_from(lines)
    assert start == 3 + 12  # the 3 slow intervals end at line 3; three windows after them
    assert steady_from(lines[:start]) is None
    rising = lines[:1] + [line(5 * i, 1000 * i, 100.0 * i) for i in range(1, 40)]
    assert steady_from(rising) is None  # still speeding up: not steady yet


def test_busy_time_is_the_union_of_the_intervals() -> None:
    from bench.train_speed import busy_seconds

    assert busy_seconds([(0, 2), (1, 3), (5, 6), (5.5, 5.7)]) == 4.0
    assert busy_seconds([]) == 0.0


@pytest.mark.slow
def test_a_table_row_trains_is_measured_and_stopped_on_the_cpu(
        prepared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    """A row of the table (`bench.train_speed --steady`) on the CPU (on a GPU only the
    config differs): a real `transcli train` process is watched through its log, measured
    once steady (any rate counts here, so that a busy CPU cannot make it flaky) and
    stopped before its allowance ends; it prints its table row and its figures on a RESULT
    line, which has every figure the table prints."""
    from bench import train_speed
    from bench.common import RESULT

    monkeypatch.setattr(train_speed, "TOLERANCE", 10.0)
    monkeypatch.setattr(train_speed, "MEASURE_S", 0.5)
    status = train_speed.main([
        "--steady", "--configs", "tiny", "--device", "cpu", "--seconds", "120", "--keep",
        "--label", "eager", "--data", str(prepared), "--work", str(tmp_path / "row"),
        *[f"--set={item}" for item in ("train.batch_tokens=256", "model.d_model=32",
                                       "model.d_ff=64", "model.heads=2")]])
    printed = capsys.readouterr().out.splitlines()
    assert status == 0 and printed[-1].startswith(RESULT), printed
    result = json.loads(printed[-1][len(RESULT):])  # as gpu-check reads it (run_child)
    assert list((tmp_path / "row" / "run" / "checkpoints").glob("step-*.safetensors")), \
        "a kept row is stopped by SIGTERM: its run saves what the translation stage reads"
    assert result["updates"] >= 5 and result["tgt_tok_s"] > 0 and 0 < result["pad_frac"] < 0.5
    assert result["mfu"].startswith("n/a") and result["steady_s"] > 0
    assert result["partial"] is False, "stopped once measured, not by the 120 s allowance"
    assert printed[-2] == train_speed.table_lines([result])[-1]
    table = train_speed.table_lines([result, {**result, "error": "no steady rate"}])
    assert "| tiny | 256 | eager |" in table[2] and "| no steady rate |" in table[3]


@pytest.mark.slow
def test_the_profile_prints_its_figures_on_the_cpu_and_stops_the_run(prepared: Path,
                                                                     tmp_path: Path) -> None:
    """`bench.train_speed --profile` on the CPU: updates of the real loop timed, then
    profiled by op, beside the matmul rates measured in the same process; its RESULT line
    read by `run_child`, the run stopped by the profile itself (exit status 0)."""
    from bench.common import run_child
    from bench.train_speed import MATMULS, cpu_profile_lines

    sets = ("model.d_model=32", "model.d_ff=64", "model.heads=2", "train.batch_tokens=256")
    outcome = run_child(["bench.train_speed", "--profile", "--configs", "tiny", "--device",
                         "cpu", "--threads", "1", "--data", str(prepared), "--warmup", "2",
                         "--updates", "3", "--profiled", "2",
                         *[f"--set={s}" for s in sets]], 120, tmp_path / "profile.log")
    assert outcome.problem is None and outcome.result is not None, outcome.lines[-5:]
    result = outcome.result
    assert (result["updates"], result["warmup"], result["profiled"]) == (3, 2, 2)
    assert result["cpu_s"] > 0 and result["flop"] > 0
    assert all(rate > 0 for rate in (*result["matmul_ffn"], *result["matmul_cube"]))
    assert any(op in MATMULS for op, _ in result["ops"])
    assert cpu_profile_lines(result)[0].startswith("tiny: 3 updates timed after 2, 1 thread")


def test_a_translation_stage_that_cannot_run_is_skipped_with_its_reason(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """No run kept by the table: skipped, saying so. A run translate_speed refuses (here a
    checkpoint that is not a weights file): skipped with the command's exit status."""
    from bench.common import Report
    from bench.gpu_check import translate_stage

    report = Report("gpu-check", tmp_path / "out")
    assert not translate_stage(report, tmp_path / "work" / "translate")
    said = capsys.readouterr().out.splitlines()[-1]
    assert said.startswith("translate: skipped: no trained run at ")
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "step-0000001.safetensors").write_text("not weights")
    assert not translate_stage(report, tmp_path / "work" / "translate", model=run)
    said = capsys.readouterr().out.splitlines()[-1]
    assert said.startswith("translate: skipped: bench.translate_speed: exit status ")
    assert (tmp_path / "out" / "gpu-check.log").read_text(encoding="utf-8").endswith(said + "\n")


@pytest.mark.slow
def test_the_gpu_tests_collect_without_the_optional_extras() -> None:
    """`pytest -m gpu tests` on a GPU image that lacks the ct2 and serve extras (and
    LibreTranslate's client): the modules that need them skip with the reason, none
    stops the collection."""
    missing = ["ctranslate2", "fastapi", "uvicorn", "starlette", "libretranslatepy",
               "datasets", "multipart", "python_multipart"]
    code = ("import sys\n"
            f"for name in {missing!r}:\n"
            "    sys.modules[name] = None  # as if not installed\n"
            "import pytest\n"
            "sys.exit(pytest.main(['--collect-only', '-q', '-rs', '-p', 'no:cacheprovider',\n"
            "                      '-m', 'gpu', 'tests']))\n")
    proc = run("-c", code)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "tests/test_gpu.py: " in proc.stdout
    for module in ("test_export_ct2", "test_serve", "test_serve_hostile"):
        assert f"SKIPPED [1] tests/{module}.py" in proc.stdout
