"""The placeholders of a gettext catalogue's format strings (`%d`, `%(name)s`, `{0}`), read
as `msgfmt --check-format` reads them, so that a translated message is written only if
msgfmt (and Django's `compilemessages`, which runs it) accepts it.

An entry's flags say which rules apply (`#, python-format`, `c-format`,
`python-brace-format`; `no-python-format` says none). For each, `signature` reads what
msgfmt compares between a msgid and its msgstr: a python-format string's named
placeholders (as a set) or its unnamed ones (in order), with their types; a c-format
string's arguments by number (`%2$s` is the second), with type and size; a
python-brace-format string's field names. A string the rules cannot read (a `%` that
starts no placeholder, a `{` never closed) signs as `INVALID`, unlike any msgid. Other
`*-format` flags are read by a stricter rule: the same placeholders, as often.
"""

from __future__ import annotations

import functools
import re
from typing import Callable, Iterable, Optional

INVALID = ("invalid",)
Signature = tuple

_PYTHON = re.compile(r"%(?:\((?P<name>[^()]*(?:\([^()]*\)[^()]*)*)\))?[-+ #0]*"
                     r"(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d*))?[hlL]?"
                     r"(?P<conversion>[diouxXeEfFgGcrsa%])")
_PYTHON_TYPES = {**dict.fromkeys("diouxX", "integer"), **dict.fromkeys("eEfFgG", "float"),
                 "c": "character", **dict.fromkeys("rsa", "any")}
_C = re.compile(r"%(?:(?P<number>[1-9]\d*)\$)?[-+ #0'I]*"
                r"(?P<width>\*(?:[1-9]\d*\$)?|\d+)?(?:\.(?P<precision>\*(?:[1-9]\d*\$)?|\d*))?"
                r"(?P<size>hh|h|ll|l|L|q|j|z|Z|t)?"
                r"(?P<conversion>[diouxXeEfFgGaAcspnmCS%]|<PRI[diouxX]\w*>)")
_C_TYPES = {**dict.fromkeys("di", "integer"), **dict.fromkeys("ouxX", "unsigned"),
            **dict.fromkeys("eEfFgGaA", "float"), "c": "character", "s": "string",
            "p": "pointer", "n": "count", "C": "wide character", "S": "wide string"}
_BRACE = re.compile(r"\{(?P<name>[A-Za-z_]\w*|\d+|)(?:\.\w+|\[[^\]{}]*\])*(?:![rsa])?"
                    r"(?::(?P<spec>(?:[^{}]|\{[^{}]*\})*))?\}")
_OTHER = re.compile(r"%(?:\d+\$)?[-+ #0]*\d*(?:\.\d+)?[a-zA-Z%]|\{[^{}]*\}")
# What a model may leave of a placeholder ("%0.2." of "%0.2f", a lone "{"): what a repair
# takes out of a translation before putting the message's placeholders back.
_RESIDUE = re.compile(r"%(?:\([^()]*\))?[-+ #0-9.*$'I]*(?:hh|h|ll|l|L|q|j|z|Z|t)?[a-zA-Z%]?"
                      r"|\{[^{}]*\}?|\}")


def checked_flags(flags: Iterable[str]) -> list[str]:
    """The format flags of an entry whose rules msgfmt checks (not `no-…-format`)."""
    return [flag for flag in flags if flag.endswith("-format") and not flag.startswith("no-")]


def signature(text: str, flags: Iterable[str]) -> Signature:
    """What msgfmt compares between a msgid and its msgstr, under each of `flags`."""
    if "%" not in text and "{" not in text:  # no placeholder: what the empty string signs
        return _plain(tuple(flags))
    return tuple((flag, _SIGNERS.get(flag, _other)(text)) for flag in checked_flags(flags))


@functools.lru_cache(maxsize=64)
def _plain(flags: tuple[str, ...]) -> Signature:
    return tuple((flag, _SIGNERS.get(flag, _other)("")) for flag in checked_flags(flags))


def placeholders(text: str, flags: Iterable[str]) -> list[tuple[int, int]]:
    """Where the placeholders of `text` are (`%%` and `{{` among them), under `flags`;
    [] where a rule cannot read it."""
    found: set[tuple[int, int]] = set()
    for flag in checked_flags(flags):
        pattern = {"python-format": _PYTHON, "c-format": _C,
                   "python-brace-format": _BRACE}.get(flag, _OTHER)
        matches = _scan(text, pattern, "{" if pattern is _BRACE else "%")
        found.update(match.span() for match in matches or [])
    return sorted(found)


def without_placeholders(text: str) -> str:
    """`text` with whatever looks like a placeholder or what is left of one taken out,
    and the spaces that leaves doubled said once."""
    return re.sub(r"  +", " ", _RESIDUE.sub("", text)).strip()


def _scan(text: str, pattern: re.Pattern, lead: str) -> Optional[list[re.Match]]:
    """The placeholders of `text`: a match of `pattern` at every `lead` character (`{{`
    and `}}` are literal in brace formats); None if one starts none."""
    found, at = [], 0
    while (at := text.find(lead, at)) >= 0:
        if lead == "{" and text.startswith("{{", at):
            at += 2
            continue
        match = pattern.match(text, at)
        if match is None:
            return None
        found.append(match)
        at = match.end()
    return found


def _python(text: str) -> Signature:
    matches = _scan(text, _PYTHON, "%")
    if matches is None:
        return INVALID
    named: set[tuple[str, str]] = set()
    unnamed: list[str] = []
    for match in matches:
        kind = _PYTHON_TYPES.get(match.group("conversion"))
        stars = [part for part in (match.group("width"), match.group("precision"))
                 if part == "*"]
        if match.group("name") is not None:
            if stars:
                return INVALID
            if kind is not None:
                named.add((match.group("name"), kind))
        else:
            unnamed += ["integer"] * len(stars) + ([kind] if kind is not None else [])
    if named and unnamed or len({name for name, _ in named}) < len(named):
        return INVALID
    return ("named", tuple(sorted(named))) if named else ("unnamed", tuple(unnamed))


def _c(text: str) -> Signature:
    matches = _scan(text, _C, "%")
    if matches is None:
        return INVALID
    arguments: dict[int, str] = {}
    numbered = set()
    for match in matches:
        conversion = match.group("conversion")
        for part in (match.group("width"), match.group("precision")):
            if part and part.startswith("*"):
                numbered.add(len(part) > 1)
                number = int(part[1:-1]) if len(part) > 1 else len(arguments) + 1
                if arguments.setdefault(number, "integer") != "integer":
                    return INVALID
        if conversion in ("%", "m"):
            continue
        numbered.add(match.group("number") is not None)
        number = int(match.group("number") or len(arguments) + 1)
        kind = (match.group("size") or "") + _C_TYPES.get(conversion, conversion)
        if arguments.setdefault(number, kind) != kind:
            return INVALID
    if len(numbered) > 1 or sorted(arguments) != list(range(1, len(arguments) + 1)):
        return INVALID
    return tuple(sorted(arguments.items()))


def _brace(text: str) -> Signature:
    matches = _scan(text, _BRACE, "{")
    if matches is None:
        return INVALID
    names = set()
    for match in matches:
        names.add(match.group("name"))
        names.update(inner.group("name") for inner in _BRACE.finditer(match.group("spec") or ""))
    return tuple(sorted(names))


def _other(text: str) -> Signature:
    matches = _scan(text, _OTHER, "%")
    if matches is None:
        return INVALID
    return tuple(sorted(match.group() for match in [*matches, *_BRACE.finditer(text)]))


_SIGNERS: dict[str, Callable[[str], Signature]] = {
    "python-format": _python, "c-format": _c, "python-brace-format": _brace}
