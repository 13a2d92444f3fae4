"""An exponential moving average of the weights during training (Polyak averaging).

Averaged weights generalise better than the last ones, as averaging the last
checkpoints does (Vaswani et al. average 5 or 20), but they are ready at every step:
validation, `best` and `avg` use them when `train.ema_decay` > 0. The average is kept
in float32 beside the model and saved with the training state, so a resumed run
continues the same average.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch
from torch import nn


class WeightAverage:
    """avg <- d * avg + (1 - d) * w after each update, with d = min(decay, (1 + n) / (10 + n))
    at update n: early on, when the weights move fast, the average follows them closely."""

    def __init__(self, model: nn.Module, decay: float):
        self.decay = decay
        self.names = [name for name, _ in model.named_parameters()]  # tied tensors once
        self.params = [p for _, p in model.named_parameters()]
        self.average = [p.detach().float().clone() for p in self.params]
        self.float32 = all(p.dtype == torch.float32 for p in self.params)  # as training keeps them

    def update(self, step: int) -> None:
        """Update `step` (0-based) folded in: one fused operation over every tensor (views
        or casts per tensor would add an operation per tensor to each update)."""
        decay = min(self.decay, (1 + step) / (10 + step))
        weights = self.params if self.float32 else [p.detach().float() for p in self.params]
        with torch.no_grad():
            torch._foreach_lerp_(self.average, weights, 1.0 - decay)

    def state(self) -> dict[str, torch.Tensor]:
        return dict(zip(self.names, self.average))

    def load_state(self, state: dict[str, torch.Tensor]) -> None:
        """Restore `state()`; raises ValueError on one of another model (`copy_` would
        broadcast a tensor of another shape) or holding non-finite values."""
        if set(state) != set(self.names) or not all(
                state[name].shape == tensor.shape and torch.isfinite(state[name]).all()
                for name, tensor in zip(self.names, self.average)):
            raise ValueError("averaged weights do not match the model, or are not finite")
        for name, tensor in zip(self.names, self.average):
            tensor.copy_(state[name])

    @contextlib.contextmanager
    def swapped_in(self) -> Iterator[None]:
        """The model holds the averaged weights inside the block, its own ones after."""
        own = [p.detach().clone() for p in self.params]
        with torch.no_grad():
            for param, average in zip(self.params, self.average):
                param.copy_(average)
        try:
            yield
        finally:
            with torch.no_grad():
                for param, saved in zip(self.params, own):
                    param.copy_(saved)
