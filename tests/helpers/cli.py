"""Running `transcli` as a user does, and the contract for its error messages."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

from helpers import ROOT


def run_cli(*args: str | Path, stdin: str | bytes | None = None, text: bool = True,
            env: Optional[dict[str, str]] = None, cwd: Path = ROOT,
            timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m transcli ARGS` as a user runs it, on one torch thread (tiny models run
    fastest that way, see memorised.one_torch_thread)."""
    return subprocess.run([sys.executable, "-m", "transcli", *map(str, args)], input=stdin,
                          capture_output=True, text=text, cwd=cwd, timeout=timeout,
                          env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """The CLI's contract for user errors: exit 1, one line on stderr, no traceback."""
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    error = result.stderr.strip().splitlines()
    assert len(error) == 1, result.stderr
    assert error[0].startswith("transcli: error: ")
    return error[0]
