"""Raw parallel text in, clean (English, Spanish) pairs out.

Readers stream pairs from a file pair, a TSV file or a Hugging Face dataset,
never holding a corpus in memory; malformed lines stop the run with one line
naming the file and line, or are skipped and counted (`skip_invalid`).
`Cleaner` normalises each pair and names the first rule it breaks.
"""

from __future__ import annotations

import logging
import re
import socket
import unicodedata
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any, Callable, Iterator, Optional
from urllib.parse import urlparse

from transcli.config import DataConfig, SourceConfig
from transcli.errors import UserError
from transcli.files import BLOCK, count_lines, open_checked

Pair = tuple[str, str]

# Drop reasons, in the order the manifest lists them.
INVALID_UTF8 = "invalid_utf8"
NO_TAB = "no_tab"
EMPTY = "empty"
TOO_LONG_CHARS = "too_long_chars"
TOO_LONG_TOKENS = "too_long_tokens"
RATIO = "ratio"
DUPLICATE = "duplicate"
DECONTAMINATED = "decontaminated"
DROP_REASONS = (INVALID_UTF8, NO_TAB, EMPTY, TOO_LONG_CHARS, TOO_LONG_TOKENS, RATIO,
                DUPLICATE, DECONTAMINATED)

DATA_FILE_BUILDERS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet"}
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst")
# C0/C1 controls and byte-order marks (also mid-file, from concatenated files): spaces.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ufeff]")


# ----------------------------------------------------------------------------- cleaning


def normalise(text: str) -> str:
    """NFC, control characters and BOMs as spaces, whitespace runs collapsed to one space,
    trimmed.

    Dedup, decontamination and the tokenizer all see this form, so two spellings
    of one sentence (composed/decomposed accents, stray spaces) count as one.
    """
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    if not text.isprintable():
        text = _CONTROL.sub(" ", text)
    return " ".join(text.split())


@dataclass(frozen=True)
class Cleaner:
    """The per-pair rules: empty sides, length limits, length ratio."""

    max_chars: int
    max_tokens: int
    max_ratio: float

    @classmethod
    def from_config(cls, data: DataConfig) -> "Cleaner":
        return cls(data.max_chars, data.max_tokens, data.max_ratio)

    def reason(self, src: str, tgt: str) -> Optional[str]:
        """The drop reason of a normalised pair, or None to keep it."""
        if not src or not tgt:
            return EMPTY
        if len(src) > self.max_chars or len(tgt) > self.max_chars:
            return TOO_LONG_CHARS
        src_words = src.count(" ") + 1  # normalised: exactly one space between words
        tgt_words = tgt.count(" ") + 1
        if src_words > self.max_tokens or tgt_words > self.max_tokens:
            return TOO_LONG_TOKENS
        if max(src_words, tgt_words) > self.max_ratio * min(src_words, tgt_words):
            return RATIO
        return None


# ----------------------------------------------------------------------------- sources


class Source:
    """A readable corpus: `len()` for the progress bar, iteration for the raw pairs.

    Lines that are malformed raise `UserError`, or with `skip_invalid` are
    counted in `skipped` (by reason) and left out.
    """

    def __init__(self, config: SourceConfig, skip_invalid: bool):
        self.config = config
        self.skip_invalid = skip_invalid
        self.skipped: Counter[str] = Counter()

    total: Optional[int] = None  # lines or rows, when known up front (not for a pipe)

    def describe(self) -> dict[str, Any]:
        """What the manifest records about this source."""
        return {k: v for k, v in vars(self.config).items() if v is not None}

    def __iter__(self) -> Iterator[Pair]:
        raise NotImplementedError

    def _invalid(self, reason: str, message: str) -> None:
        if not self.skip_invalid:
            raise UserError(f"{message}; pass --skip-invalid to skip and count such lines")
        self.skipped[reason] += 1


def open_source(config: SourceConfig, data: DataConfig, cache_dir: Path) -> Source:
    """The reader for one configured corpus (checks files and columns up front)."""
    if config.tsv is not None:
        return TsvSource(config, data.skip_invalid)
    if config.src_file is not None:
        return FilePairSource(config, data.skip_invalid)
    return DatasetSource(config, data, cache_dir)


class FilePairSource(Source):
    """Two line-aligned files; a pair with an undecodable side is one invalid line.

    Regular files are counted up front (a mismatch fails at once); pipes such as
    `<(zcat train.en.gz)` can be read only once, so theirs is found at the end.
    """

    def __init__(self, config: SourceConfig, skip_invalid: bool):
        super().__init__(config, skip_invalid)
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
        with _open(self.src_path) as src_file, _open(self.tgt_path) as tgt_file:
            for number, (src_raw, tgt_raw) in enumerate(zip_longest(src_file, tgt_file), 1):
                if src_raw is None or tgt_raw is None:
                    rest = 1 + sum(1 for _ in (src_file if tgt_raw is None else tgt_file))
                    shorter, longer = number - 1, number - 1 + rest
                    self._mismatch(*((longer, shorter) if tgt_raw is None else (shorter, longer)))
                src, tgt = decode_line(src_raw), decode_line(tgt_raw)
                if src is not None and tgt is not None:
                    yield src, tgt
                    continue
                path, raw = (self.src_path, src_raw) if src is None else (self.tgt_path, tgt_raw)
                self._invalid(INVALID_UTF8, invalid_utf8_message(raw, path, number))


class TsvSource(Source):
    """English in column 1, Spanish in column 2, further columns (attribution) ignored.

    A blank line is an empty pair (dropped as such); a line with text but no tab is
    malformed.
    """

    def __init__(self, config: SourceConfig, skip_invalid: bool):
        super().__init__(config, skip_invalid)
        self.path = Path(str(config.tsv))
        self.total = count_lines(self.path)

    def __iter__(self) -> Iterator[Pair]:
        with _open(self.path) as handle:
            for number, raw in enumerate(handle, 1):
                line = decode_line(raw)
                if line is None:
                    self._invalid(INVALID_UTF8, invalid_utf8_message(raw, self.path, number))
                elif "\t" in line:
                    src, tgt = line.split("\t", 2)[:2]
                    yield src, tgt
                elif not line.strip():
                    yield "", ""
                else:
                    self._invalid(NO_TAB, f"{self.path}:{number}: no tab in this line (a TSV "
                                          f"line is English<TAB>Spanish[<TAB>more columns])")


class DatasetSource(Source):
    """A Hugging Face dataset: a `translation` column of {src_lang: .., tgt_lang: ..}
    dicts, or two text columns (named by src_column/tgt_column, else src_lang/tgt_lang)."""

    def __init__(self, config: SourceConfig, data: DataConfig, cache_dir: Path):
        super().__init__(config, skip_invalid=False)
        self.name = str(config.dataset)
        self.table = load_hf_dataset(config, cache_dir)
        self.read_batch = self._batch_reader(data.src_lang, data.tgt_lang)
        self.total = len(self.table)

    def __iter__(self) -> Iterator[Pair]:
        for batch in self.table.iter(batch_size=10_000):
            yield from self.read_batch(batch)

    def _batch_reader(self, src_lang: str, tgt_lang: str) -> Callable[[dict], Iterator[Pair]]:
        """Check the columns once; return how to pull pairs out of a batch."""
        features = self.table.features
        names = ", ".join(features) or "none"
        src_col, tgt_col = self.config.src_column, self.config.tgt_column
        if src_col is None and "translation" in features:
            languages = _translation_languages(features["translation"])
            for lang in (src_lang, tgt_lang):
                if lang not in languages:
                    raise UserError(f"dataset '{self.name}': its translation column has no "
                                    f"'{lang}' entry (it has: {', '.join(languages) or 'none'})")
            self.table = self.table.select_columns(["translation"])
            return lambda batch: ((_text((t or {}).get(src_lang)), _text((t or {}).get(tgt_lang)))
                                  for t in batch["translation"])
        if src_col is None:
            src_col, tgt_col = src_lang, tgt_lang
            if src_col not in features or tgt_col not in features:
                raise UserError(f"dataset '{self.name}': no 'translation' column and no "
                                f"'{src_col}'/'{tgt_col}' columns (columns: {names}); "
                                f"name them with src_column and tgt_column")
        for column in (src_col, tgt_col):
            if column not in features:
                raise UserError(f"dataset '{self.name}': no column '{column}' (columns: {names})")
            if getattr(features[column], "dtype", None) not in ("string", "large_string"):
                raise UserError(f"dataset '{self.name}': column '{column}' is not text "
                                f"({features[column]})")
        self.table = self.table.select_columns([src_col, tgt_col])
        return lambda batch: zip(map(_text, batch[src_col]), map(_text, batch[tgt_col]))


def _translation_languages(feature: Any) -> list[str]:
    """Language keys of a `Translation` feature or a dict-of-strings feature."""
    if hasattr(feature, "languages"):
        return list(feature.languages)
    return list(feature) if isinstance(feature, dict) else []


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def import_datasets(name: str) -> Any:
    """The Hugging Face `datasets` package, imported only for dataset sources: it is slow
    to import, and GPU images may lack it while file pairs and TSVs need nothing more."""
    try:
        import datasets
    except ImportError:
        raise UserError(f"dataset '{name}': dataset sources need the Hugging Face `datasets` "
                        f"package (pip install datasets); --src-file/--tgt-file and --tsv "
                        f"work without it") from None
    return datasets


def load_hf_dataset(config: SourceConfig, cache_dir: Path) -> Any:
    """A `datasets.Dataset` from a save_to_disk dir, a local data file or folder, or the hub.

    Local files are converted into `cache_dir` (the run's scratch space), so nothing
    is written outside it; hub datasets use the usual Hugging Face cache.
    """
    datasets = import_datasets(str(config.dataset))
    datasets.disable_progress_bars()  # ours shows progress; theirs would interleave
    datasets.logging.set_verbosity(logging.CRITICAL)  # its errors become our one line
    _quiet_hub_logs()
    name = str(config.dataset)
    path = Path(name).expanduser()
    try:
        if path.is_dir() and _is_saved_dataset(path):
            return _pick_split(datasets.load_from_disk(str(path)), name, config.split)
        if path.is_file():
            builder = DATA_FILE_BUILDERS.get(_data_suffix(path))
            if builder is None:
                raise UserError(f"dataset '{name}': unsupported file type; use "
                                f"{', '.join(DATA_FILE_BUILDERS)} (or --tsv / --src-file)")
            return datasets.load_dataset(builder, data_files=str(path), split="train",
                                         cache_dir=str(cache_dir))
        if path.is_dir():
            return datasets.load_dataset(str(path), config.subset, split=config.split,
                                         cache_dir=str(cache_dir))
        if _looks_like_path(name):
            raise UserError(f"dataset '{name}': no such file or directory")
        with _offline_unless_reachable(datasets.config) as offline:
            try:
                return datasets.load_dataset(name, config.subset, split=config.split)
            except Exception:
                if offline:
                    raise UserError(f"dataset '{name}': not a local file or directory, not in "
                                    f"the Hugging Face cache, and the hub is unreachable "
                                    f"(offline)") from None
                raise
    except UserError:
        raise
    except Exception as exc:  # datasets raises many types; the user needs one line
        raise UserError(f"dataset '{name}'"
                        + (f" (subset '{config.subset}')" if config.subset else "")
                        + f": cannot load: {_one_line(exc)}") from None


def _is_saved_dataset(path: Path) -> bool:
    return any((path / marker).is_file()
               for marker in ("dataset_dict.json", "state.json", "dataset_info.json"))


def _pick_split(loaded: Any, name: str, split: str) -> Any:
    """A save_to_disk DatasetDict holds splits; a plain Dataset is the split itself."""
    if not hasattr(loaded, "keys"):
        return loaded
    if split not in loaded:
        raise UserError(f"dataset '{name}': no split '{split}' (splits: {', '.join(loaded)})")
    return loaded[split]


def _data_suffix(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in _COMPRESSED:
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def _looks_like_path(name: str) -> bool:
    """Hub names are `owner/name`; these can only be meant as local paths."""
    return (name.startswith((".", "/", "~")) or "\\" in name
            or Path(name).suffix.lower() in DATA_FILE_BUILDERS or name.count("/") > 1)


@contextmanager
def _offline_unless_reachable(datasets_config: Any) -> Iterator[bool]:
    """Yields whether the hub is off limits. Hugging Face retries an unreachable hub for
    about 25 s before failing; when the endpoint's name does not even resolve we go
    offline at once (cached datasets still load, others fail in a moment)."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE or datasets_config.HF_HUB_OFFLINE:
        yield True
        return
    host = urlparse(constants.ENDPOINT).hostname
    try:
        socket.getaddrinfo(host or "", 443)
    except OSError:
        pass
    else:
        yield False
        return
    saved = constants.HF_HUB_OFFLINE, datasets_config.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = datasets_config.HF_HUB_OFFLINE = True
    try:
        yield True
    finally:
        constants.HF_HUB_OFFLINE, datasets_config.HF_HUB_OFFLINE = saved


def _quiet_hub_logs() -> None:
    try:
        from huggingface_hub.utils import logging as hub_logging
    except ImportError:
        return
    hub_logging.set_verbosity(logging.CRITICAL)


def _one_line(exc: BaseException) -> str:
    """The most telling line of an exception chain from `datasets`."""
    seen: list[str] = []
    while exc is not None and len(seen) < 5:
        text = " ".join(str(exc).split())
        if text:
            seen.append(f"{text[:300]}")
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    if not seen:
        return "unknown error"
    generic = ("An error occurred while generating the dataset",)
    useful = [s for s in seen if not s.startswith(generic)]
    return (useful or seen)[0]


# ----------------------------------------------------------------------------- raw lines


def _open(path: Path) -> Any:
    """Binary, so invalid UTF-8 can be located by line; OS errors become one line."""
    return open_checked(path, "rb", buffering=BLOCK)


def decode_line(raw: bytes) -> Optional[str]:
    """The line's text without its line ending; None if not UTF-8."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text.rstrip("\r\n")


def invalid_utf8_message(raw: bytes, path: Path, number: int) -> str:
    try:
        raw.decode("utf-8")
        column = 0
    except UnicodeDecodeError as exc:
        column = exc.start
    byte = raw[column:column + 1].hex()
    return f"{path}:{number}: invalid UTF-8 (byte 0x{byte} at byte {column + 1} of the line)"
