"""The input formats a corpus source can have, and the keys that name each: one table.

A source (a `SourceConfig` entry, or `prepare`'s flags) names its format by the keys
it gives: src_file + tgt_file, tsv, dataset (+ subset, split, src_column, tgt_column),
or file (with format, else by the file's suffix: .tmx). `source_format` decides which
from those keys and checks them; config validation, `prepare`'s flags and the readers
(`transcli.data.sources`, one `Source` class per format name here) all ask it. It
imports nothing of transcli, so the config checks sources without loading readers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

# Compression suffixes, left out when a suffix names a format (x.jsonl.gz is JSON lines).
COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")


@dataclass(frozen=True)
class Format:
    """One input format: the keys it needs, the ones it also takes, the suffixes that
    select it for a one-`file` source, and option pairs given both or neither."""

    name: str
    keys: tuple[str, ...]
    options: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()
    together: tuple[tuple[str, str], ...] = ()


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("files", ("src_file", "tgt_file")),
    Format("tsv", ("tsv",)),
    Format("dataset", ("dataset",), ("subset", "split", "src_column", "tgt_column"),
           together=(("src_column", "tgt_column"),)),
    Format("tmx", ("file",), suffixes=(".tmx",)),
)}


class SourceKeyError(ValueError):
    """A source whose keys name no format, several, or one with a key missing or
    foreign to it; `key` is the key to blame."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def data_suffix(path: Path) -> str:
    """The suffix that tells a file's format: `.jsonl` for both `x.jsonl` and `x.jsonl.gz`."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in COMPRESSION_SUFFIXES:
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def source_format(given: Mapping[str, Any], name: Callable[[str], str] = str,
                  what: str = "source") -> Format:
    """The format of a source with these `given` keys (those not at their default), or a
    `SourceKeyError`. `name` spells a key in messages (a YAML key, or a flag)."""
    fmt = given.get("format")
    if fmt is not None:
        if fmt not in FORMATS:
            raise SourceKeyError("format", f"{name('format')} '{fmt}' is not one of "
                                           f"{', '.join(FORMATS)}")
        found = FORMATS[fmt]
    else:
        found = _named_format(given, name, what)
    missing = [key for key in found.keys if key not in given]
    if missing:
        needs = " and ".join(name(key) for key in found.keys)
        together = len(found.keys) > 1 and len(missing) < len(found.keys)
        raise SourceKeyError(missing[0], f"{needs} go together" if together
                             else f"a {found.name} source needs {needs}")
    for key in given:
        if key != "format" and key not in (*found.keys, *found.options):
            raise SourceKeyError(key, f"{name(key)} {_belongs(key, name)}")
    for first, second in found.together:
        if (first in given) != (second in given):
            raise SourceKeyError(second if first in given else first,
                                 f"{name(first)} and {name(second)} go together")
    return found


def _named_format(given: Mapping[str, Any], name: Callable[[str], str], what: str) -> Format:
    """The format named by the keys alone: its own keys, or a `file` with its suffix."""
    suffix = data_suffix(Path(str(given["file"]))) if "file" in given else None
    named = [f for f in FORMATS.values()
             if any(key in given for key in f.keys if key != "file") or suffix in f.suffixes]
    if len(named) > 1:
        first, second = ("+".join(name(key) for key in f.keys) for f in named[:2])
        raise SourceKeyError(named[1].keys[0], f"give one {what}, not {first} and {second}")
    if named:
        return named[0]
    if "file" in given:
        by_file = [f.name for f in FORMATS.values() if "file" in f.keys]
        raise SourceKeyError("file", f"cannot tell the format of {given['file']} from its name: "
                                     f"give {name('format')} ({', '.join(by_file)})")
    stray = next((key for key in given if key != "format"), None)
    if stray is not None:
        raise SourceKeyError(stray, f"{name(stray)} {_belongs(stray, name)}")
    ways = ", ".join("+".join(name(key) for key in f.keys) for f in FORMATS.values())
    raise SourceKeyError(FORMATS["files"].keys[0], f"give a {what}: one of {ways}")


def _belongs(key: str, name: Callable[[str], str]) -> str:
    owner = next((f for f in FORMATS.values() if key in f.options), None)
    return (f"only applies to {name(owner.keys[0])}" if owner
            else "does not go with the other keys of this source")
