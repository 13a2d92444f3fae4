"""What the benchmarks and studies share: where the corpora are, `python -m transcli` run
in a process of its own (prepare, train, evaluate), what a run's metrics.jsonl says about
its speed, another git revision's tree, and the one translator set-up of the CPU timings.

A benchmark runs transcli as a user does, in a child process, so that each figure (time,
memory) is that command's own and a failed command is reported, not fatal: `Child` and
`transcli` give back why it failed (its exit status and last line) or None.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT.parent / "shared" / "corpora" / "en-es"  # the shared EN-ES corpora
DEV_SETS = ("dev.tatoeba", "dev.newstest2012")  # short conversational, long news sentences
SCORED_SETS = (*DEV_SETS, "test.tico19")  # what the recipe benchmarks score
NEVER = "1000000000"  # a step count no run reaches: never validate, save or stop by it
STOP_S = 300  # how long a stopped `transcli train` may take to save and exit


def read_lines(path: Path, count: int) -> list[str]:
    """The first `count` lines of a text file, without their newlines."""
    with open(path, encoding="utf-8") as handle:
        return [line.rstrip("\n") for _, line in zip(range(count), handle)]


def set_flags(overrides: Sequence[str]) -> list[str]:
    """`--set` before each section.key=value, as transcli's commands take overrides."""
    return [flag for item in overrides for flag in ("--set", item)]


def data_overrides(overrides: Sequence[str]) -> list[str]:
    """The data.* overrides: the ones `transcli prepare` takes."""
    return [item for item in overrides if item.startswith("data.")]


def data_dir(work: Path, overrides: Sequence[str]) -> Path:
    """Where under `work` the corpus prepared with these data.* overrides goes."""
    values = [item.split("=", 1)[1] for item in data_overrides(overrides)]
    return work / ("data-" + ("-".join(values) or "default"))


def child_env(tree: Path = ROOT, **extra: str) -> dict[str, str]:
    """This environment with `tree`'s transcli first on the path, installed or not."""
    paths = [str(tree), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), **extra}


# ----------------------------------------------------------------------------- transcli


class Child:
    """`python -m transcli ARGS` in a process of its own, started now: its stderr, and its
    stdout unless `stdout` names a file for it, go to `log` (the terminal when None)."""

    def __init__(self, args: Sequence[str], log: Optional[Path] = None,
                 stdout: Optional[Path] = None, env: Optional[dict[str, str]] = None,
                 cwd: Path = ROOT):
        self.name, self.log = args[0], log
        self.files = [open(path, "w", encoding="utf-8") for path in (log, stdout) if path]
        err = self.files[0] if log else None
        out = self.files[-1] if stdout else err
        self.process = subprocess.Popen([sys.executable, "-m", "transcli", *map(str, args)],
                                        stdout=out, stderr=err, cwd=cwd,
                                        env=env or child_env())

    def wait(self, timeout: Optional[float] = None, stop: bool = False) -> Optional[str]:
        """None once it has exited 0, else why not. After `timeout` seconds it is ended:
        with `stop` by SIGTERM, on which `transcli train` saves and exits 0."""
        try:
            self.process.wait(timeout=timeout)
            late = False
        except subprocess.TimeoutExpired:
            late = True
            self.process.send_signal(signal.SIGTERM if stop else signal.SIGKILL)
            try:
                self.process.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for handle in self.files:
            handle.close()
        if self.process.returncode == 0:
            return None
        why = f"stopped after {timeout:.0f} s" if late else f"exit status {self.process.returncode}"
        return f"{self.name}: {why}" + (f": {self.last_line()}" if self.log else "")

    def last_line(self) -> str:
        """The log's last line (a progress bar's last state counts as one)."""
        text = self.log.read_text(encoding="utf-8", errors="replace").replace("\r", "\n")
        return (text.strip().splitlines() or ["no output"])[-1][-200:]


def transcli(args: Sequence[str], log: Optional[Path] = None, timeout: Optional[float] = None,
             stdout: Optional[Path] = None, env: Optional[dict[str, str]] = None,
             cwd: Path = ROOT) -> Optional[str]:
    """Run `python -m transcli ARGS` to its end (see `Child`): None, or why it failed."""
    return Child(args, log, stdout, env, cwd).wait(timeout)


def must(problem: Optional[str]) -> None:
    """Exit with a failed command's `problem`, if any: for benchmarks that cannot go on."""
    if problem:
        sys.exit(problem)


def prepare_corpus(config: Path, out: Path, overrides: Sequence[str] = (),
                   corpus: Path = CORPORA, log: Optional[Path] = None,
                   timeout: Optional[float] = None) -> Optional[str]:
    """`corpus`/train.{en,es} prepared with `config` and the data.* ones of `overrides`
    into `out`, unless done already: None, or why it failed."""
    if (out / "manifest.json").is_file():
        return None
    print(f"preparing {out} (once)...", flush=True)
    return transcli(["prepare", "--config", config, "--src-file", corpus / "train.en",
                     "--tgt-file", corpus / "train.es", "--out", out, "--force",
                     *set_flags(data_overrides(overrides))], log, timeout)


def prepared_dir(name: str, data_sets: tuple[str, ...] = ()) -> Path:
    """The shared corpus prepared with configs/<name>.yaml and `data_sets` overrides, in
    prepared/bench-<name>[-<overrides>] (built on first use); exits if it cannot be."""
    out = ROOT / "prepared" / "-".join(["bench", name, *(s.replace("=", "") for s in data_sets)])
    must(prepare_corpus(ROOT / "configs" / f"{name}.yaml", out, data_sets))
    return out


def score_set(run: Path, checkpoint: str, corpus: Path, name: str, work: Path,
              flags: Sequence[str] = (), timeout: Optional[float] = None) -> dict[str, Any]:
    """`transcli evaluate --json` of a run's checkpoint on `corpus`/NAME.en against NAME.es
    (translations, JSON and log in `work`): the JSON's fields, or {"error": why not}."""
    result = work / f"{name}.json"
    problem = transcli(["evaluate", "--model", run, "--checkpoint", checkpoint,
                        "--src", corpus / f"{name}.en", "--ref", corpus / f"{name}.es",
                        "--hyp-out", work / f"{name}.hyp.es", "--json", *flags],
                       work / f"{name}.log", timeout, stdout=result)
    return {"error": problem} if problem else json.loads(result.read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------- metrics


@dataclass
class Steady:
    """The log intervals of `transcli train` after its first train line (whose interval
    holds the warm-up: first batches, allocator growth, compilation)."""

    tgt_tokens: float = 0.0
    src_tokens: float = 0.0
    seconds: float = 0.0
    real: float = 0.0  # positions fed, both sides, without and with padding
    padded: float = 0.0
    steps: int = 0

    @classmethod
    def of(cls, lines: list[dict]) -> Steady:
        """From consecutive "train" lines of metrics.jsonl."""
        total = cls()
        for prev, line in zip(lines, lines[1:]):
            tgt = line["tgt_tokens"] - prev["tgt_tokens"]
            src = line["src_tokens"] - prev["src_tokens"]
            total.add(cls(tgt, src, tgt / line["tokens_per_s"], tgt + src,
                          (tgt + src) / (1 - line["pad_frac"]), line["step"] - prev["step"]))
        return total

    def add(self, other: Steady) -> None:
        for field in fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))


def run_summary(run: Path) -> dict[str, Any]:
    """Updates made, target tokens/s after the first log interval (None before a second
    one), the last training loss and the last validation line of a run."""
    from transcli.rundir.layout import METRICS_FILE
    from transcli.rundir.metrics import read_metrics

    records = read_metrics(run / METRICS_FILE)
    train = [r for r in records if r["split"] == "train"]
    valid = [r for r in records if r["split"] == "valid"]
    steady = Steady.of(train)
    return {"updates": train[-1]["step"] if train else 0,
            "tgt_tok_s": steady.tgt_tokens / steady.seconds if steady.seconds else None,
            "last_train_loss": train[-1]["loss"] if train else None,
            "last_valid": valid[-1] if valid else None}


# ----------------------------------------------------------------------------- CPU timings


def export_tree(revision: str, folder: Path) -> Path:
    """The source tree of a git revision, without touching this checkout."""
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def cpu_setup(threads: int) -> None:
    """This process set up for CPU translation as `transcli translate` sets itself up: the
    OpenMP wait policy chosen before torch loads (if it has not loaded yet), torch's
    threads set."""
    if "torch" not in sys.modules:
        from transcli.system import waitpolicy

        waitpolicy.choose()
    import torch

    torch.set_num_threads(threads)


def cpu_translator(model: Path | str, checkpoint: str, threads: int,
                   settings: Sequence[str]) -> Any:
    """A CPU `Translator` at `threads` threads without a word reward (CTranslate2 has
    none), after `cpu_setup`."""
    cpu_setup(threads)
    from transcli.inference.translator import load_translator
    from transcli.rundir.run import open_run_dir

    run = open_run_dir(model, [f"decode.threads={threads}", "decode.word_reward=0", *settings])
    return load_translator(run, checkpoint, "cpu")
