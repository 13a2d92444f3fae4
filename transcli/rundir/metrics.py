"""The run's training log: `metrics.jsonl` (one JSON object per line) and `curves.png`.

Every line has `step`, `split` and `loss`: "train" lines (every log_every updates,
and a `"partial": true` one for the shorter interval a run stops in) average the
interval since the previous one; "valid" lines (every valid_every)
repeat their loss as `valid_loss` beside `valid_nll`, `valid_ppl`, `valid_bleu`.

Each line is appended by a single write(2) of the whole line (a signal cannot
split it, SIGKILL included); should a crash of the machine tear the last line (or
an edit damage one), readers skip it, saying so, and `MetricsLog.resume` drops it
while cutting the log back to the step a resumed run continues from (an atomic
temp + rename rewrite).
"""

from __future__ import annotations

import errno
import json
import math
import os
from pathlib import Path
from typing import Any, Callable, Optional

from transcli.rundir.layout import CURVES_FILE, METRICS_FILE, RUN_RECORD, TENSORBOARD_DIR
from transcli.system.errors import UserError
from transcli.system.files import cannot_write, describe_os_error, parse_json
from transcli.system.outputs import output_file
from transcli.system.text import CutLine, raw_lines

# What the fields readers use must hold; a line holding anything else is skipped (`info`
# says which). Fields not named here (a later transcli may add some) are not judged.
COUNTS = ("step", "epoch", "tgt_tokens", "src_tokens", "compiles", "batch_shapes",
          "graph_skips")
NUMBERS = ("loss", "nll", "ppl", "acc", "lr", "grad_norm", "tokens_per_s", "pad_frac",
           "minutes", "peak_gib", "valid_loss", "valid_nll", "valid_ppl", "valid_acc",
           "valid_bleu")
FLAGS = ("best", "partial")


def damage(record: Any) -> Optional[str]:
    """What makes a parsed line no record of ours (None: nothing)."""
    if not isinstance(record, dict):
        return "not a JSON object"
    if record.get("split") not in ("train", "valid"):
        return "its 'split' is neither train nor valid"
    for key in ("step", "loss"):
        if key not in record:
            return f"no {key!r}"
    for key, value in record.items():
        if key in COUNTS and type(value) is not int:
            return f"{key!r} is not a whole number"
        if key in NUMBERS and type(value) not in (int, float):
            return f"{key!r} is not a number"
        if key in FLAGS and type(value) is not bool:
            return f"{key!r} is not true or false"
    return None


def read_metrics(path: str | Path, split: str | None = None,
                 warn: Optional[Callable[[str], None]] = None) -> list[dict[str, Any]]:
    """The complete records of a metrics file, all of them or those of one split ("train"
    or "valid"). A torn, foreign, overlong or damaged line (`damage`) is skipped, and
    `warn` told which. Read line by line: memory follows the records, not the file."""
    records = []
    path = Path(path)
    if not path.is_file():
        return records
    try:
        with open(path, "rb") as handle:
            for number, line in enumerate(raw_lines(handle, path), start=1):
                try:
                    record = None if isinstance(line, CutLine) else parse_json(line)
                    why = "too long" if isinstance(line, CutLine) else damage(record)
                except ValueError:  # torn, not UTF-8, not JSON
                    why = "not a line of JSON"
                if why is not None:
                    if warn is not None:
                        warn(f"{path} line {number}: skipped, {why}")
                elif split is None or record.get("split") == split:
                    records.append(record)
    except OSError as exc:
        raise UserError(f"{path}: cannot read the training log "
                        f"({describe_os_error(exc)})") from None
    return records


class MetricsLog:
    """Append-only metrics of one run, kept in memory too for plotting, and mirrored to
    TensorBoard (`RUN/tensorboard/`) when asked."""

    def __init__(self, run_dir: Path, enabled: bool = True, tensorboard: bool = False):
        self.path = Path(run_dir) / METRICS_FILE
        self.plot_path = Path(run_dir) / CURVES_FILE
        self.enabled = enabled
        self.records: list[dict[str, Any]] = []
        self.board = TensorBoard(Path(run_dir) / TENSORBOARD_DIR) if tensorboard and enabled \
            else None

    def resume(self, step: int, warn: Optional[Callable[[str], None]] = None) -> None:
        """Keep the records up to `step` (later ones belong to work being redone) but for
        a stopped run's partial last interval, which the resumed run completes; `warn`
        hears of the damaged lines left out."""
        self.records = [r for r in read_metrics(self.path, warn=warn)
                        if r["step"] <= step and not r.get("partial")]
        if self.enabled:
            with output_file(self.path, "training log", record=RUN_RECORD) as out:
                out.write("".join(json.dumps(r) + "\n" for r in self.records).encode())
        if self.board is not None:
            self.board.resume(step)

    def append(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        if self.enabled:
            try:
                with open(self.path, "ab", buffering=0) as handle:  # one write(2) call
                    line = (json.dumps(record) + "\n").encode("utf-8")
                    if handle.write(line) != len(line):  # the disk filled up mid-line
                        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            except OSError as exc:
                raise cannot_write(self.path, "training log", exc) from None
        if self.board is not None:
            self.board.add(record)

    def plot(self) -> None:
        if self.enabled:
            plot_curves(self.records, self.plot_path)


class TensorBoard:
    """The metrics as TensorBoard scalars, `split/key` at each record's step. Only with
    `train.tensorboard: true`, and only if the tensorboard package is installed."""

    def __init__(self, folder: Path):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:  # torch's writer needs the separate tensorboard package
            raise UserError("train.tensorboard is true but the tensorboard package is not "
                            "installed: pip install tensorboard (or set train.tensorboard: "
                            "false)") from None
        self.folder = folder
        self.writer: Any = None
        self._writer = SummaryWriter
        self.purge_step: Optional[int] = None

    def resume(self, step: int) -> None:
        """Hide what an earlier session logged after `step`: the resumed run logs it anew."""
        self.purge_step = step + 1

    def add(self, record: dict[str, Any]) -> None:
        if self.writer is None:  # created on first use, so a resume can set purge_step
            self.writer = self._writer(str(self.folder), purge_step=self.purge_step)
        split = record.get("split", "train")
        for key, value in record.items():
            if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
                name = key.removeprefix("valid_") if split == "valid" else key
                self.writer.add_scalar(f"{split}/{name}", value, record["step"])
        self.writer.flush()


def _plot(ax: Any, records: list[dict[str, Any]], key: str, **style: Any) -> None:
    """One curve; its points marked when there are few (a single point has no line)."""
    steps, values = _series(records, key)
    ax.plot(steps, values, marker="o" if len(steps) <= 20 else None, markersize=3, **style)


def _series(records: list[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    points = [(r["step"], r[key]) for r in records
              if isinstance(r.get(key), (int, float)) and math.isfinite(r[key])]
    return [p[0] for p in points], [p[1] for p in points]


def plot_curves(records: list[dict[str, Any]], path: Path) -> None:
    """Loss (train and valid), learning rate and valid BLEU against the update step."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, (loss_ax, lr_ax, bleu_ax) = plt.subplots(1, 3, figsize=(15, 4))
    train = [r for r in records if r.get("split") == "train"]
    _plot(loss_ax, train, "loss", label="train (label-smoothed)")
    _plot(loss_ax, train, "nll", label="train NLL", alpha=0.6)
    _plot(loss_ax, records, "valid_nll", label="valid NLL")
    loss_ax.set_title("loss per target token")
    loss_ax.legend()
    _plot(lr_ax, train, "lr")
    lr_ax.set_title("learning rate")
    _plot(bleu_ax, records, "valid_bleu")
    bleu_ax.set_title("valid BLEU (greedy)")
    for ax in (loss_ax, lr_ax, bleu_ax):
        ax.set_xlabel("update")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    try:
        with output_file(path, "plot", record=RUN_RECORD) as out:
            fig.savefig(out, format="png", dpi=80)
    finally:
        plt.close(fig)
