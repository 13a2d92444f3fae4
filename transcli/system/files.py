"""Reading and writing user files safely: one place for the rules every command keeps.

- An OS error names the file: `open_checked` turns it into a one-line `UserError`,
  and so do `atomic_path` and `output_file` for errors while writing.
- Outputs appear whole or not at all (`atomic_path`, `output_file`): a temp file
  beside the target, fsynced and renamed over it. A replaced file keeps its
  permission bits; a new one gets the usual `0o666 & ~umask`.
- An output is never one of the command's own inputs, and never replaces what is
  not a regular file: a FIFO or character device (`/dev/stdout`, `/dev/null`) is
  written through, a symlink is followed to its target.
- An existing file that is not empty is replaced only when transcli wrote it and it is
  unchanged since (`written.py` keeps the ledger); otherwise the command is refused.
Reading text lines has its own rule, in `text.py`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import IO, Any, BinaryIO, Iterable, Iterator, Optional

from transcli.system import written
from transcli.system.errors import UserError, WriteFailed

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
def atomic_path(path: str | Path, what: str = "file") -> Iterator[Path]:
    """Yield a temp path beside `path`; on success fsync it and rename it over `path`.

    A kill at any instant leaves either the old file or the new one, never half of one.
    The temp name starts with '.' and ends with '.tmp' (`is_temp_file`), so that a run
    killed mid-write can find and remove it. Mode: as the replaced file, else umask's.
    An OS error while writing it (disk full, no permission) is one line naming `path`
    and the `what` it holds; one about another file (read in the block) is left as it is.
    """
    path = Path(path)
    check_parents(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
    except OSError as exc:
        raise cannot_write(path, what, exc) from None
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp_path, _mode_for(path))
        os.replace(tmp_path, path)
    except OSError as exc:
        if exc.filename not in (None, str(tmp_path), str(path)):
            raise
        raise cannot_write(path, what, exc) from None
    finally:
        with contextlib.suppress(OSError):
            tmp_path.unlink(missing_ok=True)


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
                stdout: Optional[BinaryIO] = None, guarded: bool = True) -> Iterator[BinaryIO]:
    """A binary handle for one output of a command, by the rules in the module doc.

    `name` "-" is `stdout` (when given): a reader that leaves (`| head`) ends the
    block quietly, any other failure is one line. `inputs` are the command's input
    files: naming one of them as the output is refused before anything is written,
    since the atomic rename would destroy the input. Errors while writing are one line
    naming the file. `guarded` False skips `check_replaceable`, for a caller that has
    checked the file is its own (`OutputFolder`).
    """
    if stdout is not None and str(name) == "-":
        with _writing_stdout(what):
            yield stdout
            stdout.flush()
        return
    path = Path(name)
    check_output(path, inputs, what, guarded)
    check_parents(path)
    try:
        kind: Optional[int] = os.stat(path).st_mode  # follows symlinks
    except FileNotFoundError:
        kind = None
    except OSError as exc:
        raise cannot_write(path, what, exc) from None
    if kind is not None and not stat.S_ISREG(kind):  # FIFO, device: write through it
        try:
            with open(path, "wb") as handle:
                yield handle
        except OSError as exc:
            if exc.filename not in (None, str(path)):
                raise
            raise cannot_write(path, what, exc) from None
        return
    with atomic_path(os.path.realpath(path), what) as tmp, open(tmp, "wb") as handle:
        yield handle
    written.remember(path)


def check_replaceable(path: Path, what: str) -> None:
    """Refuse to replace a file with content that transcli did not write (module doc)."""
    try:
        empty = os.path.getsize(path) == 0
    except OSError:
        return  # gone meanwhile: nothing to replace
    if not empty and not written.wrote(path):
        raise UserError(f"{path}: exists and was not written by transcli (or was changed "
                        f"since); refusing to replace it with the {what}: remove it first "
                        f"or choose another file")


def check_output(path: Path, inputs: Iterable[str | Path] = (), what: str = "output",
                 guarded: bool = True) -> None:
    """Refuse an output that is a directory, one of the command's `inputs` (an existing
    file, or a path an input may take), a file inside an input that is a folder, or
    (when `guarded`) a file transcli may not replace (`check_replaceable`)."""
    target = os.path.realpath(path)
    for source in inputs:
        if str(source) == "-":
            continue
        inside = Path(source).is_dir() and Path(target).is_relative_to(os.path.realpath(source))
        if same_file(path, Path(source)) or target == os.path.realpath(source) or inside:
            raise UserError(f"{path}: is also an input of this command ({source}); "
                            f"refusing to write the {what} over it")
    if path.is_dir():
        raise UserError(f"{path}: is a directory; give a file name for the {what}")
    if guarded and path.is_file():  # a FIFO or a device is written through, not replaced
        check_replaceable(path, what)


@contextlib.contextmanager
def _writing_stdout(what: str) -> Iterator[None]:
    from transcli.system.streams import silence_stdout

    try:
        yield
    except BrokenPipeError:  # the reader left: it wants no more
        silence_stdout()
    except OSError as exc:
        silence_stdout()
        raise UserError(f"stdout: cannot write the {what} ({describe_os_error(exc)})") from None


def write_text_output(name: str | Path, text: str, inputs: Iterable[str | Path] = (),
                      what: str = "output") -> None:
    """`output_file` for text already in memory (UTF-8, '\\n' line ends)."""
    with output_file(name, inputs, what) as handle:
        handle.write(text.encode("utf-8"))


class OutputFolder:
    """A folder a command fills file by file, with a record (`record`, JSON: each file
    written and its content's SHA-256) so that a later run knows which files are
    transcli's: those still as it wrote them.

    A non-empty folder is refused unless `force`; then the recorded files still as
    recorded are removed, and a name the command is about to write is refused if a file
    of that name remains: a user's file is never replaced or removed."""

    def __init__(self, folder: Path, record: str, what: str, force: bool):
        self.folder, self.record, self.what, self.force = Path(folder), record, what, force
        self.written: dict[str, str] = {}  # name: SHA-256 of what this run wrote
        self.claimed: set[str] = set()

    def check(self, option: str) -> None:
        """Refuse a folder this command may not write into (`option` names it), before
        any work is done."""
        folder = self.folder
        if folder.exists() and not folder.is_dir():
            raise UserError(f"{folder}: {option} must name a directory, not a file")
        check_parents(folder)
        try:
            entries = any(folder.iterdir()) if folder.is_dir() else False
        except OSError as exc:
            raise UserError(f"{folder}: cannot read the folder ({describe_os_error(exc)})") \
                from None
        if entries and not self.force:
            raise UserError(f"{folder}: not empty; pass --force to replace the {self.what} "
                            f"transcli wrote there (other files are kept), or give another "
                            f"{option}")

    def open(self, option: str) -> None:
        """Check the folder, create it, remove what an earlier run of ours left there."""
        self.check(option)
        for name, digest in self._previous().items():
            path = self.folder / name
            with contextlib.suppress(OSError):
                if path.is_file() and not path.is_symlink() and file_digest(path) == digest:
                    path.unlink()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"{self.folder}: cannot create the folder "
                            f"({describe_os_error(exc)})") from None
        (self.folder / self.record).unlink(missing_ok=True)

    def claim(self, *names: str) -> list[Path]:
        """The paths to write `names` to; refused if a file of one of them is there."""
        for name in names:
            if name not in self.claimed and os.path.lexists(self.folder / name):
                raise UserError(f"{self.folder / name}: exists and was not written by "
                                f"transcli; refusing to overwrite it, even with --force")
        self.claimed.update(names)
        return [self.folder / name for name in names]

    def done(self, *paths: Path) -> None:
        """Record claimed files once written whole."""
        self.written.update({path.name: file_digest(path) for path in paths})
        with atomic_path(self.folder / self.record, "record of the files written") as tmp:
            tmp.write_text(json.dumps(self.written, indent=0, sort_keys=True), encoding="utf-8")

    def _previous(self) -> dict[str, str]:
        """What an earlier run recorded (plain names in this folder only)."""
        try:
            record = read_json(self.folder / self.record)
        except (OSError, ValueError):
            return {}
        if not isinstance(record, dict):
            return {}
        return {name: digest for name, digest in record.items() if isinstance(digest, str)
                and isinstance(name, str) and "/" not in name and name not in ("", ".", "..")}


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's content, in hex: how transcli tells its own outputs, still
    as it wrote them, from a user's (records of exports, prepared dirs, attention)."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def check_parents(path: Path) -> None:
    """Refuse, naming it, a regular file where one of `path`'s parent folders should be
    (`out/sub` when `out` is a file): mkdir would only say "File exists"."""
    for parent in reversed(Path(path).parents):
        if parent.exists() and not parent.is_dir():
            raise UserError(f"{parent}: is a file, so {path} cannot be created under it")


MAX_JSON_BYTES = 64 << 20  # a record transcli writes (run.json, a manifest) is far smaller


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


def read_json(path: Path) -> Any:
    """A JSON file transcli wrote, read within `MAX_JSON_BYTES` (a larger file is not one
    of ours: `json.JSONDecodeError`); OS errors as `open` raises them."""
    with open(path, "rb") as handle:
        data = handle.read(MAX_JSON_BYTES + 1)
    if len(data) > MAX_JSON_BYTES:
        raise json.JSONDecodeError(f"larger than {MAX_JSON_BYTES >> 20} MiB", "", 0)
    return parse_json(data)
