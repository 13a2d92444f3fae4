"""`bench/translate_speed.py`: how it pairs the engines' times, and one short run of it."""

from __future__ import annotations

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


@pytest.mark.slow
def test_a_short_run_reports_every_engine_and_cell(bench, sample_run: Path,
                                                   tmp_path: Path) -> None:
    if not CORPORA.is_dir():
        pytest.skip(f"{CORPORA} not found")
    proc = subprocess.run(
        [sys.executable, "-m", "bench.translate_speed", "--model", str(sample_run),
         "--checkpoint", "200", "--lines", "3", "--rounds", "2", "--threads", "1",
         "--engines", "torch", "torch-uncached", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line.split() for line in proc.stdout.splitlines()
            if line.startswith(("torch ", "torch-uncached "))]
    assert len(rows) == 2 * len(DEV_SETS) * len(bench.SEARCHES)
    assert "OpenMP wait policy (transcli.system.waitpolicy): " in proc.stdout
    for row in rows:
        assert float(row[4]) > 0  # sentences/s
        if row[0] == "torch":
            assert row[6] == "1.00x"
        else:  # the uncached decoder beside the cached one, round by round
            assert row[6].endswith("x") and row[7].startswith("(")
    # both decoders gave the same translations
    for name in DEV_SETS:
        for label in bench.SEARCHES:
            cached, uncached = (tmp_path / f"{engine}-1-{name}-{label}.es"
                                for engine in ("torch", "torch-uncached"))
            assert cached.read_text(encoding="utf-8") == uncached.read_text(encoding="utf-8")
