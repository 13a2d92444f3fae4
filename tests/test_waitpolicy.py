"""transcli.system.waitpolicy: OpenMP threads spin on idle cores, sleep on busy ones."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.waiting import Collected

from transcli.system.waitpolicy import busy_cores, choose, cpu_ticks

STAT = """cpu  500 0 300 9000 100 0 0 0 0 0
cpu0 100 0 100 4000 50 0 0 0 0 0
cpu1 400 0 200 5000 50 0 0 0 0 0
intr 12345
"""


def test_ticks_of_the_cores_this_process_may_use(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text(STAT)
    assert cpu_ticks({0}, str(stat)) == (200, 4250)  # busy: user + system; idle + iowait not
    assert cpu_ticks({0, 1}, str(stat)) == (800, 9900)
    assert cpu_ticks({7}, str(stat)) is None and cpu_ticks({0}, str(tmp_path / "no")) is None


def test_busy_cores_from_two_samples() -> None:
    # 2 cores, 200 ticks passed, 100 of them busy: one core's worth of work.
    assert busy_cores((1000, 5000), (1100, 5200), 2) == 1.0
    assert busy_cores((1000, 5000), (1000, 5200), 2) == 0.0
    assert busy_cores((1000, 5000), (1000, 5000), 2) == 0.0


def test_a_policy_set_by_the_user_wins() -> None:
    env = {"OMP_WAIT_POLICY": "ACTIVE"}
    assert choose(env) == "ACTIVE" and env == {"OMP_WAIT_POLICY": "ACTIVE"}
    env = {"OMP_NUM_THREADS": "1"}
    assert choose(env) == "default" and "OMP_WAIT_POLICY" not in env


def test_busy_cores_make_threads_sleep() -> None:
    """A process spinning on every core this one may use: PASSIVE is chosen."""
    cores = len(os.sched_getaffinity(0))
    spin = "print('spinning', flush=True)\nwhile True:\n    pass\n"
    spinners = [subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE)
                for _ in range(cores)]
    try:
        for spinner in spinners:
            Collected(spinner, spinner.stdout).wait_for("spinning")
        env: dict[str, str] = {}
        assert choose(env, seconds=0.3) == "PASSIVE" and env["OMP_WAIT_POLICY"] == "PASSIVE"
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def test_importing_transcli_does_no_work() -> None:
    """Importing the package and its command line loads no torch and samples no CPU load:
    the wait policy is chosen when a command starts."""
    code = ("import os, sys\n"
            "import transcli, transcli.cli.app\n"
            "print('torch' in sys.modules, os.environ.get('OMP_WAIT_POLICY'))")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout.split()
    assert out == ["False", "None"]
