"""Reading and writing user files safely: one place for the rules every command keeps.

- An OS error names the file: `open_checked` turns it into a one-line `UserError`.
- Outputs appear whole or not at all (`atomic_path`, `output_file`): a temp file
  beside the target, fsynced and renamed over it. A replaced file keeps its
  permission bits; a new one gets the usual `0o666 & ~umask`.
- An output is never one of the command's own inputs, and never replaces what is
  not a regular file: a FIFO or character device (`/dev/stdout`, `/dev/null`) is
  written through, a symlink is followed to its target.
- Only '\\n' ends a line of text we translate or count (`source_lines`, `count_lines`).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Any, BinaryIO, Iterable, Iterator, Optional

from transcli.errors import UserError

BLOCK = 1 << 20


def describe_os_error(exc: OSError) -> str:
    """`No space left on device`, not `[Errno 28] No space left on device: '/x/y'`."""
    return exc.strerror or type(exc).__name__


def open_checked(path: str | Path, mode: str = "rb", what: str = "read", **options: Any) -> IO:
    """`open()` whose failures are one line naming the file and what was being done."""
    path = Path(path)
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


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temp path beside `path`; on success fsync it and rename it over `path`.

    A kill at any instant leaves either the old file or the new one, never half of one.
    The temp name starts with '.' and ends with '.tmp' (`is_temp_file`), so that a run
    killed mid-write can find and remove it. Mode: as the replaced file, else umask's.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp_path, _mode_for(path))
        os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


def is_temp_file(name: str) -> bool:
    """Whether `name` is one of `atomic_path`'s temp files (left behind by a kill)."""
    return name.startswith(".") and name.endswith(".tmp")


def _mode_for(path: Path) -> int:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


@contextlib.contextmanager
def output_file(name: str | Path, inputs: Iterable[str | Path] = (), what: str = "output",
                stdout: Optional[BinaryIO] = None) -> Iterator[BinaryIO]:
    """A binary handle for one output of a command, by the rules in the module doc.

    `name` "-" is `stdout` (when given). `inputs` are the command's input files: naming
    one of them as the output is refused before anything is written, since the atomic
    rename would destroy the input. Errors while writing are one line naming the file.
    """
    if stdout is not None and str(name) == "-":
        yield stdout
        return
    path = Path(name)
    for source in inputs:
        if str(source) != "-" and same_file(path, Path(source)):
            raise UserError(f"{path}: the {what} is also an input of this command "
                            f"({source}); choose another output file")
    try:
        kind = os.stat(path).st_mode  # follows symlinks
    except FileNotFoundError:
        kind = None
    except OSError as exc:
        raise UserError(f"{path}: cannot write the {what} ({describe_os_error(exc)})") from None
    if kind is not None and stat.S_ISDIR(kind):
        raise UserError(f"{path}: the {what} is a directory")
    try:
        if kind is not None and not stat.S_ISREG(kind):  # FIFO, device: write through it
            with open(path, "wb") as handle:
                yield handle
            return
        with atomic_path(os.path.realpath(path)) as tmp, open(tmp, "wb") as handle:
            yield handle
    except OSError as exc:
        raise UserError(f"{path}: cannot write the {what} ({describe_os_error(exc)})") from None


def write_text_output(name: str | Path, text: str, inputs: Iterable[str | Path] = (),
                      what: str = "output") -> None:
    """`output_file` for text already in memory (UTF-8, '\\n' line ends)."""
    with output_file(name, inputs, what) as handle:
        handle.write(text.encode("utf-8"))


def count_lines(path: Path) -> Optional[int]:
    """Lines in a file, a last line without newline included (fast: byte counting);
    None for a pipe or device, which must not be read twice."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({describe_os_error(exc)})") from None
    if stat.S_ISDIR(mode):
        raise UserError(f"{path}: is a directory, not a file")
    if not stat.S_ISREG(mode):
        return None
    count, last = 0, b"\n"
    with open_checked(path, "rb", buffering=BLOCK) as handle:
        try:
            for block in iter(lambda: handle.read(BLOCK), b""):
                count += block.count(b"\n")
                last = block[-1:]
        except OSError as exc:
            raise UserError(f"{path}: cannot read ({describe_os_error(exc)})") from None
    return count + (last != b"\n")


def source_lines(handle: BinaryIO, name: str) -> Iterator[str]:
    """Lines to translate, as `translate` and `evaluate --model` read them: only '\\n'
    ends a line (odd characters inside a line never shift the order), a CRLF's '\\r'
    and a first-line byte-order mark are dropped, and bad UTF-8 is a one-line error."""
    try:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise UserError(f"{name}: line {number} is not valid UTF-8") from None
            if number == 1:
                line = line.removeprefix("\ufeff")
            yield line.rstrip("\n").removesuffix("\r")
    except OSError as exc:
        raise UserError(f"{name}: cannot read input ({describe_os_error(exc)})") from None


def read_source_file(path: Path) -> list[str]:
    """Every line of a source file, by `source_lines`' rules."""
    with open_checked(path, "rb") as handle:
        return list(source_lines(handle, str(path)))
