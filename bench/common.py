"""What the benchmarks and studies share: where the corpora are, a process of their own for
each `python -m transcli` command and each benchmark they run (so that its time and memory
are its own, and a failure is reported, not fatal), a run's speed from its metrics.jsonl,
another git revision's tree, and `Report`. Only the standard library at import time.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT.parent / "shared" / "corpora" / "en-es"  # the shared EN-ES corpora
CARRY = ROOT / "gpu-carry"  # ignored by git: what `make gpu-carry` prepares for a GPU machine
DEV_SETS = ("dev.tatoeba", "dev.newstest2012")  # short conversational, long news sentences
SCORED_SETS = (*DEV_SETS, "test.tico19")  # what the recipe benchmarks score
NEVER = "1000000000"  # a step count no run reaches: never validate, save or stop by it
STOP_S = 300  # how long a stopped `transcli train` may take to save and exit
RESULT = "RESULT "  # starts the line of JSON figures a benchmark prints for its parent


def read_lines(path: Path, count: int) -> list[str]:
    """The first `count` lines of a text file, without their newlines."""
    with open(path, encoding="utf-8") as handle:
        return [line.rstrip("\n") for _, line in zip(range(count), handle)]


def corpus_with(names: Sequence[str]) -> Path:
    """gpu-carry/corpus where it holds all of `names` (on a GPU machine), else the shared
    corpora."""
    carried = CARRY / "corpus"
    return carried if all((carried / name).is_file() for name in names) else CORPORA


def set_flags(overrides: Sequence[str]) -> list[str]:
    """`--set` before each section.key=value, as transcli's commands take overrides."""
    return [flag for item in overrides for flag in ("--set", item)]


def data_overrides(overrides: Sequence[str]) -> list[str]:
    """The data.* overrides: the ones `transcli prepare` takes."""
    return [item for item in overrides if item.startswith("data.")]


def languages(overrides: Sequence[str]) -> tuple[str, str]:
    """The (source, target) languages that data.src_lang / data.tgt_lang overrides name
    (English to Spanish by default): which side of each corpus file pair is read."""
    given = dict(item.split("=", 1) for item in data_overrides(overrides))
    return given.get("data.src_lang", "en"), given.get("data.tgt_lang", "es")


def data_dir(work: Path, overrides: Sequence[str]) -> Path:
    """Where under `work` the corpus prepared with these data.* overrides goes."""
    values = [item.split("=", 1)[1] for item in data_overrides(overrides)]
    return work / ("data-" + ("-".join(values) or "default"))


def child_env(tree: Path = ROOT, **extra: str) -> dict[str, str]:
    """This environment with `tree`'s transcli first on the path, installed or not."""
    paths = [str(tree), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), **extra}


class Child:
    """`python -m MODULE ARGS` (transcli by default) in a process of its own, started now:
    its stderr, and its stdout unless `stdout` names a file for it, go to `log` (the
    terminal when None). With `group`, in a process group of its own, stopped whole: the
    processes a benchmark starts stop with it."""

    def __init__(self, args: Sequence[Any], log: Optional[Path] = None,
                 stdout: Optional[Path] = None, env: Optional[dict[str, str]] = None,
                 cwd: Path = ROOT, module: str = "transcli", group: bool = False):
        self.name, self.log, self.group = args[0] if module == "transcli" else module, log, group
        self.files = [open(path, "w", encoding="utf-8") for path in (log, stdout) if path]
        err = self.files[0] if log else None
        out = self.files[-1] if stdout else err
        self.process = subprocess.Popen([sys.executable, "-m", module, *map(str, args)],
                                        stdout=out, stderr=err, cwd=cwd,
                                        env=env or child_env(), start_new_session=group)
        self.started = time.monotonic()

    def wait(self, timeout: Optional[float] = None, stop: bool = False) -> Optional[str]:
        """None once it has exited 0, else why not. After `timeout` seconds it is ended:
        with `stop` by SIGTERM, on which `transcli train` saves and exits 0."""
        try:
            self.process.wait(timeout=timeout)
            late = False
        except subprocess.TimeoutExpired:
            late = True
            self.send(signal.SIGTERM if stop else signal.SIGKILL)
            try:
                self.process.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                self.send(signal.SIGKILL)
                self.process.wait()
        for handle in self.files:
            handle.close()
        if self.process.returncode == 0:
            return None
        why = (f"stopped after {time.monotonic() - self.started:.0f} s" if late
               else f"exit status {self.process.returncode}")
        return f"{self.name}: {why}" + (f": {self.last_line()}" if self.log else "")

    def send(self, number: int) -> None:
        if self.group:
            os.killpg(self.process.pid, number)
        else:
            self.process.send_signal(number)

    def last_line(self) -> str:
        """The log's last line (a progress bar's last state counts as one)."""
        lines = output_lines(self.log.read_bytes()) if self.log else []
        return (lines or ["no output"])[-1][-200:]


def transcli(args: Sequence[Any], log: Optional[Path] = None, timeout: Optional[float] = None,
             stdout: Optional[Path] = None, env: Optional[dict[str, str]] = None,
             cwd: Path = ROOT) -> Optional[str]:
    """Run `python -m transcli ARGS` to its end (see `Child`): None, or why it failed."""
    return Child(args, log, stdout, env, cwd).wait(timeout)


class Outcome(NamedTuple):
    """A benchmark run by `run_child`: why it failed (or None), its output, its RESULT."""

    problem: Optional[str]
    lines: list[str]
    result: Optional[dict[str, Any]]


def run_child(args: Sequence[str], seconds: float, log: Path,
              say: Optional[Callable[[str], None]] = None) -> Outcome:
    """`python -m ARGS` (a benchmark, pytest) run for at most `seconds` with its output in
    `log`, then each line of it but RESULT lines handed to `say`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    child = Child(args[1:], log, env=child_env(PYTHONUNBUFFERED="1"), module=args[0],
                  group=True)
    try:
        problem = child.wait(seconds, stop=True)
    except KeyboardInterrupt:  # its group is not the terminal's: stop it too
        child.send(signal.SIGTERM)
        raise
    lines = output_lines(log.read_bytes())
    for line in lines:
        if say and not line.startswith(RESULT):
            say(line)
    found = [json.loads(line[len(RESULT):]) for line in lines if line.startswith(RESULT)]
    return Outcome(problem, lines, found[-1] if found else None)


def output_lines(output: bytes) -> list[str]:
    """A child's output as lines, a progress bar's redrawn line as its last state."""
    lines = output.decode("utf-8", errors="replace").splitlines()
    return [line.split("\r")[-1] for line in lines if line.split("\r")[-1].strip()]


class Report:
    """Figures printed and, given an `out` folder, kept there as they come: the lines in
    out/NAME.log, `results` in out/NAME.json (rewritten by each `save`, so that a run
    stopped half-way still leaves what it measured)."""

    def __init__(self, name: str, out: Optional[Path]):
        self.name, self.out = name, out
        self.results: dict[str, Any] = {}
        if out:
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{name}.log").write_text("", encoding="utf-8")

    def say(self, text: str = "") -> None:
        print(text, flush=True)
        if self.out:
            with open(self.out / f"{self.name}.log", "a", encoding="utf-8") as log:
                log.write(text + "\n")

    def save(self) -> None:
        if self.out and self.results:
            (self.out / f"{self.name}.json").write_text(json.dumps(self.results, indent=1) + "\n",
                                                        encoding="utf-8")


def cuda_problem() -> Optional[str]:
    """Why this Python cannot run on CUDA, or None when it can (torch imported only here)."""
    try:
        import torch
    except ImportError as exc:
        return (f"{sys.executable} cannot import torch ({exc}); run it with the Python that "
                f"has CUDA torch (PYTHON=... make gpu-check)")
    with warnings.catch_warnings():  # a driver mismatch warns; the one line below says it
        warnings.simplefilter("ignore")
        available = torch.cuda.is_available()
    if not available:
        return (f"no CUDA device here (torch {torch.__version__}: torch.cuda.is_available() "
                f"is False); run it on a GPU machine (README, section GPUs)")
    return None


def must(problem: Optional[str]) -> None:
    """Exit with a failed command's `problem`, if any: for benchmarks that cannot go on."""
    if problem:
        sys.exit(problem)


def prepare_corpus(config: Path, out: Path, overrides: Sequence[str] = (),
                   corpus: Path = CORPORA, log: Optional[Path] = None,
                   timeout: Optional[float] = None) -> Optional[str]:
    """`corpus`/train.{en,es} prepared with `config` and the data.* ones of `overrides`
    (the source side is data.src_lang's) into `out`, unless done already: None, or why it
    failed."""
    if (out / "manifest.json").is_file():
        return None
    print(f"preparing {out} (once)...", flush=True)
    src, tgt = languages(overrides)
    return transcli(["prepare", "--config", config, "--src-file", corpus / f"train.{src}",
                     "--tgt-file", corpus / f"train.{tgt}", "--out", out, "--force",
                     *set_flags(data_overrides(overrides))], log, timeout)


def prepared_dir(name: str) -> Path:
    """The corpus prepared with configs/<name>.yaml: gpu-carry/<name>-data where `make
    gpu-carry` made it, else prepared/bench-<name>, built on first use from gpu-carry/corpus
    or the shared corpora; exits if it cannot be."""
    if (CARRY / f"{name}-data" / "manifest.json").is_file():
        return CARRY / f"{name}-data"
    out = ROOT / "prepared" / f"bench-{name}"
    problem = prepare_corpus(ROOT / "configs" / f"{name}.yaml", out,
                             corpus=corpus_with(["train.en", "train.es"]))
    must(problem and f"{problem} (no corpus: `make gpu-carry` beforehand, docs/GPU.md)")
    return out


def score_set(run: Path, checkpoint: str, corpus: Path, name: str, work: Path,
              flags: Sequence[str] = (), timeout: Optional[float] = None,
              langs: tuple[str, str] = ("en", "es")) -> dict[str, Any]:
    """`transcli evaluate --json` of a run's checkpoint on `corpus`/NAME.en against NAME.es
    (`langs`: the source and target sides; translations, JSON and log in `work`): the
    JSON's fields, or {"error": why not}."""
    src, tgt = langs
    result = work / f"{name}.json"
    problem = transcli(["evaluate", "--model", run, "--checkpoint", checkpoint,
                        "--src", corpus / f"{name}.{src}", "--ref", corpus / f"{name}.{tgt}",
                        "--hyp-out", work / f"{name}.hyp.{tgt}", "--json", *flags],
                       work / f"{name}.log", timeout, stdout=result)
    return {"error": problem} if problem else json.loads(result.read_text(encoding="utf-8"))


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

    def rate(self) -> Optional[float]:
        """Target tokens/s, None without a measured interval."""
        return self.tgt_tokens / self.seconds if self.seconds else None


def run_summary(run: Path) -> dict[str, Any]:
    """Updates made, target tokens/s after the first log interval (None before a second
    one) and the last validation line of a run."""
    from transcli.rundir.layout import METRICS_FILE
    from transcli.rundir.metrics import read_metrics

    records = read_metrics(run / METRICS_FILE)
    train = [r for r in records if r["split"] == "train"]
    valid = [r for r in records if r["split"] == "valid"]
    return {"updates": train[-1]["step"] if train else 0, "tgt_tok_s": Steady.of(train).rate(),
            "last_valid": valid[-1] if valid else None}


def run_languages(run: Path) -> tuple[str, str]:
    """The (source, target) languages a run translates (its config's data section)."""
    from transcli.config.loading import load_config
    from transcli.rundir.layout import CONFIG_FILE

    data = load_config(run / CONFIG_FILE).data
    return data.src_lang, data.tgt_lang


def export_tree(revision: str, folder: Path) -> Path:
    """The source tree of a git revision, without touching this checkout."""
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def dev_sets_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments of a benchmark that translates the first --lines of dev sets with a
    run's model: --model, --checkpoint, --lines, --sets, --corpus, --set, --work."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="Run directory.")
    parser.add_argument("--checkpoint", default="avg")
    parser.add_argument("--lines", type=int, default=500, help="Lines of each set.")
    parser.add_argument("--sets", nargs="+", default=list(DEV_SETS))
    parser.add_argument("--corpus", type=Path, default=CORPORA,
                        help="Where the sets are (NAME.en and NAME.es, and train.{en,es}).")
    parser.add_argument("--set", action="append", default=[], metavar="decode.KEY=VALUE",
                        help="A decode setting for every translation (repeatable).")
    parser.add_argument("--work", type=Path, help="Where the sets, translations and results go.")
    return parser
