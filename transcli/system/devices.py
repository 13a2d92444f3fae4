"""Which device a command runs on: the names every `--device` option and the
`train.device` key accept, and the one check that turns a name into a device."""

from __future__ import annotations

from typing import TYPE_CHECKING

from transcli.system.errors import UserError

if TYPE_CHECKING:
    import torch

DEVICES = ("auto", "cpu", "cuda")  # auto: CUDA when present, else the CPU


def pick_device(name: str) -> torch.device:
    """`auto` is CUDA when present, else CPU; asking for a missing CUDA is a UserError."""
    import torch

    if name not in DEVICES:
        raise UserError(f"--device {name}: must be one of {', '.join(DEVICES)}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda: no CUDA device is available")
    return torch.device(name)
