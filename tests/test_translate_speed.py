"""`bench/translate_speed.py`: how it pairs the engines' times, and one short run of it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.common import CORPORA, DEV_SETS

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench():
    from bench import translate_speed

    return translate_speed


def test_a_ratio_is_the_median_of_the_rounds_own_ratios(bench) -> None:
    """torch took 2, 3 and 6 s in three rounds, the engine 2, 1 and 2 s beside it: the
    engine was 1x, 3x and 3x as fast round by round, so 3.00x. The ratio of the medians
    (3 / 2 = 1.5x) or of the fastest rounds (2 / 1 = 2.0x) would say otherwise."""
    torch = [{"seconds": s} for s in (2.0, 3.0, 6.0)]
    engine = [{"seconds": s} for s in (2.0, 1.0, 2.0)]
    assert bench.paired_ratio(torch, engine) == "3.00x (1.00-3.00)"
    assert bench.paired_ratio(torch[:1], engine[:1]) == "1.00x"
    assert bench.paired_ratio(engine, torch) == "0.33x (0.33-1.00)"
    assert bench.paired_ratio(None, engine) == ""


def test_every_engine_runs_before_torch_in_one_round_and_after_it_in_the_next(bench) -> None:
    engines = ["torch", "torch-int8", "ct2"]
    assert [bench.turns(engines, round_) for round_ in range(3)] == [
        ["torch", "torch-int8", "ct2"], ["ct2", "torch-int8", "torch"],
        ["torch", "torch-int8", "ct2"]]


def short_run(run: Path, folder: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bench.translate_speed", "--model", str(run), "--checkpoint",
         "200", "--rounds", "2", "--threads", "1", "--hyps", str(folder), *flags],
        cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_short_run_reports_every_engine_and_cell(bench, sample_run: Path,
                                                   tmp_path: Path) -> None:
    if not CORPORA.is_dir():
        pytest.skip(f"{CORPORA} not found")
    proc = short_run(sample_run, tmp_path, "--lines", "3", "--engines", "torch",
                     "torch-int8", "--budget", "600")  # each cell within its share
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line.split() for line in proc.stdout.splitlines()
            if line.startswith(("torch ", "torch-int8 "))]
    assert len(rows) == 2 * len(DEV_SETS) * len(bench.SEARCHES)
    assert "OpenMP wait policy (transcli.system.waitpolicy): " in proc.stdout
    for row in rows:
        assert row[4] == "all" and float(row[5]) > 0 and float(row[6]) > 0  # sentences/s
        if row[0] == "torch":
            assert row[8] == "1.00x"
        else:  # int8 beside float32, round by round
            assert row[8].endswith("x") and row[9].startswith("(")
    for name in DEV_SETS:  # each cell's translations are written
        for label in bench.SEARCHES:
            for engine in ("torch", "torch-int8"):
                assert (tmp_path / f"{engine}-1-{name}-{label}-0.es").is_file()


@pytest.mark.slow
def test_batch_sizes_side_by_side_give_the_same_lines_and_a_ratio_to_the_largest(
        bench, sample_run: Path, tmp_path: Path) -> None:
    """--batch-rows: each size is a cell, its speed over the largest size's beside it;
    the translations do not depend on the size; --out receives the table."""
    if not CORPORA.is_dir():
        pytest.skip(f"{CORPORA} not found")
    out = tmp_path / "table"
    proc = short_run(sample_run, tmp_path, "--lines", "6", "--batch-rows", "1", "2", "6",
                     "--engines", "torch", "--sets", "dev.tatoeba", "--searches", "greedy",
                     "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("torch ")]
    assert [row[4] for row in rows] == ["1", "2", "6"]
    assert rows[-1][9] == rows[-1][10] == "1.00x"  # vs torch, vs largest; then CPU time
    assert all(row[9].endswith("x") and row[11].endswith("x") for row in rows[:-1])
    outputs = {(tmp_path / f"torch-1-dev.tatoeba-greedy-{n}.es").read_text(encoding="utf-8")
               for n in (1, 2, 6)}
    assert len(outputs) == 1
    assert (out / "translate-speed.log").read_text(encoding="utf-8").splitlines()[-1] == \
        proc.stdout.splitlines()[-1]
    cells = json.loads((out / "translate-speed.json").read_text(encoding="utf-8"))["cells"]
    assert [cell["rows"] for cell in cells] == [1, 2, 6] and len(cells[0]["rounds"]) == 2


def test_by_length_orders_each_sets_lines_shortest_first_with_their_references(bench) -> None:
    """--by-length: the English lines shortest first, and each reference still beside its
    English line, so BLEU is scored on the same pairs."""
    import argparse

    if not CORPORA.is_dir():
        pytest.skip(f"{CORPORA} not found")
    given = argparse.Namespace(lines=40, by_length=False)
    pairs = list(zip(bench.set_lines("dev.tatoeba", "en", given),
                     bench.set_lines("dev.tatoeba", "es", given)))
    ordered = argparse.Namespace(lines=40, by_length=True)
    english = bench.set_lines("dev.tatoeba", "en", ordered)
    assert sorted(zip(english, bench.set_lines("dev.tatoeba", "es", ordered))) == sorted(pairs)
    lengths = [len(line.split()) for line in english]
    assert lengths == sorted(lengths) and lengths != [len(en.split()) for en, _ in pairs]


def test_cuda_without_a_cuda_device_is_one_line(bench, sample_run: Path,
                                                tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    if not CORPORA.is_dir():
        pytest.skip(f"{CORPORA} not found")
    proc = short_run(sample_run, tmp_path, "--device", "cuda", "--budget", "5")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip().startswith("bench.translate_speed: --device cuda: no CUDA")
    assert len(proc.stderr.strip().splitlines()) == 1
