"""The parts a training run is built from, checked before the run dir is written: the
device and what of the settings it runs, the run dir's lock, the batches, the net each
batch is fed to."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any, Iterator, NamedTuple, Optional, Union

import torch
from torch.nn.parallel import DistributedDataParallel

from transcli.config.schema import Config, TrainConfig
from transcli.data.batching import BatchPlan, MakeBatch, collate
from transcli.data.casing import CaseAugment
from transcli.data.prepared_dir import PreparedDir
from transcli.data.terms import TermAnnotation
from transcli.data.weights import pair_weights
from transcli.model.transformer import Transformer
from transcli.model.vocab import PAD_ID
from transcli.rundir.layout import LOCK_FILE
from transcli.rundir.run import RunDir
from transcli.system.devices import pick_device
from transcli.system.errors import UserError
from transcli.system.locks import DirLock
from transcli.system.runtime import training_precision
from transcli.training.compiling import CompiledStates, compile_blocker
from transcli.training.distributed import Dist
from transcli.training.objective import TeacherForcing, guide_of


@contextlib.contextmanager
def run_lock(run: RunDir, dist: Dist) -> Iterator[None]:
    """Rank 0 holds the run dir's lock (`locks.DirLock`) for the life of the run, taken
    before anything is read or written there; when it cannot, every rank stops."""
    run_dir = run.path
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"{run_dir}: --out is a file, not a directory")
    lock, problem = None, None
    if dist.main:
        try:
            lock = DirLock(run_dir, LOCK_FILE, "training process")
        except UserError as exc:
            problem = exc
    refused = dist.sum_on_cpu(torch.tensor([float(problem is not None)]))[0] > 0
    if refused:
        raise problem or UserError(f"{run_dir}: rank 0 could not lock the run dir")
    try:
        yield
    finally:
        if lock is not None:
            lock.release()


def training_device(name: str, dist: Dist) -> torch.device:
    device = pick_device(name)
    if device.type == "cuda":
        device = torch.device("cuda", dist.local_rank)
        torch.cuda.set_device(device)
        torch.set_float32_matmul_precision("high")  # TF32 matmuls
        torch.backends.cudnn.allow_tf32 = True
    return device


class DeviceSettings(NamedTuple):
    """What of the train settings the device runs, decided before the first update."""

    tc: TrainConfig  # train.compile and train.cuda_graphs as they run here
    precision: str  # what training runs in (`runtime.training_precision`)
    warnings: list[str]  # a line for each setting the device cannot run as asked


def device_settings(tc: TrainConfig, device: torch.device) -> DeviceSettings:
    """bf16 on a CPU without bf16 kernels runs in fp32; torch.compile without the C++
    compiler inductor needs on the CPU runs eagerly; CUDA graphs exist on CUDA only.
    Each is said in a line, rather than failing (or being dropped) after the start."""
    precision = training_precision(device.type, tc.precision, tc.cpu_precision)
    warnings = []
    if device.type == "cpu" and precision != tc.cpu_precision:
        warnings.append(f"warning: train.cpu_precision is {tc.cpu_precision} but this CPU has "
                        f"no bf16 kernels (AVX512 or AMX): training in {precision}, much "
                        f"faster here (set train.cpu_precision=fp32 to silence this)")
    blocker = compile_blocker(device) if tc.compile else None
    if blocker:
        warnings.append(f"warning: train.compile: {blocker}: training eagerly (set "
                        f"train.compile=false to silence this)")
        tc = replace(tc, compile=False, cuda_graphs=False)
    if tc.cuda_graphs and device.type != "cuda":
        warnings.append(f"warning: train.cuda_graphs replays CUDA graphs, and this run is on "
                        f"{device}: it compiles without them (set train.cuda_graphs=false to "
                        f"silence this)")
        tc = replace(tc, cuda_graphs=False)
    return DeviceSettings(tc, precision, warnings)


def training_batches(cfg: Config, data: PreparedDir, rank: int) -> tuple[BatchPlan, MakeBatch]:
    """The train split's length-bucketed batch plan, each pair weighted by its source and
    length (and a share cased or annotated each epoch: `train.case_augment`,
    `train.term_annotation`), and how one of its batches is made."""
    split = data.split("train")
    variants = pair_variants(cfg.train, data)
    plan = BatchPlan(split.src_lengths, split.tgt_lengths, cfg.train.batch_tokens,
                     cfg.train.seed, cfg.model.max_positions,
                     multiple=pad_multiple(cfg.train), shapes=cfg.train.batch_shapes,
                     weights=pair_weights(data.manifest, split.src_lengths, cfg.train),
                     variants=variants)
    if not plan.indices.size:
        raise UserError(f"{data.dir}: no training pair fits model.max_positions="
                        f"{cfg.model.max_positions}")
    if plan.weights is not None and plan.weights.sum() < 1:  # an empty epoch, most times
        raise UserError(f"{data.dir}: the pairs' weights (data.train's weight x "
                        f"train.long_weight={cfg.train.long_weight:g}) leave "
                        f"{plan.weights.sum():.3g} training pairs per epoch on average: raise "
                        f"them, at least one pair is needed")
    return plan, batch_maker(cfg, data, rank, plan, variants)


Variants = Union[CaseAugment, TermAnnotation]


def pair_variants(tc: TrainConfig, data: PreparedDir) -> Optional[Variants]:
    """Which pairs each epoch shows cased (`train.case_augment`) or annotated
    (`train.term_annotation`; the config allows one of them), or None when both are off."""
    if tc.case_augment:
        return CaseAugment(data, tc.case_augment, tc.seed)
    if tc.term_annotation:
        return TermAnnotation(data, tc.term_annotation, tc.seed)
    return None


class Net(NamedTuple):
    """What each micro-batch is fed to (`module`), and its parts a run asks about."""

    ddp: Optional[DistributedDataParallel]  # for `no_sync`, when several processes train
    module: torch.nn.Module
    compiled: Optional[CompiledStates]  # with train.compile

    def summary(self) -> list[str]:
        """What a run's last lines say of its compilations (nothing when eager)."""
        return [self.compiled.summary()] if self.compiled is not None else []


def training_net(model: Transformer, tc: TrainConfig, dist: Dist, device: torch.device) -> Net:
    """The teacher-forced loss, its model's part compiled when asked (`compiling.py`),
    wrapped in DDP when several processes train."""
    guide = guide_of(tc, model.cfg)
    compiled = CompiledStates(model, tc, device, guide) if tc.compile else None
    net: torch.nn.Module = TeacherForcing(model, tc.label_smoothing, PAD_ID, compiled, guide)
    ddp = DistributedDataParallel(net, device_ids=[device.index] if device.index is not None
                                  else None) if dist.world > 1 else None
    return Net(ddp, ddp or net, compiled)


def speed_notes(device: torch.device, net: Net) -> dict[str, Any]:
    """What a log line adds about the run's speed: compilations and batch shapes (when
    compiled), the device's peak memory so far (CUDA)."""
    notes = net.compiled.notes() if net.compiled is not None else {}
    if device.type == "cuda":
        notes["peak_gib"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
    return notes


def pad_multiple(tc: TrainConfig) -> int:
    """What batch lengths are padded to: train.pad_multiple, by default 1 on every device
    (flash attention and cuBLAS take any length; on the shared corpus rounding to 8 makes
    24% of a GPU batch padding: `bench.padding` at revision 7e5bbcb)."""
    return tc.pad_multiple or 1


def batch_maker(cfg: Config, data: PreparedDir, rank: int, plan: BatchPlan,
                variants: Optional[Variants] = None) -> MakeBatch:
    """How the loader collates a batch: the encoded ids, or (subword regularisation)
    the train text segmented anew, or (`variants`) cased or annotated pairs encoded from
    their text; lengths padded to `train.pad_multiple`, or to the batch's shape
    (`train.batch_shapes`); with `train.guided_alignment`, the pairs' alignments."""
    tc = cfg.train
    multiple = pad_multiple(tc)
    split = data.split("train")
    aligned = data.alignments("train.guided_alignment") if tc.guided_alignment else None
    if variants is not None:  # the plan's batches hold cased or annotated pairs' ids
        return lambda idx, _: variants.collate(idx, multiple, aligned)
    if not tc.sample_alpha:
        return lambda idx, _: collate(split, idx, multiple, plan.shapes, aligned)
    from transcli.data.resegment import Resegmenter

    return Resegmenter(data, tc.sample_alpha, tc.sample_nbest, tc.seed, rank,
                       cfg.model.max_positions, multiple)
