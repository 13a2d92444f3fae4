"""`transcli config --list`: every config key with its type, default and meaning.

Generated from the dataclasses in `config.py`, so the list cannot drift from the code:
the type and default come from each field, the meaning from its comment in the source
(the comment at the end of the field's line, else the comment lines just above it).
A key without a comment has no meaning to show; `tests/test_configkeys.py` fails then.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import json
import textwrap
import tokenize
import types
import typing
from dataclasses import dataclass
from typing import Any, Union

from transcli.config.schema import Config, SourceConfig

# How the keys of one corpus source are shown: they sit in data.train's list items,
# and data.valid / data.test take the same keys.
SOURCE_PREFIX = "data.train[]."


@dataclass(frozen=True)
class Key:
    """One config key as `config --list` shows it."""

    name: str  # dotted, e.g. "train.max_steps"
    type: str  # e.g. "int", "str or null", "list of sources"
    default: str  # as YAML would write it
    meaning: str  # "" when the field has no comment


def field_meanings(cls: type) -> dict[str, str]:
    """Field name -> the comment that explains it, read from the class's source."""
    source = textwrap.dedent(inspect.getsource(cls))
    trailing: dict[int, str] = {}  # line -> comment after code on that line
    whole: dict[int, str] = {}  # line -> a line that is only a comment
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            text = token.string.lstrip("#").strip()
            own_line = token.line.strip().startswith("#")
            (whole if own_line else trailing)[token.start[0]] = text
    meanings = {}
    for node in ast.parse(source).body[0].body:  # type: ignore[attr-defined]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            meaning = trailing.get(node.end_lineno or node.lineno, "")
            above, line = [], node.lineno - 1
            while line in whole:
                above.insert(0, whole[line])
                line -= 1
            meanings[node.target.id] = meaning or " ".join(above)
    return meanings


def config_keys() -> list[Key]:
    """Every key of every section, in source order; a corpus source's keys after `data`'s."""
    keys = []
    sections = typing.get_type_hints(Config)
    for section in dataclasses.fields(Config):
        keys.extend(_keys(sections[section.name], f"{section.name}."))
        if section.name == "data":
            keys.extend(_keys(SourceConfig, SOURCE_PREFIX))
    return keys


def _keys(cls: type, prefix: str) -> list[Key]:
    hints = typing.get_type_hints(cls)
    meanings = field_meanings(cls)
    found = []
    for f in dataclasses.fields(cls):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING \
            else f.default  # type: ignore[misc]
        found.append(Key(prefix + f.name, type_name(hints[f.name]), yaml_value(default),
                         meanings.get(f.name, "")))
    return found


def type_name(hint: Any) -> str:
    """`int`, `str or null`, `list of sources`, `source or null`."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return f"{type_name(inner[0])} or null"
    if typing.get_origin(hint) is list:
        return f"list of {type_name(typing.get_args(hint)[0])}s"
    if hint is SourceConfig:
        return "source"
    return getattr(hint, "__name__", str(hint))


def yaml_value(value: Any) -> str:
    """A default as one would write it in the YAML file."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value if value else "''"
    if isinstance(value, list):
        return json.dumps(value)
    return str(value)


def format_keys(keys: list[Key]) -> str:
    """An aligned table, one key per line, a blank line between sections."""
    name_width = max(len(k.name) for k in keys)
    type_width = max(len(k.type) for k in keys)
    default_width = max(len(k.default) for k in keys)
    lines, section = [f"{'key':<{name_width}}  {'type':<{type_width}}  "
                      f"{'default':<{default_width}}  meaning"], None
    for key in keys:
        head = key.name.split(".", 1)[0] if not key.name.startswith(SOURCE_PREFIX) else "source"
        if head != section:
            lines.append("")
            if head == "source":
                lines.append("# a corpus source: an item of data.train, or data.valid / "
                             "data.test, e.g. {tsv: pairs.tsv}")
            section = head
        lines.append(f"{key.name:<{name_width}}  {key.type:<{type_width}}  "
                     f"{key.default:<{default_width}}  {key.meaning}".rstrip())
    return "\n".join(lines)
