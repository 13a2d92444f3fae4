"""`train --init-from`: start a new run from another run's weights (fine-tuning).

The usual way to adapt a general model to a domain: train on the domain's data from
the general model's weights, with a fresh optimizer and learning-rate schedule. The
weights only mean something with the vocabulary and model shape they were trained
with, so both are checked (with one line naming what differs) before the new run dir
is touched. A resumed run continues from its own checkpoints and never loads the
initial weights again; `run.json` records where the run started either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from transcli.config.schema import Config
from transcli.data.prepared_dir import PreparedDir
from transcli.data.tokenizer import TOKENIZER_FILE, Tokenizer
from transcli.rundir.checkpoints import resolve_checkpoint
from transcli.rundir.layout import CHECKPOINT_DIR, CONFIG_FILE, complete_steps, model_differences
from transcli.rundir.run import RunDir
from transcli.system.errors import UserError


@dataclass(frozen=True)
class InitSource:
    """The run whose weights a new run starts from, and the weights file."""

    run: Path
    weights: Path


def resolve_init(spec: str) -> InitSource:
    """RUN (its best checkpoint, else the last), RUN/CHECKPOINT (best, last, avg or a step
    number) or a weights file inside a run dir."""
    path = Path(spec)
    if path.is_dir():
        if not (path / CONFIG_FILE).is_file():
            raise UserError(f"--init-from {spec}: not a run directory (no {CONFIG_FILE})")
        return InitSource(path, resolve_checkpoint(path, "best"))
    if path.is_file():
        run = path.parent.parent if path.parent.name == CHECKPOINT_DIR else path.parent
        if not (run / CONFIG_FILE).is_file():
            raise UserError(f"--init-from {spec}: a weights file must lie in a run directory "
                            f"(its {CONFIG_FILE} and {TOKENIZER_FILE} are needed)")
        return InitSource(run, path)
    if (path.parent / CONFIG_FILE).is_file():
        return InitSource(path.parent, resolve_checkpoint(path.parent, path.name))
    raise UserError(f"--init-from {spec}: not found (give RUN, RUN/CHECKPOINT with CHECKPOINT "
                    f"best, last, avg or a step number, or a weights file)")


def init_source(cfg: Config, data: PreparedDir, run: RunDir, resume: bool
                ) -> Optional[InitSource]:
    """The checked weights a run starts from: None without `train.init_from`, and for a
    resume that has checkpoints of its own (they win)."""
    spec = cfg.train.init_from
    if spec is None or (resume and complete_steps(run.path)):
        return None
    source = resolve_init(spec)
    origin = RunDir(source.run)
    difference = vocabulary_difference(origin.tokenizer, data.tokenizer)
    if difference:
        raise UserError(f"--init-from {source.run}: its vocabulary differs from {data.dir}'s "
                        f"({difference}); fine-tuning needs data prepared with the same "
                        f"sentencepiece model")
    changed = model_differences(origin.recorded_config.model, cfg.model)
    if changed:
        raise UserError(f"--init-from {source.run}: the model config differs from its "
                        f"{CONFIG_FILE} ({', '.join(changed)}); train with that run's model "
                        f"settings, e.g. -c {source.run / CONFIG_FILE}")
    return source


def vocabulary_difference(a: Tokenizer, b: Tokenizer) -> Optional[str]:
    """None when the two sentencepiece models are the same file, else what differs."""
    if a.model_bytes == b.model_bytes:
        return None
    if a.vocab_size != b.vocab_size:
        return f"{a.vocab_size} pieces against {b.vocab_size}"
    for i in range(a.vocab_size):
        if a.sp.IdToPiece(i) != b.sp.IdToPiece(i):
            return f"piece {i} is {a.sp.IdToPiece(i)!r} against {b.sp.IdToPiece(i)!r}"
    return "the same pieces with other scores or settings, so text splits differently"


def origin_record(source: Optional[InitSource], run: RunDir, resume: bool) -> dict[str, Any]:
    """What run.json records of the run's start: the weights file it was initialised
    from (kept from the earlier run.json when a resume does not load them again)."""
    if source is not None:
        return {"init_from": str(source.weights.resolve())}
    earlier = (run.record if resume else None) or {}
    return {"init_from": earlier["init_from"]} if earlier.get("init_from") else {}
