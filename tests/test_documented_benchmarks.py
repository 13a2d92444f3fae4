"""Every benchmark command that README.md, docs/ and the benchmarks' own usage lines give
exists: `python -m bench.NAME [SUBCOMMAND] --help` gives its usage, and each command the
docs give with arguments parses as written. Checked in this process through each
benchmark's `parse_args` (the benchmarks themselves are too long for the suite; their
figures are in docs/BENCHMARKS.md)."""

from __future__ import annotations

import importlib
import re
import shlex

import pytest
from helpers import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SOURCES = sorted((ROOT / "bench").rglob("*.py"))
# The module, an optional subcommand, and (in docs) the rest of the command: up to the end
# of the inline code or the line (a trailing backslash continues it) or a comment.
COMMAND = re.compile(r"python3? -m (bench(?:\.\w+)+)(?: ([a-z][\w-]*))?((?:[^`\n#\\]|\\\n)*)")
FOUND = [(path, match.groups()) for path in DOCS + SOURCES
         for match in COMMAND.finditer(path.read_text(encoding="utf-8"))]
MODULES = sorted({(module, sub or "") for _, (module, sub, _) in FOUND})
WRITTEN = sorted({(path.name, " ".join(filter(None, (module, sub, rest.strip()))))
                  for path, (module, sub, rest) in FOUND if path in DOCS and rest.strip()})


def parse(module: str, argv: list[str]) -> None:
    importlib.import_module(module).parse_args(argv)


def test_the_docs_give_benchmark_commands():
    assert ("bench.quality", "") in MODULES and len(MODULES) >= 8 and len(WRITTEN) >= 20


def test_no_benchmark_is_run_as_a_file():
    """`python bench/x.py` cannot import the `bench` package: the modules run with -m."""
    as_files = [f"{doc.name}: {match.group()}" for doc in DOCS + SOURCES for match in
                re.finditer(r"python3? (\S*/)?bench/\S+\.py", doc.read_text(encoding="utf-8"))]
    assert as_files == []


@pytest.mark.parametrize("module, subcommand", MODULES,
                         ids=[" ".join(filter(None, command)) for command in MODULES])
def test_a_documented_benchmark_gives_its_usage(module: str, subcommand: str, capsys):
    with pytest.raises(SystemExit) as exit:
        parse(module, [*([subcommand] if subcommand else []), "--help"])
    assert exit.value.code == 0
    assert "usage" in capsys.readouterr().out.lower()


@pytest.mark.parametrize("doc, command", WRITTEN, ids=[command for _, command in WRITTEN])
def test_a_command_the_docs_give_parses(doc: str, command: str):
    module, *argv = shlex.split(command.replace("\\\n", " "))
    parse(module, [arg for arg in argv if arg != "..."])
