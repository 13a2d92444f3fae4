"""Reading and writing user files safely: one place for the rules every command keeps.

- An OS error names the file: `open_checked` turns it into a one-line `UserError`,
  and so do `atomic_path` and `output_file` for errors while writing.
- Outputs appear whole or not at all (`atomic_path`, `output_file`): a temp file
  beside the target, fsynced and renamed over it. A replaced file keeps its
  permission bits; a new one gets the usual `0o666 & ~umask`. A temp file a killed
  writer left is removed by the next write of the same output (`remove_stale_temps`).
- An output is never one of the command's own inputs, and never replaces what is
  not a regular file: a FIFO or character device (`/dev/stdout`, `/dev/null`) is
  written through, a symlink is followed to its target.
- An existing file that is not empty is replaced only when transcli wrote it and it is
  unchanged since (`written.py` keeps the ledger); otherwise the command is refused.
  This is checked when the command starts, and again at the moment of replacing
  (`publish.py`): a file written there during the run is kept, and the output is kept
  beside it under another name, which the refusal gives.
Reading text lines has its own rule, in `text.py`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import IO, Any, BinaryIO, Iterable, Iterator, Optional

from transcli.system import written
from transcli.system.errors import UserError, WriteFailed
from transcli.system.publish import (
    NotOurs,
    Verdict,
    hidden_prefix,
    keep_visible,
    new_only,
    publish,
    unchanged,
)
from transcli.system.streams import check_not_closed

BLOCK = 1 << 20


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


@contextlib.contextmanager
def atomic_path(path: str | Path, what: str = "file",
                ours: Optional[Verdict] = None) -> Iterator[Path]:
    """Yield a temp path beside `path`; on success fsync it and rename it over `path`.

    A kill at any instant leaves either the old file or the new one, never half of one.
    The temp name starts with '.' and ends with '.tmp' (`is_temp_file`), and its writer
    holds a lock on it, so that one a killed run left can be told and removed
    (`remove_stale_temps`). Mode: as the replaced file, else umask's.
    `ours`: None replaces whatever is at `path` (a run dir's own files, under the run's
    lock); else a file there is replaced only if `ours` holds for it at the moment of
    replacing (`publish`; `new_only`: the name must be free). If not, the output is kept
    under a name beside `path` and the refusal is one line naming both.
    An OS error while writing it (disk full, no permission) is one line naming `path`
    and the `what` it holds; one about another file (read in the block) is left as it is.
    """
    path = Path(path)
    check_parents(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp_path, lock = _new_temp(path)
    except OSError as exc:
        raise cannot_write(path, what, exc) from None
    try:
        try:
            yield tmp_path
            with open(tmp_path, "rb+") as handle:
                os.fsync(handle.fileno())
            os.chmod(tmp_path, _mode_for(path))
        except OSError as exc:
            if exc.filename not in (None, str(tmp_path), str(path)):
                raise
            raise cannot_write(path, what, exc) from None
        _put_in_place(tmp_path, path, what, ours)
    finally:
        with contextlib.suppress(OSError):
            tmp_path.unlink(missing_ok=True)
        os.close(lock)


def _put_in_place(tmp: Path, path: Path, what: str, ours: Optional[Verdict]) -> None:
    """The last step of `atomic_path`: `tmp` becomes `path` (see there)."""
    try:
        if ours is None:
            os.replace(tmp, path)
            return
        publish(path.parent, [(path.name, tmp)], {path.name: ours})
    except NotOurs as exc:
        try:
            kept = keep_visible(tmp, path, "new")
        except OSError as error:
            raise cannot_write(path, what, error) from None
        raise UserError(f"{path}: written or changed by someone else while transcli wrote "
                        f"the {what}; it is kept as it is, and the {what} went to {kept}"
                        f"{exc.where()}") from None
    except OSError as exc:
        raise cannot_write(path, what, exc) from None


# Temp files of `atomic_path`: `.NAME.transcli-XXXXXXXX.tmp`, each locked (flock) by its
# writer for as long as it lives. A lock dies with its process however it dies, so a temp
# file no process holds is one a killed writer left; the mark in the name keeps the
# files of other programs (and a user's) out of reach.
TEMP_MARK = "transcli-"


def _new_temp(path: Path) -> tuple[Path, int]:
    """A new temp file beside `path`, and the descriptor that holds its lock."""
    while True:
        fd, name = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # waits only while a cleaner looks at it
        except OSError:  # a file system without locks: no cleaner can lock it either
            return Path(name), fd
        if _still_named(fd, name):
            return Path(name), fd
        os.close(fd)  # a cleaner took it for abandoned before it was locked: another one


def _temp_prefix(path: Path) -> str:
    return hidden_prefix(path) + TEMP_MARK


def _still_named(fd: int, name: str) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.lstat(name))
    except OSError:
        return False


def remove_stale_temps(path: Path, every: bool = False) -> None:
    """Remove the temp files of `path` (of every file in the folder `path`, when `every`)
    that `atomic_path` made and no live process holds: a killed writer's leftovers."""
    folder, prefix = (path, ".") if every else (path.parent, _temp_prefix(path))
    try:
        names = [entry.name for entry in os.scandir(folder)]
    except OSError:
        return
    for name in names:
        if name.startswith(prefix) and name.endswith(".tmp") and TEMP_MARK in name:
            _remove_if_abandoned(os.path.join(folder, name))


def _remove_if_abandoned(name: str) -> None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: its writer lives
            if _still_named(fd, name):
                os.unlink(name)
    except OSError:
        pass
    finally:
        os.close(fd)


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
    """The mode of the regular file being replaced, else the umask's default for a new one
    (never a folder's or a device's execute bits)."""
    try:
        mode = path.stat().st_mode
        if stat.S_ISREG(mode):
            return stat.S_IMODE(mode)
    except OSError:
        pass
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
    naming the file. `guarded` False skips `check_replaceable`, for a caller whose
    folder record has checked the name (`owned.OwnedFolder`): the name must then be
    free when the file is put in place.
    """
    if stdout is not None and str(name) == "-":
        check_stdout(inputs, what)
        with _writing_stdout(what):
            yield stdout
            stdout.flush()
        return
    check_output(name, inputs, what, guarded)
    check_not_closed(name)
    path = Path(name)
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
    target = Path(os.path.realpath(path))
    remove_stale_temps(target)
    ours = _written_by_transcli(target) if guarded else new_only
    with atomic_path(target, what, ours) as tmp, open(tmp, "wb") as handle:
        yield handle
    written.remember(path)


def _written_by_transcli(path: Path) -> Verdict:
    """Whether a file at `path`, judged when it is replaced, is transcli's to replace: the
    file the ledger has for `path` now (when the command starts), or an empty one."""
    same = unchanged(written.recorded(path))
    return lambda st: stat.S_ISREG(st.st_mode) and (st.st_size == 0 or same(st))


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


def check_output(name: str | Path, inputs: Iterable[str | Path] = (), what: str = "output",
                 guarded: bool = True) -> None:
    """Refuse an output that is a directory (or a name ending in '/', which can only
    name one), one of the command's `inputs` (an existing file, or a path an input may
    take), a file inside an input that is a folder, or (when `guarded`) a file transcli
    may not replace (`check_replaceable`)."""
    if str(name) == "":
        raise UserError(f"the file name for the {what} is empty")
    if str(name).endswith(os.sep) and not Path(name).is_dir():
        raise UserError(f"{name}: ends with '{os.sep}', so it names a folder, and there is "
                        f"none; give a file name for the {what}")
    path = Path(name)
    target = os.path.realpath(path)
    if _same_as_descriptor(path, 0):  # `-o /dev/stdin`: its input, or a pipe it holds
        raise UserError(f"{path}: is this command's standard input; refusing to write the "
                        f"{what} into it")
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


def _same_as_descriptor(path: Path | int, fd: int) -> bool:
    """Whether `path` (or descriptor) is the file or pipe open on descriptor `fd`; a
    device (/dev/null for a command run with `< /dev/null`) is shared, never the same."""
    try:
        mine = os.fstat(fd)
        theirs = os.fstat(path) if isinstance(path, int) else os.stat(path)
    except OSError:
        return False
    return (not stat.S_ISCHR(mine.st_mode)
            and (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino))


def check_stdout(inputs: Iterable[str | Path], what: str) -> None:
    """Standard output that is one of the input files (`-i f > f`, `< f >> f`): `>` has
    emptied it before the command started, `>>` would feed it its own output; refused
    rather than write an empty output and exit 0 (as cat does)."""
    try:
        if not stat.S_ISREG(os.fstat(1).st_mode):  # a terminal, a pipe: nothing to lose
            return
    except OSError:
        return
    for source in inputs:
        same = _same_as_descriptor(0, 1) if str(source) == "-" else \
            _same_as_descriptor(Path(source), 1)
        if same:
            name = "standard input" if str(source) == "-" else str(source)
            raise UserError(f"{name}: is both an input and standard output (`>` empties it "
                            f"before the command starts); write the {what} to another file")


@contextlib.contextmanager
def _writing_stdout(what: str) -> Iterator[None]:
    from transcli.system.streams import output_on_stdout, silence_stdout

    output_on_stdout(what)
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
