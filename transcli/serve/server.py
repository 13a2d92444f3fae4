"""Starting and stopping `transcli serve`.

In order: the runs' configs are checked and the port taken (a bad run dir, host or port
is a one-line error before anything slow); each run's worker thread loads its model and
translates once; only then does uvicorn listen, so `/health` answering means ready. Each
run serves its direction (`data.src_lang` to `data.tgt_lang`, `models.py`).

Uvicorn runs its event loop in a thread of its own; the main thread waits and takes the
stop signals (`transcli.cli.exits` turns them into `Interrupted`). The first SIGINT or
SIGTERM stops taking connections, lets the requests in flight (queued ones included)
finish for up to `--drain-timeout` seconds, answers 503 to those still open, and returns,
so the command exits 0, within that time whatever clients do; a second one stops at once
(128 + N). Reading requests and holding connections is bounded in `connections.py`.
"""

from __future__ import annotations

import errno
import functools
import ipaddress
import os
import re
import socket
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from transcli.serve.limits import Limits
from transcli.system.errors import UserError
from transcli.system.extras import require

if TYPE_CHECKING:
    from uvicorn import Server

    from transcli.config.schema import DecodeConfig
    from transcli.inference.translator import Translator
    from transcli.rundir.run import RunDir
    from transcli.serve.models import Models

BACKLOG = 128  # connections the kernel holds while the server is busy
SPARE_FILES = 64  # open files besides connections: the model's, logs, the listening socket
STOP_GRACE = 5.0  # seconds past --drain-timeout to close up, before exiting regardless
# Seconds a Python thread holds the GIL while others wait for it (Python's default: 0.005).
# The model thread takes the GIL back after each torch operation; behind a document being
# read on another thread, each of those waited the whole 5 ms (docs/SERVE.md).
SWITCH_INTERVAL = 0.0002


def serve(run_dirs: Sequence[Path], checkpoint: str, overrides: list[Any], device: str,
          host: str, port: int, limits: Limits, api_key: Optional[str], docs: bool = False,
          web: bool = True, cors_origin: Optional[str] = None, hosts: Sequence[str] = ()) -> None:
    """Serve the runs' models on host:port until a stop signal (module doc); `overrides`
    are the config's, as `load_translator` takes them; `hosts`: names it answers to
    besides its own when it listens on a loopback address (`app.host_checked`)."""
    from transcli.system.runtime import available_cores

    runs, pairs = opened_runs(run_dirs, overrides, checkpoint)
    sys.setswitchinterval(SWITCH_INTERVAL)
    # The HTTP side needs a core of its own for requests; the models share the others.
    threads = max(1, (available_cores() - 1) // len(runs))
    decodes = [replace(run.config.decode, threads=run.config.decode.threads or threads)
               for run in runs]
    for decode in decodes:
        check_decode(decode)
    if any(decode.split_sentences for decode in decodes):  # 1-best only (`translate` says so)
        limits = replace(limits, max_alternatives=0)
    check_key_option(api_key)
    check_cors_origin(cors_origin)
    require("fastapi", "serve")  # a missing extra is one line too
    uvicorn = require("uvicorn", "serve")
    check_formats()
    allow_descriptors(limits.max_connections)
    sock = bind(host, port)
    if api_key is None and not ipaddress.ip_address(sock.getsockname()[0]).is_loopback:
        say(f"warning: listening on {host} without --api-key: anyone who can reach this "
            f"port can use the model (docs/SERVE.md)")
    store = models = None
    try:
        weights = [run.checkpoint(checkpoint) for run in runs]  # the files the models load
        from transcli.serve.app import create_app
        from transcli.serve.connections import Connection
        from transcli.serve.detection import Detector
        from transcli.serve.files import FileStore
        from transcli.serve.settings import Settings

        models = loaded_models(runs, pairs, weights, device, decodes, limits)
        local = ipaddress.ip_address(sock.getsockname()[0]).is_loopback
        settings = Settings(" + ".join(run_dir.resolve().name for run_dir in run_dirs),
                            checkpoint, weights[0].name, api_key, docs, web, cors_origin,
                            local, tuple(name.lower() for name in hosts))
        store = FileStore()
        app = create_app(models, Detector(models.pairs.codes), store, settings)
        config = uvicorn.Config(app, access_log=False, log_level="warning", backlog=BACKLOG,
                                http=functools.partial(Connection, limits=limits),
                                timeout_keep_alive=5,
                                timeout_graceful_shutdown=limits.drain_timeout)
        stop_by = run_until_stopped(uvicorn.Server(config), sock, models)
    finally:
        sock.close()
        if store is not None:
            store.close()
    # Only after a stop on a signal: an error or a second signal ends the process at once,
    # and the worker threads with it.
    if not models.stop(wait=max(0.5, stop_by - time.monotonic())):
        say("the model call in progress did not end within --drain-timeout: not waiting")
    say("stopped")


def opened_runs(run_dirs: Sequence[Path], overrides: list[Any], checkpoint: str
                ) -> tuple[list[RunDir], list[tuple[str, str]]]:
    """Each run dir opened, and its direction; what two runs cannot share is refused: a
    direction, a glossary (one direction's terms), a checkpoint file (one run's)."""
    from transcli.config.loading import override_parts
    from transcli.rundir.layout import is_step
    from transcli.rundir.run import open_run_dir

    runs = [open_run_dir(run_dir, overrides) for run_dir in run_dirs]
    pairs = directions(run_dirs, runs)
    if len(runs) > 1 and any(override_parts(item)[0] == "decode.glossary"
                             for item in overrides):
        raise UserError("--glossary with two runs: a glossary's terms are one direction's; "
                        "set decode.glossary in each run's config.yaml instead")
    if len(runs) > 1 and checkpoint not in ("best", "last", "avg") and not is_step(checkpoint):
        raise UserError(f"--checkpoint {checkpoint}: a file is one run's weights; with two "
                        f"runs give best, last, avg or a step number")
    return runs, pairs


def directions(run_dirs: Sequence[Path], runs: Sequence[RunDir]) -> list[tuple[str, str]]:
    """Each run's (source, target) languages; two runs of one direction are refused."""
    pairs: list[tuple[str, str]] = []
    for run_dir, run in zip(run_dirs, runs):
        pair = (run.config.data.src_lang, run.config.data.tgt_lang)
        if pair in pairs:
            other = run_dirs[pairs.index(pair)]
            raise UserError(f"--model {run_dir} and --model {other} both translate "
                            f"{pair[0]} to {pair[1]}: give one run per direction")
        pairs.append(pair)
    return pairs


def loaded_models(runs: Sequence[RunDir], pairs: Sequence[tuple[str, str]],
                  weights: Sequence[Path], device: str, decodes: Sequence[DecodeConfig],
                  limits: Limits) -> Models:
    """Each run's model (from its `weights` file) loaded by its own worker thread
    (`Batcher`), which has translated once."""
    from transcli.inference.translator import load_translator  # torch loads here
    from transcli.serve.batcher import Batcher
    from transcli.serve.models import Models

    def loader(run: RunDir, path: Path, decode: DecodeConfig) -> Callable[[], Translator]:
        return lambda: load_translator(run, str(path), device, decode)

    models = Models({pair: Batcher(loader(run, path, decode), limits)
                     for pair, run, path, decode in zip(pairs, runs, weights, decodes)})
    models.start()
    return models


def check_formats() -> None:
    """Every document format's packages are installed (the serve extra includes the
    documents extra): one line at start-up if one is missing, not an error per file."""
    from transcli.documents.formats import FORMATS

    for fmt in FORMATS.values():
        for package in fmt.needs:
            require(package, "serve")


KEY_VARIABLE = "TRANSCLI_API_KEY"  # the environment's --api-key


def check_key_option(api_key: Optional[str]) -> None:
    """`--api-key` must be a key a client can send: not blank, and text (an argument's
    bytes that are not UTF-8 reach Python as lone surrogates)."""
    # Click reads an empty variable as unset: a slip must not turn the key off silently.
    if api_key is None and os.environ.get(KEY_VARIABLE) is not None:
        raise UserError(f"{KEY_VARIABLE} is set but empty: give it a key, or unset it "
                        f"to serve without one")
    if api_key is None:
        return
    if not api_key.strip():
        raise UserError("--api-key is empty: give a key, or leave the option out")
    try:
        api_key.encode("utf-8")
    except UnicodeEncodeError:
        raise UserError(f"--api-key (or {KEY_VARIABLE}) is not UTF-8 text: give a key a "
                        f"client can send") from None


def check_cors_origin(origin: Optional[str]) -> None:
    """`--cors-origin` is "*" or an origin as a browser sends it: scheme://host[:port]."""
    if origin is not None and origin != "*" and not re.fullmatch(
            r"https?://[^\s/?#]+", origin):
        raise UserError(f"--cors-origin {origin!r}: give an origin such as "
                        f"https://example.org (scheme, host and port only), or *")


def allow_descriptors(connections: int) -> None:
    """Let this process hold `connections` connections and its own files: its soft limit on
    open files is raised as far as the hard one allows (`ulimit -n` is often 1024), and a
    cap even the hard limit cannot hold is refused."""
    try:
        import resource
    except ImportError:  # not POSIX: the system's own limit holds
        return
    needed = connections + 2 * BACKLOG + SPARE_FILES  # an accept burst, closing ones, ours
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise UserError(f"--max-connections {connections} needs about {needed} open files, "
                        f"but this process may open {hard} (ulimit -Hn): lower it")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def check_decode(decode: DecodeConfig) -> None:
    """Refuse settings whose answers would not be `translate`'s: n-best lists (a client
    gets one translation per line) and CTranslate2's sampler, whose one random stream
    per process would make each answer depend on the requests before it."""
    if decode.n_best != 1:
        raise UserError(f"decode.n_best={decode.n_best}: serve gives one translation per "
                        f"line; set decode.n_best=1")
    if decode.engine == "ct2" and decode.strategy == "sample":
        raise UserError("decode.strategy=sample with --engine ct2: CTranslate2 samples from "
                        "one random stream per process, so an answer would depend on earlier "
                        "requests; sample with --engine torch")


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to host:port (port 0: a free one), not yet listening: connections
    are refused until the model is loaded and uvicorn listens."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise UserError(f"--host {host}: not an address of this machine ({reason})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        reason = ("address already in use: another server has this port"
                  if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc))
        raise UserError(f"cannot listen on {host} port {port}: {reason}") from None
    return sock


def run_until_stopped(server: Server, sock: socket.socket, models: Models) -> float:
    """Run uvicorn's `server` on `sock` in a thread until a stop signal, then let it finish
    the requests in flight for up to `Limits.drain_timeout` seconds (uvicorn then cancels
    what still runs, and `AccessLog` answers 503); a second signal stops at once. Returns
    the time (`time.monotonic()`) by which the stop must be done."""
    failed: list[BaseException] = []
    finished = threading.Event()

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # SystemExit included: uvicorn's way to give up
            failed.append(exc)
        finally:
            finished.set()

    # The main thread waits on an Event, not `Thread.join`: a signal that interrupts a
    # join leaves the thread marked finished while it still runs (CPython 3.11).
    threading.Thread(target=run, name="transcli-http", daemon=True).start()
    announced = False
    try:
        while not finished.wait(0.1):
            if not announced and server.started:
                announce(sock, models)
                announced = True
    except KeyboardInterrupt as exc:  # `Interrupted` for SIGTERM and SIGHUP too
        drain = models.limits.drain_timeout
        say(f"{exc or 'SIGINT'}: finishing {models.waiting} queued request(s) and those "
            f"being answered for up to {drain:g} s, then stopping (again to stop at once)")
        server.should_exit = True
        deadline = time.monotonic() + drain + STOP_GRACE
        try:  # uvicorn's drain ends in time; this bounds the stop whatever uvicorn does
            while not finished.wait(0.1):
                if time.monotonic() > deadline:
                    say(f"the HTTP server did not stop {drain:g} s after the signal: "
                        f"stopping without it")
                    break
        except KeyboardInterrupt:
            server.force_exit = True
            raise
        return deadline
    if failed:
        raise UserError(f"the HTTP server stopped: {failed[0]!r}")
    return time.monotonic() + models.limits.drain_timeout + STOP_GRACE


def announce(sock: socket.socket, models: Models) -> None:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    mode = "batching" if models.merging else "one request per model call"
    pairs = ", ".join(f"{source} to {target}" for source, target in models.pairs.pairs)
    say(f"serving on http://{shown}:{port} ({pairs}; {mode}; Ctrl-C stops)")


def say(message: str) -> None:
    print(f"transcli: {message}", file=sys.stderr, flush=True)
