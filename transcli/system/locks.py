"""One process per directory: an OS file lock held for the life of the process.

`flock` locks die with their process, however it dies (SIGKILL, a crash, a lost
machine), so a lock left behind never blocks anyone. The holder writes its pid
into the lock file, for the message that refuses a second process.

Two trainers in one run dir would interleave their metrics and overwrite each
other's checkpoints while both report success; `DirLock` refuses the second one.
(Temp files and scratch folders hold the same kind of lock: `replacing.py`.)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Optional

from transcli.system.errors import UserError
from transcli.system.files import check_parents, describe_os_error


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
