"""Outputs transcli owns: folders it writes files into, with a record there of each file
it wrote and its content's SHA-256, so that a later run replaces or removes only the
files still as written, and refuses, naming it, any other file in its way.

The one mechanism behind `prepare` (the manifest is the record), `export`
(`transcli-export.json`), the attention folders (`transcli-attention.json`) and the
CTranslate2 cache (trusted only when intact). A record is a JSON object holding, besides
what its writer adds:
    "files":  the names written, plain names in the folder (`plain_name`),
    "sha256": name -> the SHA-256 of that file's content as written.
A record without "sha256" (from an older transcli) vouches for its names alone.

A file is transcli's when a record of ours lists it and its content still has that hash:
checked when a command starts (to refuse before the work), and again, by the identity
the file had when its hash was checked, at the moment of replacing or removing it
(`publish.py`), so a file changed or created during a run is kept. The record itself is
transcli's when it reads as one (`accept`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterable, Mapping, Optional, Sequence

from transcli.system.errors import UserError
from transcli.system.files import (
    MAX_JSON_BYTES,
    atomic_path,
    check_parents,
    describe_os_error,
    parse_json,
    remove_stale_temps,
)
from transcli.system.publish import (
    Identity,
    NotOurs,
    identity,
    keep_visible,
    new_only,
    publish,
    unchanged,
)


def plain_name(name: object) -> bool:
    """A name of a file directly in the folder: a record is data, never a way out of it."""
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name \
        and "\0" not in name


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's content, in hex."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def record_of(folder: Path, names: Sequence[str]) -> dict[str, Any]:
    """A record's own entries for the files `names` of `folder` as they are now."""
    return {"files": list(names), "sha256": {name: file_digest(folder / name)
                                             for name in names if (folder / name).is_file()}}


@dataclass
class Contents:
    """What a folder holds, as transcli sees it."""

    names: list[str]  # every entry, sorted
    owned: dict[str, Identity]  # the files of ours, still as written: their identity then

    @property
    def foreign(self) -> list[str]:
        return [name for name in self.names if name not in self.owned]


class OwnedFolder:
    """A folder transcli writes files into, with its record of them (module doc).

    `writer` names the command in refusals ("prepare": "... was not written by transcli
    prepare"); `skip` tells entries that do not count (prepare's scratch dir inside
    `--out .`); `accept` tells a record of ours from another JSON file of that name."""

    def __init__(self, folder: Path, record: str, writer: str = "",
                 skip: Callable[[str], bool] = lambda name: False,
                 accept: Callable[[dict[str, Any]], bool] = lambda record: True):
        self.folder, self.record, self.writer = Path(folder), record, writer
        self.skip, self.accept = skip, accept
        self.written: dict[str, str] = {}  # filling file by file: name -> SHA-256
        self.claimed: set[str] = set()
        self._record_seen: Optional[Identity] = None  # the record file this run wrote

    # ------------------------------------------------------------------ what is there

    def read_record(self) -> tuple[dict[str, Any], Optional[Identity]]:
        """The record (an accepted JSON object, else {}) and the identity of its file."""
        try:
            with open(self.folder / self.record, "rb", opener=_no_follow) as handle:
                seen = os.fstat(handle.fileno())
                record = parse_json(handle.read(MAX_JSON_BYTES + 1))
        except (OSError, ValueError):
            return {}, None
        if not isinstance(record, dict) or not stat.S_ISREG(seen.st_mode) \
                or not self.accept(record):
            return {}, None
        return record, identity(seen)

    def contents(self, option: str) -> Contents:
        """What the folder holds (nothing when it does not exist); `option` names it in
        the refusal of a file where the folder should be."""
        names = self.names(option)
        record, seen = self.read_record()
        owned = {self.record: seen} if seen is not None else {}
        for name, digest in _listed(record).items():
            still = _as_written(self.folder / name, digest)
            if still is not None:
                owned[name] = still
        return Contents(names, owned)

    def names(self, option: str = "--out") -> list[str]:
        """Every entry of the folder but the `skip`ped ones, sorted ([] when missing);
        `option` names the folder in the refusal of a file where it should be."""
        check_parents(self.folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise UserError(f"{self.folder}: {option} is a file; it must name a directory")
        try:
            return sorted(entry.name for entry in os.scandir(self.folder)
                          if not self.skip(entry.name))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise UserError(f"{self.folder}: cannot read the folder "
                            f"({describe_os_error(exc)})") from None

    def refuse_clash(self, names: Iterable[str], contents: Contents) -> None:
        """Refuse, naming it, a file of one of `names` that is not ours as written."""
        foreign = set(contents.foreign)
        clash = [name for name in names if name in foreign]
        if clash:
            self._refuse(clash[0])

    def verified_record(self, holding: Mapping[str, Any]) -> Optional[dict[str, Any]]:
        """The record when it holds the values `holding` gives (checked first), lists a hash
        for exactly its files, and every one of them is still as written: a cache trusts
        itself only then. Else None."""
        record, seen = self.read_record()
        hashes, files = record.get("sha256"), record.get("files")
        if seen is None or any(record.get(key) != value for key, value in holding.items()) \
                or not isinstance(hashes, dict) or not isinstance(files, list) \
                or set(hashes) != set(map(str, files)):
            return None
        intact = all(plain_name(name) and isinstance(digest, str)
                     and _as_written(self.folder / name, digest) is not None
                     for name, digest in hashes.items())
        return record if intact else None

    # ------------------------------------------------------------------ a whole set

    def install(self, stage: Path, names: list[str], contents: Contents, what: str,
                force: bool) -> None:
        """Move the files `names` of the folder `stage` (the record last) into the folder:
        a missing or empty folder becomes `stage` in one rename; else (with `force`) each
        replaces only a file of `contents.owned` (as the command found it, before its
        work) still as it was then, and the files of ours the new set lacks go. All or
        nothing: on a file not ours, found at the moment of replacing, `stage` is kept
        beside the folder and the refusal says where."""
        folder = self.folder
        if _rename_into_place(stage, folder):
            return
        if not force and self.names():
            raise UserError(f"{folder}: not empty any more (written meanwhile by another "
                            f"process?); use --force to replace the {what} transcli wrote there")
        self.refuse_clash(names, contents)
        ours = {name: unchanged(seen) for name, seen in contents.owned.items()}
        stale = [name for name in contents.owned if name not in names]
        try:
            publish(folder, [(name, stage / name) for name in names], ours, stale)
        except NotOurs as exc:
            kept = keep_visible(stage, folder, "new")
            raise UserError(f"{exc.path}: written or changed by someone else while transcli "
                            f"wrote the {what}; nothing in {folder} was replaced, and the "
                            f"{what} went to {kept}{exc.where()}") from None

    # ------------------------------------------------------------------ file by file

    def start(self, contents: Contents) -> None:
        """Get the folder ready to be filled file by file (`claim`, `writing`, `add`):
        create it, and remove what an earlier run of ours left there: its files still as
        written, each judged at the moment of removing it, and temp files of killed runs."""
        check_parents(self.folder)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"{self.folder}: cannot create the folder "
                            f"({describe_os_error(exc)})") from None
        remove_stale_temps(self.folder, every=True)
        self.remove(contents)
        self.claim(self.record)

    def remove(self, contents: Contents) -> None:
        """Remove the files of ours in `contents`, each judged at the moment of removing
        it (one changed meanwhile is the user's, and stays), the record last."""
        for name in sorted(contents.owned, key=lambda name: name == self.record):
            with contextlib.suppress(NotOurs, OSError):
                publish(self.folder, [], {name: unchanged(contents.owned[name])}, [name])

    def claim(self, *names: str) -> list[Path]:
        """The paths to write `names` to; refused if a file of one of them is there."""
        for name in names:
            if name not in self.claimed and os.path.lexists(self.folder / name):
                self._refuse(name)
        self.claimed.update(names)
        return [self.folder / name for name in names]

    def writing(self, path: Path, what: str) -> ContextManager[Path]:
        """A temp path for the claimed `path`, put in place at the end only if no file has
        taken the name meanwhile (`atomic_path`)."""
        return atomic_path(path, what, new_only)

    def add(self, *paths: Path) -> None:
        """Record claimed files once written whole: the record is rewritten."""
        self.written.update({path.name: file_digest(path) for path in paths})
        record = {"files": sorted(self.written), "sha256": dict(sorted(self.written.items()))}
        path = self.folder / self.record
        with atomic_path(path, "record of the files written",
                         unchanged(self._record_seen) if self._record_seen else new_only) as tmp:
            tmp.write_text(json.dumps(record, indent=0) + "\n", encoding="utf-8")
        self._record_seen = identity(os.lstat(path))

    def _refuse(self, name: str) -> None:
        writer = f" {self.writer}" if self.writer else ""
        raise UserError(f"{self.folder / name}: exists and was not written by transcli{writer} "
                        f"(or was changed since); refusing to overwrite it, even with --force")


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK)


def _listed(record: dict[str, Any]) -> dict[str, Optional[str]]:
    """The plain names a record lists, each with its recorded SHA-256 (None when the
    record keeps no hashes: it vouches for the name alone)."""
    files, hashes = record.get("files"), record.get("sha256")
    names = [name for name in files if plain_name(name)] if isinstance(files, list) else []
    if not isinstance(hashes, dict):
        return dict.fromkeys(names)
    return {name: hashes[name] for name in names if isinstance(hashes.get(name), str)}


def _as_written(path: Path, digest: Optional[str]) -> Optional[Identity]:
    """The identity of the regular file at `path` when its content has the SHA-256
    `digest` (any content when None), read in one go; None when it has not."""
    try:
        with open(path, "rb", opener=_no_follow) as handle:
            before = os.fstat(handle.fileno())
            if not stat.S_ISREG(before.st_mode):
                return None
            if digest is None:
                return identity(before)
            found = hashlib.file_digest(handle, "sha256").hexdigest()
            if found != digest or identity(os.fstat(handle.fileno())) != identity(before):
                return None
            return identity(before)
    except OSError:
        return None


def _rename_into_place(stage: Path, folder: Path) -> bool:
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
