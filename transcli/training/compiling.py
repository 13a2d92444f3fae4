"""`train.compile`: the model's part of an update compiled with torch.compile, for any
batch shape, in a bounded number of graphs; with `train.cuda_graphs`, replayed on CUDA as
one graph per batch shape.

Shapes are dynamic (`dynamic=True`): one graph serves every batch shape, plus the few a
size of 0 or 1 specialises; past `GRAPH_LIMIT` compilations torch stops compiling and
runs eagerly, so that a run never spends its time compiling. The loss (`output_loss`)
stays out of the graphs. CUDA graphs ("reduce-overhead") record one graph per distinct
input shape, so they need `train.batch_shapes`. Each log line says how many graphs were
compiled and how many batch shapes met (`notes`).
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch import Tensor

from transcli.config.schema import TrainConfig
from transcli.system.errors import UserError
from transcli.training import objective
from transcli.training.objective import teacher_forced_states

GRAPH_LIMIT = 16  # compilations of the model's states per run (torch's recompile limit)
BACKEND = "inductor"  # torch.compile's backend (CPU tests count compilations with a cheaper one)


def compilations() -> int:
    """Frames torch.compile has compiled in this process so far."""
    from torch._dynamo.utils import counters

    return int(counters["frames"]["ok"])


def graph_skips() -> int:
    """Compiled graphs inductor left out of CUDA graphs in this process (it says why in a
    warning: a CPU input, a mutated one, ...)."""
    from torch._dynamo.utils import counters

    return int(counters["inductor"]["cudagraph_skips"])


def limit_recompiles(limit: int) -> None:
    """torch's per-function limit on compilations (named recompile_limit since 2.6)."""
    config = torch._dynamo.config
    setattr(config, "recompile_limit" if hasattr(config, "recompile_limit")
            else "cache_size_limit", limit)


def compile_blocker(device: torch.device) -> Optional[str]:
    """Why torch.compile cannot run on `device`, or None: inductor compiles C++ for the
    CPU, so it needs a C++ compiler (g++, or $CXX), looked for as inductor looks."""
    if device.type != "cpu" or BACKEND != "inductor":
        return None
    from torch._inductor import cpp_builder

    try:
        cpp_builder.get_cpp_compiler()
    except Exception:  # inductor's InvalidCxxCompiler, or a compiler that cannot run
        return ("inductor needs a C++ compiler on the CPU and finds none (install g++, or "
                "set CXX)")
    return None


class CompiledStates:
    """`objective.teacher_forced_states` of `model` (and `guide`), compiled; counts what
    it compiles."""

    def __init__(self, model: torch.nn.Module, tc: TrainConfig, device: torch.device,
                 guide: Optional[objective.Guide] = None):
        if device.type == "cpu" and BACKEND == "inductor" and objective.cpp_compiler() is None:
            raise UserError("train.compile: torch.compile needs a C++ compiler (g++) on the "
                            "CPU and none was found: install one, or set train.compile: false")
        limit_recompiles(GRAPH_LIMIT)
        self.graphs = tc.cuda_graphs and device.type == "cuda"
        graphs = {"mode": "reduce-overhead"} if self.graphs else {}
        self.fn = torch.compile(teacher_forced_states(model, guide), dynamic=True,
                                backend=BACKEND, **graphs)
        self.before, self.skips_before = compilations(), graph_skips()
        self.shapes: set[tuple[int, ...]] = set()

    def __call__(self, src: Tensor, tgt_in: Tensor) -> Any:
        self.shapes.add((*src.shape, tgt_in.size(1)))
        if self.graphs:  # a new update: the previous replay's outputs may be overwritten
            torch.compiler.cudagraph_mark_step_begin()
        return self.fn(src, tgt_in)

    def notes(self) -> dict[str, Any]:
        """What a log line records: compilations and batch shapes so far (and graphs left
        out of CUDA graphs, with train.cuda_graphs)."""
        notes = {"compiles": compilations() - self.before, "batch_shapes": len(self.shapes)}
        if self.graphs:
            notes["graph_skips"] = graph_skips() - self.skips_before
        return notes

    def summary(self) -> str:
        notes = self.notes()
        graphs = (f", CUDA graphs ({notes['graph_skips']} graph(s) left out)" if self.graphs
                  else "")
        return (f"torch.compile: {notes['compiles']} compilation(s) for "
                f"{notes['batch_shapes']} batch shapes{graphs} (limit {GRAPH_LIMIT})")
