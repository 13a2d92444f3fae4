"""Every reader and writer takes time in proportion to its input, whatever the shape of
the file: the server's one documents thread must never be held for minutes by a small
upload. Each shape (the two that were quadratic, a cue of 100,000 lines and a paragraph
of hard breaks, and the shapes whose reading changed since: cues without empty lines,
tables after code cells, elements left open, stray end tags, placeholders put back) is
read, translated (upper-cased, so that every unit is written and checked) and written at
1 MB and at a quarter of that, in the same test: the time grows 4 times for a linear
reader and 16 times for a quadratic one. The time is this thread's CPU time, and the
quarter's the best of two runs taken before and after the whole's, so that a machine
busy with other work (`make test-busy`) slows both sizes alike."""

from __future__ import annotations

import gc
import time
from typing import Callable

import pytest

from transcli.documents.formats import FORMATS
from transcli.documents.translating import Document

MB = 1 << 20
GROWTH = 8  # at most this many times the time for 4 times the input (linear: 4)


def upper(lines: list[str], first: int) -> list[str]:
    return [line.upper() for line in lines]


def repeated(head: str, body: str, size: int) -> str:
    return head + body * (size // len(body))


def cues(size: int) -> str:
    """WebVTT cues one after another with no empty line between, as a site writes them."""
    return "WEBVTT\n\n" + "".join(f"00:00:01.000 --> 00:00:02.000\nI like green trees {i}.\n"
                                  for i in range(size // 50))


SHAPES: dict[str, tuple[str, Callable[[int], str]]] = {
    "a cue of many lines": ("srt", lambda size: repeated(
        "1\n00:00:01,000 --> 00:00:02,000\n", "I like trees.\n", size)),
    "a cue of many words": ("srt", lambda size: repeated(
        "1\n00:00:01,000 --> 00:00:02,000\nI\n", "like <i>green</i> trees, ", size) + "\n"),
    "cues without empty lines": ("vtt", cues),
    "hard breaks": ("markdown", lambda size: repeated("", "I like trees.  \n", size)),
    "a table after code cells": ("markdown", lambda size: repeated(
        "| Name | What | Why |\n|---|---|---|\n", "| `x` | — | Costs more. |\n", size)),
    "an unclosed pre": ("html", lambda size: repeated(
        "<div><pre>ls -la</div>", "<p>I like <b>trees</b>.</p>\n", size)),
    "inline tags left open": ("html", lambda size: repeated("<p>", "<b>I like trees. ", size)),
    "blocks left open, stray ends": ("html", lambda size: repeated(
        "", "<div>I like trees.</span>\n", size)),
    "placeholders": ("po", lambda size: repeated(
        "", '#, python-format\nmsgid "%(count)d trees in %(city)s at %0.2fms"\nmsgstr ""\n\n',
        size)),
}


def seconds(fmt: str, text: str) -> float:
    """This thread's CPU seconds to read, translate and write `text` once."""
    gc.collect()
    start = time.thread_time()
    Document(FORMATS[fmt], text, "x").translated(upper)
    return time.thread_time() - start


@pytest.mark.slow
@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_megabyte_of_any_shape_takes_time_in_proportion(shape):
    fmt, text = SHAPES[shape]
    small, large = text(MB // 4), text(MB)
    first = seconds(fmt, small)  # in turns: a slow moment of the machine touches both
    whole = seconds(fmt, large)
    quarter = min(first, seconds(fmt, small))
    assert whole < GROWTH * quarter + 0.2, f"{shape}: {whole:.2f} s for 1 MB, " \
                                           f"{quarter:.2f} s for 256 KB"
