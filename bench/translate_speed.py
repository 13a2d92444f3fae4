"""Translation speed side by side: engines, precisions and batch sizes, on the CPU or CUDA.

    python -m bench.translate_speed --model RUN [--lines 1000] [--rounds 3]
    python -m bench.translate_speed --model RUN --engines torch torch-uncached
    python -m bench.translate_speed --model RUN --engines torch --baseline d9713a4
    python -m bench.translate_speed --model RUN --batch-rows 1 16 1000 --threads 1
    python -m bench.translate_speed --model RUN --device cuda --budget 90 --out DIR

Translates the first --lines lines of dev.tatoeba.en (short conversational sentences) and
dev.newstest2012.en (long news sentences) with greedy search and beam 5 (--sets and
--searches choose), through `Translator` -- the code `transcli translate` runs -- with
each engine and thread count: `torch` (fp32, products through torch's BLAS), `torch-int8`
(int8 weights, `quantize.quantize_int8`), `ct2` and `ct2-int8` (the run's CTranslate2
export, made beforehand so it is not timed), `torch-uncached` (the decoder re-run over the
whole prefix every step: the reference the cache is measured against), `torch-onednn`
(float32 products through oneDNN: `decode.cpu_gemm=onednn`; the header says which of the
two `decode.cpu_gemm=auto`, the default, takes on this CPU) and, on CUDA, `torch-half`
and `ct2-half` (`decode.precision` auto: bf16, or fp16 without it). With `--baseline
REV`, each torch engine asked for also runs as that git revision's code runs it
(`torch@REV`, ...; the tree exported to a temp dir). Every engine searches without a word
reward (CTranslate2 has none).

`--batch-rows N ...` (CPU): each set is translated N lines per `translate` call, as
`serve` hands the model one merged batch of requests after another; every size is a cell
of its own, and each size's speed is also given over the largest size's, round by round.
It runs the engine the default `decode.cpu_gemm=auto` runs on this CPU unless --engines
says.

Each (engine, threads) runs in a subprocess of its own, holding a translator per search, so
peak RSS and load time are its own; on the CPU it stays running while its thread count is
measured, and the engines take turns cell by cell, each after a short pause, in an order
reversed every other round, so that background load hits all alike. Prints, per cell, the
median over rounds of sentences/s, of sentences per CPU second of the worker (on a machine
shared with other jobs these count the work, not the waits) and of target tokens/s; each
engine's speed relative to torch fp32 (and to the same engine at REV, or to the largest
batch size) as the median of the rounds' own ratios, the lowest and highest in brackets;
BLEU of the output against the references, peak memory and load time.

`--device cuda` runs the CUDA engines (torch, torch-half, ct2, ct2-half) one after another,
one round; `--budget SECONDS` bounds the whole run: each cell translates its set in chunks
until its share of the time left is spent, and the lines it reached are counted and
scored. ct2 rows are skipped, with the reason, where CTranslate2 is missing or has no CUDA.
Peak memory on CUDA is torch's allocator peak for torch engines and, for CTranslate2 (whose
allocator torch does not see), the device memory the worker holds after the cell.

`--out DIR` also writes the table into DIR as translate-speed.txt and translate-speed.json.
On a CPU shared with other jobs torch's OpenMP threads spin-wait for cores the others hold;
transcli then sets OMP_WAIT_POLICY=PASSIVE (transcli.system.waitpolicy), and the line under
the table says which policy each worker ran with. The header prints the load average.
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

from bench.common import CORPORA, DEV_SETS, ROOT, cpu_setup, export_tree, read_lines

if TYPE_CHECKING:  # the workers import transcli only once their tree is on the path
    from transcli.inference.translator import Translator

SETS = list(DEV_SETS)
SEARCHES = {"greedy": ("greedy", 1), "beam5": ("beam", 5)}
# Each engine's decode settings; torch-uncached is torch with the cache off.
ENGINES = {"torch": ["decode.engine=torch", "decode.quantize=none", "decode.cpu_gemm=blas"],
           "torch-int8": ["decode.engine=torch", "decode.quantize=int8"],
           "ct2": ["decode.engine=ct2", "decode.quantize=none"],
           "ct2-int8": ["decode.engine=ct2", "decode.quantize=int8"],
           "torch-uncached": ["decode.engine=torch", "decode.quantize=none",
                              "decode.cpu_gemm=blas"],
           "torch-onednn": ["decode.engine=torch", "decode.quantize=none",
                            "decode.cpu_gemm=onednn"],
           "torch-half": ["decode.engine=torch", "decode.quantize=none"],
           "ct2-half": ["decode.engine=ct2", "decode.quantize=none"]}
HALF = ("torch-half", "ct2-half")  # decode.precision auto; every other engine fp32 on CUDA
CUDA_ENGINES = ["torch", "torch-half", "ct2", "ct2-half"]
CARRIED_CORPUS = ROOT / "gpu-carry" / "corpus"  # the dev sets `make gpu-carry` copies
CHUNK_LINES = 500  # lines per `translate` call of a cell that runs against the clock
PAUSE_SECONDS = 0.3  # before each timed run: the engine before it stops spin-waiting
TABLE = ("translate-speed.txt", "translate-speed.json")  # what --out DIR receives


def corpus() -> Path:
    """The folder holding the dev sets: gpu-carry/corpus (a GPU machine), else the shared
    corpora."""
    names = [f"{name}.{lang}" for name in SETS for lang in ("en", "es")]
    if all((CARRIED_CORPUS / name).is_file() for name in names):
        return CARRIED_CORPUS
    return CORPORA


def cpu_description() -> str:
    """The CPU's vendor, torch's vector ISA for it, and what decode.cpu_gemm=auto picks."""
    import torch

    from transcli.inference.cpu_products import cpu_vendor, use_onednn

    pick = "onednn" if use_onednn("auto") else "blas"
    return (f"{cpu_vendor() or 'vendor unknown'}, {torch.backends.cpu.get_cpu_capability()}; "
            f"decode.cpu_gemm=auto takes {pick} here")


def default_cpu_engine() -> str:
    """The engine a run's default settings (decode.cpu_gemm=auto) use on this CPU."""
    from transcli.inference.cpu_products import use_onednn

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


# ----------------------------------------------------------------------------- the worker


def worker(args: argparse.Namespace) -> None:
    """One engine at one thread count, kept running: load a translator per search, then,
    for each JSON command read from stdin ({"set", "search", "rows", "cap"}), translate
    that set, write the output for scoring and print one JSON line. `--source`: the
    transcli of another tree (a baseline revision)."""
    if args.source:
        sys.path.insert(0, args.source)
    cpu_setup(args.threads)  # the OpenMP wait policy before torch loads, torch's threads
    held = device_memory(args.device)
    sets = {name: read_lines(corpus() / f"{name}.en", args.lines) for name in args.sets}
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
    translator = load_translator(open_run_dir(args.model, engine_settings(name, args.device) + [
        f"decode.strategy={strategy}", f"decode.beam_size={beam}", "decode.n_best=1",
        f"decode.threads={args.threads}", "decode.word_reward=0"]), args.checkpoint, args.device)
    translator.engine.cached = name != "torch-uncached"
    return translator


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
            + (["--source", source] if source else []),
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


# ----------------------------------------------------------------------------- the CPU


def cpu_main(args: argparse.Namespace, report: Report) -> None:
    """The engines (x batch sizes) take turns cell by cell, round after round, one thread
    count after the other."""
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
            for round_ in range(args.rounds):
                for cell in cells(args, rows):
                    for engine in turns(list(workers), round_):
                        time.sleep(PAUSE_SECONDS)
                        results.setdefault((engine, threads, *cell), []).append(
                            workers[engine].translate(*cell))
            for engine, started in workers.items():
                processes[(engine, threads)] = {**started.ready, **started.close()}
    cpu_table(list(sources), args, results, processes, report)


def cells(args: argparse.Namespace, rows: list[int]) -> list[tuple[str, str, int]]:
    """(set, search, rows per call) of every cell, in the order they run."""
    return [(name, label, n) for name in args.sets for label in args.searches for n in rows]


def turns(engines: list[str], round_: int) -> list[str]:
    """The order the engines take turns in, in round `round_`: reversed every other round,
    so that each engine runs before torch in one round and after it in the next, and a
    drift in speed during a cell favours neither."""
    return engines if round_ % 2 == 0 else engines[::-1]


def cpu_table(engines: list[str], args: argparse.Namespace, results: dict[tuple, list[dict]],
              processes: dict[tuple, dict], report: Report) -> None:
    """One line per (engine, threads, set, search, rows): its speeds, the median over
    rounds, and its speed over others' in the same rounds (`versus`)."""
    width = max(map(len, engines)) + 2
    report.say(f"{'engine':<{width}}{'thr':>4} {'set':<18}{'search':<8}{'rows':>6}{'sent/s':>9}"
               f"{'cpu sent/s':>11}{'tok/s':>8}" + "".join(
                   f"{name:>19}" for name in versus_names(args)) +
               f"{'BLEU':>7}{'RSS MiB':>9}{'load s':>8}")
    for engine in engines:
        for threads in args.threads:
            process = processes[(engine, threads)]
            for name, label, n in cells(args, args.batch_rows or [0]):
                rounds = results[(engine, threads, name, label, n)]
                report.say(f"{engine:<{width}}{threads:>4} {name:<18}{label:<8}{n or 'all':>6}"
                           f"{rate(rounds, 'lines', 'seconds'):>9.1f}"
                           f"{rate(rounds, 'lines', 'cpu_seconds'):>11.1f}"
                           f"{rate(rounds, 'tokens', 'seconds'):>8.0f}" + "".join(
                               f"{ratio:>19}" for ratio in versus(
                                   args, results, (engine, threads, name, label, n)))
                           + f"{bleu(rounds[-1], name):>7.1f}"
                           f"{process['peak_rss_mib']:>9.0f}{process['load_seconds']:>8.2f}")
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


def bleu(row: dict, name: str) -> float:
    """BLEU of a cell's output against the first references of set `name`."""
    from sacrebleu.metrics import BLEU

    hyps = Path(row["output"]).read_text(encoding="utf-8").splitlines()
    refs = read_lines(corpus() / f"{name}.es", len(hyps))
    return BLEU().corpus_score(hyps, [refs]).score


# ----------------------------------------------------------------------------- CUDA


def cuda_main(args: argparse.Namespace, report: Report) -> None:
    """The CUDA engines one after another, each cell against the clock of --budget (which
    started with the run: exports and loading count)."""
    deadline = args.started + args.budget
    engines = [e for e in args.engines if not (e.startswith("ct2") and ct2_problem("cuda"))]
    for skipped in (e for e in args.engines if e not in engines):
        report.say(f"{skipped}: skipped, {ct2_problem('cuda')}")
    runs = [(e, name, label) for e in engines for name in args.sets for label in args.searches]
    report.say(f"{'engine':<12}{'set':<18}{'search':<8}{'lines':>6}{'sent/s':>9}{'tok/s':>9}"
               f"{'BLEU':>7}{'peak MiB':>10}{'load s':>8}")
    load_estimate, done = 0.0, 0
    for engine in engines:
        started = time.perf_counter()
        worker = Worker(args, engine, args.threads[0], None)
        load_estimate = load_estimate or time.perf_counter() - started
        for name in args.sets:
            for label in args.searches:
                left = deadline - time.perf_counter() - load_estimate * (
                    len(engines) - engines.index(engine) - 1)
                cap = max(1.0, left / (len(runs) - done))
                row = worker.translate(name, label, 0, cap)
                done += 1
                cuda_row(report, engine, name, label, row, worker.ready["load_seconds"])
        worker.close()


def cuda_row(report: Report, engine: str, name: str, label: str, row: dict,
             load_seconds: float) -> None:
    """One cell's line of the CUDA table."""
    peak = row["device_mib"] if engine.startswith("ct2") else row["torch_peak_mib"]
    score = bleu(row, name)
    report.say(f"{engine:<12}{name:<18}{label:<8}{row['lines']:>6}"
               f"{row['lines'] / row['seconds']:>9.1f}{row['tokens'] / row['seconds']:>9.0f}"
               f"{score:>7.1f}{peak:>10.0f}{load_seconds:>8.2f}", row={
                   "engine": engine, "set": name, "search": label, **{
                       k: row[k] for k in ("lines", "seconds", "tokens")},
                   "bleu": score, "peak_mib": peak, "load_seconds": load_seconds})


# ----------------------------------------------------------------------------- main


class Report:
    """The table as it is printed, kept for --out DIR (text and JSON rows)."""

    def __init__(self, out: Optional[Path]):
        self.out, self.lines, self.rows = out, [], []

    def say(self, text: str, row: Optional[dict] = None) -> None:
        print(text, flush=True)
        self.lines.append(text)
        if row:
            self.rows.append(row)

    def save(self) -> None:
        if self.out:
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / TABLE[0]).write_text("\n".join(self.lines) + "\n", encoding="utf-8")
            (self.out / TABLE[1]).write_text(json.dumps(
                {"table": self.lines, "rows": self.rows}, indent=1) + "\n", encoding="utf-8")


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="trained run dir")
    parser.add_argument("--checkpoint", default="best")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--lines", type=int, help="lines per test set (default: 1000 on the "
                                                  "CPU, all on CUDA)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (CPU)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--engines", nargs="+", choices=list(ENGINES),
                        help="default: torch, torch-int8, ct2, ct2-int8 (CPU); "
                             f"{', '.join(CUDA_ENGINES)} (CUDA)")
    parser.add_argument("--sets", nargs="+", default=SETS, choices=SETS)
    parser.add_argument("--searches", nargs="+", default=list(SEARCHES), choices=list(SEARCHES))
    parser.add_argument("--batch-rows", type=int, nargs="+",
                        help="lines per translate call, each size a cell (CPU)")
    parser.add_argument("--baseline",
                        help="a git revision whose torch engines (those asked for) run beside")
    parser.add_argument("--budget", type=float, default=math.inf,
                        help="seconds for the whole run (CUDA): cells share what is left")
    parser.add_argument("--out", type=Path, help="also write the table into this folder")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    parser.add_argument("--hyps", help=argparse.SUPPRESS)  # the workers' translations
    args = parser.parse_args(argv)
    cuda = args.device == "cuda"
    args.lines = args.lines or (10**9 if cuda else 1000)
    args.engines = args.engines or (CUDA_ENGINES if cuda else [default_cpu_engine()]
                                    if args.batch_rows else ["torch", "torch-int8", "ct2",
                                                             "ct2-int8"])
    return args


def problem(args: argparse.Namespace) -> Optional[str]:
    """Why the benchmark cannot run here, or None."""
    if not (corpus() / f"{args.sets[0]}.en").is_file():
        return f"{CORPORA} not found: the benchmark needs the dev sets (or gpu-carry/corpus)"
    if args.device == "cuda":
        try:
            import torch
        except ImportError as exc:
            return f"{sys.executable} cannot import torch ({exc})"
        if not torch.cuda.is_available():
            return f"--device cuda: no CUDA device here (torch {torch.__version__})"
    elif any(engine in HALF for engine in args.engines):
        return "torch-half and ct2-half run on CUDA only (--device cuda)"
    return None


def prepare_ct2_exports(args: argparse.Namespace) -> None:
    """Make the cached exports first, so that exporting is not counted as loading."""
    from transcli.export.ct2 import cached_export
    from transcli.rundir.run import open_run_dir

    run = open_run_dir(args.model)
    for engine in args.engines:
        if engine.startswith("ct2") and not ct2_problem(args.device):
            quantize = "int8" if engine.endswith("int8") else "none"
            cached_export(run, run.checkpoint(args.checkpoint), quantize)


def header(args: argparse.Namespace, report: Report) -> None:
    """What ran where: the model, the lines, the machine and its load."""
    import torch

    lines = args.lines if args.lines < 10**9 else "all"
    report.say(f"model {args.model} ({args.checkpoint}); {lines} lines per set; load average "
               f"{os.getloadavg()[0]:.2f}")
    if args.device == "cuda":
        report.say(f"CUDA: {torch.cuda.get_device_name()}, torch {torch.__version__}; budget "
                   f"{args.budget:g} s")
    else:
        report.say(f"CPU: {cpu_description()}; {args.rounds} rounds")


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
    report = Report(args.out)
    with tempfile.TemporaryDirectory() as hyps:
        args.hyps = args.hyps or hyps
        prepare_ct2_exports(args)
        header(args, report)
        if args.device == "cuda":
            cuda_main(args, report)
        else:
            cpu_main(args, report)
    report.say(f"load average at the end {os.getloadavg()[0]:.2f}")
    report.save()


if __name__ == "__main__":
    main()
