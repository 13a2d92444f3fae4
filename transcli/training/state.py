"""What a resumed run needs besides the weights, and the checks it passes before use.

Saved beside each checkpoint (`step-N.state.pt`, tensors and plain containers only,
loaded with `weights_only=True`): the step, the data position, token counters, the
open log interval, the early-stopping record, the optimizer (and fp16 scaler) state,
the averaged weights, and every random generator. A file that loads but does not
have this shape (another program's file, a truncated edit, a wrong-sized Adam
moment) is refused with one line before anything is restored from it.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

from transcli.config.schema import TrainConfig
from transcli.data.batching import StreamPosition
from transcli.rundir.checkpoints import load_state, load_weights
from transcli.rundir.layout import state_path, step_path
from transcli.system.errors import UserError
from transcli.training.objective import LossSums
from transcli.training.optimization import Optimization
from transcli.training.schedules import decay_clock


@dataclass
class Interval(LossSums):
    """Sums since the last log line (saved, so a resumed run logs the same numbers)."""

    padded: float = 0.0  # positions fed, padding included (both sides)
    real: float = 0.0

    def add_update(self, sums: LossSums, padded: float, real: float) -> None:
        LossSums.add(self, sums)
        self.padded += padded
        self.real += real


class DeviceSums:
    """What updates add up on the device between two reads, so that an update never
    waits for the device: [loss, nll, tokens, correct] sums, the latest gradient norm,
    and the first update whose loss or gradient was not finite (0: none)."""

    def __init__(self, device: torch.device):
        self.values = torch.zeros(6, dtype=torch.float64, device=device)

    def add(self, sums: torch.Tensor, grad_norm: torch.Tensor, bad: torch.Tensor,
            step: int) -> None:
        v = self.values
        v[:4] += sums.double()
        v[4] = grad_norm.double()
        v[5] = torch.where((v[5] == 0) & bad, float(step), v[5])

    def read(self) -> tuple[LossSums, float, int]:
        """(sums since the last read, latest gradient norm, first non-finite update or 0)."""
        values = self.values.tolist()
        self.values[:4].zero_()
        self.values[5] = 0
        return LossSums.of(values), values[4], int(values[5])


@dataclass
class Best:
    """The early-stopping record: best validation so far and validations since."""

    value: Optional[float] = None
    step: int = 0
    stale: int = 0


@dataclass
class Progress:
    step: int = 0
    position: StreamPosition = field(default_factory=StreamPosition)
    src_tokens: int = 0  # real tokens trained on, all processes
    tgt_tokens: int = 0
    interval: Interval = field(default_factory=Interval)
    best: Best = field(default_factory=Best)
    seconds: float = 0.0  # training wall time over all sessions, at the last update's start
    warmup_seconds: float = 0.0  # `seconds` when warm-up ended (train.decay_minutes)

    def decay_spent(self, decay_minutes: float, seconds: Optional[float] = None) -> float:
        """The share of train.decay_minutes spent after warm-up at `seconds` of training
        (the last update's by default): `schedules.decay_clock`."""
        return decay_clock(self.seconds if seconds is None else seconds, self.warmup_seconds,
                           decay_minutes)

    def decay_over(self, tc: TrainConfig, seconds: float) -> bool:
        """train.decay_minutes of training (`seconds`) are behind this run, after warm-up:
        the next update would run at rate zero."""
        return self.step >= tc.warmup_steps and self.decay_spent(tc.decay_minutes, seconds) >= 1

    def end_warmup(self, tc: TrainConfig) -> Optional[str]:
        """Start the decay's clock when warm-up ends; a warning when warm-up outlasted it."""
        self.warmup_seconds = self.seconds
        if tc.decay_minutes and self.seconds >= tc.decay_minutes * 60:
            return (f"warning: the warm-up took {self.seconds / 60:.1f} min, longer than "
                    f"train.decay_minutes={tc.decay_minutes:g}; the run stops here")
        return None

    def count(self, tgt_tokens: float, padded: float, real: float) -> None:
        """Add an update's sizes (all processes, counted on the host from the batches):
        target tokens, positions fed (padding included) and real positions, both sides."""
        self.tgt_tokens += int(tgt_tokens)
        self.src_tokens += int(real - tgt_tokens)
        self.interval.padded += padded
        self.interval.real += real

    def state(self) -> dict[str, Any]:
        return {"step": self.step, "position": self.position.state(),
                "src_tokens": self.src_tokens, "tgt_tokens": self.tgt_tokens,
                "interval": asdict(self.interval), "best": asdict(self.best),
                "seconds": self.seconds, "warmup_seconds": self.warmup_seconds}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Progress:
        # States written before the clock was kept have no seconds: they count from 0.
        return cls(state["step"], StreamPosition(**state["position"]), state["src_tokens"],
                   state["tgt_tokens"], Interval(**state["interval"]), Best(**state["best"]),
                   float(state.get("seconds", 0.0)), float(state.get("warmup_seconds", 0.0)))


def restore(model: torch.nn.Module, opt: Optimization, run_dir: Path, step: int) -> Progress:
    """Load step `step` of a run: its weights into `model`, its checked training state
    into `opt` and the random generators; the progress it had."""
    load_weights(model, step_path(run_dir, step))
    state = load_state(run_dir, step)
    check_state(state, state_path(run_dir, step), step, model)
    opt.load_state(state)
    set_rng_state(state["rng"])
    return Progress.from_state(state)


def rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "torch": torch.get_rng_state(),
             "numpy": _numpy_rng_to_tensors(np.random.get_state())}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(_tuples(state["python"]))
    torch.set_rng_state(state["torch"])
    name, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _numpy_rng_to_tensors(state: tuple) -> tuple:
    """numpy's state holds an ndarray, which a weights-only load refuses: a tensor won't."""
    name, keys, pos, has_gauss, gauss = state
    return (name, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, gauss)


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


# ----------------------------------------------------------------------------- checks


class _Bad(Exception):
    pass


def check_state(state: Any, path: Path, step: int, model: torch.nn.Module) -> None:
    """Refuse (one line) a state that cannot belong to step `step` of `model`."""
    names, params = zip(*model.named_parameters()) if list(model.parameters()) else ((), ())
    try:
        _check(state, step, list(params), list(names))
    except _Bad as exc:
        raise UserError(f"{path}: not a usable training state ({exc}); resume from an "
                        f"earlier checkpoint or start afresh with --force") from None


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise _Bad(what)


def _check(state: Any, step: int, params: list[torch.Tensor], names: list[str]) -> None:
    _need(isinstance(state, dict), "not a mapping")
    keys = ("step", "position", "src_tokens", "tgt_tokens", "interval", "best", "optimizer",
            "rng", "world_size")
    missing = [key for key in keys if key not in state]
    _need(not missing, f"no '{missing[0]}'" if missing else "")
    _need(state["step"] == step, f"it says step {state['step']}, its file name step {step}")
    _need(_ints(state["position"], ("epoch", "index")), "bad 'position'")
    _need(_numbers(state["interval"], [f for f in Interval.__dataclass_fields__]),
          "bad 'interval'")
    _need(isinstance(state["best"], dict) and set(state["best"]) == {"value", "step", "stale"},
          "bad 'best'")
    clock = [state.get(key, 0.0) for key in ("seconds", "warmup_seconds")]
    _need(all(type(value) in (int, float) for value in clock), "bad training clock")
    _check_optimizer(state["optimizer"], params)
    averaged = state.get("ema")
    if averaged:
        shapes = {n: tuple(p.shape) for n, p in zip(names, params)}
        _need(isinstance(averaged, dict) and set(averaged) == set(shapes)
              and all(_tensor_like(averaged[n], shapes[n]) for n in shapes),
              "averaged weights do not match the model")
    rng = state["rng"]
    _need(isinstance(rng, dict) and isinstance(rng.get("torch"), torch.Tensor)
          and "python" in rng and "numpy" in rng, "bad random-generator state")


def _check_optimizer(optimizer: Any, params: list[torch.Tensor]) -> None:
    """Adam's moments must have their parameter's shape: a wrong one crashes the fused
    kernel outright instead of raising."""
    _need(isinstance(optimizer, dict) and isinstance(optimizer.get("state"), dict)
          and isinstance(optimizer.get("param_groups"), list), "bad optimizer state")
    groups = optimizer["param_groups"]
    ids = [i for g in groups if isinstance(g, dict) for i in g.get("params", [])]
    _need(sorted(ids) == list(range(len(params))),
          f"optimizer state for {len(ids)} parameters, the model has {len(params)}")
    for index, moments in optimizer["state"].items():
        _need(isinstance(index, int) and 0 <= index < len(params) and isinstance(moments, dict),
              "bad optimizer state entry")
        shape = tuple(params[index].shape)
        for name in ("exp_avg", "exp_avg_sq"):
            _need(_tensor_like(moments.get(name), shape),
                  f"optimizer {name} of parameter {index} is not a float tensor of shape {shape}")


def _tensor_like(value: Any, shape: tuple[int, ...]) -> bool:
    return (isinstance(value, torch.Tensor) and value.is_floating_point()
            and tuple(value.shape) == shape and bool(torch.isfinite(value).all()))


def _ints(value: Any, keys: tuple[str, ...]) -> bool:
    return (isinstance(value, dict) and set(value) == set(keys)
            and all(isinstance(value[k], int) and value[k] >= 0 for k in keys))


def _numbers(value: Any, keys: list[str]) -> bool:
    return (isinstance(value, dict) and set(value) == set(keys)
            and all(isinstance(value[k], (int, float)) for k in keys))
