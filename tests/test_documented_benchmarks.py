"""Every benchmark command that README.md, docs/ and the benchmarks' own usage lines give
starts: `python -m bench.NAME [SUBCOMMAND] --help` exits 0 with its usage (the benchmarks
themselves are too long for the suite; their figures are in docs/BENCHMARKS.md)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from helpers import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "bench").rglob("*.py"))]
COMMAND = re.compile(r"python3? -m (bench(?:\.\w+)+)(?: ([a-z][\w-]*))?")
COMMANDS = sorted({match.groups("") for doc in DOCS
                   for match in COMMAND.finditer(doc.read_text(encoding="utf-8"))})


def test_the_docs_give_benchmark_commands():
    assert ("bench.quality", "") in COMMANDS and len(COMMANDS) >= 10


def test_no_benchmark_is_run_as_a_file():
    """`python bench/x.py` cannot import the `bench` package: the modules run with -m."""
    as_files = [f"{doc.name}: {match.group()}" for doc in DOCS for match in
                re.finditer(r"python3? (\S*/)?bench/\S+\.py", doc.read_text(encoding="utf-8"))]
    assert as_files == []


@pytest.mark.parametrize("module, subcommand", COMMANDS,
                         ids=[" ".join(filter(None, command)) for command in COMMANDS])
def test_a_documented_benchmark_starts(module: str, subcommand: str):
    argv = [sys.executable, "-m", module, *([subcommand] if subcommand else []), "--help"]
    result = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "usage" in result.stdout.lower(), result.stdout
