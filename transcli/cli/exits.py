"""How a command ends: one line on stderr for whatever stopped it, and an exit status.

0: done (also when the reader of stdout left early, `| head`: it asked for no more).
1: a `UserError` (bad input, a file that cannot be read or written), or stdout that
   could not be written at the end (`> /dev/full`).
128 + N: stopped by signal N (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP).
Anything else escaping a command is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

from transcli.system.errors import UserError
from transcli.system.signals import Interrupted, interrupting, tolerant_stderr
from transcli.system.streams import finish_stdout, guard_std_streams, silence_stdout

TYPER_INTERRUPTED = 130  # the status Typer turns a KeyboardInterrupt into


def say(message: str) -> None:
    print(f"transcli: {message}", file=sys.stderr, flush=True)


def run_command(app: Callable[[], Any]) -> int:
    """Run the Typer `app` and return the process's exit status (module doc)."""
    guard_std_streams()
    with tolerant_stderr(), interrupting() as received:
        status = _outcome(app, received)
        problem = finish_stdout()
        if problem is not None and status == 0:
            say(f"error: cannot write to stdout ({problem})")
            status = 1
    return status


def _outcome(app: Callable[[], Any], received: list[Interrupted]) -> int:
    try:
        app()
        return 0
    except UserError as exc:
        say(f"error: {exc}")
        return 1
    except BrokenPipeError:  # e.g. `transcli translate ... | head`
        silence_stdout()
        return 0
    except KeyboardInterrupt as exc:
        return _stopped(exc if isinstance(exc, Interrupted) else Interrupted(2))
    except SystemExit as exc:
        if exc.code == TYPER_INTERRUPTED and received:
            return _stopped(received[-1])
        if isinstance(exc.code, str):
            say(exc.code)
            return 1
        return exc.code or 0


def _stopped(signal: Interrupted) -> int:
    say(f"stopped by {signal}; no output file was left half-written")
    return 128 + signal.signum
