"""Writing an output: the one way every command writes a file or a folder.

- a file: `output_file(path, what)`, a binary handle to write into (a `-o FILE`, a run
  dir's file); a writer that takes a file name instead (safetensors) writes to
  `handle.name`. A folder filled file by file (an attention folder) is `output_file`
  with the folder's record (`record=OutputFolder(...).record`);
- a folder written whole: `output_folder(OutputFolder(...), what)`, a stage to fill
  (a prepared dir, an export, the CTranslate2 cache).
(How a finished output gets its name, and the temp files it is written in first:
`replacing.py`.)

The rules every output keeps, whoever calls it:
- it appears whole or not at all (a temp file beside it, fsynced, then renamed), keeping
  the mode of the file it replaces; a FIFO or a device (`/dev/stdout`) is written
  through, a symbolic link is followed to its target, one of the command's own inputs
  is refused, and so is a name ending in '/';
- it replaces (or `--force` removes) only a file transcli wrote and nobody changed since,
  checked when the command starts and again at the moment of replacing: a file written
  there meanwhile is kept, and the output is kept beside it (`NAME.new`);
- a stream of lines (`streamed=True`) stopped by a signal keeps the whole lines written
  before it, and the stop line says so (`stop_note`);
- a temp file a killed writer left is removed by the next write of that output.

What transcli wrote: one record (`Record`). A JSON object listing the files with the
SHA-256 of each file's content as written ("files", "sha256"). Content, not an inode or
a time, because that is what the promise is about: a copied, moved or restored output
stays transcli's, and any edit makes it the user's. The record lives where its files
are, so that it travels with them and needs no home folder: in the folder for a folder
output (a prepared dir's manifest, an export's or an attention folder's record, the
CTranslate2 cache's). A `-o FILE` lies in a folder of the user's, where transcli leaves
nothing but the file asked for, so those files have the same record in transcli's state
folder (`USER_FILES`, keyed by real path; an empty file there is replaceable too). The
run dir's files are rewritten at every save and its log appended at every step, so its
record (`rundir.layout.RUN_RECORD`) vouches by name, for the trainer that holds the run's
lock. Whatever vouches, the file judged when an output opens must still be there, by its
identity (device, inode, size, modification time), at the moment of replacing.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Mapping, Optional, Sequence

from transcli.system.errors import UserError
from transcli.system.files import (
    cannot_write,
    check_parents,
    describe_os_error,
    read_json,
    same_file,
)
from transcli.system.replacing import (
    Identity,
    Replaceable,
    UserFileInTheWay,
    hidden_prefix,
    identity,
    is_temp,
    keep_beside,
    name_free,
    put_in_place,
    remove_leftovers,
    rename_into_empty,
    scratch_dir,
    still,
    swap_folder,
    written_beside,
)
from transcli.system.streams import check_not_closed, silence_stdout

KEEP_USER_FILES = 1000  # newest -o files remembered: the record stays small


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's content, in hex."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def plain_name(name: object) -> bool:
    """A name of a file directly in the folder: a record is data, never a way out of it."""
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name \
        and "\0" not in name


def record_of(folder: Path, names: Sequence[str]) -> dict[str, Any]:
    """A record's own entries for the files `names` of `folder` as they are now."""
    return {"files": list(names), "sha256": {name: file_digest(folder / name)
                                             for name in names if (folder / name).is_file()}}


class Record:
    """The record of what transcli wrote (module doc), in the JSON file `path`; `accept`
    tells a record of ours from another JSON file of that name. `by_path`: its files
    are anywhere, named by real path (`USER_FILES`); else they are in the record's folder.
    `path` None: a record kept by no file, vouching for the files `names` accepts."""

    def __init__(self, path: Optional[Path], accept: Callable[[dict], bool] = lambda r: True,
                 by_path: bool = False, names: Callable[[Path], bool] = lambda path: False):
        self._path, self.accept, self.by_path, self.names = path, accept, by_path, names
        self.digests: dict[str, str] = {}  # files added by this process: their SHA-256
        self.seen: Optional[Identity] = None  # the record's file as last read or written

    @property
    def path(self) -> Optional[Path]:
        return self._path

    def key(self, path: Path) -> str:
        """A file's name in this record: its name in the record's folder, else its real path."""
        return os.path.realpath(path) if self.by_path else Path(path).name

    def read(self) -> dict[str, Any]:
        """The record (an accepted JSON object, else {}), noting its file's identity."""
        self.seen = None
        if self.path is None:
            return {}
        try:
            with open(self.path, "rb", opener=_no_follow) as handle:
                seen = os.fstat(handle.fileno())
                record = read_json(handle) if stat.S_ISREG(seen.st_mode) else None
        except (OSError, ValueError):
            return {}
        if not isinstance(record, dict) or not self.accept(record):
            return {}
        self.seen = identity(seen)
        return record

    def listed(self, record: Optional[dict[str, Any]] = None) -> dict[str, Optional[str]]:
        """The files a record lists, each with its SHA-256 (None when the record keeps no
        hashes: an older record, which vouches for the name alone)."""
        record = self.read() if record is None else record
        files, hashes = record.get("files"), record.get("sha256")
        valid = (lambda key: isinstance(key, str) and os.path.isabs(key)) if self.by_path \
            else plain_name
        keys = [key for key in files if valid(key)] if isinstance(files, list) else []
        if not isinstance(hashes, dict):
            return dict.fromkeys(keys)
        return {key: hashes[key] for key in keys if isinstance(hashes.get(key), str)}

    def judge(self, path: Path) -> Optional[Identity]:
        """The identity of the regular file at `path` if this record vouches for it as it
        is now (listed, and its content still as written), else None."""
        if self.path is None:
            return _as_written(path, None) if self.names(path) else None
        listed = self.listed()
        key = self.key(path)
        return _as_written(path, listed[key]) if key in listed else None

    def replaceable(self, path: Path) -> Replaceable:
        """What may be replaced at `path` at the moment of replacing: the file this record
        vouches for now (or, for `USER_FILES`, an empty file)."""
        seen, empty_too = self.judge(path), self.by_path
        return lambda st: stat.S_ISREG(st.st_mode) and (
            identity(st) == seen or (empty_too and st.st_size == 0))

    def add(self, path: Path, digest: str) -> None:
        """Record the file just put in place at `path` (the SHA-256 of what was written)."""
        if self.path is None:
            return
        self.digests[self.key(path)] = digest
        try:
            self.save()
        except UserFileInTheWay as exc:
            raise UserError(f"{self.path}: written or changed by someone else while transcli "
                            f"wrote {path.name}; it is kept as it is, and the record of the "
                            f"files written went to {exc.kept}") from None
        except OSError as exc:
            raise cannot_write(self.path, "record of the files written", exc) from None

    def save(self) -> None:
        """Rewrite the record's file: what it holds and this process's files; only over
        the record this process last read or wrote."""
        record = self.read() if self.by_path else {}
        hashes = {key: digest for key, digest in self.listed(record).items()
                  if digest is not None and key not in self.digests}
        hashes.update(self.digests)
        if self.by_path:
            hashes = dict(list(hashes.items())[-KEEP_USER_FILES:])
        record.update(files=list(hashes), sha256=hashes)
        with written_beside(self.path, self._replaceable()) as tmp:
            tmp.write_text(json.dumps(record, indent=0) + "\n", encoding="utf-8")
        self.seen = _identity(self.path)

    def _replaceable(self) -> Replaceable:
        """What the record's own file may replace: the record as last read or written."""
        return still(self.seen) if self.seen else name_free


def _state_folder() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "transcli"


class _UserFiles(Record):
    """`USER_FILES`: the record of `-o` files, in the state folder as it is when used.
    Best effort: a state folder that cannot be written (a read-only home) only makes
    transcli more careful, since a file it does not find there is the user's."""

    def __init__(self) -> None:
        super().__init__(None, by_path=True)

    @property
    def path(self) -> Path:
        return _state_folder() / "outputs.json"

    def save(self) -> None:
        with contextlib.suppress(OSError, UserFileInTheWay):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(self.path.parent):  # other commands add theirs at the same time
                super().save()
        self.digests.clear()  # saved, or forgotten: the record on disk is the one to trust

    def _replaceable(self) -> Replaceable:
        return lambda st: stat.S_ISREG(st.st_mode)  # transcli's own folder, held locked


USER_FILES = _UserFiles()


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK)


def _identity(path: Path) -> Optional[Identity]:
    try:
        return identity(os.lstat(path))
    except OSError:
        return None


def _as_written(path: Path, digest: Optional[str]) -> Optional[Identity]:
    """The identity of the regular file at `path` when its content has the SHA-256
    `digest` (any content when None), read in one go; None when it has not."""
    try:
        if digest is None:
            st = os.lstat(path)
            return identity(st) if stat.S_ISREG(st.st_mode) else None
        with open(path, "rb", opener=_no_follow) as handle:
            before = os.fstat(handle.fileno())
            if not stat.S_ISREG(before.st_mode):
                return None
            found = hashlib.file_digest(handle, "sha256").hexdigest()
            if found != digest or identity(os.fstat(handle.fileno())) != identity(before):
                return None
            return identity(before)
    except OSError:
        return None


# ----------------------------------------------------------------------------- a file


@contextlib.contextmanager
def output_file(path: str | Path, what: str = "output", *, record: Optional[Record] = None,
                inputs: Iterable[str | Path] = (), stdout: Optional[BinaryIO] = None,
                streamed: bool = False) -> Iterator[BinaryIO]:
    """A binary handle for one output file, by the rules in the module doc.

    `record`: the record that vouches for a file at `path` and gets the new one
    (`USER_FILES` when not given). `inputs`: the command's input files, never written
    over. `path` "-" is `stdout` (when given): a reader that leaves (`| head`) ends the
    block quietly. `streamed`: a stop signal keeps the whole lines written so far.
    Errors while writing are one line naming the file and the `what` it holds."""
    if stdout is not None and str(path) == "-":
        check_stdout(inputs, what)
        with _writing_stdout(what):
            yield stdout
            stdout.flush()
        return
    record = record or USER_FILES
    check_output(path, inputs, what, record)
    path = Path(path)
    try:
        kind: Optional[int] = os.stat(path).st_mode  # follows symlinks
    except FileNotFoundError:
        kind = None
    except OSError as exc:
        raise cannot_write(path, what, exc) from None
    if kind is not None and not stat.S_ISREG(kind):  # FIFO, device: write through it
        with _naming(path, what, path), open(path, "wb") as handle:
            yield handle
        return
    yield from _replaced(Path(os.path.realpath(path)), path, what, record, streamed)


def _replaced(target: Path, path: Path, what: str, record: Record,
              streamed: bool) -> Iterator[BinaryIO]:
    """`output_file`'s regular file: written beside `target`, then put in place."""
    stop: Optional[KeyboardInterrupt] = None
    try:
        with _naming(path, what, target):
            target.parent.mkdir(parents=True, exist_ok=True)
            remove_leftovers(target.parent, target.name)
            with written_beside(target, record.replaceable(target)) as tmp:
                with open(tmp, "wb") as handle:
                    try:
                        yield handle
                    except KeyboardInterrupt as exc:  # a stop signal (`signals.Interrupted`)
                        if not streamed:
                            raise
                        stop = exc
                if stop is not None and not _whole_lines(tmp):
                    raise stop  # nothing whole to keep: the old file stays
                digest = file_digest(tmp) if record.path is not None else ""
    except UserFileInTheWay as exc:
        raise UserError(f"{path}: written or changed by someone else while transcli wrote "
                        f"the {what}; it is kept as it is, and the {what} went to "
                        f"{exc.kept}{exc.where()}") from None
    record.add(target, digest)
    if stop is not None:
        _KEPT_AT_STOP.append(f"{path} holds only the {what} written before it")
        raise stop


@contextlib.contextmanager
def _naming(path: Path, what: str, target: Path) -> Iterator[None]:
    """An OS error about `path` (its target, a folder above it, the files written beside
    it) as one line naming `path`; one about another file (an input read in the block)
    is left as it is."""
    try:
        yield
    except OSError as exc:
        name = Path(os.path.abspath(exc.filename)) if exc.filename is not None else None
        if name is not None and name != Path(os.path.abspath(path)) \
                and not target.is_relative_to(name) \
                and not (name.parent == target.parent
                         and name.name.startswith(hidden_prefix(target))):
            raise
        raise cannot_write(path, what, exc) from None


def _whole_lines(path: Path) -> bool:
    """Cut a stopped stream's file after its last whole line; whether one is left."""
    with open(path, "rb+") as handle:
        end = handle.seek(0, os.SEEK_END)
        while end > 0:
            start = max(0, end - (1 << 16))
            handle.seek(start)
            found = handle.read(end - start).rfind(b"\n")
            if found >= 0:
                handle.truncate(start + found + 1)
                return True
            end = start
        return False


_KEPT_AT_STOP: list[str] = []  # what each output stopped by a signal holds
_ON_STDOUT: list[str] = []  # what a command writes to stdout as its output, if any


def stop_note() -> str:
    """What a command stopped by a signal leaves, for the line it ends with."""
    if _KEPT_AT_STOP:
        return "; ".join(_KEPT_AT_STOP)
    try:
        in_a_file = stat.S_ISREG(os.fstat(1).st_mode)
    except OSError:
        in_a_file = False
    if _ON_STDOUT and in_a_file:  # `> out.txt`: the shell's file, written as lines came
        return f"stdout, a file, holds only the {_ON_STDOUT[-1]} written before it"
    return "no output file was left half-written"


@contextlib.contextmanager
def _writing_stdout(what: str) -> Iterator[None]:
    _ON_STDOUT.append(what)
    try:
        yield
    except BrokenPipeError:  # the reader left: it wants no more
        silence_stdout()
    except OSError as exc:
        silence_stdout()
        raise UserError(f"stdout: cannot write the {what} ({describe_os_error(exc)})") from None


def check_output(name: str | Path, inputs: Iterable[str | Path] = (), what: str = "output",
                 record: Optional[Record] = None) -> None:
    """Refuse, before any work, an output that is a directory (or a name ending in '/',
    which can only name one), one of the command's `inputs` (an existing file, or a path
    an input may take), a file inside an input that is a folder, the record's own file,
    or a file `record` (`USER_FILES` when not given) does not vouch for."""
    if str(name) == "":
        raise UserError(f"the file name for the {what} is empty")
    if str(name).endswith(os.sep) and not Path(name).is_dir():
        raise UserError(f"{name}: ends with '{os.sep}', so it names a folder, and there is "
                        f"none; give a file name for the {what}")
    check_not_closed(name)
    path = Path(name)
    check_parents(path)
    target = os.path.realpath(path)
    record = record or USER_FILES
    if record.path is not None and target == os.path.realpath(record.path):
        raise UserError(f"{path}: is transcli's record of the files it wrote; refusing to "
                        f"write the {what} into it")
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
    try:
        existing = os.stat(target) if path.is_file() else None  # a FIFO is written through
    except OSError:
        existing = None
    if existing is not None and not record.replaceable(Path(target))(existing):
        refuse(path, what)


def refuse(path: Path, what: str, writer: str = "", instead: str = "file") -> None:
    """Refuse to replace the file at `path`, which transcli did not write (module doc)."""
    raise UserError(f"{path}: exists and was not written by transcli{writer} (or was changed "
                    f"since); refusing to replace it with the {what}: remove it first or "
                    f"choose another {instead}")


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


# ----------------------------------------------------------------------------- a folder


@dataclass
class FolderContents:
    """What a folder holds, as transcli sees it."""

    names: list[str]  # every entry but transcli's temps, sorted
    written: dict[str, Identity]  # transcli's files still as written: their identity then

    @property
    def users_files(self) -> list[str]:
        return [name for name in self.names if name not in self.written]


class OutputFolder:
    """A folder transcli writes files into, with its `Record` of them (named `record`
    there). `writer` names the command in refusals ("... not written by transcli
    prepare"); `accept` tells a record of ours from another JSON file of that name."""

    def __init__(self, folder: Path, record: str, writer: str = "",
                 accept: Callable[[dict[str, Any]], bool] = lambda record: True):
        self.folder, self.writer = Path(folder), f" {writer}" if writer else ""
        self.record = Record(self.folder / record, accept)

    def names(self, option: str = "--out") -> list[str]:
        """Every entry but transcli's temps, sorted ([] when the folder is missing);
        `option` names the folder in the refusal of a file where it should be."""
        check_parents(self.folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise UserError(f"{self.folder}: {option} is a file; it must name a directory")
        try:
            return sorted(entry.name for entry in os.scandir(self.folder)
                          if not is_temp(entry.name))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise UserError(f"{self.folder}: cannot read the folder "
                            f"({describe_os_error(exc)})") from None

    def contents(self, option: str = "--out") -> FolderContents:
        """What the folder holds (nothing when it does not exist)."""
        names = self.names(option)
        listed = self.record.listed()
        written = {self.folder / name: _as_written(self.folder / name, digest)
                   for name, digest in listed.items()}
        if self.record.seen is not None:
            written[self.record.path] = self.record.seen
        return FolderContents(names, {path.name: seen for path, seen in written.items()
                                      if seen is not None})

    def refuse_clash(self, names: Iterable[str], contents: FolderContents, what: str) -> None:
        """Refuse, naming it, a file of one of `names` that is not transcli's as written."""
        users = set(contents.users_files)
        for name in names:
            if name in users:
                refuse(self.folder / name, what, self.writer, "folder")

    def verified_record(self, holding: Mapping[str, Any]) -> Optional[dict[str, Any]]:
        """The record when it holds the values `holding` gives (checked first), lists a hash
        for exactly its files, and every one of them is still as written: a cache trusts
        itself only then. Else None."""
        record = self.record.read()
        hashes, files = record.get("sha256"), record.get("files")
        if not record or any(record.get(key) != value for key, value in holding.items()) \
                or not isinstance(hashes, dict) or not isinstance(files, list) \
                or set(hashes) != set(map(str, files)):
            return None
        intact = all(plain_name(name) and isinstance(digest, str)
                     and _as_written(self.folder / name, digest) is not None
                     for name, digest in hashes.items())
        return record if intact else None

    def install(self, stage: Path, names: list[str], contents: FolderContents, what: str,
                force: bool) -> None:
        """Move the files `names` of the folder `stage` (the record last) into the folder:
        a missing or empty folder becomes `stage` in one rename; else (with `force`) each
        replaces only a file of `contents.written` still as it was then, and the files of
        transcli's the new set lacks go. All or nothing: on a user's file, found at the
        moment of replacing, `stage` is kept beside the folder and the refusal says where."""
        folder = self.folder
        if rename_into_empty(stage, folder):
            return
        if not force and self.names():
            raise UserError(f"{folder}: not empty any more (written meanwhile by another "
                            f"process?); use --force to replace the {what} transcli wrote there")
        self.refuse_clash(names, contents, what)
        replaceable = {name: still(seen) for name, seen in contents.written.items()}
        stale = [name for name in contents.written if name not in names]
        try:
            put_in_place(folder, [(name, stage / name) for name in names], replaceable, stale)
        except UserFileInTheWay as exc:
            kept = keep_beside(stage, folder, "new")
            raise UserError(f"{exc.path}: written or changed by someone else while transcli "
                            f"wrote the {what}; nothing in {folder} was replaced, and the "
                            f"{what} went to {kept}{exc.where()}") from None

    def clear(self, contents: FolderContents) -> None:
        """Make the folder ready to be filled file by file (`output_file` with this
        record): create it, and remove what an earlier run left there: its files still as
        written, each judged at the moment of removing it, and temps of killed runs."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"{self.folder}: cannot create the folder "
                            f"({describe_os_error(exc)})") from None
        remove_leftovers(self.folder)
        for name, seen in contents.written.items():
            with contextlib.suppress(UserFileInTheWay, OSError):  # changed: the user's
                put_in_place(self.folder, [], {name: still(seen)}, [name])
        self.record.seen = None  # gone, or the user's now: the new record needs the name


@dataclass
class Stage:
    """What `output_folder` yields: a folder to fill, and what its record will hold."""

    path: Path  # the folder being filled: what the output will hold
    scratch: Path  # room for work files beside it, removed at the end
    record: dict[str, Any] = field(default_factory=dict)  # the record's own fields
    listed: Optional[list[str]] = None  # the names the record lists (default: every file)


@contextlib.contextmanager
def output_folder(folder: OutputFolder, what: str, force: bool = False,
                  cache: bool = False) -> Iterator[Stage]:
    """A folder output written whole: yield a `Stage` in a locked scratch folder beside
    `folder`; at the end its record (the stage's `record` fields, each file's SHA-256)
    is written, and the set put in place (`OutputFolder.install`, checking the folder
    again then); a `cache` (wholly transcli's, as a run dir's CTranslate2 export) replaces
    the folder whole. A failure or a stop before the end leaves the folder as it was."""
    out = folder.folder
    try:
        check_parents(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        with scratch_dir(out) as scratch:
            stage = Stage(scratch / "stage", scratch)
            stage.path.mkdir()
            yield stage
            _finish(folder, stage, what, force, cache)
    except OSError as exc:  # disk full, permissions: the user's environment, not a bug
        where = f", {exc.filename}" if exc.filename else ""
        raise UserError(f"{out}: cannot write the {what} ({describe_os_error(exc)}{where})"
                        ) from None


def _finish(folder: OutputFolder, stage: Stage, what: str, force: bool, cache: bool) -> None:
    record = folder.record.path.name
    files = sorted(p.name for p in stage.path.iterdir())
    entries = record_of(stage.path, stage.listed if stage.listed is not None else files)
    (stage.path / record).write_text(json.dumps({**stage.record, **entries}, indent=2,
                                                ensure_ascii=False) + "\n", encoding="utf-8")
    if cache:
        swap_folder(stage.path, folder.folder)
    else:
        folder.install(stage.path, [*files, record], folder.contents(), what, force)
