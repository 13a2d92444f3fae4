"""Publishing finished outputs: giving files written aside their names without ever
replacing or removing a file that is not transcli's, judged at the moment of replacing
it (a check when the command starts would miss a file written during a long run).

POSIX has no "rename if unchanged", so `publish` is built from steps that are each
atomic, for one file (`-o`) or a set of files (a prepared dir, an export):
1. each file to be replaced or removed is first renamed aside, to a new hidden name in
   its folder (`.NAME.XXXXXXXX.aside`), and only then judged by its identity (device,
   inode, size, modification time; `Verdict`): the file judged is the file that goes,
   whatever anyone does to the name meanwhile;
2. each new file gets its name by a hard link, which fails when any file has that name:
   one created meanwhile is never replaced;
3. a file not ours, or a name taken, undoes everything: the new names go (each judged
   as in 1), the files set aside come back (by a link, again never over a file), and
   `NotOurs` says which name it was. Only after the last new name is in place are the
   files set aside deleted.

What is left, and why it is accepted:
- a program holding a file open that writes into it after step 1 judged it writes into
  a file about to be deleted, as with any replacing of an open file; one that opens the
  name after step 1 creates a new file, which step 2 then keeps;
- a file being replaced is away from its name from step 1 to step 2 (microseconds per
  file): a reader opening the name then finds no file;
- a kill (SIGKILL) between steps 1 and 3 leaves the files set aside under their hidden
  names, which nothing ever removes: hidden, never lost;
- a file system without hard links (FAT, some FUSE mounts) gets step 2 as "check that
  the name is free, then rename": a file created between the two is replaced.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

Identity = tuple[int, int, int, int]  # device, inode, size, modification time (ns)
Verdict = Callable[[os.stat_result], bool]  # whether a file, by its lstat, is ours

ASIDE_SUFFIX = ".aside"
# link() errors that mean "this file system has no hard links", not "no permission"
NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EMLINK}


class NotOurs(Exception):
    """A file that is not transcli's stands at `path`, or came there while it worked;
    `moved`: where that file had to go when its name was taken again meanwhile."""

    def __init__(self, path: Path, moved: Optional[Path] = None):
        super().__init__(str(path))
        self.path, self.moved = path, moved

    def where(self) -> str:
        """The end of a refusal that names where the file not ours went, if it moved."""
        return f"; the file that was there is now {self.moved}" if self.moved else ""


def identity(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def unchanged(expected: Optional[Identity]) -> Verdict:
    """The verdict "the regular file that had identity `expected` when it was checked"."""
    return lambda st: stat.S_ISREG(st.st_mode) and identity(st) == expected


def new_only(st: os.stat_result) -> bool:
    """The verdict for a name that must be free: nothing there is ours."""
    return False


def publish(folder: Path, new: Sequence[tuple[str, Path]], ours: Mapping[str, Verdict],
            remove: Sequence[str] = ()) -> None:
    """Give each staged file (name, path) the name folder/name, in order, and remove the
    files named in `remove`: all or nothing (module doc). A file found at one of those
    names goes only if `ours[name]` holds for it; a name without a verdict must be free.
    Raises `NotOurs` with everything as it was otherwise; OS errors undo too."""
    names = [name for name, _ in new]
    aside: list[tuple[str, Path, bool]] = []  # (name, where it went, judged ours)
    placed: list[tuple[str, Path, os.stat_result]] = []  # (name, staged file, its lstat)
    try:
        for name in [*reversed(names), *remove]:  # the last new file (a record) first
            moved = set_aside(folder / name)
            if moved is None:
                continue
            verdict = ours.get(name)
            mine = verdict is not None and verdict(os.lstat(moved))
            aside.append((name, moved, mine))
            if not mine:
                raise NotOurs(folder / name)
        for name, source in new:
            staged = os.lstat(source)
            if not link_new(source, folder / name):
                raise NotOurs(folder / name)
            placed.append((name, source, staged))
    except BaseException as exc:  # NotOurs, an OS error, a signal: put everything back
        moved_user = _undo(folder, placed, aside)
        if isinstance(exc, NotOurs):
            exc.moved = exc.moved or moved_user
        raise
    for _, moved, _ in aside:
        moved.unlink(missing_ok=True)


def hidden_prefix(path: Path) -> str:
    """`.NAME.`, the start of a hidden name beside `path`, with NAME cut to 200 bytes so
    that a file whose name is near the system's limit (255 bytes) still has one."""
    return f".{os.fsdecode(os.fsencode(path.name)[:200])}."


def set_aside(path: Path) -> Optional[Path]:
    """Rename whatever is at `path` to a new hidden name beside it and return that name;
    None when nothing is there. Something that cannot be moved (a folder in place of a
    file) is not ours: `NotOurs`."""
    fd, aside = tempfile.mkstemp(prefix=hidden_prefix(path), suffix=ASIDE_SUFFIX, dir=path.parent)
    os.close(fd)
    try:
        os.rename(path, aside)  # over our own empty placeholder: atomic, never a user's
    except FileNotFoundError:
        os.unlink(aside)
        return None
    except OSError:
        os.unlink(aside)
        raise NotOurs(path) from None
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


def keep_visible(source: Path, path: Path, tag: str) -> Path:
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
    """Put back what `publish` changed; returns where a file not ours had to go when its
    name was taken again meanwhile (None when every file is back)."""
    for name, source, staged in reversed(placed):
        with contextlib.suppress(OSError, NotOurs):
            _take_back(folder / name, source, staged)
    kept = None
    for name, moved, mine in reversed(aside):
        try:
            if move_new(moved, folder / name):
                continue
            if mine:  # ours, and a new file has its name: the new one stays
                moved.unlink()
            else:
                kept = keep_visible(moved, folder / name, "kept")
        except OSError:
            kept = kept or moved  # still under its hidden name: say where
    return kept


def _take_back(path: Path, source: Path, staged: os.stat_result) -> None:
    """Remove the name `publish` gave the staged file `source` (lstat `staged`), if that
    file still has it; a file someone put there instead stays."""
    moved = set_aside(path)
    if moved is None:
        return
    if not os.path.samestat(os.lstat(moved), staged):
        if not move_new(moved, path):  # someone's file, and the name taken again
            keep_visible(moved, path, "kept")
    elif os.path.lexists(source):
        moved.unlink()  # the second name of the staged file
    else:
        move_new(moved, source)  # renamed in (no hard links): back where it was staged
