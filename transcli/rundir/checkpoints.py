"""Run-dir checkpoints: safetensors weights, training state, averaging.

Weights are safetensors files and training state is loaded with
`torch.load(weights_only=True)` (tensors and plain containers only): loading
never unpickles arbitrary objects. Weights are written before state, each
atomically, so "the latest checkpoint" is the newest step that has both.
The file names are `rundir`'s.
"""

from __future__ import annotations

import contextlib
import io
import json
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Iterator, Optional

from transcli.rundir.layout import (
    AVG_FILE,
    CHECKPOINT_DIR,
    RUN_RECORD,
    STATE_PATTERN,
    STEP_PATTERN,
    complete_steps,
    is_step,
    state_path,
    step_checkpoints,
    step_path,
)
from transcli.system.errors import UserError, first_line
from transcli.system.files import (
    RecordingWriter,
    cannot_write,
    describe_os_error,
    write_failure,
)
from transcli.system.outputs import output_file

if TYPE_CHECKING:
    import torch

# torch and safetensors are imported by the functions that read or write tensors: finding
# a run's checkpoint (`resolve_checkpoint`, the headers) needs neither, so a command that
# refuses its arguments says so before torch loads.

MAX_HEADER = 100 << 20  # bytes: safetensors' own limit on a header's size
TOKENIZER_KEY = "tokenizer_sha256"  # in a weights file's metadata: what it was trained with


def save_weights(model: torch.nn.Module, path: str | Path,
                 tokenizer_sha256: Optional[str] = None) -> None:
    """Atomically write the model's weights (tied tensors stored once), recording the
    SHA-256 of the tokenizer they were trained with when given (`load_weights`)."""
    from safetensors.torch import save_model as st_save_model

    metadata = {TOKENIZER_KEY: tokenizer_sha256} if tokenizer_sha256 else None
    with output_file(path, "weights", record=RUN_RECORD) as out, \
            _safetensors_errors(path, "weights"):
        st_save_model(_unwrap(model), out.name, metadata=metadata)


@contextlib.contextmanager
def _safetensors_errors(path: str | Path, what: str) -> Iterator[None]:
    """safetensors reports a full disk as its own error type: one line naming `path`."""
    from safetensors import SafetensorError

    try:
        yield
    except SafetensorError as exc:
        if write_failure(exc) is None:
            raise
        raise cannot_write(path, what, exc) from None


def load_weights(model: torch.nn.Module, path: str | Path,
                 tokenizer_sha256: Optional[str] = None) -> None:
    """Load weights into `model`, refusing with one line a file of another shape or
    vocabulary, one trained with another tokenizer than `tokenizer_sha256` (when both
    the file and the caller know it), or one holding non-finite values. Checkpoints
    written before the residual blocks had names load too."""
    import torch

    from transcli.model.transformer import upgrade_parameter_names

    module = _unwrap(model)
    weights, metadata = read_weights(path)
    trained_with = (metadata or {}).get(TOKENIZER_KEY)
    if tokenizer_sha256 and trained_with and trained_with != tokenizer_sha256:
        raise UserError(f"{path}: these weights were trained with another tokenizer than "
                        f"this run's (SHA-256 {trained_with[:12]}, the run's "
                        f"{tokenizer_sha256[:12]}): they belong to another run, whose run dir "
                        f"(-m) they need")
    weights = upgrade_parameter_names(weights)
    _fill_tied(weights, module.state_dict())
    integer = next((name for name, t in weights.items() if not t.is_floating_point()), None)
    if integer:  # load_state_dict would cast it
        raise UserError(f"{path}: {integer} is of dtype {weights[integer].dtype}, not a "
                        f"floating-point type")
    bad = next((name for name, t in weights.items() if not torch.isfinite(t).all()), None)
    if bad:
        raise UserError(f"{path}: checkpoint holds NaN or infinite values ({bad})")
    try:
        module.load_state_dict(weights, strict=True)
    except RuntimeError as exc:  # torch names every missing, unexpected or misshapen tensor
        problems = " ".join(str(exc).split("\n", 1)[-1].split())
        raise UserError(f"{path}: checkpoint does not match the model config/vocabulary "
                        f"({problems[:300]}{'...' if len(problems) > 300 else ''})") from None


def _fill_tied(weights: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> None:
    """Tied tensors (one embedding for source, target and output) are stored once:
    give every alias in the model the stored tensor of its group."""
    groups: dict[int, list[str]] = {}
    for name, tensor in expected.items():
        groups.setdefault(tensor.data_ptr(), []).append(name)
    for names in groups.values():
        stored = [name for name in names if name in weights]
        for name in names:
            if stored:
                weights.setdefault(name, weights[stored[0]])


def save_checkpoint(model: torch.nn.Module, state: dict, run_dir: str | Path, step: int,
                    tokenizer_sha256: str, keep_last: int) -> None:
    """Step `step`: weights, then training state (a kill between the two leaves the
    previous step the latest complete one), then the older steps pruned to `keep_last`
    (`prune_checkpoints`)."""
    import torch

    save_weights(model, step_path(Path(run_dir), step), tokenizer_sha256)
    with output_file(state_path(Path(run_dir), step), "training state",
                     record=RUN_RECORD) as handle:
        writer = RecordingWriter(handle)
        try:
            torch.save(state, writer)
        except RuntimeError:  # torch's wrapping of a failed write
            if writer.os_error is None:
                raise
            raise writer.os_error from None
    prune_checkpoints(run_dir, keep_last)


def load_state(run_dir: str | Path, step: int) -> dict:
    """Training state of `step`, read without unpickling arbitrary objects."""
    import torch

    path = state_path(Path(run_dir), step)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises assorted types for corrupt or unsafe files
        raise UserError(f"{path}: unreadable training state ({first_line(exc)})") from None


def discard_after(run_dir: str | Path, step: int) -> None:
    """Remove step files newer than `step`: a resumed run recreates them, and stale ones
    would pass for its progress."""
    folder = Path(run_dir) / CHECKPOINT_DIR
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        match = STEP_PATTERN.match(path.name) or STATE_PATTERN.match(path.name)
        if match is not None and int(match.group(1)) > step:
            path.unlink(missing_ok=True)


def prune_checkpoints(run_dir: str | Path, keep_last: int) -> None:
    """What a run keeps once step N is complete (weights and state saved): the weights
    of the newest `keep_last` steps (for `avg` and for translating with a step), and
    one training state, N's, which is all `--resume` reads (a state holds the optimizer's
    moments, twice the weights' size). best/avg are separate files; nothing newer than
    N is touched (a write may be under way)."""
    steps = complete_steps(run_dir)
    if not steps:
        return
    newest = steps[-1]
    weights = [step for step, _ in step_checkpoints(run_dir) if step <= newest]
    kept = set(weights[-keep_last:])
    folder = Path(run_dir) / CHECKPOINT_DIR
    for path in folder.glob("step-*"):
        if match := STATE_PATTERN.match(path.name):
            if int(match.group(1)) < newest:
                path.unlink(missing_ok=True)
        elif (match := STEP_PATTERN.match(path.name)) and int(match.group(1)) not in kept \
                and int(match.group(1)) < newest:
            path.unlink(missing_ok=True)


def average_last(run_dir: Path, last: int) -> None:
    """`avg` as the element-wise mean of the last `last` step checkpoints (Vaswani et al.
    average the last 5 or 20), accumulated in float64 and stored in the files' own
    dtypes; nothing without a step checkpoint."""
    from safetensors.torch import save_file as st_save_file

    paths = [path for _, path in step_checkpoints(run_dir)][-last:]
    if not paths:
        return
    total: dict[str, torch.Tensor] = {}
    for path in paths:
        weights, metadata = read_weights(path)  # metadata: the tied tensors stored once
        for name, tensor in weights.items():
            total[name] = total[name] + tensor.double() if name in total else tensor.double()
    averaged = {name: (value / len(paths)).to(weights[name].dtype)
                for name, value in total.items()}
    out = run_dir / CHECKPOINT_DIR / AVG_FILE
    with output_file(out, "averaged weights", record=RUN_RECORD) as handle, \
            _safetensors_errors(out, "averaged weights"):
        st_save_file(averaged, handle.name, metadata=metadata)


def read_weights(path: str | Path) -> tuple[dict[str, torch.Tensor], Optional[dict[str, str]]]:
    """A safetensors file's tensors and metadata, read in one open."""
    from safetensors import SafetensorError
    from safetensors.torch import load as st_load

    try:
        with open(path, "rb") as handle:
            data = handle.read()
        return st_load(data), _header(io.BytesIO(data), path).get("__metadata__")
    except (OSError, SafetensorError, ValueError) as exc:
        raise _unreadable(path, exc) from None


def stored_metadata(path: str | Path) -> Optional[dict[str, Any]]:
    """A safetensors file's metadata (what it was trained with), from its header alone."""
    try:
        with open(path, "rb") as handle:
            metadata = _header(handle, path).get("__metadata__")
    except (OSError, ValueError) as exc:
        raise _unreadable(path, exc) from None
    return metadata if isinstance(metadata, dict) else None


def stored_shapes(path: str | Path) -> dict[str, list[int]]:
    """Each tensor's shape, from a safetensors file's header alone (tied tensors are
    stored once)."""
    try:
        with open(path, "rb") as handle:
            header = _header(handle, path)
    except (OSError, ValueError) as exc:
        raise _unreadable(path, exc) from None
    return {name: entry["shape"] for name, entry in header.items() if name != "__metadata__"}


def _unreadable(path: str | Path, exc: Exception) -> UserError:
    """The one line for a weights file that could not be read: the OS's reason (permission
    denied, is a directory) apart from a file whose content is not safetensors."""
    if isinstance(exc, OSError):
        return UserError(f"{path}: cannot read the checkpoint ({describe_os_error(exc)})")
    return UserError(f"{path}: unreadable checkpoint ({exc})")


def _header(handle: BinaryIO, path: str | Path) -> dict[str, Any]:
    """The JSON header of safetensors data: 8 bytes of little-endian length, then JSON."""
    size = handle.read(8)
    if len(size) < 8 or int.from_bytes(size, "little") > MAX_HEADER:
        raise ValueError("not a safetensors file")
    header = json.loads(handle.read(int.from_bytes(size, "little")))
    shapes_ok = isinstance(header, dict) and all(
        isinstance(entry, dict) and isinstance(entry.get("shape"), list)
        and all(type(size) is int and size >= 0 for size in entry["shape"])
        for name, entry in header.items() if name != "__metadata__")
    if not shapes_ok:
        raise ValueError("not a safetensors header")
    return header


def resolve_checkpoint(run_dir: str | Path, name: str) -> Path:
    """`best`, `last`, `avg`, a step number or a path -> an existing weights file.

    `best` falls back to the newest step for runs that have not validated yet, and says
    so on stderr: the user asked for one checkpoint and gets another.
    """
    run_dir = Path(run_dir)
    if name in ("best", "avg"):
        path = run_dir / CHECKPOINT_DIR / f"{name}.safetensors"
        if _weights_file(path):
            return path
        if name == "avg":
            raise UserError(f"{path}: no averaged checkpoint in this run")
        last = resolve_checkpoint(run_dir, "last")
        print(f"transcli: note: {run_dir} has no best checkpoint yet (it is written at the "
              f"first validation): using the newest, {last.name}", file=sys.stderr)
        return last
    if name == "last":
        steps = step_checkpoints(run_dir)
        if not steps:
            raise UserError(f"{run_dir}: no checkpoints found in {CHECKPOINT_DIR}/")
        return steps[-1][1]
    if is_step(name):
        path = step_path(run_dir, int(name))
        if not _weights_file(path):
            kept = ", ".join(str(step) for step, _ in step_checkpoints(run_dir)) or "none"
            raise UserError(f"{run_dir}: no checkpoint of step {int(name)} in {CHECKPOINT_DIR}/ "
                            f"(steps there: {kept}; or best, last, avg)")
        return path
    if not name:
        raise UserError("--checkpoint is empty: give best, last, avg, a step number or a "
                        "file path")
    path = Path(name)
    if not _weights_file(path):
        raise UserError(f"{path}: checkpoint not found (use best, last, avg, a step number or "
                        f"a file path)")
    return path


def _weights_file(path: Path) -> bool:
    """Whether a weights file is at `path` (False: nothing is). Something else there (a
    directory, a FIFO that would block whoever opens it, a broken link) is refused in one
    line: it is neither the checkpoint nor its absence, so no other one is taken for it."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        if not path.is_symlink():
            return False
        raise UserError(f"{path}: a broken symbolic link, not a checkpoint (move it away, or "
                        f"give another --checkpoint)") from None
    except OSError as exc:
        raise _unreadable(path, exc) from None
    if stat.S_ISREG(mode):
        return True
    what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
    raise UserError(f"{path}: {what}, not a checkpoint (move it away, or give another "
                    f"--checkpoint)")


def _unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The plain module inside DistributedDataParallel / torch.compile wrappers."""
    model = getattr(model, "module", model)
    return getattr(model, "_orig_mod", model)
