"""What enters a command from outside the program, checked before the command runs.

- The current directory must exist: torch's import aborts the process inside a deleted
  one, with no message of ours.
- Command-line arguments are UTF-8: Python hands undecodable bytes over as lone
  surrogates, which fail far away (in sentencepiece, in a JSON manifest). Each argument
  is decoded from its original bytes here, or refused naming its position.
- Text written to stdout is UTF-8 whatever the locale (translations are written as UTF-8
  bytes already); messages on stderr keep the locale's encoding, with what it cannot show
  escaped instead of a crash.
"""

from __future__ import annotations

import os
import sys
from typing import Optional


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


def text_streams() -> None:
    """stdout writes UTF-8; stderr escapes what its encoding cannot show."""
    for stream, encoding in ((sys.stdout, "utf-8"), (sys.stderr, None)):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(encoding=encoding or stream.encoding, errors="backslashreplace")
