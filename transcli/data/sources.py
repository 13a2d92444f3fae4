"""The readers of every input format `prepare` takes: one `Source` class per format.

Which keys name a format, and which format a source's keys make, is decided by
`transcli.config.formats.FORMATS`; `READERS` maps each of its names to its reader
here. Adding a format is one entry there, one `Source` subclass here, and its test.

Readers stream pairs and never hold a corpus in memory. A malformed record stops
the run with one line naming the file and line (or row), or with `skip_invalid`
is skipped and counted by reason.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any, Callable, ClassVar, Collection, Iterator, Mapping, Optional

from transcli.config.formats import FORMATS, data_suffix, source_format
from transcli.config.schema import DataConfig, SourceConfig
from transcli.data.cleaning import INVALID_UTF8, MALFORMED, NO_TAB, TOO_LONG_CHARS, Pair
from transcli.data.hub import import_datasets
from transcli.system.errors import UserError
from transcli.system.files import open_checked, parse_json
from transcli.system.text import (
    CutLine,
    count_lines,
    decoded,
    invalid_utf8,
    open_text,
    raw_lines,
    reading,
)

# Words a TSV header row is made of (besides the configured language codes).
HEADER_WORDS = {"source", "target", "src", "tgt", "text", "sentence", "sentences",
                "translation", "lang", "language", "english", "spanish", "español", "espanol",
                "inglés", "ingles", "eng", "spa"}


class Source:
    """A readable corpus: `total` lines or rows for the progress bar (None when not
    known up front), iteration for the raw pairs."""

    format: ClassVar[str]  # its name in `FORMATS`, which holds its keys

    def __init__(self, config: SourceConfig, data: DataConfig):
        self.config = config
        self.skip_invalid = data.skip_invalid
        self.skipped: Counter[str] = Counter()
        self.total: Optional[int] = None
        self.notes: dict[str, Any] = {}  # facts for the manifest, e.g. a skipped header

    @classmethod
    def open(cls, config: SourceConfig, data: DataConfig, cache_dir: Path) -> Source:
        """The reader; checks files (and columns) up front."""
        return cls(config, data)

    @classmethod
    def preload(cls, config: SourceConfig) -> None:
        """Slow imports the reader needs, done before any progress line is shown."""

    @classmethod
    def label(cls, config: SourceConfig) -> str:
        """How progress lines and messages name the source."""
        return " + ".join(str(getattr(config, key)) for key in FORMATS[cls.format].keys)

    def describe(self) -> dict[str, Any]:
        """What the manifest records about this source."""
        spec = FORMATS[self.format]
        values = {key: getattr(self.config, key) for key in (*spec.keys, *spec.options)}
        return {"format": self.format, **{k: v for k, v in values.items() if v is not None},
                **self.notes}

    def __iter__(self) -> Iterator[Pair]:
        raise NotImplementedError

    def _too_long(self) -> None:
        """A record over the reading limit (`MAX_LINE_BYTES`): dropped as too long, like
        any pair over `data.max_chars`, without being read whole."""
        self.skipped[TOO_LONG_CHARS] += 1

    def _invalid(self, reason: str, message: str) -> None:
        if not self.skip_invalid:
            raise UserError(f"{message}; pass --skip-invalid to skip and count such lines")
        self.skipped[reason] += 1

    def _sides(self, src: Any, tgt: Any, langs: tuple[str, str], where: str) -> Optional[Pair]:
        """A record's two sides as a pair, or None after counting it as malformed: a side
        that is missing (absent or null) is no pair, while an empty one is (dropped as
        empty by the cleaner)."""
        for value, lang in ((src, langs[0]), (tgt, langs[1])):
            if value is None:
                self._invalid(MALFORMED, f"{where}: no '{lang}' text")
                return None
            if not isinstance(value, str):
                self._invalid(MALFORMED, f"{where}: '{lang}' is {type(value).__name__}, not text")
                return None
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:  # JSON's \ud800 escapes decode to lone surrogates
                self._invalid(INVALID_UTF8, f"{where}: '{lang}' holds {value[exc.start]!r}, "
                                            f"half of a UTF-16 pair, not text")
                return None
        return src, tgt


# ----------------------------------------------------------------------------- the formats


class FilePairSource(Source):
    """Two line-aligned files; a pair with an undecodable side is one invalid line.

    Plain files are counted up front (a mismatch fails at once); pipes such as
    `<(zcat train.en.gz)` and compressed files can be read only once, so theirs is
    found at the end.
    """

    format = "files"

    def __init__(self, config: SourceConfig, data: DataConfig):
        super().__init__(config, data)
        self.src_path = Path(str(config.src_file))
        self.tgt_path = Path(str(config.tgt_file))
        src_lines, tgt_lines = count_lines(self.src_path), count_lines(self.tgt_path)
        if src_lines is not None and tgt_lines is not None and src_lines != tgt_lines:
            self._mismatch(src_lines, tgt_lines)
        self.total = src_lines if tgt_lines is not None else None

    def _mismatch(self, src_lines: int, tgt_lines: int) -> None:
        raise UserError(f"{self.src_path} has {src_lines} lines but {self.tgt_path} has "
                        f"{tgt_lines}: the two files must be line-aligned")

    def __iter__(self) -> Iterator[Pair]:
        with open_text(self.src_path) as src_handle, open_text(self.tgt_path) as tgt_handle:
            src_file = raw_lines(src_handle, self.src_path)
            tgt_file = raw_lines(tgt_handle, self.tgt_path)
            for number, (src_raw, tgt_raw) in enumerate(zip_longest(src_file, tgt_file), 1):
                if src_raw is None or tgt_raw is None:
                    rest = 1 + sum(1 for _ in (src_file if tgt_raw is None else tgt_file))
                    shorter, longer = number - 1, number - 1 + rest
                    self._mismatch(*((longer, shorter) if tgt_raw is None else (shorter, longer)))
                if isinstance(src_raw, CutLine) or isinstance(tgt_raw, CutLine):
                    self._too_long()
                    continue
                src, tgt = decoded(src_raw, number == 1), decoded(tgt_raw, number == 1)
                if src is not None and tgt is not None:
                    yield src, tgt
                    continue
                path, raw = (self.src_path, src_raw) if src is None else (self.tgt_path, tgt_raw)
                self._invalid(INVALID_UTF8, invalid_utf8(raw, path, number))


class TsvSource(Source):
    """English in column 1, Spanish in column 2, further columns (attribution) ignored.

    A blank line is an empty pair (dropped as such); a line with text but no tab is
    malformed. A first line that names columns ("en<TAB>es", "source<TAB>target") is a
    header: skipped with a warning and noted in the manifest, never a pair.
    """

    format = "tsv"

    def __init__(self, config: SourceConfig, data: DataConfig):
        super().__init__(config, data)
        self.path = Path(str(config.tsv))
        self.total = count_lines(self.path)
        self.header_words = HEADER_WORDS | {data.src_lang.lower(), data.tgt_lang.lower()}

    def __iter__(self) -> Iterator[Pair]:
        with open_text(self.path) as handle:
            for number, raw in enumerate(raw_lines(handle, self.path), 1):
                line = decoded(raw, number == 1)
                if isinstance(raw, CutLine):
                    self._too_long()
                elif line is None:
                    self._invalid(INVALID_UTF8, invalid_utf8(raw, self.path, number))
                elif "\t" in line:
                    src, tgt = line.split("\t", 2)[:2]
                    if number == 1 and self._header(src, tgt):
                        continue
                    yield src, tgt
                elif not line.strip():
                    yield "", ""
                else:
                    self._invalid(NO_TAB, f"{self.path}:{number}: no tab in this line (a TSV "
                                          f"line is English<TAB>Spanish[<TAB>more columns])")

    def _header(self, src: str, tgt: str) -> bool:
        """Whether both cells are column names: header words only, no punctuation."""
        for cell in (src, tgt):
            words = re.findall(r"[^\W\d_]+", cell.lower())
            if not words or not set(words) <= self.header_words or re.search(r"[.?!¿¡,;]", cell):
                return False
        self.notes["header"] = [src, tgt]
        print(f"transcli: warning: {self.path}:1 is a header row ({src!r}, {tgt!r}): skipped",
              file=sys.stderr)
        return True


class TmxSource(Source):
    """A TMX translation memory: each <tu> holds a <tuv xml:lang=".."><seg> per language.
    Language tags match by their first subtag (en-GB is en); inline markup codes such
    as <ph> or <bpt> are not text. A unit without both languages is malformed."""

    format = "tmx"

    def __init__(self, config: SourceConfig, data: DataConfig):
        super().__init__(config, data)
        self.path = Path(str(config.file))
        open_checked(self.path).close()  # exists, readable, not a directory
        self.langs = (data.src_lang, data.tgt_lang)

    def __iter__(self) -> Iterator[Pair]:
        from xml.etree.ElementTree import ParseError, iterparse

        with open_text(self.path) as raw, reading(self.path):
            handle = _UnitBound(raw, self.path)
            open_elements: list[Any] = []  # from the root to the current element
            units = 0
            try:
                for event, element in iterparse(handle, events=("start", "end")):
                    if event == "start":
                        open_elements.append(element)
                        handle.unit = handle.unit or _local_name(element.tag) == "tu"
                        continue
                    open_elements.pop()
                    if _local_name(element.tag) == "tu":
                        units += 1
                        handle.unit = False
                        pair = self._unit(element, units)
                        if pair is not None:
                            yield pair
                    # A finished element outside a unit (a unit itself included) is
                    # dropped from its parent: memory stays one unit's worth, <body> or not.
                    if open_elements and not handle.unit:
                        open_elements[-1].remove(element)
            except ParseError as exc:
                line = exc.position[0]
                raise UserError(f"{self.path}:{line}: not valid TMX/XML "
                                f"({str(exc).split(': line')[0]})") from None

    def _unit(self, unit: Any, number: int) -> Optional[Pair]:
        segments: dict[str, str] = {}
        for tuv in unit:
            lang = tuv.get("{http://www.w3.org/XML/1998/namespace}lang") or tuv.get("lang")
            seg = next((child for child in tuv if _local_name(child.tag) == "seg"), None)
            if _local_name(tuv.tag) == "tuv" and lang and seg is not None:
                segments.setdefault(re.split(r"[-_]", lang)[0].lower(), _segment_text(seg))
        src, tgt = (segments.get(lang.lower()) for lang in self.langs)
        return self._sides(src, tgt, self.langs, f"{self.path}: translation unit {number}")


class _UnitBound:
    """A TMX file read through a bound: one translation unit may span at most
    `MAX_UNIT_BYTES` of the file, since the XML parser holds a unit whole."""

    MAX_UNIT_BYTES = 64 << 20

    def __init__(self, handle: Any, path: Path):
        self.handle, self.path = handle, path
        self.unit = False  # inside a <tu>: the parser's caller says so
        self.since = 0  # bytes read since the caller last left a unit

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.since = self.since + len(data) if self.unit else 0
        if self.since > self.MAX_UNIT_BYTES:
            raise UserError(f"{self.path}: a translation unit runs over "
                            f"{self.MAX_UNIT_BYTES >> 20} MiB of the file: not a sentence pair")
        return data


def _local_name(tag: Any) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _segment_text(element: Any) -> str:
    """A <seg>'s text: <hi> holds text, the other inline elements hold markup codes.
    Walked with a stack of its own, so <hi> nested thousands deep is no recursion."""
    parts = [element.text or ""]
    stack = [(iter(element), "")]  # children still to visit, and the text after them
    while stack:
        children, after = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            parts.append(after)
        elif _local_name(child.tag) == "hi":
            parts.append(child.text or "")
            stack.append((iter(child), child.tail or ""))
        else:
            parts.append(child.tail or "")
    return "".join(parts)


class DatasetSource(Source):
    """A Hugging Face dataset: a `translation` column of {src_lang: .., tgt_lang: ..}
    mappings, or two text columns (src_column/tgt_column, else named src_lang/tgt_lang).
    A local JSON-lines file is read by `JsonLinesSource` instead."""

    format = "dataset"

    @classmethod
    def open(cls, config: SourceConfig, data: DataConfig, cache_dir: Path) -> Source:
        if _local_json_lines(config):
            return JsonLinesSource(config, data)
        return cls(config, data, cache_dir)

    @classmethod
    def preload(cls, config: SourceConfig) -> None:
        if not _local_json_lines(config):
            import_datasets(str(config.dataset))

    def __init__(self, config: SourceConfig, data: DataConfig, cache_dir: Path):
        from transcli.data.hub import load_hf_dataset

        super().__init__(config, data)
        self.name = str(config.dataset)
        self.table = load_hf_dataset(self.name, config.subset, config.split, cache_dir)
        features = self.table.features
        self.layout = pick_layout(f"dataset '{self.name}'", list(features),
                                  lambda: _translation_languages(features["translation"]),
                                  config, data)
        for column in [] if self.layout.translation else self.layout.columns():
            if getattr(features[column], "dtype", None) not in ("string", "large_string"):
                raise UserError(f"dataset '{self.name}': column '{column}' is not text "
                                f"({features[column]})")
        self.table = self.table.select_columns(self.layout.columns())
        self.total = len(self.table)

    def __iter__(self) -> Iterator[Pair]:
        row = 0
        for batch in self.table.iter(batch_size=10_000):
            for src, tgt in self.layout.batch_sides(batch):
                row += 1
                pair = self._sides(src, tgt, self.layout.langs, f"dataset '{self.name}': row {row}")
                if pair is not None:
                    yield pair


class JsonLinesSource(DatasetSource):
    """A local JSON-lines dataset (`dataset: pairs.jsonl`), read line by line rather
    than through `datasets`: a malformed line names its number and `skip_invalid`
    skips it. The first record decides the layout, as a dataset's features would."""

    def __init__(self, config: SourceConfig, data: DataConfig):
        Source.__init__(self, config, data)
        self.path = Path(str(config.dataset)).expanduser()
        self.total = count_lines(self.path)
        first = self._first_record()
        self.layout = None if first is None else pick_layout(
            str(self.path), list(first), lambda: _translation_languages(first["translation"]),
            config, data)

    def _first_record(self) -> Optional[dict[str, Any]]:
        """The first line that is a JSON object (bad lines before it are reported, and
        counted, when the file is read)."""
        for _, record in self._records(report=False):
            if isinstance(record, dict):
                return record
        return None

    def _records(self, report: bool = True) -> Iterator[tuple[str, Any]]:
        """(where, parsed line) per non-blank line; lines that do not parse are reported."""
        with open_text(self.path) as handle:
            for number, raw in enumerate(raw_lines(handle, self.path), 1):
                line = decoded(raw, number == 1)
                if isinstance(raw, CutLine):
                    if report:
                        self._too_long()
                elif line is None:
                    if report:
                        self._invalid(INVALID_UTF8, invalid_utf8(raw, self.path, number))
                elif line.strip():
                    try:
                        yield f"{self.path}:{number}", parse_json(line)
                    except json.JSONDecodeError as exc:
                        if report:
                            self._invalid(MALFORMED, f"{self.path}:{number}: malformed JSON "
                                                     f"({exc.msg} at column {exc.colno})")

    def __iter__(self) -> Iterator[Pair]:
        for where, record in self._records():
            if not isinstance(record, dict):
                self._invalid(MALFORMED, f"{where}: not a JSON object")
            elif self.layout is not None:
                pair = self._sides(*self.layout.sides(record), self.layout.langs, where)
                if pair is not None:
                    yield pair


@dataclass(frozen=True)
class Layout:
    """Where a record's two sides are: under the language codes in its `translation`
    mapping, or in two text columns."""

    translation: bool
    src: str
    tgt: str

    @property
    def langs(self) -> tuple[str, str]:
        return self.src, self.tgt

    def columns(self) -> list[str]:
        return ["translation"] if self.translation else [self.src, self.tgt]

    def sides(self, record: Mapping[str, Any]) -> tuple[Any, Any]:
        pair = record.get("translation") if self.translation else record
        if not isinstance(pair, Mapping):
            return None, None
        return pair.get(self.src), pair.get(self.tgt)

    def batch_sides(self, batch: Mapping[str, list]) -> Iterator[tuple[Any, Any]]:
        """`sides` of every record of a column-wise batch."""
        if self.translation:
            return (self.sides({"translation": pair}) for pair in batch["translation"])
        return zip(batch[self.src], batch[self.tgt])


def pick_layout(where: str, columns: Collection[str], languages: Callable[[], list[str]],
                config: SourceConfig, data: DataConfig) -> Layout:
    """The layout of a dataset with these columns: `translation` unless columns are
    named, else src_column/tgt_column, else columns named like the languages."""
    names = ", ".join(columns) or "none"
    if config.src_column is None and "translation" in columns:
        present = languages()
        for lang in (data.src_lang, data.tgt_lang):
            if lang not in present:
                raise UserError(f"{where}: its translation column has no '{lang}' entry "
                                f"(it has: {', '.join(present) or 'none'})")
        return Layout(True, data.src_lang, data.tgt_lang)
    src_col, tgt_col = config.src_column, config.tgt_column
    if src_col is None or tgt_col is None:
        src_col, tgt_col = data.src_lang, data.tgt_lang
        if src_col not in columns or tgt_col not in columns:
            raise UserError(f"{where}: no 'translation' column and no '{src_col}'/'{tgt_col}' "
                            f"columns (columns: {names}); name them with src_column and "
                            f"tgt_column")
    for column in (src_col, tgt_col):
        if column not in columns:
            raise UserError(f"{where}: no column '{column}' (columns: {names})")
    return Layout(False, src_col, tgt_col)


def _local_json_lines(config: SourceConfig) -> bool:
    path = Path(str(config.dataset)).expanduser()
    return path.is_file() and data_suffix(path) == ".jsonl"


def _translation_languages(feature: Any) -> list[str]:
    """Language keys of a `Translation` feature, a dict-of-strings feature or a record."""
    if hasattr(feature, "languages"):
        return list(feature.languages)
    return list(feature) if isinstance(feature, dict) else []


# ----------------------------------------------------------------------------- the table


# One reader per format of `transcli.config.formats.FORMATS`, by its name.
READERS: dict[str, type[Source]] = {
    cls.format: cls for cls in (FilePairSource, TsvSource, DatasetSource, TmxSource)}


def reader(config: SourceConfig) -> type[Source]:
    """The reader class of a configured (so already checked) source."""
    return READERS[source_format(config.given()).name]


def open_source(config: SourceConfig, data: DataConfig, cache_dir: Path) -> Source:
    """The reader for one configured corpus (checks files and columns up front)."""
    return reader(config).open(config, data, cache_dir)


def source_label(config: SourceConfig) -> str:
    return reader(config).label(config)


def preload_source(config: SourceConfig) -> None:
    """Slow imports a source needs (the `datasets` package), before progress lines."""
    reader(config).preload(config)
