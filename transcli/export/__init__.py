"""`transcli export`: a run's checkpoint as a model directory another library runs.

One module per format (`FORMATS`), each with `check` (refuse, with one line, what
it cannot export exactly) and `write` (fill an empty directory). An export is
exact or refused: the exported model gives transcli's greedy output on the same
weights (the formats' tests compare them), never a silently different model.

Writing is all or nothing (`system.outputs.output_folder`): the files go into a temp
directory beside `--out` that is moved in at the end. A non-empty `--out` is refused
unless `force`; then the files this export writes replace those a previous transcli
export listed in its `EXPORT_FILE`, still as it wrote them (and those it listed and this
one does not write are removed); any other file of the same name is the user's, and is
refused, also when it appears while the export is written; nothing else in the
directory is touched.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Optional

from transcli.rundir.layout import EXPORT_FILE
from transcli.system.errors import UserError
from transcli.system.outputs import OutputFolder, output_folder

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
    with output_folder(exported(out), "export", force) as stage:
        module.write(model, run.tokenizer, run.config, stage.path, quantize)
        stage.record.update(format=fmt, run_dir=str(run.path.resolve()), checkpoint=checkpoint,
                            quantize=quantize, **checkpoint_identity(source))
    return out


def checkpoint_identity(path: Path) -> dict[str, Any]:
    """What tells one checkpoint file from its later versions without reading it."""
    stat = path.stat()
    return {"source": str(path.resolve()), "source_size": stat.st_size,
            "source_mtime_ns": stat.st_mtime_ns}


def exported(directory: Path) -> OutputFolder:
    """A directory as an export of transcli's: the files its `EXPORT_FILE` lists."""
    return OutputFolder(directory, EXPORT_FILE, "export")


def read_record(directory: Path) -> dict[str, Any]:
    """A directory's `EXPORT_FILE`, or {} when it has none (or an unreadable one)."""
    return exported(directory).record.read()


def _check_destination(out: Path, force: bool) -> None:
    if exported(out).names() and not force:
        raise UserError(f"{out}: --out is not empty; use --force to replace the files an "
                        f"export writes there (other files are kept)")
