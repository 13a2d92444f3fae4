"""What enters a command from outside the program, checked before the command runs.

- The current directory must exist: torch's import aborts the process inside a deleted
  one, with no message of ours.
- Command-line arguments are UTF-8: Python hands undecodable bytes over as lone
  surrogates, which fail far away (in sentencepiece, in a JSON manifest). Each argument
  is decoded from its original bytes here, or refused naming its position.
- No option is given an empty value (`-o ""`, `--out=`): Typer reads an empty path as
  '.', the current directory, so `-o ""` would say ".: is a directory" and `--out ""
  --force` would write into the current directory (`empty_option`).
- Text written to stdout is UTF-8 whatever the locale (translations are written as UTF-8
  bytes already); messages on stderr keep the locale's encoding, with what it cannot show
  escaped instead of a crash.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional


def outside_problem(argv: list[str]) -> Optional[str]:
    """The first thing wrong with the process's surroundings, or None; fixes `argv`
    (arguments decoded as UTF-8) in place."""
    try:
        os.getcwd()
    except OSError:
        return ("the current directory no longer exists (deleted or moved away): cd into "
                "one that does and run the command again")
    for index, argument in enumerate(argv[1:], start=1):
        try:
            argv[index] = os.fsencode(argument).decode("utf-8")
        except UnicodeDecodeError as exc:
            raw = os.fsencode(argument)
            return (f"argument {index} ({raw[:40]!r}) is not valid UTF-8 (byte "
                    f"0x{raw[exc.start]:02x}): transcli takes UTF-8 text and file names")
    return None


def empty_option(argv: list[str], app: Any) -> Optional[str]:
    """The first option of the command in `argv` given an empty value, as a problem to
    say, or None. `app` is the Typer app, which tells the options that take a value."""
    if len(argv) < 3 or ("" not in argv and not any(a.endswith("=") for a in argv)):
        return None  # the usual case: the command's options are not even looked up
    import typer.main

    command = getattr(typer.main.get_command(app), "commands", {}).get(argv[1])
    params = getattr(command, "params", [])
    valued = {opt for param in params if getattr(param, "param_type_name", "") == "option"
              and not getattr(param, "is_flag", False) for opt in param.opts}
    for index in range(2, len(argv)):
        if argv[index] == "--":
            break
        name, equals, value = argv[index].partition("=")
        if name.startswith("--") and name in valued and equals and not value:
            return f"{name} is empty: give a value"
        if argv[index] == "" and argv[index - 1] in valued:
            return f"{argv[index - 1]} is empty: give a value"
    return None


def text_streams() -> None:
    """stdout writes UTF-8; stderr escapes what its encoding cannot show."""
    for stream, encoding in ((sys.stdout, "utf-8"), (sys.stderr, None)):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(encoding=encoding or stream.encoding, errors="backslashreplace")
