"""`transcli prepare` speed and memory on the shared en-es corpus, and on 1M pairs.

Runs the real CLI in a child process per corpus and reports wall time, pairs/s and
the child's peak RSS (from wait4, so each figure is that run's alone). The 1M-pair
corpus is the 189K-pair train corpus repeated, written to a temp dir; with
--unique each repeat gets a numbered suffix so no pair is a duplicate and every
pass (sentencepiece included) sees the full million.

    .venv/bin/python -m bench.prepare_speed [--config configs/small.yaml] [--pairs 1000000]
                                            [--unique]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import CORPORA, ROOT


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "configs" / "small.yaml"))
    parser.add_argument("--pairs", type=int, default=1_000_000, help="size of the big corpus")
    parser.add_argument("--unique", action="store_true", help="make every repeated pair distinct")
    args = parser.parse_args()
    src, tgt = CORPORA / "train.en", CORPORA / "train.es"
    if not (src.is_file() and tgt.is_file()):
        print(f"skipped: {CORPORA} not found (the shared corpora are not on this machine)")
        return
    print(f"config {Path(args.config).name}; {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f} at start (the machine is shared: figures are pessimistic)")
    with tempfile.TemporaryDirectory(prefix="prepare-bench-") as tmp:
        folder = Path(tmp)
        run("train (shared corpus)", src, tgt, folder / "small", args.config)
        big_src, big_tgt = repeat(src, tgt, folder, args.pairs, args.unique)
        label = f"{args.pairs:,} pairs ({'unique repeats' if args.unique else 'train repeated'})"
        run(label, big_src, big_tgt, folder / "big", args.config)


def repeat(src: Path, tgt: Path, folder: Path, pairs: int, unique: bool) -> tuple[Path, Path]:
    """The corpus repeated up to `pairs` lines per side (streamed, never in memory)."""
    outputs = []
    for path in (src, tgt):
        target = folder / f"big{path.suffix}"
        written, copy = 0, 0
        with open(target, "wb") as out:
            while written < pairs:
                with open(path, "rb") as lines:
                    for line in lines:
                        if written == pairs:
                            break
                        if unique and copy:
                            line = line.rstrip(b"\n") + b" (%d)\n" % copy
                        out.write(line)
                        written += 1
                copy += 1
        outputs.append(target)
    return outputs[0], outputs[1]


def run(label: str, src: Path, tgt: Path, out: Path, config: str) -> None:
    command = [sys.executable, "-m", "transcli", "prepare", "--config", config,
               "--src-file", str(src), "--tgt-file", str(tgt), "--out", str(out)]
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    errors = child.stderr.read()  # drain it: progress bars must not fill the pipe
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit(f"{label}: prepare failed:\n{errors.decode(errors='replace')[-2000:]}")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    read = manifest["counts"]["train"]["read"]
    splits = manifest["splits"]
    print(f"{label}: {read:,} pairs read in {seconds:.1f} s = {read / seconds:,.0f} pairs/s, "
          f"peak RSS {usage.ru_maxrss / 1024:,.0f} MB; kept train {splits['train']['pairs']:,}, "
          f"valid {splits['valid']['pairs']:,}, test {splits['test']['pairs']:,}; "
          f"vocab {manifest['vocab_size']}")


if __name__ == "__main__":
    main()
