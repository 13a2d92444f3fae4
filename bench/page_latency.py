"""How soon `transcli serve`'s web page shows a translation once typing stops, in Chromium.

    python -m bench.page_latency --model RUN [--checkpoint best] [--sentences 20]
        [--screenshot docs/serve-page.png] [-- SERVE FLAGS]

Starts `transcli serve` on a free port, opens its page in headless Chromium (the system's,
Debian's package `chromium`, driven by playwright; no browser is downloaded) and, for
each of the first --sentences lines of dev.tatoeba.en of at most --words words, clears
the box and types the line at 20 ms a key. The time is measured in the page, from the
last keystroke's `input` event to the translation of the whole line being put on the
page (the page waits the server's `frontendTimeout` after the last keystroke, then asks).
Prints each sentence's milliseconds, then p50, p95 and the maximum, with the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator, Optional

from bench.common import CORPORA

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
KEY_DELAY_MS = 20  # between keystrokes, as a quick typist

# Run in the page before typing: the time of the last `input` event, and of the first
# change of the translation after it (the page cancels requests for older text, so that
# change is the whole line's translation).
WATCH = """() => {
  if (window.transcliTiming) return;
  const timing = window.transcliTiming = {input: 0, shown: 0};
  document.getElementById("source").addEventListener("input", () => {
    timing.input = performance.now(); timing.shown = 0; });
  new MutationObserver(() => { if (!timing.shown) timing.shown = performance.now(); })
    .observe(document.getElementById("translation"),
             {childList: true, characterData: true, subtree: true});
}"""


def chromium() -> str | None:
    """The system's Chromium, if installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextlib.contextmanager
def browser(viewport: dict[str, int] | None = None) -> Iterator[Any]:
    """A headless Chromium context with a fresh profile (playwright's `BrowserContext`)."""
    from playwright.sync_api import sync_playwright

    executable = chromium()
    if executable is None:
        raise SystemExit("Chromium is not installed: apt-get install chromium")
    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as profile:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=executable, headless=True, args=CHROMIUM_ARGS,
            viewport=viewport or {"width": 1100, "height": 760}, accept_downloads=True)
        try:
            yield context
        finally:
            context.close()


def type_and_time(page: Any, text: str, timeout_ms: float = 30_000) -> float:
    """Type `text` into the page's empty box; milliseconds from the last keystroke to its
    translation on the page."""
    page.evaluate(WATCH)
    box = page.locator("#source")
    box.fill("")
    box.press_sequentially(text, delay=KEY_DELAY_MS)
    deadline = time.monotonic() + timeout_ms / 1000
    # Polled from here: the page's Content-Security-Policy forbids the `eval` that
    # playwright's wait_for_function needs.
    while (timing := page.evaluate("window.transcliTiming"))["shown"] <= timing["input"]:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no translation of {text!r} within {timeout_ms:g} ms")
        time.sleep(0.01)
    return timing["shown"] - timing["input"]


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="run directory")
    parser.add_argument("--checkpoint", default="best")
    parser.add_argument("--sentences", type=int, default=20)
    parser.add_argument("--words", type=int, default=8, help="longest sentence, in words")
    parser.add_argument("--screenshot", type=Path, help="save the page (PNG) at the end")
    parser.add_argument("serve_flags", nargs="*", help="more `transcli serve` flags (after --)")
    return parser.parse_args(argv)


def main() -> None:
    from bench.serve_load import server

    args = parse_args()
    with open(CORPORA / "dev.tatoeba.en", encoding="utf-8") as handle:
        lines = [line.strip() for line in handle if 0 < len(line.split()) <= args.words]
    lines = lines[:args.sentences]
    print(f"load average {os.getloadavg()[0]:.2f} at start, {os.cpu_count()} cores")
    flags = ["-m", str(args.model), "--checkpoint", args.checkpoint, *args.serve_flags]
    with server(flags) as (host, port), browser() as context:
        page = context.new_page()
        page.goto(f"http://{host}:{port}/")
        page.wait_for_selector("#model:not(:empty)")
        type_and_time(page, lines[0])  # warm-up: the browser's and the server's first call
        times = []
        for line in lines:
            times.append(type_and_time(page, line))
            print(f"{times[-1]:8.1f} ms  {line}", flush=True)
        if args.screenshot:
            page.screenshot(path=str(args.screenshot))
    cut = statistics.quantiles(times, n=20, method="inclusive")[18] if len(times) > 1 else times[0]
    print(f"first translation after typing stops, {len(times)} sentences: p50 "
          f"{statistics.median(times):.1f} ms, p95 {cut:.1f} ms, max {max(times):.1f} ms "
          f"(the page waits {frontend_timeout()} ms of them before asking)")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


def frontend_timeout() -> int:
    from transcli.serve.settings import FRONTEND_TIMEOUT_MS

    return FRONTEND_TIMEOUT_MS


if __name__ == "__main__":
    main()
