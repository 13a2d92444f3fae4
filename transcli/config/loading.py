"""Reading a config: strict YAML, typed values, overrides from the command line.

Every key is checked against its dataclass (`schema.py`): unknown keys (with a
did-you-mean), keys given twice, wrong types and non-finite numbers are `UserError`s
naming the file and the key. Overrides come typed from the command line's flags
(`flags={"train.max_steps": 5}`) or as `--set section.key=value` text, and are checked
the same way.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import os
import types
import typing
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import yaml

from transcli.config.schema import Config
from transcli.system.errors import UserError
from transcli.system.files import describe_os_error
from transcli.system.streams import check_not_closed

MAX_CONFIG_BYTES = 1 << 20  # far beyond any config; a bound on what is read
MAX_DEPTH = 32  # a config nests four levels (data.train[0].tsv)

# An override: `--set` text "section.key=value", or a (dotted key, typed value) pair.
Override = Union[str, tuple[str, Any]]


def load_config(path: str | Path | None, overrides: Sequence[Override] | None = None,
                flags: Mapping[str, Any] | None = None) -> Config:
    """Read a YAML config (or the defaults when `path` is None), apply the command line's
    typed `flags` ({"train.max_steps": 5}; None means not given), then `overrides` in
    order, and validate. Every problem is a `UserError` naming the file and key."""
    origin = str(path) if path is not None else "defaults"
    raw: dict[str, Any] = {}
    if path is not None:
        raw = _read_yaml(Path(path))
    return _overridden(_build(Config, raw, origin, ""), overrides, flags, origin)


def with_overrides(cfg: Config, overrides: Sequence[Override] | None = None,
                   flags: Mapping[str, Any] | None = None, origin: str = "config") -> Config:
    """A copy of a config already read (from `origin`), with `flags` and `overrides`
    applied as `load_config` applies them, and validated."""
    return _overridden(copy.deepcopy(cfg), overrides, flags, origin)


def _overridden(cfg: Config, overrides: Sequence[Override] | None,
                flags: Mapping[str, Any] | None, origin: str) -> Config:
    given = [(key, value) for key, value in (flags or {}).items() if value is not None]
    touched = []
    for item in [*given, *(overrides or [])]:
        if isinstance(item, str):
            touched.append(apply_override(cfg, item))
        else:
            set_value(cfg, *item)
            touched.append(item[0])
    cfg.validate(origin, tuple(touched))
    return cfg


def save_config(cfg: Config, path: str | Path) -> None:
    """Write the resolved config as YAML that `load_config` reads back to equal values."""
    text = yaml.safe_dump(cfg.to_dict(), sort_keys=False, allow_unicode=True)
    Path(path).write_text(text, encoding="utf-8")


def override_parts(item: Override) -> tuple[str, str]:
    """An override's dotted key and its value as text: ("decode.beam_size", 5) or
    "decode.beam_size=5" -> ("decode.beam_size", "5")."""
    if isinstance(item, str):
        key, _, value = item.partition("=")
        return key.strip(), value.strip()
    return item[0], str(item[1])


def apply_override(cfg: Config, item: str) -> str:
    """Apply one `--set section.key=value` (the value is parsed as YAML, then typed);
    returns the dotted key."""
    if "=" not in item:
        raise UserError(f"--set: '{item}' is not of the form section.key=value")
    dotted, text = (part.strip() for part in item.split("=", 1))
    try:
        value = _parse_yaml(text) if text else None
    except (_DuplicateKey, _TooDeep) as exc:
        raise UserError(f"--set: '{dotted}': {exc.problem}") from None
    except yaml.YAMLError:  # not YAML: the text itself, e.g. a path with a colon
        value = text
    set_value(cfg, dotted, value, "--set")
    return dotted


def set_value(cfg: Config, dotted: str, value: Any, origin: str = "command line") -> None:
    """Set one setting by its dotted name, typed and checked like a YAML value."""
    parts = dotted.split(".")
    target: Any = cfg
    for depth, name in enumerate(parts):
        where = ".".join(parts[: depth + 1])
        if target is None and depth:  # a source not given: set it as a whole
            raise UserError(f"{origin}: '{'.'.join(parts[:depth])}' is not set, so it has no "
                            f"'{name}' yet; give it whole, e.g. --set "
                            f"'{'.'.join(parts[:depth])}={{src_file: a.en, tgt_file: a.es}}'")
        if not dataclasses.is_dataclass(target):
            raise UserError(f"{origin}: '{where}' does not name a setting")
        fields = {f.name: f for f in dataclasses.fields(target)}
        if name not in fields:
            raise UserError(f"{origin}: unknown key '{where}'"
                            f"{_did_you_mean(name, fields, '.'.join(parts[:depth]))}")
        if depth == len(parts) - 1:
            hint = _resolved_hints(type(target))[name]
            setattr(target, name, _coerce(value, hint, origin, where))
        else:
            target = getattr(target, name)


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error
    (PyYAML silently keeps the last, so a forgotten earlier line would win unseen)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *defaults`, merged below
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:  # unhashable: the base class reports it
                break
            if duplicate:
                raise _DuplicateKey(None, None, f"duplicate key '{key}'", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


class _DuplicateKey(yaml.constructor.ConstructorError):
    pass


class _TooDeep(yaml.YAMLError):
    def __init__(self, mark: Any):
        super().__init__()
        self.problem, self.problem_mark = f"nested deeper than {MAX_DEPTH} levels", mark


def _parse_yaml(text: str) -> Any:
    """The YAML value of `text`; nesting is checked first, on the parser's flat event
    stream, since composing thousands of levels exhausts Python's recursion."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise _TooDeep(event.start_mark)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
    return yaml.load(text, Loader=_StrictLoader)


def _read_yaml(path: Path) -> dict[str, Any]:
    check_not_closed(path)  # `-c /dev/stdin <&-` would read the defaults from /dev/null
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise UserError(f"{path}: config file not found{_near_file(path)}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read config ({describe_os_error(exc)})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise UserError(f"{path}: larger than {MAX_CONFIG_BYTES // 1024} KiB: not a config file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise UserError(f"{path}: line {line} is not valid UTF-8") from None
    try:
        raw = _parse_yaml(text)
    except yaml.YAMLError as exc:
        raise UserError(f"{path}:{_yaml_problem(exc, text)}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise UserError(f"{path}: the top level must be a mapping of sections")
    return raw


def _yaml_problem(exc: yaml.YAMLError, text: str) -> str:
    """` line L, column C: what is wrong`, from the parser's error."""
    mark = getattr(exc, "problem_mark", None)
    where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(exc, "problem", None)
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow
        where = f" line {text[:exc.position].count(chr(10)) + 1}"
        problem = f"character #x{exc.character:04x} is not allowed in YAML" \
            if isinstance(exc.character, int) else exc.reason
    kind = "" if isinstance(exc, _DuplicateKey) else "malformed YAML: "
    return f"{where}: {kind}{problem or 'not YAML'}"


def _build(cls: type, raw: Any, origin: str, prefix: str) -> Any:
    """Turn a mapping into dataclass `cls`, checking keys and types recursively."""
    if not isinstance(raw, dict):
        raise UserError(f"{origin}: '{prefix.rstrip('.') or 'top level'}' must be a mapping, "
                        f"got {_type_name(raw)}")
    hints = _resolved_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    values = {}
    for key, value in raw.items():
        where = f"{prefix}{key}"
        if key not in names:
            raise UserError(f"{origin}: unknown key '{where}'"
                            f"{_did_you_mean(str(key), names, prefix.rstrip('.'))}")
        values[key] = _coerce(value, hints[key], origin, where)
    return cls(**values)


def _coerce(value: Any, hint: Any, origin: str, where: str) -> Any:
    """Check `value` against the type hint, converting only where lossless (int -> float)."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(value, inner[0], origin, where)
    if typing.get_origin(hint) is list:
        if not isinstance(value, list):
            raise UserError(f"{origin}: '{where}' must be a list, got {_type_name(value)}")
        return [_coerce(v, args[0], origin, f"{where}[{i}]") for i, v in enumerate(value)]
    if dataclasses.is_dataclass(hint):
        return value if isinstance(value, hint) else _build(hint, value, origin, f"{where}.")
    if hint is float:
        number = _float(value)
        if number is not None:
            if not math.isfinite(number):
                raise UserError(f"{origin}: '{where}' must be a finite number, got {value!r}")
            return number
    if hint is str and isinstance(value, os.PathLike):  # a path flag
        return os.fspath(value)
    if isinstance(value, hint) and not (hint is int and isinstance(value, bool)):
        return value
    if value is None:  # `key:` in YAML, `--set key=` on the command line
        raise UserError(f"{origin}: '{where}' has no value: give a {hint.__name__}")
    raise UserError(f"{origin}: '{where}' must be {hint.__name__}, "
                    f"got {_type_name(value)} {value!r}")


def _float(value: Any) -> Optional[float]:
    """An int or float as float; also a string such as "1e-9", which YAML 1.1 reads as
    text (no dot). None when `value` is no number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return value
    try:
        return float(value) if isinstance(value, (int, str)) else None
    except ValueError:
        return None
    except OverflowError:  # an int beyond float's range
        return math.inf


def _resolved_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _near_file(path: Path) -> str:
    """" (did you mean 'configs/cpu-1h.yaml'?)" for a file of a close name beside it."""
    try:
        names = [entry.name for entry in path.parent.iterdir() if entry.is_file()]
    except OSError:
        return ""
    close = difflib.get_close_matches(path.name, names, n=1, cutoff=0.6)
    return f" (did you mean '{path.parent / close[0]}'?)" if close else ""


def _did_you_mean(name: str, candidates: Any, section: str = "") -> str:
    """The closest key, given whole (`train.max_minutes`), so that it can be pasted."""
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    if not close:
        return ""
    key = f"{section}.{close[0]}" if section else close[0]
    return f" (did you mean '{key}'?)"


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__
