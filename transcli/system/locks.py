"""One process per directory: an OS file lock held for the life of the process.

`flock` locks die with their process, however it dies (SIGKILL, a crash, a lost
machine), so a lock left behind never blocks anyone. The holder writes its pid
into the lock file, for the message that refuses a second process.

Two trainers in one run dir would interleave their metrics and overwrite each
other's checkpoints while both report success; `DirLock` refuses the second one.
`scratch_dir` uses the same lock to tell a temp dir in use from one a killed
process left behind, which the next run then removes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Optional

from transcli.system.errors import UserError
from transcli.system.files import check_parents, describe_os_error

# Inside each scratch dir; a name no user's folder holds, so that only transcli's own
# abandoned scratch dirs are ever removed.
SCRATCH_LOCK = ".transcli-scratch.lock"


class DirLock:
    """An exclusive lock on `directory` (created if missing), through `directory/name`.

    `release` removes the lock file, and the directory too when this lock created it
    and nothing else was put there (a start that failed leaves no trace)."""

    def __init__(self, directory: Path, name: str, what: str):
        self.directory = Path(directory)
        self.path = self.directory / name
        self.created = False
        check_parents(self.directory)
        try:
            self.created = not self.directory.exists()
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"{self.directory}: cannot create the directory "
                            f"({describe_os_error(exc)})") from None
        fd = _try_lock(self.path)
        if fd is None:
            holder = _holder(self.path)
            self.release()
            raise UserError(f"{self.directory}: in use by another {what} "
                            f"({holder}); wait for it to finish or stop it first")
        self.fd: Optional[int] = fd

    def release(self) -> None:
        fd, self.fd = getattr(self, "fd", None), None
        if fd is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            os.close(fd)
        if self.created:
            with contextlib.suppress(OSError):
                self.directory.rmdir()  # only when empty

    def __enter__(self) -> DirLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _try_lock(path: Path) -> Optional[int]:
    """A descriptor holding the lock on `path` with our pid written in it, or None when
    another process holds it. Unreadable or uncreatable: one line naming the file."""
    while True:
        try:  # never through a symbolic link: the pid would be written wherever it points
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
        except OSError as exc:
            reason = ("a symbolic link stands there, not transcli's lock file"
                      if os.path.islink(path) else describe_os_error(exc))
            raise UserError(f"{path}: cannot create the lock file ({reason})") from None
        if os.fstat(fd).st_nlink > 1:  # a hard link to someone's file: never write into it
            os.close(fd)
            raise UserError(f"{path}: has other names (hard links), so it is not transcli's "
                            f"lock file; remove it")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except OSError as exc:
            os.close(fd)
            raise UserError(f"{path}: cannot lock ({describe_os_error(exc)})") from None
        if _same_inode(fd, path):
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            return fd
        os.close(fd)  # its holder removed it while we opened it: lock the new one


def _same_inode(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _holder(path: Path) -> str:
    try:
        pid = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        pid = ""
    return f"pid {pid}" if pid.isdigit() else "process"


def is_held(directory: Path) -> bool:
    """Whether a live process holds `directory`'s scratch lock (or it cannot be told)."""
    try:
        fd = os.open(directory / SCRATCH_LOCK, os.O_RDWR)
    except FileNotFoundError:
        return False  # never locked, or its holder is gone
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


@contextlib.contextmanager
def scratch_dir(beside: Path, prefix: str, suffix: str = "") -> Iterator[Path]:
    """A new temp dir `prefix*suffix` in `beside`, locked while the block runs and
    removed after it. Dirs of the same pattern whose process is gone (killed before it
    could clean up) are removed first; the lock file inside tells them apart."""
    remove_abandoned(beside, prefix, suffix)
    try:
        folder = Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=beside))
    except OSError as exc:
        raise UserError(f"{beside}: cannot create a temp dir ({describe_os_error(exc)})") from None
    try:
        fd = _lock_scratch(folder)
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise UserError(f"{folder}: cannot create a lock file ({describe_os_error(exc)})") from None
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        os.close(fd)


def _lock_scratch(folder: Path) -> int:
    """Lock a new scratch dir; the lock file gets its name only once locked, so no one
    can take the dir for an abandoned one in between."""
    fd = os.open(folder / (SCRATCH_LOCK + ".new"), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(folder / (SCRATCH_LOCK + ".new"), folder / SCRATCH_LOCK)
    except OSError:
        os.close(fd)
        raise
    return fd


def remove_abandoned(beside: Path, prefix: str, suffix: str = "") -> None:
    """Remove `prefix*suffix` dirs in `beside` that hold a scratch lock no process holds."""
    try:
        candidates = [p for p in beside.iterdir() if p.name.startswith(prefix)
                      and p.name.endswith(suffix) and p.is_dir() and not p.is_symlink()]
    except OSError:
        return
    for folder in candidates:
        if (folder / SCRATCH_LOCK).is_file() and not is_held(folder):
            shutil.rmtree(folder, ignore_errors=True)
