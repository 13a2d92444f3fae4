"""Which output files transcli wrote, so that `-o FILE` replaces a file only when
transcli wrote it and nobody has changed it since.

A small JSON ledger in the user's state folder (`$XDG_STATE_HOME/transcli`, else
`~/.local/state/transcli`) maps each output's real path to the identity of the file
transcli left there: device, inode, size and modification time in nanoseconds. A file
with that identity is transcli's own, unchanged; any other file is the user's. A ledger
that cannot be read or written (a read-only home, two commands finishing at the same
instant) only makes transcli more careful: the file is then treated as the user's.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Optional

LEDGER_FILE = "written.json"
KEEP = 1000  # newest entries kept: the ledger stays small however many files are written
MAX_BYTES = 8 << 20


def ledger_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "transcli" / LEDGER_FILE


def wrote(path: Path) -> bool:
    """Whether `path` is a file transcli wrote and that is unchanged since."""
    identity = _identity(path)
    return identity is not None and recorded(path) == identity


def recorded(path: Path) -> Optional[tuple[int, int, int, int]]:
    """The identity (device, inode, size, mtime in ns) of the file transcli last wrote
    at `path`'s real path, or None: what a file there must still have to be transcli's."""
    entry = _read().get(os.path.realpath(path))
    return None if entry is None else (entry[0], entry[1], entry[2], entry[3])


def remember(path: Path) -> None:
    """Record the file transcli has just written at `path` (best effort)."""
    identity = _identity(path)
    if identity is None:
        return
    entries = _read()
    key = os.path.realpath(path)
    entries.pop(key, None)  # re-inserted last: the newest entries are the ones kept
    entries[key] = list(identity)
    _write(dict(list(entries.items())[-KEEP:]))


def _identity(path: Path) -> Optional[tuple[int, int, int, int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _read() -> dict[str, list[int]]:
    try:
        with open(ledger_path(), "rb") as handle:
            data = json.loads(handle.read(MAX_BYTES + 1))
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {key: value for key, value in data.items() if isinstance(value, list)
            and len(value) == 4 and all(isinstance(number, int) for number in value)}


def _write(entries: dict[str, list[int]]) -> None:
    path = ledger_path()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(entries, handle)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
