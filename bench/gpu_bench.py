"""The stages behind bench/gpu_check.py, which imports this once CUDA is known to be there
(the CPU tests import it too: nothing here touches CUDA at import).

`check` runs the stages of gpu_check.STAGES in turn, each stopped at its allowance: the
training table (bench/gpu_table.py), the profile (bench/gpu_profile.py, in a process of
its own), the translation table (bench/translate_speed.py) and the CUDA tests. `e2e`
trains base, then `transcli evaluate`s it, as bench/quality.py runs them. `carry`
prepares what they need on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, NoReturn, Optional

import torch

from bench.common import (
    CORPORA,
    DEV_SETS,
    ROOT,
    child_env,
    prepare_corpus,
    run_summary,
    score_set,
    set_flags,
    transcli,
)
from bench.flops import dense_bf16_peak
from bench.gpu_check import ROWS, STAGES, plan_lines
from bench.gpu_profile import RESULT, profile_lines, profile_run
from bench.gpu_table import measure_row, table
from transcli.config.loading import load_config
from transcli.rundir.layout import CONFIG_FILE, CURVES_FILE, METRICS_FILE

BASE = ROOT / "configs" / "base.yaml"
CARRY = ROOT / "gpu-carry"  # ignored by git: prepared data to copy to a GPU machine
CARRIED_CORPUS = CARRY / "corpus"
CHILD_ENV = child_env(PYTHONUNBUFFERED="1")  # a child's lines are logged as they come
ALLOWANCE = {stage.name: stage.seconds for stage in STAGES}


def run_stage(args: argparse.Namespace) -> int:
    stages = {"check": check, "e2e": e2e, "carry": carry,
              "profile": lambda a: profile_run(a.data)}
    return stages[args.stage](args)


# ----------------------------------------------------------------------------- plumbing


class Report:
    """Lines to stdout and, given an `out` folder, to out/<name>.log as they come; results
    to out/<name>.json, rewritten after each step so a stopped run still returns them."""

    def __init__(self, name: str, out: Optional[Path]):
        self.name = name
        self.out = out
        self.results: dict[str, Any] = {}
        if self.out:
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / f"{name}.log").write_text("", encoding="utf-8")

    def say(self, text: str = "") -> None:
        print(text, flush=True)
        if self.out:
            with open(self.out / f"{self.name}.log", "a", encoding="utf-8") as log:
                log.write(text + "\n")

    def save(self) -> None:
        if self.out:
            (self.out / f"{self.name}.json").write_text(json.dumps(self.results, indent=1) + "\n",
                                                        encoding="utf-8")

    def keep(self, source: Path, name: str) -> None:
        """Copy a file into $OUT (the device tool brings back 8 files at most)."""
        if self.out and source.is_file():
            shutil.copyfile(source, self.out / name)


def fail(message: str) -> NoReturn:
    print(f"gpu-check: {message}", file=sys.stderr)
    sys.exit(1)


def device_summary() -> dict[str, Any]:
    props = torch.cuda.get_device_properties(0)
    peak = dense_bf16_peak(props.name)
    return {"device": props.name, "torch": torch.__version__, "cuda": torch.version.cuda,
            "capability": f"{props.major}.{props.minor}",
            "memory_gib": round(props.total_memory / 2**30, 1),
            "dense_bf16_peak_tflops": peak / 1e12 if peak else None}


def describe(info: dict[str, Any]) -> str:
    peak = info["dense_bf16_peak_tflops"]
    return (f"{info['device']} (compute {info['capability']}, {info['memory_gib']} GiB, dense bf16 "
            f"peak {f'{peak:.0f} TFLOP/s' if peak else 'unknown'}); torch {info['torch']}, "
            f"CUDA {info['cuda']}")


def corpus_with(names: list[str]) -> Optional[Path]:
    """The first corpus folder holding all of `names`: the carried one, then ../shared."""
    for folder in (CARRIED_CORPUS, CORPORA):
        if all((folder / name).is_file() for name in names):
            return folder
    return None


def carried_data(config: str, corpus: Optional[Path] = None) -> Path:
    """Where `make gpu-carry` puts the corpus prepared with configs/<config>.yaml; with
    `corpus`, prepared there from it first (unless it is there already)."""
    out = CARRY / f"{config}-data"
    problem = corpus and prepare_corpus(ROOT / "configs" / f"{config}.yaml", out, corpus=corpus)
    if problem:
        fail(problem)
    return out


def prepared_data(explicit: Optional[Path], report: Report, config: str = "base") -> Path:
    """The corpus prepared with configs/<config>.yaml: given, carried, or prepared now."""
    if explicit is not None:
        if not (explicit / "manifest.json").is_file():
            fail(f"{explicit}: not a prepared dir (no manifest.json)")
        return explicit
    out = carried_data(config)
    if (out / "manifest.json").is_file():
        return out
    corpus = corpus_with(["train.en", "train.es"])
    if corpus is None:
        fail(f"no prepared data in {out} and no train.en/train.es in {CARRIED_CORPUS} or "
             f"{CORPORA}: run `make gpu-carry` beforehand and copy gpu-carry/ along "
             f"(docs/GPU.md), or give --data")
    report.say(f"preparing {corpus}/train.{{en,es}} with configs/{config}.yaml into {out}")
    started = time.perf_counter()
    carried_data(config, corpus)
    report.say(f"  prepared in {time.perf_counter() - started:.0f} s")
    return out


# ----------------------------------------------------------------------------- check


def check(args: argparse.Namespace) -> int:
    """The stages in turn, each in its allowance; exit status 1 if any failed."""
    started = time.monotonic()
    report = Report("gpu-check", args.out)
    info = report.results["device"] = device_summary()
    report.say(f"gpu-check on {describe(info)}")
    names = [s.name for s in STAGES[1:] if (not args.only or s.name in args.only)
             and not (args.no_tests and s.name == "tests")]
    report.say("plan:\n  " + "\n  ".join(plan_lines(args.no_tests)))
    configs = dict.fromkeys(row.config for row in ROWS)
    data = {config: prepared_data(args.data if config == "base" else None, report, config)
            for config in configs}
    stages: dict[str, Callable[..., bool]] = {"table": table_stage, "profile": profile_stage,
                                              "translate": functools.partial(
                                                  translate_stage, model=args.model),
                                              "tests": tests_stage}
    report.results["stages"] = {}
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        failed = []
        for name in names:
            began = time.monotonic()
            report.say(f"\n== {name} (allowance {ALLOWANCE[name]:.0f} s)")
            if not stages[name](report, data, Path(tmp) / name):
                failed.append(name)
            report.results["stages"][name] = {"seconds": round(time.monotonic() - began, 1),
                                              "ok": name not in failed}
            report.save()
    report.say(f"\ngpu-check: {time.monotonic() - started:.0f} s in all; "
               + (f"failed: {', '.join(failed)}" if failed else "every stage ran"))
    return 1 if failed else 0


def table_stage(report: Report, data: dict[str, Path], work: Path) -> bool:
    device = report.results["device"]["device"]
    rows = report.results["table"] = []
    for i, row in enumerate(ROWS):
        result = measure_row(row, data[row.config], work / str(i), device)
        rows.append(result)
        report.say(table([result], device).splitlines()[-1])
        report.save()
    report.say("\n" + table(rows, device))
    return not any("error" in row for row in rows)


def profile_stage(report: Report, data: dict[str, Path], work: Path) -> bool:
    """`gpu_check profile` in a process of its own, killed once it has printed."""
    work.mkdir(parents=True)
    command = [sys.executable, "-m", "bench.gpu_check", "profile", "--data",
               str(data["gpu-10m"])]
    result = watch_for_result(command, work, ALLOWANCE["profile"])
    if isinstance(result, str):
        report.say(f"profile: {result}")
        report.results["profile"] = {"error": result}
        return False
    report.results["profile"] = result
    lines = profile_lines(result)
    for line in lines:
        report.say(line)
    if report.out:
        (report.out / "gpu-profile.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return True


def watch_for_result(command: list[str], work: Path, seconds: float) -> dict[str, Any] | str:
    """Run `command` until it prints a RESULT line (its JSON) or `seconds` pass (why not)."""
    out, log = work / "stdout", work / "stderr"
    with open(out, "w") as stdout, open(log, "w") as stderr:
        process = subprocess.Popen(command, cwd=ROOT, env=CHILD_ENV, stdout=stdout,
                                   stderr=stderr)
        started = time.monotonic()
        while time.monotonic() - started < seconds and process.poll() is None:
            time.sleep(0.5)
            found = [line for line in out.read_text().splitlines() if line.startswith(RESULT)]
            if found:
                process.kill()
                process.wait()
                return json.loads(found[0][len(RESULT):])
        ended = process.poll()
        process.kill()
        process.wait()
    tail = (log.read_text(errors="replace").strip().splitlines() or ["no output"])[-1]
    return (f"exit status {ended}: {tail[-300:]}" if ended is not None
            else f"no result within {seconds:.0f} s (last line: {tail[-200:]})")


def translate_stage(report: Report, data: dict[str, Path], work: Path,
                    model: Optional[Path] = None) -> bool:
    """bench/translate_speed.py on CUDA in its allowance, on `model` or else on the run the
    table kept; where there is none or the command fails, the stage says why and is skipped."""
    kept = next(i for i, row in enumerate(ROWS) if row.keep)
    run = model or work.parent / "table" / str(kept) / "run"
    if not any((run / "checkpoints").glob("step-*.safetensors")):
        report.say(f"translate: skipped: no trained run at {run} (the table stage keeps one; "
                   f"or give --model RUN)")
        return False
    out = report.out / "translate" if report.out else work
    seconds = ALLOWANCE["translate"]
    command = [sys.executable, "-m", "bench.translate_speed", "--model", str(run),
               "--checkpoint", "last", "--device", "cuda", "--budget", f"{seconds:.0f}",
               "--out", str(out)]
    report.say(" ".join(command[1:]))
    status, output = run_for(command, seconds)
    for line in output.strip().splitlines()[-30:]:
        report.say(f"  {line}")
    report.results["translate"] = {"returncode": status, "model": str(run)}
    if status != 0:
        why = f"exit status {status}" if status is not None else f"stopped after {seconds:.0f} s"
        last = (output.strip().splitlines() or ["no output"])[-1][-200:]
        report.say(f"translate: skipped: {why} ({last})")
    return status == 0


def run_for(command: list[str], seconds: float) -> tuple[Optional[int], str]:
    """(exit status, or None when stopped after `seconds`; stdout and stderr)."""
    try:
        proc = subprocess.run(command, cwd=ROOT, env=CHILD_ENV, capture_output=True,
                              text=True, timeout=seconds)
        return proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        output = exc.stdout if isinstance(exc.stdout, str) else (exc.stdout or b"").decode()
        return None, output + f"\nstopped after {seconds:.0f} s"


def tests_stage(report: Report, data: dict[str, Path], work: Path) -> bool:
    """`pytest -m gpu tests` in its allowance; the whole output in gpu-tests.log."""
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-rfEs", "-p", "no:cacheprovider",
               "tests"]
    report.say(" ".join(command[1:]))
    status, output = run_for(command, ALLOWANCE["tests"])
    if report.out:
        (report.out / "gpu-tests.log").write_text(output, encoding="utf-8")
    lines = output.strip().splitlines()
    shown = [line for line in lines if line.startswith(("FAILED", "ERROR", "SKIPPED"))]
    for line in shown + lines[-1:]:
        report.say(f"  {line}")
    report.results["tests"] = {"returncode": status, "summary": lines[-1] if lines else ""}
    return status == 0


# ----------------------------------------------------------------------------- e2e


def e2e(args: argparse.Namespace) -> int:
    """Train base for --minutes, then BLEU/chrF of --checkpoint on the two dev sets."""
    report = Report("gpu-e2e", args.out)
    info = report.results["device"] = device_summary()
    report.say(f"gpu-e2e on {describe(info)}")
    data = prepared_data(args.data, report)
    evals = corpus_with([f"{name}.{lang}" for name in DEV_SETS for lang in ("en", "es")])
    if evals is None:
        fail(f"no {', '.join(DEV_SETS)} .en/.es files in {CARRIED_CORPUS} or {CORPORA}: "
             f"run `make gpu-carry` beforehand and carry gpu-carry (README, section GPUs)")
    run = args.work / "run"
    sets = ["train.device=cuda", f"train.max_minutes={args.minutes}", *args.sets]
    report.say(f"training {BASE.relative_to(ROOT)} on {data} for {args.minutes:g} min into {run} "
               f"(--set {' --set '.join(sets)})")
    started = time.perf_counter()
    args.work.mkdir(parents=True, exist_ok=True)
    problem = transcli(["train", "--config", BASE, "--data", data, "--out", run, "--force",
                        *set_flags(sets)], args.work / "train.log", args.minutes * 60 + 300,
                       env=CHILD_ENV)
    if problem:
        report.say(f"transcli {problem}")
        return 1
    report.results["train"] = {"wall_s": time.perf_counter() - started, **run_summary(run)}
    report.say(describe_run(report.results["train"]))
    report.keep(run / METRICS_FILE, "gpu-e2e-metrics.jsonl")
    report.keep(run / CURVES_FILE, "gpu-e2e-curves.png")
    report.save()
    return score_e2e(args, run, evals, report)


def score_e2e(args: argparse.Namespace, run: Path, evals: Path, report: Report) -> int:
    scores = report.results["scores"] = {}
    for name in DEV_SETS:
        started = time.perf_counter()
        result = score_set(run, args.checkpoint, evals, name, args.work, ["--device", "cuda"],
                           timeout=300)
        if "error" in result:
            report.say(f"transcli {result['error']}")
            return 1
        scores[name] = {**result, "seconds": time.perf_counter() - started}
        report.save()
    report.say("\n| set | lines | BLEU | chrF | translate + score, s |\n|---|---:|---:|---:|---:|")
    for name, result in scores.items():
        report.say(f"| {name} | {result['lines']} | {result['bleu']:.1f} | {result['chrf']:.1f} | "
                   f"{result['seconds']:.0f} |")
    signatures = next(iter(scores.values()))["signatures"]
    beam = load_config(run / CONFIG_FILE).decode.beam_size
    report.say(f"checkpoint {args.checkpoint}, beam {beam}; sacreBLEU BLEU "
               f"{signatures['bleu']}, chrF {signatures['chrf']}")
    return 0


def describe_run(summary: dict[str, Any]) -> str:
    rate, loss = summary["tgt_tok_s"], summary["last_train_loss"]
    text = (f"trained {summary['updates']} updates in {summary['wall_s'] / 60:.1f} min "
            f"(process wall time), {f'{rate:,.0f}' if rate else '?'} tgt tok/s after the "
            f"first log interval; last train loss {f'{loss:.3f}' if loss else '?'}")
    valid = summary["last_valid"]
    if valid:
        text += (f"; valid at step {valid['step']}: NLL {valid['valid_nll']:.3f}"
                 + (f", greedy BLEU {valid['valid_bleu']:.1f}" if "valid_bleu" in valid else ""))
    return text


# ----------------------------------------------------------------------------- carry


def carry(args: argparse.Namespace) -> int:
    """Fill gpu-carry/ (no GPU needed): the dev sets, and the corpus prepared with each
    config of the training table, without the training text it keeps (only subword
    sampling reads it), so that the folder fits the device tool's 64 MiB."""
    corpus = args.corpus or CORPORA
    names = [f"{name}.{lang}" for name in DEV_SETS for lang in ("en", "es")]
    missing = [name for name in names + ["train.en", "train.es"]
               if not (corpus / name).is_file()]
    if missing:
        fail(f"{corpus}: missing {', '.join(missing)} (give --corpus DIR)")
    CARRIED_CORPUS.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copyfile(corpus / name, CARRIED_CORPUS / name)
    for config in dict.fromkeys(row.config for row in ROWS):
        out = carried_data(config, corpus)
        for side in ("en", "es"):
            (out / f"train.{side}").unlink(missing_ok=True)
    size = sum(f.stat().st_size for f in CARRY.rglob("*") if f.is_file())
    print(f"{CARRY}: {size / 2**20:.1f} MiB; copy it into the checkout on the GPU machine "
          f"(docs/GPU.md, make gpu-carry)")
    return 0
