"""Everything that turns gradients into new weights, as one object the training loop
steps: Adam (fused kernels), fp16's GradScaler, gradient clipping, the learning-rate
schedule and the weight average, with their resumable state.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, Optional

import torch

from transcli.config.schema import TrainConfig
from transcli.training.ema import WeightAverage
from transcli.training.schedules import learning_rate


def fused_adam(params: Any, weight_decay: float = 0.0, **options: Any) -> torch.optim.Adam:
    """Adam (AdamW with a `weight_decay`), with fused kernels where torch has them for the
    device. Plain Adam without decay: its state is the one a run without the key saved."""
    params = list(params)
    kind = torch.optim.AdamW if weight_decay else torch.optim.Adam
    if weight_decay:
        options["weight_decay"] = weight_decay
    try:
        return kind(params, lr=0.0, fused=True, **options)
    except RuntimeError:  # a build without fused kernels for this device
        return kind(params, lr=0.0, **options)


class Optimization:
    def __init__(self, model: torch.nn.Module, tc: TrainConfig, d_model: int,
                 device: torch.device):
        self.model, self.tc, self.d_model = model, tc, d_model
        self.adam = fused_adam(model.parameters(), tc.weight_decay,
                               betas=(tc.adam_beta1, tc.adam_beta2), eps=tc.adam_eps)
        self.scaler = (torch.amp.GradScaler("cuda")
                       if device.type == "cuda" and tc.precision == "fp16" else None)
        self.ema = WeightAverage(model, tc.ema_decay) if tc.ema_decay else None

    def backward(self, loss: torch.Tensor) -> None:
        (self.scaler.scale(loss) if self.scaler else loss).backward()

    def grad_norm(self) -> torch.Tensor:
        """The gradients' global norm (on the device), clipped to train.clip_grad_norm."""
        if self.scaler:
            self.scaler.unscale_(self.adam)
        return torch.nn.utils.clip_grad_norm_(self.model.parameters(),
                                              self.tc.clip_grad_norm or math.inf)

    def step(self, step: int, clock: float = 0.0, skip: Optional[torch.Tensor] = None) -> float:
        """Apply update `step` (1-based) at the schedule's rate, `clock` being the share
        of train.decay_minutes spent (objective.decay_clock); returns the rate. `skip`, a
        boolean on the device, leaves weights and Adam's state as they were where it is
        true: the fused kernel reads it there, so the host never waits for it."""
        tc = self.tc
        lr = learning_rate(tc.schedule, step, self.d_model, tc.warmup_steps, tc.lr_factor,
                           tc.max_steps, tc.final_lr_scale, clock)
        for group in self.adam.param_groups:
            group["lr"] = lr
        if self.scaler:
            self.scaler.step(self.adam)
            self.scaler.update()
        elif skip is None:
            self.adam.step()
        elif self.adam.defaults.get("fused"):
            self.adam.found_inf = skip.float()  # read by the fused kernel
            self.adam.step()
            del self.adam.found_inf
        elif not skip.item():  # unfused Adam takes no such flag: one wait for the device
            self.adam.step()
        self.adam.zero_grad(set_to_none=True)
        if self.ema:
            self.ema.update(step - 1)
        return lr

    def averaged(self) -> contextlib.AbstractContextManager:
        """The model holds the averaged weights inside the block (if there are any)."""
        return self.ema.swapped_in() if self.ema else contextlib.nullcontext()

    def state(self) -> dict[str, Any]:
        return {"optimizer": self.adam.state_dict(),
                "scaler": self.scaler.state_dict() if self.scaler else {},
                "ema": self.ema.state() if self.ema else {}}

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore `state()`; raises on one that does not fit this model: torch checks the
        parameter groups, and Adam's moments are checked here (torch does not, and the
        fused kernel corrupts memory on a moment of another shape)."""
        self.adam.load_state_dict(state["optimizer"])
        for index, param in enumerate(self.model.parameters()):
            moments = self.adam.state.get(param)
            for name in ("exp_avg", "exp_avg_sq") if moments else ():
                if moments[name].shape != param.shape or not torch.isfinite(moments[name]).all():
                    raise ValueError(f"optimizer {name} of parameter {index} is not a float "
                                     f"tensor of shape {tuple(param.shape)} with finite values")
        if self.scaler and state["scaler"]:
            self.scaler.load_state_dict(state["scaler"])
        if self.ema and state.get("ema"):
            self.ema.load_state(state["ema"])
