"""How a command ends: one line on stderr for whatever stopped it, and an exit status.

0: done (also when the reader of stdout left early, `| head`: it asked for no more).
1: a `UserError` (bad input, a file that cannot be read or written), an OS error naming
   a file (a name too long, a loop of links), or stdout that could not be written at the
   end (`> /dev/full`).
2: a flag or value the command line does not take (click's usage errors, in one line).
128 + N: stopped by signal N (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP).
Anything else escaping a command is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import typer

from transcli.system.errors import UserError
from transcli.system.outputs import stop_note
from transcli.system.signals import Interrupted, interrupting
from transcli.system.streams import (
    finish_stdout,
    guard_std_streams,
    silence_stdout,
    tolerant_stderr,
)

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


def _outcome(app: Callable[..., Any], received: list[Interrupted]) -> int:
    try:
        status = app(standalone_mode=False)  # usage errors come here, to say in one line
    except UserError as exc:
        say(f"error: {exc}")
        return 1
    except typer.Abort:  # end of input at a prompt
        return _stopped(Interrupted(2))
    except typer.TyperException as exc:  # click's usage errors, as Typer raises them
        if type(exc).__name__ == "NoArgsIsHelpError":  # `transcli` alone: the help
            exc.show()
            return exc.exit_code
        ctx = getattr(exc, "ctx", None)
        where = f"; {ctx.command_path} --help lists the options" if ctx else ""
        say(f"error: {exc.format_message().rstrip('.')}{where}")  # one line, not click's four
        return exc.exit_code
    except BrokenPipeError:  # e.g. `transcli translate ... | head`
        silence_stdout()
        return 0
    except OSError as exc:
        if exc.filename is None:  # not about a file the user named: a bug, with its trace
            raise
        say(f"error: {exc.filename}: {exc.strerror or exc}")
        return 1
    except (MemoryError, RuntimeError) as exc:
        if not out_of_memory(exc):
            raise
        say("error: out of memory: the work asked for more than this machine has; lower "
            "the batch (decode.batch_tokens or train.batch_tokens) or the beam size")
        return 1
    except KeyboardInterrupt as exc:
        return _stopped(exc if isinstance(exc, Interrupted) else Interrupted(2))
    except SystemExit as exc:
        status = exc.code
    if status == TYPER_INTERRUPTED and received:
        return _stopped(received[-1])
    if isinstance(status, str):
        say(status)
        return 1
    return status if isinstance(status, int) else 0


def out_of_memory(exc: BaseException) -> bool:
    """Whether an exception is an allocation that failed (Python's, or torch's on the CPU
    or a GPU, which raise RuntimeError subclasses)."""
    return (isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError"
            or "can't allocate memory" in str(exc) or "out of memory" in str(exc).lower())


def _stopped(signal: Interrupted) -> int:
    say(f"stopped by {signal}; {stop_note()}")
    return 128 + signal.signum
