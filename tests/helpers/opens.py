"""Counting the files a real `transcli` command opens for reading, with strace: every
open by Python, numpy, sentencepiece (C++) or safetensors (Rust) is an `openat` system
call, so the count does not depend on how a library reads."""

from __future__ import annotations

import collections
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator, Optional

from helpers import ROOT

STRACE = shutil.which("strace")
OPENAT = re.compile(r'openat\(AT_FDCWD, "([^"]+)", ([A-Z_|]+)[^)]*\) = \d+')


@contextlib.contextmanager
def traced(args: list[str | Path], stdin: Optional[str] = None, **popen) -> Iterator[
        tuple[subprocess.Popen, dict[str, int]]]:
    """`python -m transcli ARGS` running under strace; once the block ends (and with it the
    process, which the block waits for or stops), the dict holds how many times each file
    was opened read-only (successful opens only), by real path."""
    opened: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace"
        process = subprocess.Popen(
            [STRACE, "-f", "-qq", "--seccomp-bpf", "-e", "trace=openat", "-o", str(trace),
             sys.executable, "-m", "transcli", *map(str, args)], cwd=ROOT,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            env={**os.environ, "OMP_NUM_THREADS": "1"}, **popen)
        try:
            if stdin is not None:
                process.stdin.write(stdin.encode())
                process.stdin.close()
            yield process, opened
        finally:
            process.wait(timeout=180)
        opened.update(read_counts(trace))


def read_counts(trace: Path) -> dict[str, int]:
    counts: collections.Counter[str] = collections.Counter()
    for line in trace.read_text().splitlines():
        match = OPENAT.search(line)
        if match and not re.search(r"O_WRONLY|O_RDWR|O_DIRECTORY", match.group(2)):
            counts[os.path.realpath(os.path.join(ROOT, match.group(1)))] += 1
    return dict(counts)


def within(opened: dict[str, int], *folders: Path) -> dict[str, int]:
    """The counts of the files inside `folders`, by 'folder name/relative path'."""
    found = {}
    for folder in folders:
        real = os.path.realpath(folder)
        for path, count in opened.items():
            if path.startswith(real + os.sep):
                found[f"{Path(folder).name}/{os.path.relpath(path, real)}"] = count
    return found


def tracee(process: subprocess.Popen) -> int:
    """The pid of the command strace runs (strace's child)."""
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    return int(children.read_text().split()[0])
