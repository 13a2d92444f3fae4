"""How a finished output gets its name: written beside it first, then put in place without
ever replacing or removing a file that is not transcli's, judged at the moment of replacing
(a check when the command starts would miss a file written during a long run).

Temp files and folders. An output is written into a temp file (or a scratch folder)
beside its name: `.NAME.transcli-XXXXXXXX.tmp` (`is_temp`, the one definition), which its
writer holds locked (flock) for as long as it lives. A lock dies with its process however
it dies, so a temp no process holds is one a killed writer left, and `remove_leftovers`
(the one cleaner) removes it; the mark keeps other programs' files out of its reach.

Putting in place. POSIX has no "rename if unchanged", so `put_in_place` is built from
steps that are each atomic, for one file (`-o`) or a set of files (a prepared dir):
1. each file to be replaced or removed is first renamed aside, to a new hidden name in
   its folder (`.NAME.XXXXXXXX.aside`), and only then judged by its identity (device,
   inode, size, modification time; a `Replaceable`): the file judged is the file that
   goes, whatever anyone does to the name meanwhile;
2. each new file gets its name by a hard link, which fails when any file has that name:
   one created meanwhile is never replaced;
3. a file not transcli's, or a name taken, undoes everything: the new names go (each
   judged as in 1), the files set aside come back (by a link, again never over a file),
   and `UserFileInTheWay` says which name it was. Only after the last new name is in
   place are the files set aside deleted.
What is left, and why it is accepted:
- a program holding a file open that writes into it after step 1 judged it writes into
  a file about to be deleted, as with any replacing of an open file;
- a file being replaced is away from its name from step 1 to step 2 (microseconds);
- a kill (SIGKILL) between steps 1 and 3 leaves the files set aside under their hidden
  names, which nothing ever removes: hidden, never lost;
- a file system without hard links (FAT, some FUSE mounts) gets step 2 as "check that
  the name is free, then rename": a file created between the two is replaced.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Callable, Iterator, Mapping, Optional, Sequence

Identity = tuple[int, int, int, int]  # device, inode, size, modification time (ns)
Replaceable = Callable[[os.stat_result], bool]  # whether a file, by its lstat, may go

ASIDE_SUFFIX = ".aside"
TEMP_MARK = "transcli-"
# link() errors that mean "this file system has no hard links", not "no permission"
NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EMLINK}


class UserFileInTheWay(Exception):
    """A file that is not transcli's stands at `path`, or came there while it worked;
    `moved`: where that file had to go when its name was taken again meanwhile; `kept`:
    where transcli's output went instead of `path`."""

    def __init__(self, path: Path, moved: Optional[Path] = None):
        super().__init__(str(path))
        self.path, self.moved = path, moved
        self.kept: Optional[Path] = None

    def where(self) -> str:
        """The end of a refusal that names where the user's file went, if it moved."""
        return f"; the file that was there is now {self.moved}" if self.moved else ""


def identity(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def still(expected: Optional[Identity]) -> Replaceable:
    """The regular file that had identity `expected` when it was judged transcli's."""
    return lambda st: stat.S_ISREG(st.st_mode) and identity(st) == expected


def name_free(st: os.stat_result) -> bool:
    """For a name that must be free: nothing found there may go."""
    return False


# ----------------------------------------------------------------------------- temps


def hidden_prefix(path: Path) -> str:
    """`.NAME.`, the start of a hidden name beside `path`, with NAME cut to 200 bytes so
    that a file whose name is near the system's limit (255 bytes) still has one."""
    return f".{os.fsdecode(os.fsencode(Path(os.path.abspath(path)).name)[:200])}."


def is_temp(name: str) -> bool:
    """Whether `name` is one of transcli's temp files or scratch folders."""
    return name.startswith(".") and f".{TEMP_MARK}" in name and name.endswith(".tmp")


def new_temp(path: Path, folder: bool = False) -> tuple[Path, int]:
    """A new temp file (or folder) beside `path`, and the descriptor holding its lock."""
    prefix = hidden_prefix(path) + TEMP_MARK
    while True:
        if folder:
            name = tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=path.parent)
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY)
        else:
            fd, name = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=path.parent)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # waits only while a cleaner looks at it
        except OSError:  # a file system without locks: no cleaner can lock it either
            return Path(name), fd
        if _still_named(fd, name):
            return Path(name), fd
        os.close(fd)  # a cleaner took it for abandoned before it was locked: another one


@contextlib.contextmanager
def scratch_dir(of: Path) -> Iterator[Path]:
    """A locked temp folder beside `of` for the block, removed after it; those a killed
    process left beside `of` are removed first."""
    remove_leftovers(of.parent, of.name)
    folder, lock = new_temp(of, folder=True)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        os.close(lock)


def remove_leftovers(folder: Path, of: Optional[str] = None) -> None:
    """Remove the temp files and folders in `folder` (those of the output named `of`, or
    all) that no live process holds: what killed writers left."""
    prefix = hidden_prefix(folder / of) + TEMP_MARK if of else "."
    try:
        names = [entry.name for entry in os.scandir(folder)]
    except OSError:
        return
    for name in names:
        if name.startswith(prefix) and is_temp(name):
            _remove_if_abandoned(os.path.join(folder, name))


def _remove_if_abandoned(name: str) -> None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    try:
        kind = os.fstat(fd).st_mode
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: its writer lives
        if _still_named(fd, name):
            if stat.S_ISDIR(kind):
                shutil.rmtree(name, ignore_errors=True)
            elif stat.S_ISREG(kind):
                os.unlink(name)
    except OSError:
        pass
    finally:
        os.close(fd)


def _still_named(fd: int, name: str) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.lstat(name))
    except OSError:
        return False


# ----------------------------------------------------------------------------- writing


@contextlib.contextmanager
def written_beside(path: Path, replaceable: Replaceable) -> Iterator[Path]:
    """The one temp-then-rename writer: yield a locked temp path beside `path`; at the end
    of the block fsync it, give it the mode of the file it replaces (else umask's) and
    put it in place if `replaceable` holds for what is at `path` then. `UserFileInTheWay`
    when it does not: the output is then kept beside `path` (`.kept` says where). A kill
    at any instant leaves the old file or the new one, never half of one."""
    tmp, lock = new_temp(path)
    try:
        yield tmp
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, _mode_for(path))
        try:
            put_in_place(path.parent, [(path.name, tmp)], {path.name: replaceable})
        except UserFileInTheWay as exc:
            exc.kept = keep_beside(tmp, path, "new")
            raise
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        os.close(lock)


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


def swap_folder(stage: Path, folder: Path) -> None:
    """Replace the folder `folder`, wholly transcli's (a cache), by `stage`: the old one
    goes into a scratch folder, removed after (or by the next cleaner after a kill)."""
    with scratch_dir(folder) as old:
        with contextlib.suppress(FileNotFoundError):
            os.rename(folder, old / "old")
        try:
            os.rename(stage, folder)
        except OSError:
            if not folder.is_dir():  # not a concurrent writer that got there first
                raise


def rename_into_empty(stage: Path, folder: Path) -> bool:
    """Rename `stage` to `folder` when `folder` is missing or empty; False when it holds
    files. (A rename replaces only an empty folder, so nothing is lost in a race.)"""
    try:
        folder.rmdir()
    except FileNotFoundError:
        pass
    except OSError:
        return False  # not empty, or '.'
    try:
        os.rename(stage, folder)
    except OSError:
        if folder.is_dir():  # filled meanwhile by another process
            return False
        raise
    return True


# ----------------------------------------------------------------------------- in place


def put_in_place(folder: Path, new: Sequence[tuple[str, Path]],
                 replaceable: Mapping[str, Replaceable], remove: Sequence[str] = ()) -> None:
    """Give each written file (name, path) the name folder/name, in order, and remove the
    files named in `remove`: all or nothing (module doc). A file found at one of those
    names goes only if `replaceable[name]` holds for it; a name without one must be free.
    Raises `UserFileInTheWay` with everything as it was otherwise; OS errors undo too."""
    names = [name for name, _ in new]
    aside: list[tuple[str, Path, bool]] = []  # (name, where it went, judged transcli's)
    placed: list[tuple[str, Path, os.stat_result]] = []  # (name, written file, its lstat)
    try:
        for name in [*reversed(names), *remove]:  # the last new file (a record) first
            moved = set_aside(folder / name)
            if moved is None:
                continue
            judge = replaceable.get(name)
            ours = judge is not None and judge(os.lstat(moved))
            aside.append((name, moved, ours))
            if not ours:
                raise UserFileInTheWay(folder / name)
        for name, source in new:
            written = os.lstat(source)
            if not link_new(source, folder / name):
                raise UserFileInTheWay(folder / name)
            placed.append((name, source, written))
    except BaseException as exc:  # a user's file, an OS error, a signal: put it all back
        moved_user = _undo(folder, placed, aside)
        if isinstance(exc, UserFileInTheWay):
            exc.moved = exc.moved or moved_user
        raise
    for _, moved, _ in aside:
        moved.unlink(missing_ok=True)


def set_aside(path: Path) -> Optional[Path]:
    """Rename whatever is at `path` to a new hidden name beside it and return that name;
    None when nothing is there. Something that cannot be moved (a folder in place of a
    file) is not transcli's: `UserFileInTheWay`."""
    fd, aside = tempfile.mkstemp(prefix=hidden_prefix(path), suffix=ASIDE_SUFFIX, dir=path.parent)
    os.close(fd)
    try:
        os.rename(path, aside)  # over our own empty placeholder: atomic, never a user's
    except FileNotFoundError:
        os.unlink(aside)
        return None
    except OSError:
        os.unlink(aside)
        raise UserFileInTheWay(path) from None
    return Path(aside)


def link_new(source: Path, path: Path) -> bool:
    """Give `source` the name `path` too, only if no file has that name (False if one
    does). Without hard links (module doc) `source` is renamed instead."""
    try:
        os.link(source, path, follow_symlinks=False)
        return True
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in NO_HARD_LINKS:
            raise
    if os.path.lexists(path):  # no hard links here: the window the module doc names
        return False
    os.rename(source, path)
    return True


def move_new(source: Path, path: Path) -> bool:
    """Move `source` to `path` only if no file has that name (False if one does)."""
    if not link_new(source, path):
        return False
    if os.path.lexists(source):  # linked: drop the old name
        os.unlink(source)
    return True


def keep_beside(source: Path, path: Path, tag: str) -> Path:
    """Move `source` (a finished output, or a file set aside) to the first free name of
    `PATH.TAG`, `PATH.TAG-2`, ...: where it stays, for the user to see, when it cannot
    have its own name."""
    path = Path(os.path.abspath(path))  # '.' has no name to add to
    for number in range(1, 1000):
        candidate = path.with_name(f"{path.name}.{tag}" + (f"-{number}" if number > 1 else ""))
        if move_new(source, candidate):
            return candidate
    raise FileExistsError(errno.EEXIST, "no free name to keep it under", str(path))


def _undo(folder: Path, placed: list[tuple[str, Path, os.stat_result]],
          aside: list[tuple[str, Path, bool]]) -> Optional[Path]:
    """Put back what `put_in_place` changed; returns where a user's file had to go when
    its name was taken again meanwhile (None when every file is back)."""
    for name, source, written in reversed(placed):
        with contextlib.suppress(OSError, UserFileInTheWay):
            _take_back(folder / name, source, written)
    kept = None
    for name, moved, ours in reversed(aside):
        try:
            if move_new(moved, folder / name):
                continue
            if ours:  # transcli's, and a new file has its name: the new one stays
                moved.unlink()
            else:
                kept = keep_beside(moved, folder / name, "kept")
        except OSError:
            kept = kept or moved  # still under its hidden name: say where
    return kept


def _take_back(path: Path, source: Path, written: os.stat_result) -> None:
    """Remove the name `put_in_place` gave the written file `source` (lstat `written`), if
    that file still has it; a file someone put there instead stays."""
    moved = set_aside(path)
    if moved is None:
        return
    if not os.path.samestat(os.lstat(moved), written):
        if not move_new(moved, path):  # someone's file, and the name taken again
            keep_beside(moved, path, "kept")
    elif os.path.lexists(source):
        moved.unlink()  # the second name of the written file
    else:
        move_new(moved, source)  # renamed in (no hard links): back where it was written
