"""Helpers for tests that run the real `prepare` and `train` on a slice of data/sample.

The FAST settings shrink the tiny config further and validate on 2 lines: each
training run takes a second or two on one thread.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from helpers import ROOT, default_signals
from helpers.waiting import DEADLINE, wait_until
from transcli.config.loading import load_config
from transcli.config.schema import Config, SourceConfig
from transcli.data.prepare import prepare
from transcli.data.prepared_dir import open_prepared_dir
from transcli.rundir.layout import METRICS_FILE
from transcli.rundir.metrics import read_metrics
from transcli.rundir.run import RunDir
from transcli.training.resume import StartOptions

TINY = ROOT / "configs" / "tiny.yaml"
SAMPLE = ROOT / "data" / "sample"
FAST = ["model.d_model=32", "model.d_ff=64", "model.heads=2", "model.enc_layers=1",
        "model.dec_layers=1", "train.log_every=5", "train.valid_every=10",
        "train.save_every=10", "train.valid_bleu_lines=2"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def prepare_sample(folder: Path, first: int, lines: int, *sets: str) -> Path:
    """`transcli prepare` on sample lines [first, first + lines): 4 valid, 4 test, rest
    train; `sets`: more config overrides."""
    for lang in ("en", "es"):
        text = (SAMPLE / f"train.{lang}").read_text(encoding="utf-8").splitlines()
        (folder / f"corpus.{lang}").write_text("\n".join(text[first:first + lines]) + "\n",
                                               encoding="utf-8")
    cfg = load_config(TINY, ["data.valid_size=4", "data.test_size=4", *sets])
    cfg.data.train = [SourceConfig(src_file=str(folder / "corpus.en"),
                                   tgt_file=str(folder / "corpus.es"))]
    prepare(cfg, folder / "prepared", force=False)
    return folder / "prepared"


def fast_config(*sets: str) -> Config:
    return load_config(TINY, FAST + list(sets))


def train_dirs(cfg: Config, data: Path, run: Path, **options: bool) -> None:
    """`train` as the command calls it: the prepared dir `data` and the run dir `run`
    opened, its flags --resume, --force, --allow-changes as `options` (resume=True)."""
    from transcli.training.loop import train

    train(cfg, open_prepared_dir(data), RunDir(run), StartOptions(**options))


def train_cli(data: Path, out: Path, *extra_sets: str) -> list[str]:
    """`transcli train` arguments; `extra_sets` come after FAST's and win over them."""
    sets = [item for s in FAST + list(extra_sets) for item in ("--set", s)]
    return ["train", "--config", str(TINY), "--data", str(data), "--out", str(out), *sets]


def transcli_process(*args: str, **options) -> subprocess.Popen:
    """`transcli ARGS` running, for the tests that stop it with a signal."""
    options.setdefault("preexec_fn", default_signals)
    return subprocess.Popen([sys.executable, "-m", "transcli", *args], env=ENV, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **options)


def losses(run: Path) -> list[tuple[int, float]]:
    return [(r["step"], r["loss"]) for r in read_metrics(run / METRICS_FILE, "train")]


def wait_for(path: Path, deadline: float = DEADLINE) -> None:
    """Until `path` exists with some text in it (e.g. a training run's first log line)."""
    wait_until(lambda: path.is_file() and path.read_text().strip(), f"{path} with text",
               seen=lambda: sorted(p.name for p in path.parent.iterdir())
               if path.parent.is_dir() else f"no {path.parent}")


VARIANT_BUDGET = 160  # tokens per batch side: 32 prepared pairs make several batches


def variant_plan(prepared: Path, make: Callable[[Any], Any]) -> tuple[Any, Any]:
    """The prepared dir's train split in batches of VARIANT_BUDGET tokens, with its pair
    variants `make(prepared dir)` (case augmentation, term annotation); both returned."""
    from transcli.data.batching import BatchPlan

    data = open_prepared_dir(prepared)
    variants = make(data)
    split = data.split("train")
    return BatchPlan(split.src_lengths, split.tgt_lengths, VARIANT_BUDGET, 1, 256,
                     variants=variants), variants


def train_texts(prepared: Path, lang: str) -> list[str]:
    """The prepared dir's train text of one side, a line per pair."""
    return (prepared / f"train.{lang}").read_text(encoding="utf-8").splitlines()


def assert_variants_resume_mid_epoch(build: Callable[[], tuple[Any, Any]]) -> None:
    """A fresh plan and its pair variants (`build()`: a `BatchPlan` and its `Variants`, as
    a resumed run builds them) at (epoch 2, batch 1) hand out what the first did there,
    collated the same."""
    from transcli.data.batching import BatchStream, StreamPosition

    first, variants = build()
    stream = BatchStream(first, StreamPosition())
    seen = [stream.next() for _ in range(len(first.epoch(0)) + len(first.epoch(1)) + 4)]
    again, variants_again = build()
    resumed = BatchStream(again, StreamPosition(2, 1))
    for expected in seen[len(first.epoch(0)) + len(first.epoch(1)) + 1:]:
        batch = resumed.next()
        assert batch.tolist() == expected.tolist()
        assert variants_again.collate(batch).src.tolist() == \
            variants.collate(expected).src.tolist()


def assert_training_resumes_exactly(setting: str, data: Path, folder: Path) -> tuple[Path, Path]:
    """With `setting` (a train key), 8 updates resumed to 16 equal 16 straight, and
    differ from 16 without it; the (straight, plain) run dirs."""
    from safetensors.torch import load_file

    from transcli.rundir.layout import step_path

    straight, split, plain = folder / "straight", folder / "split", folder / "plain"
    sets = [setting, "train.save_every=8"]
    train_dirs(fast_config(*sets, "train.max_steps=16"), data, straight)
    train_dirs(fast_config(*sets, "train.max_steps=8"), data, split)
    train_dirs(fast_config(*sets, "train.max_steps=16"), data, split, resume=True)
    a, b = load_file(step_path(straight, 16)), load_file(step_path(split, 16))
    assert max((a[k] - b[k]).abs().max().item() for k in a) <= 1e-6
    assert losses(split) == losses(straight)
    train_dirs(fast_config("train.max_steps=16"), data, plain)
    assert losses(plain) != losses(straight)
    return straight, plain
