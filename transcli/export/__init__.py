"""`transcli export`: a run's checkpoint as a model directory another library runs.

One module per format (`FORMATS`), each with `check` (refuse, with one line, what
it cannot export exactly) and `write` (fill an empty directory). An export is
exact or refused: the exported model gives transcli's greedy output on the same
weights (the formats' tests compare them), never a silently different model.

Writing is all or nothing: the files go into a temp directory beside `--out` that
is renamed at the end (`locks.scratch_dir`: one a killed export left is removed by
the next). A non-empty `--out` is refused unless `force`; then the files this
export writes replace those a previous transcli export listed in its `EXPORT_FILE`,
still as it wrote them (and those it listed and this one does not write are removed);
any other file of the same name is the user's, and is refused, also when it appears
while the export is written; nothing else in the directory is touched
(`system.owned`).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Optional

from transcli.rundir.layout import EXPORT_FILE
from transcli.system.errors import UserError
from transcli.system.files import check_parents, describe_os_error
from transcli.system.locks import scratch_dir
from transcli.system.owned import OwnedFolder, record_of
from transcli.system.publish import hidden_prefix

if TYPE_CHECKING:
    from transcli.rundir.run import RunDir

FORMATS = {"ct2": "transcli.export.ct2", "hf": "transcli.export.hf"}


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
    run.check_outside(out, "--out")
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


def exported(directory: Path) -> OwnedFolder:
    """A directory as an export of transcli's: the files its `EXPORT_FILE` lists."""
    return OwnedFolder(directory, EXPORT_FILE, "export")


def read_record(directory: Path) -> dict[str, Any]:
    """A directory's `EXPORT_FILE`, or {} when it has none (or an unreadable one)."""
    return exported(directory).read_record()[0]


def publish(out: Path, record: dict[str, Any], fill: Callable[[Path], None], *,
            force: bool = False, owned: bool = False) -> None:
    """Run `fill(tmp)` on a fresh temp directory beside `out`, add `EXPORT_FILE`, then
    move the result to `out` (`OwnedFolder.install`). `owned`: `out` is wholly
    transcli's (a cache in a run dir), so an old one is swapped out as a whole."""
    out = Path(out)
    _make_parent(out)
    with scratch_dir(out.parent, hidden_prefix(out), ".tmp") as scratch:
        try:
            tmp = scratch / "export"
            tmp.mkdir()
            fill(tmp)
            files = sorted(p.name for p in tmp.iterdir())
            (tmp / EXPORT_FILE).write_text(json.dumps({**record, **record_of(tmp, files)},
                                                      indent=2) + "\n", encoding="utf-8")
            if owned:
                _swap(tmp, out)
                return
            folder = exported(out)
            folder.install(tmp, [*files, EXPORT_FILE], folder.contents("--out"), "export",
                           force)
        except OSError as exc:
            raise UserError(f"{out}: cannot write the export ({describe_os_error(exc)})") \
                from None


def _check_destination(out: Path, force: bool) -> None:
    if exported(out).names() and not force:
        raise UserError(f"{out}: --out is not empty; use --force to replace the files an "
                        f"export writes there (other files are kept)")


def _make_parent(out: Path) -> None:
    check_parents(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{out}: cannot write the export ({describe_os_error(exc)})") from None


def _swap(tmp: Path, out: Path) -> None:
    """Replace the whole directory `out` by `tmp` (the old one removed after)."""
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=hidden_prefix(out), suffix=".old", dir=out.parent))
        os.replace(out, old / out.name)
    try:
        os.rename(tmp, out)
    except OSError:
        if not out.is_dir():  # not a concurrent export that got there first
            raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
