"""`transcli export`: a run's checkpoint as a model directory another library runs.

One module per format (`FORMATS`), each with `check` (refuse, with one line, what
it cannot export exactly) and `write` (fill an empty directory). An export is
exact or refused: the exported model gives transcli's greedy output on the same
weights (the formats' tests compare them), never a silently different model.

Writing is all or nothing: the files go into a temp directory beside `--out` that
is renamed at the end (`locks.scratch_dir`: one a killed export left is removed by
the next). A non-empty `--out` is refused unless `force`; then the files this
export writes replace those a previous transcli export listed in its `EXPORT_FILE`
(and those it listed and this one does not write are removed); a file of the same
name that no export listed is the user's, and is refused; nothing else in the
directory is touched.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Optional

from transcli.system.errors import UserError
from transcli.system.files import check_parents, describe_os_error, file_digest, read_json
from transcli.system.locks import scratch_dir

if TYPE_CHECKING:
    from transcli.rundir.run import RunDir

FORMATS = {"ct2": "transcli.export.ct2", "hf": "transcli.export.hf"}
EXPORT_FILE = "transcli-export.json"  # what was exported from where, and the files written


def require(module: str, extra: str) -> ModuleType:
    """Import an optional dependency, or say in one line how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UserError(f"this needs the Python package '{module.split('.')[0]}': "
                        f"pip install transcli[{extra}]") from None


def format_module(name: str) -> ModuleType:
    if name not in FORMATS:
        raise UserError(f"--format {name}: must be one of {', '.join(FORMATS)}")
    return importlib.import_module(FORMATS[name])


def export_run(run: RunDir, fmt: str, out: Path, checkpoint: str = "best",
               quantize: Optional[str] = None, force: bool = False) -> Path:
    """Export `checkpoint` of the opened run dir `run` to `out` in format `fmt`."""
    module = format_module(fmt)
    module.check_options(quantize)
    module.check(run.config)
    _check_destination(out, force)
    source = run.checkpoint(checkpoint)
    model = run.model(source, "cpu")
    record = {"format": fmt, "run_dir": str(run.path.resolve()), "checkpoint": checkpoint,
              "quantize": quantize, **checkpoint_identity(source)}
    publish(out, record, lambda tmp: module.write(model, run.tokenizer, run.config, tmp,
                                                  quantize), force=force)
    return out


def checkpoint_identity(path: Path) -> dict[str, Any]:
    """What tells one checkpoint file from its later versions without reading it."""
    stat = path.stat()
    return {"source": str(path.resolve()), "source_size": stat.st_size,
            "source_mtime_ns": stat.st_mtime_ns}


def read_record(directory: Path) -> dict[str, Any]:
    """A directory's `EXPORT_FILE`, or {} when it has none (or an unreadable one)."""
    try:
        record = read_json(directory / EXPORT_FILE)
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def publish(out: Path, record: dict[str, Any], fill: Callable[[Path], None], *,
            force: bool = False, owned: bool = False) -> None:
    """Run `fill(tmp)` on a fresh temp directory beside `out`, add `EXPORT_FILE`, then
    move the result to `out`. `owned`: `out` is wholly transcli's (a cache in a run dir),
    so an old one is swapped out as a whole."""
    out = Path(out)
    _make_parent(out)
    with scratch_dir(out.parent, f".{out.name}.", ".tmp") as scratch:
        try:
            tmp = scratch / "export"
            tmp.mkdir()
            fill(tmp)
            files = sorted(p.name for p in tmp.iterdir())
            hashes = {name: file_digest(tmp / name) for name in files if (tmp / name).is_file()}
            (tmp / EXPORT_FILE).write_text(json.dumps({**record, "files": files,
                                                       "sha256": hashes}, indent=2)
                                           + "\n", encoding="utf-8")
            if owned:
                _swap(tmp, out)
            elif not _rename_into_place(tmp, out):
                if not force:  # another process filled `out` since it was checked
                    raise UserError(f"{out}: not empty any more (another export?); use "
                                    f"--force to replace the files an export wrote there")
                owned_files = _owned(out)
                _check_clash(out, files, owned_files)
                _replace_files(tmp, out, files, owned_files)
        except OSError as exc:
            raise UserError(f"{out}: cannot write the export ({describe_os_error(exc)})") \
                from None


def _check_destination(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: --out is a file, not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise UserError(f"{out}: --out is not empty; use --force to replace the files an "
                        f"export writes there (other files are kept)")


def _make_parent(out: Path) -> None:
    check_parents(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{out}: cannot write the export ({describe_os_error(exc)})") from None


def _owned(out: Path) -> set[str]:
    """The files of `out` that the export there wrote and nobody changed since: listed in
    its record with the content hash they still have (a record without hashes, from an
    older transcli, vouches for its names alone)."""
    record = read_record(out)
    if not record:
        return set()
    hashes = record.get("sha256")
    names = [n for n in record.get("files", []) if isinstance(n, str) and "/" not in n
             and n not in ("", ".", "..")]
    if not isinstance(hashes, dict):
        return {*names, EXPORT_FILE}
    kept = set()
    for name in names:
        with contextlib.suppress(OSError):
            path = out / name
            if path.is_file() and not path.is_symlink() and file_digest(path) == hashes.get(name):
                kept.add(name)
    return kept | {EXPORT_FILE}


def _check_clash(out: Path, files: list[str], owned: set[str]) -> None:
    """With --force, replace only what a transcli export wrote: a file of this export's
    names that is not the previous export's, as it wrote it, is the user's."""
    clash = [name for name in [*files, EXPORT_FILE]
             if name not in owned and os.path.lexists(out / name)]
    if clash:
        raise UserError(f"{out / clash[0]}: exists and was not written by transcli export (or "
                        f"was changed since); refusing to overwrite it, even with --force")


def _rename_into_place(tmp: Path, out: Path) -> bool:
    """Rename `tmp` to `out` when `out` is missing or empty; False when it holds files."""
    try:
        out.rmdir()
    except FileNotFoundError:
        pass
    except OSError:
        return False  # not empty
    try:
        os.rename(tmp, out)
    except OSError:
        if out.is_dir():  # created meanwhile (another export): replace file by file
            return False
        raise
    return True


def _replace_files(tmp: Path, out: Path, files: list[str], owned: set[str]) -> None:
    """Move this export's files over their namesakes in `out`; drop the files the
    previous transcli export there wrote (`owned`) that this one no longer writes."""
    for name in files + [EXPORT_FILE]:
        os.replace(tmp / name, out / name)
    for name in owned - set(files) - {EXPORT_FILE}:
        (out / name).unlink(missing_ok=True)


def _swap(tmp: Path, out: Path) -> None:
    """Replace the whole directory `out` by `tmp` (the old one removed after)."""
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=out.parent))
        os.replace(out, old / out.name)
    try:
        os.rename(tmp, out)
    except OSError:
        if not out.is_dir():  # not a concurrent export that got there first
            raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
