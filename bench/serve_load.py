"""Load on `transcli serve`: lines/s and latency under concurrent clients, with request
batching on and off (and the web page off, `--no-web`), beside offline `transcli translate`
of the same lines.

    python -m bench.serve_load --model RUN [--clients 16 [64 ...]] [--seconds 20]
        [--lines 1000] [--checkpoint best] [--search greedy|beam] [--set decode.threads=2]

Offline: `transcli translate` of the lines less its start-up. Served, on 127.0.0.1: for
each --clients count, that many threads on keep-alive connections, one line per request,
for --seconds after a warm-up; then a lone short sentence, greedy. docs/SERVE.md.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from bench.common import CORPORA, Child, must, read_lines, set_flags, transcli

MAX_REQUESTS = 200_000  # a bound on any one load run, whatever --seconds says
SHORT_WORDS = 6  # "a short sentence": at most this many words
WARM_UP_SECONDS = 2.0


@dataclass
class Row:
    name: str
    clients: int
    requests: int
    seconds: float
    latencies: list[float]  # seconds, one per request ([] offline)
    per_call: float | None = None  # requests per model call

    @property
    def rate(self) -> float:
        return self.requests / self.seconds


def main(argv: Optional[list[str]] = None) -> None:
    args = parse_args(argv)
    lines = [line for line in read_lines(args.corpus, args.lines * 2) if line.strip()]
    lines = lines[:args.lines]
    search = ["--greedy"] if args.search == "greedy" else []
    common = ["-m", str(args.model), "--checkpoint", args.checkpoint, *set_flags(args.set)]
    print(f"serve_load: {args.model} (checkpoint {args.checkpoint}), {len(lines)} lines of "
          f"{args.corpus.name}, search {args.search}, --set {' '.join(args.set) or 'none'}, "
          f"{os.cpu_count()} CPUs", flush=True)
    print(f"uptime before: {uptime()}", flush=True)
    rows = [offline_row(common + search, lines)]
    for name, flags in (("serve, batching", []), ("serve, batching, --no-web", ["--no-web"]),
                        ("serve, no batching", ["--no-batching"])):
        with server(common + search + flags) as (host, port):
            rows += [load_row(name, host, port, lines, clients, args.seconds)
                     for clients in args.clients]
    short = [line for line in lines if len(line.split()) <= SHORT_WORDS]
    with server(common + ["--greedy"]) as (host, port):
        rows.append(load_row("serve, lone short sentence (greedy)", host, port, short, 1,
                             args.seconds))
    print_table(rows)
    print(f"uptime after: {uptime()}")


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="run directory")
    parser.add_argument("--checkpoint", default="best")
    parser.add_argument("--clients", type=int, nargs="+", default=[16],
                        help="concurrent clients; several counts give a row each")
    parser.add_argument("--seconds", type=float, default=20.0, help="per load run")
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--search", choices=("greedy", "beam"), default="greedy",
                        help="beam: the run's decode.beam_size")
    parser.add_argument("--set", action="append", default=[], metavar="section.key=value",
                        help="a setting for offline and served alike, e.g. decode.threads=2 "
                        "or decode.engine=ct2 (repeatable)")
    parser.add_argument("--corpus", type=Path, default=CORPORA / "dev.tatoeba.en")
    args = parser.parse_args(argv)
    if not all(1 <= n <= 256 for n in args.clients) or not 0 < args.seconds <= 600:
        parser.error("--clients must be in [1, 256] and --seconds in (0, 600]")
    return args


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def offline_row(flags: list[str], lines: list[str]) -> Row:
    """`transcli translate` of all lines, less its start-up (a one-line file's time)."""
    with tempfile.TemporaryDirectory() as folder:
        every, one = Path(folder) / "all.en", Path(folder) / "one.en"
        every.write_text("\n".join(lines) + "\n", encoding="utf-8")
        one.write_text(lines[0] + "\n", encoding="utf-8")
        startup, total = (timed_translate(flags, source) for source in (one, every))
    print(f"offline: {total:.2f} s for {len(lines)} lines, of which start-up {startup:.2f} s",
          flush=True)
    return Row("offline translate (file)", 0, len(lines), total - startup, [])


def timed_translate(flags: list[str], source: Path) -> float:
    start = time.perf_counter()
    target = source.with_suffix(".es")
    must(transcli(["translate", *flags, "-i", source, "-o", target], target.with_suffix(".log")))
    return time.perf_counter() - start


@contextlib.contextmanager
def server(flags: list[str]) -> Iterator[tuple[str, int]]:
    """A `transcli serve` on a free port of 127.0.0.1, ready; stopped by SIGTERM after."""
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "serve.log"
        child = Child(["serve", *flags, "--port", "0", "--max-queue", "1024"], log)
        try:
            deadline = time.monotonic() + 120
            while not (found := re.search(r"serving on http://([\d.]+):(\d+)",
                                          log.read_text(errors="replace"))):
                if child.process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"serve_load: the server did not start: "
                                     f"{child.last_line()}")
                time.sleep(0.05)
            yield found.group(1), int(found.group(2))
        finally:
            child.wait(0, stop=True)


def load_row(name: str, host: str, port: int, lines: list[str], clients: int,
             seconds: float) -> Row:
    """`clients` threads sending one line per request for `seconds` (after a warm-up)."""
    run_clients(host, port, lines, clients, WARM_UP_SECONDS)
    before = health(host, port)
    start = time.perf_counter()
    latencies = run_clients(host, port, lines, clients, seconds)
    elapsed = time.perf_counter() - start
    after = health(host, port)
    calls = after["model_calls"] - before["model_calls"]
    row = Row(name, clients, len(latencies), elapsed, latencies,
              (after["answered"] - before["answered"]) / calls if calls else None)
    print(f"{name}, {clients} client(s): {row.requests} requests in {elapsed:.1f} s",
          flush=True)
    return row


def run_clients(host: str, port: int, lines: list[str], clients: int,
                seconds: float) -> list[float]:
    """Each client's latencies, all together; stops at the deadline or MAX_REQUESTS."""
    deadline = time.perf_counter() + seconds
    per_client = MAX_REQUESTS // clients
    results: list[list[float]] = [[] for _ in range(clients)]
    failures: list[str] = []

    def client(number: int) -> None:
        connection = http.client.HTTPConnection(host, port, timeout=120)
        position = number * len(lines) // clients
        mine = results[number]
        while time.perf_counter() < deadline and len(mine) < per_client and not failures:
            body = json.dumps({"q": lines[position % len(lines)], "source": "en",
                               "target": "es"})
            sent = time.perf_counter()
            try:
                connection.request("POST", "/translate", body,
                                   {"Content-Type": "application/json"})
                response = connection.getresponse()
                answer = response.read()
            except OSError as exc:
                failures.append(repr(exc))
                break
            if response.status != 200:
                failures.append(f"HTTP {response.status}: {answer[:200]!r}")
                break
            mine.append(time.perf_counter() - sent)
            position += 1
        connection.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise SystemExit(f"serve_load: a request failed: {failures[0]}")
    return [latency for latencies in results for latency in latencies]


def health(host: str, port: int) -> dict:
    connection = http.client.HTTPConnection(host, port, timeout=30)
    connection.request("GET", "/health")
    body = json.loads(connection.getresponse().read())
    connection.close()
    return body


def print_table(rows: list[Row]) -> None:
    offline = rows[0].rate
    print()
    print(f"{'':38} {'clients':>7} {'requests':>8} {'lines/s':>8} {'vs offline':>10} "
          f"{'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'req/call':>8}")
    for row in rows:
        if row.latencies and len(row.latencies) >= 2:
            cuts = statistics.quantiles(row.latencies, n=100, method="inclusive")
            p50, p95, p99 = (f"{cuts[k] * 1000:7.1f}" for k in (49, 94, 98))
        else:
            p50 = p95 = p99 = f"{'-':>7}"
        per_call = f"{row.per_call:8.2f}" if row.per_call else f"{'-':>8}"
        clients = str(row.clients) if row.clients else "-"
        print(f"{row.name:38} {clients:>7} {row.requests:8d} {row.rate:8.1f} "
              f"{row.rate / offline:10.0%} {p50} {p95} {p99} {per_call}")


if __name__ == "__main__":
    main()
