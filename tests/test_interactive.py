"""`transcli translate` at a terminal (a real pseudo-terminal): each line translated as
Enter is pressed, before the input ends; Ctrl-D ends it with status 0, Ctrl-C and SIGTERM
with 128+N, never with a traceback, and `-o FILE` then holds every line translated so far.
Also `--split-sentences` and the n-best refusal that names the beam size."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import PAIRS, ROOT, default_signals
from helpers.cli import one_error_line, run_cli
from helpers.memorised import memorised_model

from transcli.cli.translate import PROMPT
from transcli.config.schema import DecodeConfig
from transcli.data.tokenizer import Tokenizer
from transcli.inference.translator import Translator

ONE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1"}  # as conftest.run_cli runs transcli

ENGLISH = [en for en, _ in PAIRS]
SPANISH = [es for _, es in PAIRS]


class Terminal:
    """`transcli ARGS` on a new pseudo-terminal (stdin, stdout and stderr), as at a shell
    prompt: the terminal is its controlling terminal, so Ctrl-C sends SIGINT."""

    def __init__(self, *args: str | Path):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become transcli at once
            default_signals()  # Ctrl-C must reach it however the tests were started
            os.chdir(ROOT)
            os.execve(sys.executable, [sys.executable, "-m", "transcli", *map(str, args)],
                      ONE_THREAD)
        self.pending = b""  # shown but not yet expected

    def type(self, keys: str | bytes) -> None:
        os.write(self.fd, keys.encode() if isinstance(keys, str) else keys)

    def expect(self, text: str, timeout: float = 120) -> str:
        """What the terminal shows up to and including `text` (all of it, when the
        program ends first)."""
        deadline = time.monotonic() + timeout
        while text.encode() not in self.pending:
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise AssertionError(f"no {text!r} within {timeout} s; the terminal shows "
                                     f"{self.pending!r}")
            try:
                chunk = os.read(self.fd, 4096)
            except OSError:  # EIO: the program ended and closed the terminal
                chunk = b""
            if not chunk:
                shown, self.pending = self.pending, b""
                return shown.decode("utf-8", errors="replace")
            self.pending += chunk
        end = self.pending.index(text.encode()) + len(text.encode())
        shown, self.pending = self.pending[:end], self.pending[end:]
        return shown.decode("utf-8", errors="replace")

    def finish(self) -> tuple[int, str]:
        """The exit status, and what the terminal showed until the end."""
        rest = self.expect("\0never\0", timeout=60)
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status), rest

    def kill(self) -> None:
        os.kill(self.pid, 9)


@pytest.mark.slow
@pytest.mark.parametrize("key", [b"\x04", b"\x03"], ids=["ctrl-d", "ctrl-c"])
def test_each_line_is_translated_as_enter_is_pressed(run_dir, tmp_path, key):
    run = run_dir
    terminal = Terminal("translate", "-m", run, "--greedy")
    try:
        assert "Ctrl-D" in terminal.expect(PROMPT)
        terminal.type(f"{ENGLISH[0]}\r")
        shown = terminal.expect(SPANISH[0])  # before any end of input
        terminal.type(f"{ENGLISH[1]}\r")
        shown += terminal.expect(SPANISH[1]) + terminal.expect(PROMPT)
        terminal.type(key)
        status, rest = terminal.finish()
    except BaseException:
        terminal.kill()
        raise
    assert status == (0 if key == b"\x04" else 128 + signal.SIGINT), shown + rest
    assert "Traceback" not in shown + rest and "Aborted" not in rest


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_keeps_the_lines_translated_so_far_in_the_output_file(run_dir, tmp_path, sig):
    """`-o FILE` at a terminal (an earlier output of transcli there): Ctrl-C (SIGINT from
    the terminal) or SIGTERM ends the session with 128+N, and FILE holds the lines
    translated before it, the earlier output replaced."""
    out = tmp_path / "out.es"
    assert run_cli("translate", "-m", run_dir, "--greedy", "-o", out,
                   stdin=f"{ENGLISH[5]}\n").returncode == 0  # transcli's earlier output
    terminal = Terminal("translate", "-m", run_dir, "--greedy", "-o", out)
    try:
        terminal.expect(PROMPT)
        for line in ENGLISH[:2]:
            terminal.type(f"{line}\r")
            terminal.expect(PROMPT)
        if sig == signal.SIGINT:
            terminal.type(b"\x03")
        else:
            os.kill(terminal.pid, sig)
        status, rest = terminal.finish()
    except BaseException:
        terminal.kill()
        raise
    assert status == 128 + sig, rest
    assert "Traceback" not in rest
    assert rest.strip().splitlines()[-1] == (
        f"transcli: stopped by {signal.Signals(sig).name}; {out} holds only the translations "
        f"written before it")
    assert out.read_text(encoding="utf-8").splitlines() == SPANISH[:2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.es"]


@pytest.mark.slow
def test_stdin_at_a_terminal_with_stdout_to_a_pipe(run_dir):
    """Translations go to stdout, flushed line by line; the prompt goes to stderr."""
    run = run_dir
    controller, terminal = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "transcli", "translate", "-m", str(run)],
                               stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=ROOT, env=ONE_THREAD)
    os.close(terminal)
    try:
        os.write(controller, f"{ENGLISH[2]}\n".encode())
        assert process.stdout.readline().decode().rstrip("\n") == SPANISH[2]  # input still open
        os.write(controller, b"\x04")
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
        os.close(controller)
    stderr = process.stderr.read().decode()
    assert PROMPT in stderr and "Traceback" not in stderr
    assert process.stdout.read() == b""


def test_split_sentences_translates_each_sentence(tiny_spm):
    model = memorised_model(tiny_spm, tuple(PAIRS))
    translator = Translator(model, Tokenizer(tiny_spm),
                            replace(DecodeConfig(), split_sentences=True), "cpu")
    lines = [f"{ENGLISH[0]} {ENGLISH[1]}  {ENGLISH[2]}", "", ENGLISH[3]]
    # The spacing between sentences is the line's own.
    assert translator.translate(lines) == [f"{SPANISH[0]} {SPANISH[1]}  {SPANISH[2]}", "",
                                           SPANISH[3]]


@pytest.mark.slow
def test_split_sentences_flag(run_dir, tmp_path):
    run = run_dir
    result = run_cli("translate", "-m", run, "--split-sentences",
                     stdin=f"{ENGLISH[4]} {ENGLISH[5]}\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{SPANISH[4]} {SPANISH[5]}\n"


@pytest.mark.slow
def test_n_best_above_the_beam_names_the_beam_size(run_dir, tmp_path):
    run = run_dir  # tiny.yaml: beam 2
    line = one_error_line(run_cli("translate", "-m", run, "--n-best", "3", stdin="Hi.\n"))
    assert "'decode.n_best' must be in [1, beam_size], got 3 with beam_size 2" in line
