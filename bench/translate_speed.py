"""Translation speed of the engines side by side: torch and CTranslate2, float32 and int8.

    .venv/bin/python -m bench.translate_speed --model RUN_DIR [--lines 1000] [--rounds 3]
    .venv/bin/python -m bench.translate_speed --model RUN_DIR --engines torch torch-uncached
    .venv/bin/python -m bench.translate_speed --model RUN_DIR --engines torch --baseline d9713a4
    .venv/bin/python -m bench.translate_speed --model RUN_DIR --engines torch-int8 --baseline REV

Translates the first --lines lines of ../shared/corpora/en-es/dev.tatoeba.en (short
conversational sentences) and dev.newstest2012.en (long news sentences) with greedy search
and beam 5, through `Translator` -- the code `transcli translate` runs -- with each engine
and thread count: `torch` (fp32, products through torch's BLAS), `torch-int8` (int8 weights,
`quantize.quantize_int8`), `ct2` and `ct2-int8` (the run's CTranslate2 export, made
beforehand so it is not timed), `torch-uncached` (the decoder re-run over the whole prefix
every step: the reference the cache is measured against) and `torch-onednn` (float32
products through oneDNN instead of torch's BLAS: `decode.cpu_gemm=onednn`,
`transcli.inference.cpu_products`; the header says which of the two
`decode.cpu_gemm=auto`, the default, takes on this CPU). With `--baseline REV`, each
torch engine asked for also runs as that git revision's code runs it (`torch@REV`,
`torch-int8@REV`, ...; the tree exported to a temp dir). Every engine searches without a
word reward (CTranslate2 has none).

Each (engine, threads) runs in a subprocess of its own, holding a translator per search, so
peak RSS and load time are its own; it stays running while its thread count is measured.
For each set and search the engines then take turns, each after a short pause, in an order
reversed every other round, so that background load hits all alike and each engine's time
has torch's, run just before or after it, beside it. Prints, per cell, the median over
rounds of sentences/s and of target tokens/s, and each engine's speed relative to torch fp32
(and to the same engine at REV) as the median of the rounds' own ratios, the lowest and
highest in brackets; BLEU of the output against the references, peak RSS and load time.

On a CPU shared with other jobs, torch's OpenMP threads spin-wait for cores the others
hold; transcli then sets OMP_WAIT_POLICY=PASSIVE (transcli.system.waitpolicy), and the line under
the table says which policy each worker ran with. The header prints the load average:
compare figures from an idle machine.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import CORPORA, DEV_SETS, ROOT, cpu_setup, cpu_translator, export_tree, read_lines

SEARCHES = {"greedy": ("greedy", 1), "beam5": ("beam", 5)}
ENGINES = {"torch": ("torch", "none", True), "torch-int8": ("torch", "int8", True),
           "ct2": ("ct2", "none", True), "ct2-int8": ("ct2", "int8", True),
           "torch-uncached": ("torch", "none", False), "torch-onednn": ("torch", "none", True)}


def cpu_description() -> str:
    """The CPU's vendor, torch's vector ISA for it, and what decode.cpu_gemm=auto picks."""
    import torch

    from transcli.inference.cpu_products import cpu_vendor, use_onednn

    pick = "onednn" if use_onednn("auto") else "blas"
    return (f"{cpu_vendor() or 'vendor unknown'}, {torch.backends.cpu.get_cpu_capability()}; "
            f"decode.cpu_gemm=auto takes {pick} here")


def worker(args: argparse.Namespace) -> None:
    """One engine at one thread count, kept running: load a translator per search, then,
    for each "SET SEARCH" line read from stdin, translate that set, write the output for
    scoring and print one JSON line. `--source`: the transcli of another tree (a baseline
    revision)."""
    if args.source:
        sys.path.insert(0, args.source)
    cpu_setup(args.threads)
    name = args.worker.split("@")[0]  # torch-int8@REV runs as torch-int8
    engine, quantize, cached = ENGINES[name]
    sets = {name: read_lines(CORPORA / f"{name}.en", args.lines) for name in DEV_SETS}
    translators = {}
    load_seconds = None
    for label, (strategy, beam) in SEARCHES.items():
        start = time.perf_counter()
        translator = cpu_translator(args.model, args.checkpoint, args.threads, [
            f"decode.engine={engine}", f"decode.quantize={quantize}",
            f"decode.strategy={strategy}", f"decode.beam_size={beam}", "decode.n_best=1",
            f"decode.cpu_gemm={'onednn' if name == 'torch-onednn' else 'blas'}"])
        load_seconds = load_seconds or time.perf_counter() - start
        translator.engine.cached = cached
        for lines in sets.values():
            translator.translate(lines[:8])  # first-call set-up, not timed
        translators[label] = translator
    # The first full garbage collection after loading walks every object loading made:
    # done now, it is not timed in the engine's first cell.
    gc.collect()
    print(json.dumps({"load_seconds": load_seconds,
                      "wait_policy": os.environ.get("OMP_WAIT_POLICY", "default")}), flush=True)
    for command in sys.stdin:
        set_name, label = command.split()
        translator, lines = translators[label], sets[set_name]
        translator.target_tokens = 0
        start = time.perf_counter()
        output = translator.translate(lines)
        seconds = time.perf_counter() - start
        out = Path(args.out) / f"{args.worker}-{args.threads}-{set_name}-{label}.es"
        out.write_text("".join(line + "\n" for line in output), encoding="utf-8")
        print(json.dumps({"seconds": seconds, "lines": len(lines),
                          "tokens": translator.target_tokens, "output": str(out)}), flush=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_rss_mib": rss}), flush=True)


def bleu(hyp: Path, name: str, lines: int) -> float:
    from sacrebleu.metrics import BLEU

    refs = read_lines(CORPORA / f"{name}.es", lines)
    return BLEU().corpus_score(hyp.read_text(encoding="utf-8").splitlines(), [refs]).score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="trained run dir")
    parser.add_argument("--checkpoint", default="best")
    parser.add_argument("--lines", type=int, default=1000, help="lines per test set")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--engines", nargs="+", default=["torch", "torch-int8", "ct2", "ct2-int8"],
                        choices=list(ENGINES))
    parser.add_argument("--baseline",
                        help="a git revision whose torch engines (those asked for) run beside")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    parser.add_argument("--out", default="/tmp/transcli-translate-speed", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        args.threads = args.threads[0]
        worker(args)
        return
    if not CORPORA.is_dir():
        sys.exit(f"{CORPORA} not found: the benchmark needs the shared corpora")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if any(ENGINES[e][0] == "ct2" for e in args.engines):
        prepare_ct2_exports(args)
    print(f"model {args.model} ({args.checkpoint}); {args.lines} lines per set; "
          f"{args.rounds} rounds; load average {os.getloadavg()[0]:.2f}", flush=True)
    print(f"CPU: {cpu_description()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        sources = {engine: None for engine in args.engines}
        if args.baseline:
            base = str(export_tree(args.baseline, Path(tmp) / "base"))
            sources.update({f"{engine}@{args.baseline}": base for engine in args.engines
                            if ENGINES[engine][0] == "torch"})
        results: dict[tuple, list[dict]] = {}  # (engine, threads, set, search): rounds
        processes: dict[tuple, dict] = {}  # (engine, threads): load time, peak RSS
        for threads in args.threads:
            workers = {engine: Worker(args, engine, threads, source)
                       for engine, source in sources.items()}
            for round_ in range(args.rounds):
                for name in DEV_SETS:
                    for label in SEARCHES:
                        for engine in turns(list(workers), round_):
                            time.sleep(PAUSE_SECONDS)
                            results.setdefault((engine, threads, name, label), []).append(
                                workers[engine].translate(name, label))
            for engine, started in workers.items():
                processes[(engine, threads)] = {**started.ready, **started.close()}
    report(list(sources), args, results, processes)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


def prepare_ct2_exports(args: argparse.Namespace) -> None:
    """Make the cached exports first, so that exporting is not counted as loading."""
    from transcli.export.ct2 import cached_export
    from transcli.rundir.run import open_run_dir

    run = open_run_dir(args.model)
    for engine in args.engines:
        if ENGINES[engine][0] == "ct2":
            cached_export(run, run.checkpoint(args.checkpoint), ENGINES[engine][1])


PAUSE_SECONDS = 0.3  # before each timed run: the engine before it stops spin-waiting


def turns(engines: list[str], round_: int) -> list[str]:
    """The order the engines take turns in, in round `round_`: reversed every other round,
    so that each engine runs before torch in one round and after it in the next, and a
    drift in speed during a cell favours neither."""
    return engines if round_ % 2 == 0 else engines[::-1]


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
             "--threads", str(threads), "--out", args.out]
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

    def translate(self, set_name: str, search: str) -> dict:
        self.process.stdin.write(f"{set_name} {search}\n")
        self.process.stdin.flush()
        return self.reply()

    def close(self) -> dict:
        """Stop the worker; returns its peak RSS."""
        self.process.stdin.close()
        final = self.reply()
        self.process.wait()
        self.errors.close()
        return final


def report(engines: list[str], args: argparse.Namespace, results: dict[tuple, list[dict]],
           processes: dict[tuple, dict]) -> None:
    """One line per (engine, threads, set, search): its speed, the median over rounds, and
    its speed over torch fp32's and, with --baseline, over the same engine's at the baseline
    revision (`paired_ratio`)."""
    width = max(map(len, engines)) + 2
    print(f"{'engine':<{width}}{'thr':>4} {'set':<18}{'search':<8}{'sent/s':>9}{'tok/s':>9}"
          f"{'vs torch':>19}{'vs REV':>19}{'BLEU':>7}{'RSS MiB':>9}{'load s':>8}")
    for engine in engines:
        for threads in args.threads:
            process = processes[(engine, threads)]
            for name in DEV_SETS:
                for label in SEARCHES:
                    rows = results[(engine, threads, name, label)]
                    rate = statistics.median(row["lines"] / row["seconds"] for row in rows)
                    tokens = statistics.median(row["tokens"] / row["seconds"] for row in rows)
                    versus = [paired_ratio(results.get((other, threads, name, label)), rows)
                              for other in ("torch", f"{engine}@{args.baseline}")]
                    print(f"{engine:<{width}}{threads:>4} {name:<18}{label:<8}{rate:>9.1f}"
                          f"{tokens:>9.0f}{versus[0]:>19}{versus[1]:>19}"
                          f"{bleu(Path(rows[-1]['output']), name, args.lines):>7.1f}"
                          f"{process['peak_rss_mib']:>9.0f}{process['load_seconds']:>8.2f}")
    policies = {f"{engine} x{threads}": process["wait_policy"]
                for (engine, threads), process in processes.items()}
    alike = set(policies.values())
    print("OpenMP wait policy (transcli.system.waitpolicy): " + (
        f"{alike.pop()} in every worker" if len(alike) == 1
        else ", ".join(f"{name} {policy}" for name, policy in policies.items())))


def paired_ratio(baseline: list[dict] | None, rows: list[dict]) -> str:
    """How many times faster a cell's `rows` (one per round) ran than `baseline`'s in the
    same rounds: the median of the rounds' ratios, with the lowest and highest; "" without
    a baseline."""
    if not baseline:
        return ""
    if baseline is rows:
        return "1.00x"
    ratios = sorted(base["seconds"] / row["seconds"] for base, row in zip(baseline, rows))
    spread = f" ({ratios[0]:.2f}-{ratios[-1]:.2f})" if len(ratios) > 1 else ""
    return f"{statistics.median(ratios):.2f}x{spread}"


if __name__ == "__main__":
    main()
