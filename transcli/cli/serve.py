"""`transcli serve`: a run's model behind LibreTranslate's HTTP API (docs/SERVE.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from transcli.cli.options import (
    CheckpointOpt,
    DecodeSetOpt,
    Device,
    device_option,
    with_decoding,
)
from transcli.serve.server import KEY_VARIABLE

# What slow clients may hold (docs/SERVE.md, "Timeouts and limits").
ReadTimeoutOpt = typer.Option(
    10.0, help="Seconds a client has to send a request's headers and body (408 after).")
MaxConnectionsOpt = typer.Option(
    1000, help="Open connections; past it, the one sending its request longest is closed.")
DrainTimeoutOpt = typer.Option(
    30.0, help="Seconds a stop (SIGINT, SIGTERM) lets requests in flight finish.")
# What the server offers besides translating text (docs/SERVE.md).
DocsOpt = typer.Option(
    False, "--docs", help="Serve /docs, Swagger UI (the browser loads it from a CDN).")
NoWebOpt = typer.Option(False, "--no-web", help="No web page at / (the API stays).")
CorsOriginOpt = typer.Option(
    None, metavar="<origin>", help="Let pages of this origin (https://host[:port], or * for "
    "any) call the API from a browser; none by default.")
AllowHostOpt = typer.Option(
    None, "--allow-host", metavar="NAME", help="A host name the server answers to besides "
    "localhost when it listens on a loopback address (a proxy's; repeatable).")
ReqLimitOpt = typer.Option(0, help="Requests per client per minute to translate, detect or "
                           "translate a file (429 above; 0: no limit).")
MaxAlternativesOpt = typer.Option(
    3, help="Alternative translations a request may ask for (an n-best search).")
HostOpt = typer.Option(
    "127.0.0.1", help="Address to listen on; 0.0.0.0 (or ::) opens it to the network.")
PortOpt = typer.Option(5000, min=0, max=65535, metavar="<int>",
                       help="Port (0: any free one; the address is printed on stderr).")
ModelsOpt = typer.Option(
    ..., "--model", "-m", metavar="<path>", help="Run directory written by `train`; twice "
    "to serve two directions, one run each (en to es and es to en).")
MaxFileCharsOpt = typer.Option(
    100_000, help="Characters of text in a file sent to /translate_file (400 above).")


@with_decoding
def serve(
    *,
    model: list[Path] = ModelsOpt,
    checkpoint: str = CheckpointOpt,
    host: str = HostOpt,
    port: int = PortOpt,
    api_key: Optional[str] = typer.Option(
        None, envvar=KEY_VARIABLE, show_envvar=True,
        help="Answer only requests whose api_key field is this (403 otherwise)."),
    max_chars: int = typer.Option(10_000, help="Characters per request, all texts together "
                                  "(400 above)."),
    max_queue: int = typer.Option(64, help="Requests waiting for the model; more are "
                                  "refused with 503."),
    timeout: float = typer.Option(30.0, help="Seconds a request may wait and be translated "
                                  "(504 after)."),
    max_batch_wait: float = typer.Option(
        5.0, help="Milliseconds a request waits for others to share its model batch."),
    no_batching: bool = typer.Option(
        False, "--no-batching", help="Translate each request alone (for comparison)."),
    read_timeout: float = ReadTimeoutOpt,
    max_connections: int = MaxConnectionsOpt,
    drain_timeout: float = DrainTimeoutOpt,
    docs: bool = DocsOpt,
    no_web: bool = NoWebOpt,
    cors_origin: Optional[str] = CorsOriginOpt,
    allow_host: Optional[list[str]] = AllowHostOpt,
    req_limit: int = ReqLimitOpt,
    max_alternatives: int = MaxAlternativesOpt,
    max_file_chars: int = MaxFileCharsOpt,
    decoding: list[tuple[str, Any]],
    device: Device = device_option(),
    sets: Optional[list[str]] = DecodeSetOpt,
) -> None:
    """Serve the model over HTTP with LibreTranslate's API (POST /translate, /detect,
    /translate_file, GET /languages), and a web page to type into at /.

    A run serves its own direction (data.src_lang to data.tgt_lang); give one run per
    direction to serve both. Every answer is what `transcli translate` gives for the same
    lines and options. GET /health answering means ready; SIGINT or SIGTERM finishes the
    requests in flight (for up to --drain-timeout seconds), then exits 0.

    Examples:

    \b
      transcli serve -m run --greedy
      transcli serve -m run -m run-es-en    # English to Spanish and back
      curl -s localhost:5000/translate -H 'Content-Type: application/json' \\
           -d '{"q": "Where is the station?", "source": "en", "target": "es"}'
    """
    from transcli.serve.limits import Limits
    from transcli.serve.server import serve as run_server

    limits = Limits(max_chars=max_chars, max_queue=max_queue, timeout=timeout,
                    max_batch_wait=max_batch_wait / 1000, batching=not no_batching,
                    read_timeout=read_timeout, max_connections=max_connections,
                    drain_timeout=drain_timeout, max_alternatives=max_alternatives,
                    req_limit=req_limit, max_file_chars=max_file_chars)
    run_server(model, checkpoint, [*decoding, *(sets or [])], device or "auto", host, port,
               limits, api_key, docs, not no_web, cors_origin, allow_host or ())
