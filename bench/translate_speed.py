"""Translation speed side by side: engines, precisions and batch sizes, on the CPU or CUDA.

    python -m bench.translate_speed --model RUN [--lines 1000] [--rounds 3]
    python -m bench.translate_speed --model RUN --engines torch torch-int8
    python -m bench.translate_speed --model RUN --engines torch --baseline d9713a4
    python -m bench.translate_speed --model RUN --batch-rows 1 16 1000 --threads 1
    python -m bench.translate_speed --model RUN --batch-rows 16 1000 --by-length
    python -m bench.translate_speed --model RUN --device cuda --budget 90 --out DIR

The first --lines lines of the dev sets, greedy and beam 5, through `Translator` without
a word reward (CTranslate2 has none), with each engine (`ENGINES`; `torch@REV`: revision
REV's code) and thread count, each a worker process of its own, kept running. The engines
take turns cell by cell, in an order reversed every other round; a cell's figure is the
median over rounds, and each ratio the median of the rounds' own ratios (lowest and
highest in brackets). With --budget each cell stops at its share of the time left (CUDA:
one round, one thread count). --by-length translates each set's lines shortest first, so
that the lines of a call end at about the same step: beside a run without it, how much of
a small call's cost is its longest line's tail. docs/BENCHMARKS.md and docs/INFERENCE.md
have figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from bench.common import DEV_SETS, ROOT, Report, corpus_with, cuda_problem, export_tree, read_lines

if TYPE_CHECKING:  # the workers import transcli only once their tree is on the path
    from transcli.inference.translator import Translator

SETS = list(DEV_SETS)
SEARCHES = {"greedy": ("greedy", 1), "beam5": ("beam", 5)}
# Each engine's decode settings.
ENGINES = {"torch": ["decode.engine=torch", "decode.quantize=none", "decode.cpu_gemm=blas"],
           "torch-int8": ["decode.engine=torch", "decode.quantize=int8"],
           "ct2": ["decode.engine=ct2", "decode.quantize=none"],
           "ct2-int8": ["decode.engine=ct2", "decode.quantize=int8"],
           "torch-onednn": ["decode.engine=torch", "decode.quantize=none",
                            "decode.cpu_gemm=onednn"],
           "torch-half": ["decode.engine=torch", "decode.quantize=none"],
           "ct2-half": ["decode.engine=ct2", "decode.quantize=none"]}
HALF = ("torch-half", "ct2-half")  # decode.precision auto; every other engine fp32 on CUDA
CUDA_ENGINES = ["torch", "torch-half", "ct2", "ct2-half"]
CHUNK_LINES = 500  # lines per `translate` call of a cell that runs against the clock
PAUSE_SECONDS = 0.3  # before each timed run: the engine before it stops spin-waiting


def corpus() -> Path:
    """The folder holding the dev sets (gpu-carry/corpus on a GPU machine)."""
    return corpus_with([f"{name}.{lang}" for name in SETS for lang in ("en", "es")])


def default_cpu_engine() -> str:
    """The engine a run's default settings (decode.cpu_gemm=auto) use on this CPU."""
    from transcli.inference.cpu_matmul import use_onednn

    return "torch-onednn" if use_onednn("auto") else "torch"


def engine_settings(name: str, device: str) -> list[str]:
    """The decode overrides engine `name` (torch-int8@REV runs as torch-int8) runs with."""
    base = name.split("@")[0]
    precision = ["decode.precision=auto" if base in HALF else "decode.precision=fp32"]
    return ENGINES[base] + (precision if device == "cuda" or base in HALF else [])


def ct2_problem(device: str) -> Optional[str]:
    """Why CTranslate2 cannot run on `device` here, or None."""
    try:
        import ctranslate2
    except ImportError:
        return "CTranslate2 is not installed (pip install ctranslate2)"
    if device == "cuda" and ctranslate2.get_cuda_device_count() == 0:
        return "this CTranslate2 build sees no CUDA device"
    return None


def cpu_setup(threads: int) -> None:
    """This process set up as `transcli translate` sets itself up: the OpenMP wait policy
    chosen before torch loads, torch's threads set."""
    from transcli.system import waitpolicy

    waitpolicy.choose()
    import torch

    torch.set_num_threads(threads)


def worker(args: argparse.Namespace) -> None:
    """One engine at one thread count, kept running: load a translator per search, then,
    for each JSON command read from stdin ({"set", "search", "rows", "cap"}), translate
    that set, write the output for scoring and print one JSON line. `--source`: the
    transcli of another tree (a baseline revision)."""
    if args.source:
        sys.path.insert(0, args.source)
    cpu_setup(args.threads)  # the OpenMP wait policy before torch loads, torch's threads
    held = device_memory(args.device)
    sets = {name: set_lines(name, "en", args) for name in args.sets}
    start = time.perf_counter()
    translators = {label: load(args, *SEARCHES[label]) for label in args.searches}
    load_seconds = time.perf_counter() - start
    for translator in translators.values():
        for lines in sets.values():
            translator.translate(lines[:8])  # first-call set-up, not timed
    # The first full garbage collection after loading walks every object loading made:
    # done now, it is not timed in the engine's first cell.
    gc.collect()
    print(json.dumps({"load_seconds": load_seconds,
                      "wait_policy": os.environ.get("OMP_WAIT_POLICY", "default")}), flush=True)
    for command in sys.stdin:
        cell = json.loads(command)
        result = translate_cell(translators[cell["search"]], sets[cell["set"]], cell["rows"],
                                cell["cap"], args.device)
        out = Path(args.hyps) / (f"{args.worker}-{args.threads}-{cell['set']}-{cell['search']}"
                                 f"-{cell['rows']}.es")
        out.write_text("".join(line + "\n" for line in result.pop("output")), encoding="utf-8")
        result.update(output=str(out), device_mib=(device_memory(args.device) - held) / 2**20)
        print(json.dumps(result), flush=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_rss_mib": rss}), flush=True)


def load(args: argparse.Namespace, strategy: str, beam: int) -> Translator:
    """A translator of the run for one search, as engine `args.worker` runs it."""
    from transcli.inference.translator import load_translator
    from transcli.rundir.run import open_run_dir

    name = args.worker.split("@")[0]
    return load_translator(open_run_dir(args.model, engine_settings(name, args.device) + [
        f"decode.strategy={strategy}", f"decode.beam_size={beam}", "decode.n_best=1",
        f"decode.threads={args.threads}", "decode.word_reward=0"]), args.checkpoint, args.device)


def device_memory(device: str) -> int:
    """Bytes in use on the CUDA device (every process's); 0 on the CPU."""
    if device != "cuda":
        return 0
    import torch

    free, total = torch.cuda.mem_get_info()
    return total - free


def translate_cell(translator: Translator, lines: list[str], rows: int, cap: float,
                   device: str) -> dict:
    """Translate `lines`, `rows` per call (0: all at once, or CHUNK_LINES when capped),
    stopping after `cap` seconds (at least one call); the time, CPU time, lines done,
    target tokens, torch's peak CUDA memory and the output."""
    import torch

    step = rows or (CHUNK_LINES if math.isfinite(cap) else len(lines))
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    translator.target_tokens = 0
    output: list[str] = []
    start, cpu = time.perf_counter(), time.process_time()
    while len(output) < len(lines) and (not output or time.perf_counter() - start < cap):
        output += translator.translate(lines[len(output):len(output) + step])
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else 0.0
    return {"seconds": seconds, "cpu_seconds": cpu, "lines": len(output),
            "tokens": translator.target_tokens, "torch_peak_mib": peak, "output": output}


class Worker:
    """A running `worker` subprocess: one engine at one thread count, its translators
    loaded, translating a set whenever asked."""

    def __init__(self, args: argparse.Namespace, engine: str, threads: int,
                 source: str | None):
        self.name = f"{engine} x{threads}"
        self.errors = tempfile.TemporaryFile("w+")  # read back only if the worker fails
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.translate_speed", "--model", str(args.model),
             "--checkpoint", args.checkpoint, "--lines", str(args.lines), "--worker", engine,
             "--threads", str(threads), "--hyps", args.hyps, "--device", args.device,
             "--sets", *args.sets, "--searches", *args.searches]
            + (["--source", source] if source else [])
            + (["--by-length"] if args.by_length else []),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors, text=True,
            env={**os.environ, "OMP_NUM_THREADS": str(threads)}, cwd=ROOT)
        self.ready = self.reply()  # its load time, once its translators are warm

    def reply(self) -> dict:
        """The worker's next JSON line; exits naming the worker and its error if it died."""
        for line in self.process.stdout:
            if line.startswith("{"):
                return json.loads(line)
        code = self.process.wait()
        self.errors.seek(0)
        sys.exit(f"{self.name} failed (exit status {code}):\n{self.errors.read()[-2000:]}")

    def translate(self, set_name: str, search: str, rows: int = 0,
                  cap: float = math.inf) -> dict:
        command = {"set": set_name, "search": search, "rows": rows, "cap": cap}
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self.reply()

    def close(self) -> dict:
        """Stop the worker; returns its peak RSS."""
        self.process.stdin.close()
        final = self.reply()
        self.process.wait()
        self.errors.close()
        return final


def run_cells(args: argparse.Namespace, report: Report) -> None:
    """The engines (x batch sizes) take turns cell by cell, round after round, one thread
    count after the other; with a --budget each cell stops at its share of the time left."""
    rows = args.batch_rows or [0]
    with tempfile.TemporaryDirectory() as tmp:
        sources = {engine: None for engine in args.engines}
        if args.baseline:
            base = str(export_tree(args.baseline, Path(tmp) / "base"))
            sources.update({f"{engine}@{args.baseline}": base for engine in args.engines
                            if ENGINES[engine][0] == "decode.engine=torch"})
        results: dict[tuple, list[dict]] = {}  # (engine, threads, set, search, rows): rounds
        processes: dict[tuple, dict] = {}  # (engine, threads): load time, peak RSS
        for threads in args.threads:
            workers = {engine: Worker(args, engine, threads, source)
                       for engine, source in sources.items()}
            left = args.rounds * len(cells(args, rows)) * len(workers)
            for round_ in range(args.rounds):
                for cell in cells(args, rows):
                    for engine in turns(list(workers), round_):
                        time.sleep(PAUSE_SECONDS)
                        cap = (args.started + args.budget - time.perf_counter()) / left
                        left -= 1
                        results.setdefault((engine, threads, *cell), []).append(
                            workers[engine].translate(*cell, max(1.0, cap)))
            for engine, started in workers.items():
                processes[(engine, threads)] = {**started.ready, **started.close()}
    table(list(sources), args, results, processes, report)


def cells(args: argparse.Namespace, rows: list[int]) -> list[tuple[str, str, int]]:
    """(set, search, rows per call) of every cell, in the order they run."""
    return [(name, label, n) for name in args.sets for label in args.searches for n in rows]


def turns(engines: list[str], round_: int) -> list[str]:
    """The order the engines take turns in, in round `round_`: reversed every other round,
    so that each engine runs before torch in one round and after it in the next, and a
    drift in speed during a cell favours neither."""
    return engines if round_ % 2 == 0 else engines[::-1]


def table(engines: list[str], args: argparse.Namespace, results: dict[tuple, list[dict]],
          processes: dict[tuple, dict], report: Report) -> None:
    """One line per (engine, threads, set, search, rows): its speeds, the median over
    rounds, and its speed over others' in the same rounds (`versus`). Peak memory: the
    worker's RSS; on CUDA the device's (torch's allocator peak, or for CTranslate2, whose
    allocator torch does not see, what the worker holds after the cell)."""
    width = max(map(len, engines)) + 2
    report.say(f"{'engine':<{width}}{'thr':>4} {'set':<18}{'search':<8}{'rows':>6}{'sent/s':>9}"
               f"{'cpu sent/s':>11}{'tok/s':>8}" + "".join(
                   f"{name:>19}" for name in versus_names(args)) +
               f"{'BLEU':>7}{'peak MiB':>9}{'load s':>8}")
    for engine in engines:
        for threads in args.threads:
            process = processes[(engine, threads)]
            for name, label, n in cells(args, args.batch_rows or [0]):
                key = (engine, threads, name, label, n)
                rounds, score = results[key], bleu(results[key][-1], name, args)
                peak = (process["peak_rss_mib"] if args.device == "cpu" else rounds[-1][
                    "device_mib" if engine.startswith("ct2") else "torch_peak_mib"])
                report.say(f"{engine:<{width}}{threads:>4} {name:<18}{label:<8}{n or 'all':>6}"
                           f"{rate(rounds, 'lines', 'seconds'):>9.1f}"
                           f"{rate(rounds, 'lines', 'cpu_seconds'):>11.1f}"
                           f"{rate(rounds, 'tokens', 'seconds'):>8.0f}" + "".join(
                               f"{ratio:>19}" for ratio in versus(args, results, key))
                           + f"{score:>7.1f}{peak:>9.0f}{process['load_seconds']:>8.2f}")
                report.results.setdefault("cells", []).append(
                    {"engine": engine, "threads": threads, "set": name, "search": label,
                     "rows": n, "rounds": rounds, "bleu": score, "peak_mib": peak})
    policies = {f"{engine} x{threads}": process["wait_policy"]
                for (engine, threads), process in processes.items()}
    alike = set(policies.values())
    report.say("OpenMP wait policy (transcli.system.waitpolicy): " + (
        f"{alike.pop()} in every worker" if len(alike) == 1
        else ", ".join(f"{name} {policy}" for name, policy in policies.items())))


def versus_names(args: argparse.Namespace) -> list[str]:
    """The ratio columns: over torch fp32; over the same engine at --baseline; over the
    largest of --batch-rows, in time and in CPU time."""
    names = ["vs torch"] + (["vs REV"] if args.baseline else [])
    return names + (["vs largest", "cpu vs largest"] if args.batch_rows else [])


def versus(args: argparse.Namespace, results: dict[tuple, list[dict]], key: tuple) -> list[str]:
    """A cell's ratios (`versus_names`), each paired round by round (`paired_ratio`)."""
    engine, threads, name, label, n = key
    rounds = results[key]
    ratios = [paired_ratio(results.get(("torch", threads, name, label, n)), rounds)]
    if args.baseline:
        base = f"{engine.split('@')[0]}@{args.baseline}"
        ratios.append(paired_ratio(results.get((base, threads, name, label, n)), rounds))
    if args.batch_rows:
        largest = results.get((engine, threads, name, label, max(args.batch_rows)))
        ratios += [paired_ratio(largest, rounds), paired_ratio(largest, rounds, "cpu_seconds")]
    return ratios


def rate(rounds: list[dict], amount: str, per: str) -> float:
    """The median over rounds of `amount` per `per` (e.g. lines per second)."""
    return statistics.median(row[amount] / max(row[per], 1e-9) for row in rounds)


def paired_ratio(baseline: list[dict] | None, rows: list[dict], time: str = "seconds") -> str:
    """How many times faster a cell's `rows` (one per round) ran than `baseline`'s in the
    same rounds, per line (in `time`: seconds, or cpu_seconds): the median of the rounds'
    ratios, with the lowest and highest; "" without a baseline."""
    if not baseline:
        return ""
    if baseline is rows:
        return "1.00x"
    ratios = sorted((base[time] / base.get("lines", 1)) / (row[time] / row.get("lines", 1))
                    for base, row in zip(baseline, rows))
    spread = f" ({ratios[0]:.2f}-{ratios[-1]:.2f})" if len(ratios) > 1 else ""
    return f"{statistics.median(ratios):.2f}x{spread}"


def bleu(row: dict, name: str, args: argparse.Namespace) -> float:
    """BLEU of a cell's output against the first references of set `name`."""
    from sacrebleu.metrics import BLEU

    hyps = Path(row["output"]).read_text(encoding="utf-8").splitlines()
    refs = set_lines(name, "es", args)[:len(hyps)]
    return BLEU().corpus_score(hyps, [refs]).score


def set_lines(name: str, side: str, args: argparse.Namespace) -> list[str]:
    """The first --lines lines of set `name`'s `side` ("en" or "es"), in the order they are
    translated: with --by-length, by the English lines' length in words."""
    lines = read_lines(corpus() / f"{name}.{side}", args.lines)
    if not args.by_length:
        return lines
    english = lines if side == "en" else read_lines(corpus() / f"{name}.en", args.lines)
    return [lines[i] for i in sorted(range(len(lines)), key=lambda i: len(english[i].split()))]


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="trained run dir")
    parser.add_argument("--checkpoint", default="best")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--lines", type=int, help="lines per test set (default: 1000 on the "
                                                  "CPU, all on CUDA)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (CUDA: 1)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="(CUDA: 1)")
    parser.add_argument("--engines", nargs="+", choices=list(ENGINES),
                        help="default: torch, torch-int8, ct2, ct2-int8 (CPU); "
                             f"{', '.join(CUDA_ENGINES)} (CUDA)")
    parser.add_argument("--sets", nargs="+", default=SETS, choices=SETS)
    parser.add_argument("--searches", nargs="+", default=list(SEARCHES), choices=list(SEARCHES))
    parser.add_argument("--batch-rows", type=int, nargs="+",
                        help="lines per translate call, each size a cell (CPU)")
    parser.add_argument("--by-length", action="store_true",
                        help="translate each set's lines shortest first (module doc)")
    parser.add_argument("--baseline",
                        help="a git revision whose torch engines (those asked for) run beside")
    parser.add_argument("--budget", type=float, default=math.inf,
                        help="seconds for the whole run: each cell takes its share of what "
                        "is left")
    parser.add_argument("--out", type=Path, help="also write the table into this folder")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    parser.add_argument("--hyps", help=argparse.SUPPRESS)  # the workers' translations
    args = parser.parse_args(argv)
    cuda = args.device == "cuda"
    args.lines = args.lines or (10**9 if cuda else 1000)
    if cuda and not args.worker:
        args.rounds, args.threads = 1, args.threads[:1]
    args.engines = args.engines or (CUDA_ENGINES if cuda else [default_cpu_engine()]
                                    if args.batch_rows else ["torch", "torch-int8", "ct2",
                                                             "ct2-int8"])
    return args


def problem(args: argparse.Namespace) -> Optional[str]:
    """Why the benchmark cannot run here, or None."""
    if not (corpus() / f"{args.sets[0]}.en").is_file():
        return f"{corpus()}: no {args.sets[0]}.en: the benchmark needs the dev sets"
    if args.device == "cuda" and (problem := cuda_problem()):
        return f"--device cuda: {problem}"
    if args.device == "cpu" and any(engine in HALF for engine in args.engines):
        return "torch-half and ct2-half run on CUDA only (--device cuda)"
    return None


def prepare_ct2_exports(args: argparse.Namespace) -> None:
    """Make the cached exports first, so that exporting is not counted as loading."""
    from transcli.export.ct2 import cached_export
    from transcli.rundir.run import open_run_dir

    run = open_run_dir(args.model)
    for engine in args.engines:
        if engine.startswith("ct2"):
            quantize = "int8" if engine.endswith("int8") else "none"
            cached_export(run, run.checkpoint(args.checkpoint), quantize)


def header(args: argparse.Namespace, report: Report) -> None:
    """What ran where: the model, the lines, the machine and its load."""
    import torch

    lines = args.lines if args.lines < 10**9 else "all"
    order = ", shortest first" if args.by_length else ""
    report.say(f"model {args.model} ({args.checkpoint}); {lines} lines per set{order}; load "
               f"average {os.getloadavg()[0]:.2f}")
    if args.device == "cuda":
        report.say(f"CUDA: {torch.cuda.get_device_name()}, torch {torch.__version__}; budget "
                   f"{args.budget:g} s")
        return
    from transcli.inference.cpu_matmul import cpu_vendor

    pick = "onednn" if default_cpu_engine() == "torch-onednn" else "blas"
    report.say(f"CPU: {cpu_vendor() or 'vendor unknown'}, "
               f"{torch.backends.cpu.get_cpu_capability()}; decode.cpu_gemm=auto takes {pick} "
               f"here; {args.rounds} rounds")


def main() -> None:
    args = parse_args()
    args.started = time.perf_counter()
    if args.worker:
        args.threads = args.threads[0]
        worker(args)
        return
    trouble = problem(args)
    if trouble:
        sys.exit(f"bench.translate_speed: {trouble}")
    report = Report("translate-speed", args.out)
    with tempfile.TemporaryDirectory() as hyps:
        args.hyps = args.hyps or hyps
        header(args, report)
        for engine in [e for e in args.engines if e.startswith("ct2") and ct2_problem(args.device)]:
            report.say(f"{engine}: skipped, {ct2_problem(args.device)}")
            args.engines.remove(engine)
        if not args.engines:
            sys.exit("bench.translate_speed: none of the engines asked for can run here")
        prepare_ct2_exports(args)
        run_cells(args, report)
    report.say(f"load average at the end {os.getloadavg()[0]:.2f}")
    report.save()


if __name__ == "__main__":
    main()
