"""Where this process stands in a torchrun job, and the few collective calls training makes.

Without torchrun a run is rank 0 of 1 and every call here is free. With NCCL (GPUs)
the small bookkeeping all-reduces still go over a gloo group on the CPU, so deciding
to stop or counting tokens never waits on the device.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any, Optional

import torch
import torch.distributed as tdist
from torch.nn.parallel import DistributedDataParallel


@dataclass
class Dist:
    """This process's place in a torchrun job (rank 0 of 1 without torchrun)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    _cpu_group: Optional[Any] = field(default=None, repr=False)

    @property
    def main(self) -> bool:
        return self.rank == 0

    @classmethod
    def from_env(cls) -> Dist:
        env = os.environ
        return cls(int(env.get("RANK", 0)), int(env.get("WORLD_SIZE", 1)),
                   int(env.get("LOCAL_RANK", 0)))

    def start(self, device: torch.device) -> None:
        if self.world > 1:
            tdist.init_process_group("nccl" if device.type == "cuda" else "gloo")
            if tdist.get_backend() == "nccl":
                self._cpu_group = tdist.new_group(backend="gloo")

    def stop(self) -> None:
        if self.world > 1:
            tdist.destroy_process_group()

    def barrier(self) -> None:
        if self.world > 1:
            tdist.barrier()

    def sum_on_cpu(self, values: torch.Tensor) -> torch.Tensor:
        """In-place sum of a small CPU tensor over all processes."""
        if self.world > 1:
            tdist.all_reduce(values, group=self._cpu_group)
        return values

    def sum(self, values: torch.Tensor) -> torch.Tensor:
        """In-place sum of a tensor on the training device over all processes."""
        if self.world > 1:
            tdist.all_reduce(values)
        return values

    def wrap(self, module: torch.nn.Module, device: torch.device) -> torch.nn.Module:
        """`module` in DistributedDataParallel when several processes train."""
        if self.world == 1:
            return module
        return DistributedDataParallel(module, device_ids=None if device.index is None
                                       else [device.index])


def no_sync(net: torch.nn.Module, last: bool) -> contextlib.AbstractContextManager:
    """Gradients are all-reduced once per update, on its last batch."""
    if isinstance(net, DistributedDataParallel) and not last:
        return net.no_sync()
    return contextlib.nullcontext()

