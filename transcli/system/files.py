"""Reading user files: an OS error is one line naming the file, a JSON record is read
within bounds. (Writing an output: `outputs.py`; reading text lines: `text.py`.)"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import IO, Any, BinaryIO, Optional

from transcli.system.errors import UserError, WriteFailed
from transcli.system.streams import check_not_closed

BLOCK = 1 << 20
MAX_JSON_BYTES = 64 << 20  # a record transcli writes (run.json, a manifest) is far smaller


def describe_os_error(exc: OSError) -> str:
    """`No space left on device`, not `[Errno 28] No space left on device: '/x/y'`."""
    return exc.strerror or type(exc).__name__


def open_checked(path: str | Path, mode: str = "rb", what: str = "read", **options: Any) -> IO:
    """`open()` whose failures are one line naming the file and what was being done."""
    path = Path(path)
    check_not_closed(path)
    try:
        return open(path, mode, **options)
    except FileNotFoundError:
        if "r" in mode:
            raise UserError(f"{path}: file not found") from None
        raise UserError(f"{path}: cannot {what}: its directory does not exist") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, not a file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot {what} ({describe_os_error(exc)})") from None


def cannot_write(path: str | Path, what: str, exc: BaseException) -> WriteFailed:
    """The one line for a failed write of `path`."""
    reason = write_failure(exc) or str(exc) or type(exc).__name__
    return WriteFailed(f"{path}: cannot write the {what} ({reason})")


def write_failure(exc: BaseException) -> Optional[str]:
    """What went wrong at the OS level while writing, as `strerror`, or None when `exc`
    is no I/O failure: an OSError, or safetensors' error, which reports the OS error
    only inside its message ("... (os error 28)")."""
    if isinstance(exc, OSError):
        return describe_os_error(exc)
    code = re.search(r"\(os error (\d+)\)", str(exc))
    return os.strerror(int(code.group(1))) if code else None


class RecordingWriter:
    """A binary file for libraries that turn an OSError from `write` into their own
    error type (torch.save raises `RuntimeError: unexpected pos`): the OSError is kept in
    `os_error`, so that the caller can raise it instead and tell a full disk from a bug."""

    def __init__(self, handle: BinaryIO):
        self.handle = handle
        self.os_error: Optional[OSError] = None

    def write(self, data: Any) -> int:
        try:
            return self.handle.write(data)
        except OSError as exc:
            self.os_error = exc
            raise

    def flush(self) -> None:
        try:
            self.handle.flush()
        except OSError as exc:
            self.os_error = exc
            raise


def same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_parents(path: Path) -> None:
    """Refuse, naming it, a regular file where one of `path`'s parent folders should be
    (`out/sub` when `out` is a file): mkdir would only say "File exists"."""
    for parent in reversed(Path(path).parents):
        if parent.exists() and not parent.is_dir():
            raise UserError(f"{parent}: is a file, so {path} cannot be created under it")


def parse_json(text: str | bytes) -> Any:
    """`json.loads`, with nesting too deep for the parser and numbers too long for Python
    turned into the `json.JSONDecodeError` every caller already handles."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", str(text[:0]), 0) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # an integer of more digits than Python converts
        raise json.JSONDecodeError(str(exc).split(";")[0], str(text[:0]), 0) from None


def read_json(source: Path | BinaryIO) -> Any:
    """A JSON file transcli wrote (a path, or a file open for reading), read within
    `MAX_JSON_BYTES` (a larger file is not one of ours: `json.JSONDecodeError`); OS errors
    as `open` raises them. The one reader of every record transcli keeps."""
    if isinstance(source, (str, Path)):
        with open(source, "rb") as handle:
            return read_json(handle)
    data = source.read(MAX_JSON_BYTES + 1)
    if len(data) > MAX_JSON_BYTES:
        raise json.JSONDecodeError(f"larger than {MAX_JSON_BYTES >> 20} MiB", "", 0)
    return parse_json(data)
