"""The on-disk format of encoded splits: what `prepare` writes and `train` memory-maps.

A prepared directory holds, besides `spm.model`/`spm.vocab` and `manifest.json`,
three `.npy` files per split (`train`, `valid`, `test`):

    {split}.src.npy   1-D token ids of every source sentence, concatenated
    {split}.tgt.npy   1-D token ids of every target sentence, concatenated
    {split}.idx.npy   int64, shape (pairs + 1, 2): column 0 the source offsets,
                      column 1 the target offsets; pair i is src[idx[i,0]:idx[i+1,0]]

Token arrays are uint16 when the vocabulary fits (else uint32) and hold no
BOS/EOS. Plain `.npy` (never pickles) so they open memory-mapped: a split of
millions of pairs costs page cache, not Python objects. The writer streams:
each batch is appended to raw temp files, and `close()` adds the `.npy` header.

`manifest.json` (read with `load_manifest`) has at least: `vocab_size` (actual
piece count), `src_lang`, `tgt_lang`, `splits` ({split: {pairs, src_tokens,
tgt_tokens, ...}}), `data_hash` (sha256 of spm.model and every encoded file:
a run resumed on other data can tell), `config_hash`, `tokenizer`, `sources`,
and the read/kept/dropped counts per reason. Plain-text copies of the cleaned
sides of every split sit beside them as `{split}.{src_lang}` and `{split}.{tgt_lang}`,
one sentence per line, line i = pair i (references for BLEU; the train text for
subword sampling).

With `data.alignments`, the train split's word alignments, mapped to pieces
(`data/alignments.py`), sit beside it in two more files:

    train.align.npy      shape (links, 2): a link's source piece and target piece,
                         positions in their sentence (uint16, or uint32 for longer ones)
    train.align.idx.npy  int64, pairs + 1: pair i's links are align[idx[i]:idx[i+1]],
                         sorted by target piece, then source piece
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Optional, Sequence

import numpy as np

from transcli.system.errors import UserError, first_line
from transcli.system.files import read_json

SPLITS = ("train", "valid", "test")
MANIFEST_FILE = "manifest.json"
_KINDS = ("src", "tgt", "idx")
# What readers of a manifest use, with its type.
MANIFEST_KEYS = {"vocab_size": int, "src_lang": str, "tgt_lang": str, "splits": dict,
                 "data_hash": str}


ALIGNMENT_FILES = ("train.align.npy", "train.align.idx.npy")


def split_files(split: str) -> list[str]:
    """Names of the encoded files of one split, in the order `data_hash` reads them."""
    return [f"{split}.{kind}.npy" for kind in _KINDS]


def token_dtype(vocab_size: int) -> np.dtype:
    """The smallest unsigned type that holds every id of the vocabulary."""
    return np.dtype(np.uint16) if vocab_size <= 1 << 16 else np.dtype(np.uint32)


class EncodedSplit:
    """One encoded split, memory-mapped: lengths up front, token ids on demand.

    Public attributes for vectorised batching: `src_tokens`/`tgt_tokens` (the
    memory-mapped id arrays, uint16 or uint32), `src_offsets`/`tgt_offsets` (int64,
    pairs + 1: pair i is tokens[offsets[i]:offsets[i + 1]]), `src_lengths`/`tgt_lengths`.
    """

    def __init__(self, prepared_dir: str | Path, split: str, vocab_size: Optional[int] = None):
        """`vocab_size`: when given, an id outside the vocabulary is refused now, not at
        the batch that would hit it hours into training."""
        self.dir = Path(prepared_dir)
        self.split = split
        src_name, tgt_name, idx_name = split_files(split)
        self.src_tokens = _load(self.dir / src_name, ndim=1)
        self.tgt_tokens = _load(self.dir / tgt_name, ndim=1)
        if vocab_size is not None:
            _check_ids(self.dir / src_name, self.src_tokens, vocab_size)
            _check_ids(self.dir / tgt_name, self.tgt_tokens, vocab_size)
        idx = _load(self.dir / idx_name, ndim=2)
        _check_index(self.dir / idx_name, idx, len(self.src_tokens), len(self.tgt_tokens))
        self.src_offsets = np.ascontiguousarray(idx[:, 0])
        self.tgt_offsets = np.ascontiguousarray(idx[:, 1])
        # Token counts without BOS/EOS; int32 halves the memory of int64 lengths.
        self.src_lengths = np.diff(self.src_offsets).astype(np.int32)
        self.tgt_lengths = np.diff(self.tgt_offsets).astype(np.int32)

    def __len__(self) -> int:
        return len(self.src_lengths)

    def src(self, i: int) -> np.ndarray:
        """Source ids of pair `i` as int64 (ready for torch), without BOS/EOS."""
        return np.asarray(self.src_tokens[self.src_offsets[i]:self.src_offsets[i + 1]], np.int64)

    def tgt(self, i: int) -> np.ndarray:
        """Target ids of pair `i` as int64 (ready for torch), without BOS/EOS."""
        return np.asarray(self.tgt_tokens[self.tgt_offsets[i]:self.tgt_offsets[i + 1]], np.int64)


def load_manifest(prepared_dir: str | Path) -> dict[str, Any]:
    """The manifest of a prepared dir; a missing or unreadable one is a UserError."""
    path = Path(prepared_dir) / MANIFEST_FILE
    if not Path(prepared_dir).is_dir():
        what = "is a file, not a directory" if Path(prepared_dir).exists() else "not found"
        raise UserError(f"{prepared_dir}: {what} (--data takes the directory `transcli "
                        f"prepare` wrote)")
    try:
        manifest = read_json(path)
    except FileNotFoundError:
        raise UserError(f"{path}: not found (is {prepared_dir} a `transcli prepare` "
                        f"output?)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: unreadable manifest ({exc})") from None
    if not isinstance(manifest, dict) or "splits" not in manifest:
        raise UserError(f"{path}: not a transcli prepare manifest")
    for key, kind in MANIFEST_KEYS.items():
        if not isinstance(manifest.get(key), kind) or isinstance(manifest.get(key), bool):
            problem = "missing" if key not in manifest else f"not a {kind.__name__}"
            raise UserError(f"{path}: '{key}' is {problem} (run `transcli prepare` again)")
    return manifest


class EncodedWriter:
    """Appends encoded pairs of one split to raw temp files; `close()` makes the `.npy`s.

    Memory is one batch at a time, whatever the split's size.
    """

    def __init__(self, directory: str | Path, split: str, vocab_size: int):
        self.dir = Path(directory)
        self.split = split
        self.dtype = token_dtype(vocab_size)
        self.pairs = 0
        self.src_total = 0
        self.tgt_total = 0
        self.max_src = 0
        self.max_tgt = 0
        self._raw = {kind: open(self.dir / f"{name}.raw", "wb")
                     for kind, name in zip(_KINDS, split_files(split))}
        self._raw["idx"].write(np.zeros(2, np.int64).tobytes())

    def add(self, src_ids: Sequence[Sequence[int]], tgt_ids: Sequence[Sequence[int]]) -> None:
        """Append a batch of pairs (ids without BOS/EOS)."""
        if len(src_ids) != len(tgt_ids):
            raise ValueError("source and target batches differ in length")
        if not src_ids:
            return
        src_len = np.fromiter(map(len, src_ids), np.int64, len(src_ids))
        tgt_len = np.fromiter(map(len, tgt_ids), np.int64, len(tgt_ids))
        self._raw["src"].write(_flatten(src_ids, int(src_len.sum()), self.dtype))
        self._raw["tgt"].write(_flatten(tgt_ids, int(tgt_len.sum()), self.dtype))
        idx = np.stack([self.src_total + np.cumsum(src_len),
                        self.tgt_total + np.cumsum(tgt_len)], axis=1)
        self._raw["idx"].write(idx.astype(np.int64).tobytes())
        self.pairs += len(src_ids)
        self.src_total = int(idx[-1, 0])
        self.tgt_total = int(idx[-1, 1])
        self.max_src = max(self.max_src, int(src_len.max()))
        self.max_tgt = max(self.max_tgt, int(tgt_len.max()))

    def close(self) -> dict[str, int]:
        """Turn the raw files into `.npy` files; returns the split's statistics."""
        shapes = {"src": (self.src_total,), "tgt": (self.tgt_total,), "idx": (self.pairs + 1, 2)}
        dtypes = {"src": self.dtype, "tgt": self.dtype, "idx": np.dtype(np.int64)}
        for kind, name in zip(_KINDS, split_files(self.split)):
            self._raw[kind].close()
            raw = self.dir / f"{name}.raw"
            _raw_to_npy(raw, self.dir / name, dtypes[kind], shapes[kind])
            raw.unlink()
        return {"pairs": self.pairs, "src_tokens": self.src_total, "tgt_tokens": self.tgt_total,
                "max_src_tokens": self.max_src, "max_tgt_tokens": self.max_tgt}

    def abort(self) -> None:
        """Close and remove the raw files (after an error)."""
        for kind, name in zip(_KINDS, split_files(self.split)):
            self._raw[kind].close()
            (self.dir / f"{name}.raw").unlink(missing_ok=True)


class AlignmentWriter:
    """Appends the piece links of the train split's pairs, in pair order, to raw temp
    files; `close()` makes `ALIGNMENT_FILES`. `longest`: the most pieces a sentence has
    (what the positions' type must hold)."""

    def __init__(self, directory: str | Path, longest: int):
        self.dir = Path(directory)
        self.dtype = np.dtype(np.uint16) if longest <= 1 << 16 else np.dtype(np.uint32)
        self.links = self.pairs = 0
        self._raw = [open(self.dir / f"{name}.raw", "wb") for name in ALIGNMENT_FILES]
        self._raw[1].write(np.zeros(1, "<i8").tobytes())

    def add(self, src: np.ndarray, tgt: np.ndarray, counts: np.ndarray) -> None:
        """Links (source piece, target piece) of consecutive pairs, `counts` of each."""
        pair_links = np.stack([src, tgt], axis=1).astype(self.dtype.newbyteorder("<"))
        self._raw[0].write(pair_links.tobytes())
        self._raw[1].write((self.links + np.cumsum(counts)).astype("<i8").tobytes())
        self.links += len(src)
        self.pairs += len(counts)

    def close(self) -> None:
        shapes = [(self.links, 2), (self.pairs + 1,)]
        for handle, name, dtype, shape in zip(self._raw, ALIGNMENT_FILES,
                                              (self.dtype, np.dtype(np.int64)), shapes):
            handle.close()
            raw = self.dir / f"{name}.raw"
            _raw_to_npy(raw, self.dir / name, dtype, shape)
            raw.unlink()

    def abort(self) -> None:
        for handle, name in zip(self._raw, ALIGNMENT_FILES):
            handle.close()
            (self.dir / f"{name}.raw").unlink(missing_ok=True)


class EncodedAlignments:
    """The train split's piece links, memory-mapped (`ALIGNMENT_FILES`), checked against
    the split: one entry per pair, every position within its sentence."""

    def __init__(self, prepared_dir: str | Path, split: EncodedSplit):
        directory = Path(prepared_dir)
        links_path, index_path = (directory / name for name in ALIGNMENT_FILES)
        self.links = _load(links_path, ndim=2)
        self.offsets = np.ascontiguousarray(_load(index_path, ndim=1), np.int64)
        ok = (len(self.offsets) == len(split) + 1 and self.offsets[0] == 0
              and self.offsets[-1] == len(self.links)
              and bool(np.all(np.diff(self.offsets) >= 0)))
        if not ok:
            raise UserError(f"{index_path}: corrupt alignment file (its offsets do not "
                            f"match {links_path.name} and the train split); run "
                            f"`transcli prepare` again")
        pair = np.repeat(np.arange(len(split)), np.diff(self.offsets))
        inside = ((self.links[:, 0] < split.src_lengths[pair])
                  & (self.links[:, 1] < split.tgt_lengths[pair]))
        if not inside.all():
            raise UserError(f"{links_path}: corrupt alignment file (a link outside its "
                            f"pair's pieces); run `transcli prepare` again")

    def pair_links(self, i: int) -> np.ndarray:
        """Pair i's links, [links, 2]: (source piece, target piece)."""
        return np.asarray(self.links[self.offsets[i]:self.offsets[i + 1]], np.int64)


def data_hash(directory: str | Path, names: Iterable[str]) -> str:
    """sha256 over the named files (in order), so a run can tell two datasets apart."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b"\0")
        with open(Path(directory) / name, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _flatten(seqs: Sequence[Sequence[int]], total: int, dtype: np.dtype) -> bytes:
    flat = np.fromiter(itertools.chain.from_iterable(seqs), dtype, total)
    return flat.astype(dtype.newbyteorder("<"), copy=False).tobytes()


def _raw_to_npy(raw: Path, target: Path, dtype: np.dtype, shape: tuple[int, ...]) -> None:
    """Prefix little-endian raw data with an `.npy` v1 header (a streamed copy)."""
    header = {"descr": np.lib.format.dtype_to_descr(dtype.newbyteorder("<")),
              "fortran_order": False, "shape": shape}
    with open(target, "wb") as out, open(raw, "rb") as src:
        np.lib.format.write_array_header_1_0(out, header)
        shutil.copyfileobj(src, out, 1 << 20)
        out.flush()
        os.fsync(out.fileno())


def _load(path: Path, ndim: int) -> np.ndarray:
    """An `.npy` file memory-mapped from one open: its header read here, its data mapped."""
    if not path.is_file():
        raise UserError(f"{path}: encoded split file not found (run `transcli prepare` again)")
    try:
        with open(path, "rb") as handle:
            array = _map_npy(handle)
    except (OSError, ValueError, EOFError) as exc:
        raise UserError(f"{path}: corrupt or truncated encoded split file "
                        f"({first_line(exc)})") from None
    if array.ndim != ndim or array.dtype.kind not in "iu" or (ndim == 2 and array.shape[1] != 2):
        raise UserError(f"{path}: corrupt encoded split file "
                        f"(unexpected shape {array.shape} / dtype {array.dtype})")
    return array


def _map_npy(handle: BinaryIO) -> np.ndarray:
    """The array of an open `.npy` file, memory-mapped (never unpickled)."""
    version = np.lib.format.read_magic(handle)
    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                   else np.lib.format.read_array_header_2_0)
    shape, fortran, dtype = read_header(handle)
    if dtype.hasobject:
        raise ValueError("holds Python objects")
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if os.fstat(handle.fileno()).st_size < handle.tell() + size:
        raise ValueError("shorter than its header says")
    if not size:  # an empty file region cannot be mapped
        return np.zeros(shape, dtype)
    return np.memmap(handle, dtype=dtype, mode="r", shape=shape, offset=handle.tell(),
                     order="F" if fortran else "C")


def _check_ids(path: Path, tokens: np.ndarray, vocab_size: int) -> None:
    largest = int(tokens.max()) if len(tokens) else -1
    if largest >= vocab_size:
        raise UserError(f"{path}: token id {largest} is outside the vocabulary of {vocab_size} "
                        f"pieces (a corrupt file, or one encoded with another tokenizer); run "
                        f"`transcli prepare` again")


def _check_index(path: Path, idx: np.ndarray, n_src: int, n_tgt: int) -> None:
    """Offsets must start at 0, never decrease, and end at the token arrays' lengths."""
    ok = (len(idx) >= 1 and idx[0, 0] == 0 and idx[0, 1] == 0
          and idx[-1, 0] == n_src and idx[-1, 1] == n_tgt
          and bool(np.all(np.diff(idx, axis=0) >= 0)))
    if not ok:
        raise UserError(f"{path}: corrupt encoded split file (offsets do not match the "
                        f"token files)")
