"""Slow clients against `transcli serve`: --clients connections that each send a request
header one byte every --interval seconds (slowloris), reconnecting whenever the server
drops them, while the server's memory (RSS), open descriptors and `GET /health` latency
are sampled.

    .venv/bin/python -m bench.serve_slow --model RUN [--clients 500] [--seconds 60]
        [--interval 2] [-- SERVE_FLAGS ...]

Flags after `--` go to `transcli serve` (e.g. `-- --read-timeout 10 --max-connections
256`; without them its defaults hold). The server runs on a free port of 127.0.0.1, the
clients in this process (asyncio). Linux only: RSS and descriptors come from /proc.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Clients:
    open: int = 0  # connections the slow clients hold now
    made: int = 0  # connections made so far
    dropped: int = 0  # ... that the server answered (408, 503) or closed


async def slow_client(port: int, interval: float, tally: Clients, stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(interval)
            continue
        tally.open, tally.made = tally.open + 1, tally.made + 1
        dropped = False
        try:
            writer.write(b"GET /health HTTP/1.1\r\nX-Slow: ")
            while not stop.is_set():
                try:  # anything from the server (an answer, the end) ends this connection
                    await asyncio.wait_for(reader.read(4096), interval)
                    dropped = True
                    break
                except asyncio.TimeoutError:
                    writer.write(b"a")
                    await writer.drain()
        except OSError:
            dropped = True
        finally:
            tally.open, tally.dropped = tally.open - 1, tally.dropped + dropped
            writer.close()


async def health(port: int) -> tuple[str, float]:
    """GET /health on a connection of its own: (status or what failed, milliseconds)."""
    start = time.perf_counter()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
        writer.write(b"GET /health HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        status = answer.split(b" ", 2)[1].decode() if answer else "closed"
    except (OSError, asyncio.TimeoutError) as exc:
        status = type(exc).__name__
    return status, (time.perf_counter() - start) * 1000


def usage(pid: int) -> tuple[float, int]:
    """The process's resident memory (MiB) and open descriptors."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kib = int(re.search(r"^VmRSS:\s+(\d+)", status, re.M).group(1))  # type: ignore[union-attr]
    return rss_kib / 1024, len(os.listdir(f"/proc/{pid}/fd"))


async def measure(pid: int, port: int, args: argparse.Namespace) -> list[tuple]:
    tally, stop, rows = Clients(), asyncio.Event(), []
    print(f"{'s':>5} {'held':>5} {'made':>6} {'dropped':>7} {'RSS MiB':>8} {'fds':>5} "
          f"{'/health':>8} {'ms':>7}", flush=True)
    clients: list[asyncio.Task] = []
    start = time.monotonic()
    while (elapsed := time.monotonic() - start) < args.seconds:
        if len(clients) < args.clients:  # start them over the first second or so
            clients += [asyncio.create_task(slow_client(port, args.interval, tally, stop))
                        for _ in range(min(50, args.clients - len(clients)))]
            await asyncio.sleep(0.1)
            continue
        status, ms = await health(port)
        rss, fds = usage(pid)
        rows.append((elapsed, tally.open, rss, fds, status, ms))
        print(f"{elapsed:5.0f} {tally.open:5d} {tally.made:6d} {tally.dropped:7d} {rss:8.1f} "
              f"{fds:5d} {status:>8} {ms:7.1f}", flush=True)
        await asyncio.sleep(args.every)
    stop.set()
    await asyncio.gather(*clients, return_exceptions=True)
    return rows


def start_server(args: argparse.Namespace, log: Path) -> tuple[subprocess.Popen, int]:
    command = [sys.executable, "-m", "transcli", "serve", "-m", str(args.model), "--port", "0",
               *args.serve]
    with open(log, "wb") as stderr:
        server = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=stderr, cwd=ROOT)
    deadline = time.monotonic() + 300
    while not (found := re.search(r"serving on http://[\d.]+:(\d+)", log.read_text())):
        if server.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"serve did not start:\n{log.read_text()}")
        time.sleep(0.1)
    return server, int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="the run dir to serve")
    parser.add_argument("--clients", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--interval", type=float, default=2.0,
                        help="seconds between a slow client's bytes")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between samples")
    parser.add_argument("serve", nargs="*", help="flags for transcli serve, after --")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "serve.log"
        server, port = start_server(args, log)
        try:
            rss, fds = usage(server.pid)
            print(f"transcli serve {' '.join(args.serve) or '(defaults)'}: idle RSS "
                  f"{rss:.1f} MiB, {fds} fds; load average {os.getloadavg()[0]:.2f}")
            rows = asyncio.run(measure(server.pid, port, args))
        finally:
            server.terminate()
            server.wait(timeout=60)
        errors = [line for line in log.read_text().splitlines() if "Traceback" in line]
    answered = [ms for *_, status, ms in rows if status == "200"]
    print(f"\nwith {args.clients} slow clients: RSS at most {max(r[2] for r in rows):.1f} "
          f"MiB, fds at most {max(r[3] for r in rows)}; /health answered {len(answered)} of "
          f"{len(rows)} (median {statistics.median(answered or [0]):.1f} ms, max "
          f"{max(answered or [0]):.1f} ms); tracebacks in the log: {len(errors)}; load "
          f"average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
