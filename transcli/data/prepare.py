"""`transcli prepare`: raw parallel text -> a prepared dir (tokenizer, encoded splits, manifest).

Streaming passes, so memory does not follow the corpus' text:
  1. collect: read and clean each source into a scratch TSV, keeping two 8-byte
     hashes per kept pair (the pair, its English side) in numpy arrays;
  2. assign: decide every pair's fate from the hashes alone (numpy): duplicate,
     decontaminated, carved into valid/test, or train;
  3. distribute: split the scratch TSV into train text and the valid/test copies;
  4. train sentencepiece on the train text, then encode each split in batches;
  5. with `data.alignments`, align the train split's words (`data/alignments.py`).
Bookkeeping is about 25 bytes per pair read (hashes, fate) - 25 MB per million pairs.
Everything is written into a scratch dir beside --out and moved in at the end
(`system.outputs.output_folder`), so a failed or interrupted run leaves --out as it was.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import sys
import threading
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Optional

import numpy as np
from tqdm import tqdm

from transcli.config.schema import Config, DataConfig, SourceConfig
from transcli.data.cleaning import (
    DECONTAMINATED,
    DROP_REASONS,
    DROP_WORDS,
    DUPLICATE,
    Cleaner,
    normalise,
)
from transcli.data.encoded import (
    ALIGNMENT_FILES,
    MANIFEST_FILE,
    SPLITS,
    AlignmentWriter,
    EncodedSplit,
    EncodedWriter,
    data_hash,
    split_files,
)
from transcli.data.sources import Source, open_source, preload_source, source_label
from transcli.data.tokenizer import (
    TOKENIZER_FILE,
    VOCAB_FILE,
    Tokenizer,
    train_tokenizer,
    write_vocab,
)
from transcli.system.errors import UserError
from transcli.system.outputs import FolderContents, OutputFolder, output_folder
from transcli.system.text import count_lines

FORMAT = "transcli-prepared/1"
DROP, TRAIN, VALID, TEST = 0, 1, 2, 3  # a pair's fate
SPLIT_IDS = {"train": TRAIN, "valid": VALID, "test": TEST}
ENCODE_BATCH = 10_000  # lines per sentencepiece call: C++-fast, bounded memory


def prepare(cfg: Config, out: Path, force: bool) -> None:
    """Clean, split, tokenize and encode `cfg.data`'s corpora into `out` (see module doc)."""
    data = cfg.data
    if not data.train:
        raise UserError("no training data: give --src-file and --tgt-file, --tsv or --dataset "
                        "(or list sources under data.train in the config)")
    folder = OutputFolder(out, MANIFEST_FILE, "prepare", accept=is_manifest)
    check_out(folder, force, output_names(data))  # fail before the work
    with output_folder(folder, "prepared data", force) as stage:
        manifest = _build(cfg, stage.scratch, stage.path)
        stage.record.update(manifest)
        stage.listed = output_names(data)  # the manifest itself among them
    _report(out, manifest)


# ----------------------------------------------------------------------------- the passes


@dataclass
class Collected:
    """One split's cleaned pairs (a scratch TSV) and what decides their fate."""

    path: Path
    pair_hashes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    src_hashes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    read: int = 0
    dropped: Counter = field(default_factory=Counter)
    carved: Counter = field(default_factory=Counter)
    sources: list[dict[str, Any]] = field(default_factory=list)  # for the manifest
    kept: list[int] = field(default_factory=list)  # pairs each source left after cleaning
    labels: list[str] = field(default_factory=list)  # for messages


def _build(cfg: Config, scratch: Path, stage: Path) -> dict[str, Any]:
    """Every pass, from sources to a staged prepared dir; returns the manifest."""
    data = cfg.data
    cache = scratch / "hf-cache"
    held_configs = {"valid": data.valid, "test": data.test}
    # Open everything first: a missing file or column fails before minutes of work.
    train_sources = [_open(c, data, cache, "train") for c in data.train]
    held_sources = {split: _open(c, data, cache, split)
                    for split, c in held_configs.items() if c is not None}
    collected = {"train": collect(train_sources, Cleaner.from_config(data),
                                  scratch / "train.clean.tsv", "train")}
    for split, source in held_sources.items():  # kept whole: scored as published
        collected[split] = collect([source], Cleaner.held_out(),
                                   scratch / f"{split}.clean.tsv", split)
    fates = {split: assign_held(collected[split], split) for split in held_sources}
    carve = [split for split in ("valid", "test") if split not in held_sources]
    fates["train"] = assign_train(collected["train"], [collected[s] for s in held_sources],
                                  data, carve)
    record_train_sources(collected["train"], fates["train"], data.train)
    texts = distribute(collected, fates, data, scratch, stage)
    if data.tokenizer_model:
        settings = reuse_tokenizer(Path(data.tokenizer_model), stage)
    else:
        with _status(f"training sentencepiece ({data.tokenizer}, vocab {data.vocab_size})"):
            settings = train_tokenizer(
                list(texts["train"]), stage, vocab_size=data.vocab_size,
                model_type=data.tokenizer, character_coverage=data.character_coverage,
                input_sentence_size=data.input_sentence_size, seed=data.seed,
                byte_fallback=data.byte_fallback,
                max_sentence_length=max(4192, 4 * data.max_chars + 16))
    tokenizer = Tokenizer(stage / TOKENIZER_FILE)
    splits = {split: encode_split(tokenizer, *texts[split], stage, split) for split in SPLITS}
    manifest = _manifest(cfg, collected, splits, settings, tokenizer.vocab_size, stage)
    if data.alignments:
        manifest["alignments"] = align_train(tokenizer, stage, scratch, splits["train"])
    return manifest


def align_train(tokenizer: Tokenizer, stage: Path, scratch: Path, counts: dict[str, int]
                ) -> dict[str, Any]:
    """Pass 5: the train split's word alignments, as piece links (`data/alignments.py`),
    and what the manifest records of them."""
    from transcli.data.alignments import METHOD, align_split

    writer = AlignmentWriter(stage, max(counts["max_src_tokens"], counts["max_tgt_tokens"]))
    try:
        with _status(f"aligning the words of {counts['pairs']:,} training pairs (both "
                     f"directions)"):
            stats = align_split(EncodedSplit(stage, "train"), tokenizer, scratch, writer)
    except BaseException:
        writer.abort()
        raise
    writer.close()
    return {"method": METHOD, "files": list(ALIGNMENT_FILES),
            "pairs_aligned": stats.aligned_pairs, "word_links": stats.word_links,
            "piece_links": stats.piece_links, "sha256": data_hash(stage, ALIGNMENT_FILES)}


def reuse_tokenizer(source: Path, stage: Path) -> dict[str, Any]:
    """Stage an existing sentencepiece model (a file, or a dir holding spm.model) instead
    of training one; checked like any tokenizer (special ids). Returns manifest settings."""
    path = source / TOKENIZER_FILE if source.is_dir() else source
    Tokenizer(path)  # a one-line error if it is missing or not transcli's kind
    shutil.copyfile(path, stage / TOKENIZER_FILE)
    write_vocab(stage / TOKENIZER_FILE, stage / VOCAB_FILE)
    return {"reused": str(path.resolve())}


def _open(config: SourceConfig, data: DataConfig, cache: Path, split: str) -> Source:
    preload_source(config)  # before the timer starts: a failing import gives its one line alone
    with _status(f"opening {split}: {source_label(config)}"):  # line counts, dataset loading
        return open_source(config, data, cache)


def collect(sources: list[Source], cleaner: Cleaner, path: Path, label: str) -> Collected:
    """Pass 1: normalise and filter every pair, appending survivors to a scratch TSV."""
    result = Collected(path)
    pair_hashes, src_hashes = bytearray(), bytearray()
    with open(path, "wb") as scratch:
        for source in sources:
            read = kept = 0
            name = source_label(source.config)
            with _progress(source.total, f"reading {label}: {name}") as bar:
                for src, tgt in source:
                    read += 1
                    if not read & 0xFFF:
                        bar.update(0x1000)
                    src, tgt = normalise(src), normalise(tgt)
                    reason = cleaner.reason(src, tgt)
                    if reason is not None:
                        result.dropped[reason] += 1
                        continue
                    src_bytes, tgt_bytes = src.encode(), tgt.encode()
                    # Tabs cannot occur: normalise() turned them into spaces.
                    line = src_bytes + b"\t" + tgt_bytes + b"\n"
                    scratch.write(line)
                    kept += 1
                    pair_hashes += hashlib.blake2b(line, digest_size=8).digest()
                    src_hashes += hashlib.blake2b(src_bytes, digest_size=8).digest()
                skipped = sum(source.skipped.values())
                bar.update(read + skipped - bar.n)
            result.dropped.update(source.skipped)
            result.read += read + skipped
            result.sources.append({**source.describe(), "read": read + skipped})
            result.kept.append(kept)
            result.labels.append(name)
    result.pair_hashes = np.frombuffer(bytes(pair_hashes), np.uint64)
    result.src_hashes = np.frombuffer(bytes(src_hashes), np.uint64)
    return result


def record_train_sources(train: Collected, fate: np.ndarray, configs: list[SourceConfig]
                         ) -> None:
    """Each train source's pairs in the train split and its weight, for the manifest: the
    split holds one source's pairs after the other's, so the batch plan can weight each
    pair by its source (data/weights.py)."""
    ends = np.cumsum(train.kept, dtype=np.int64)
    for entry, config, start, end in zip(train.sources, configs, ends - train.kept, ends):
        entry["pairs"] = int((fate[start:end] == TRAIN).sum())
        entry["weight"] = config.weight


def assign_held(held: Collected, split: str) -> np.ndarray:
    """Pass 2 for a given valid/test set: every collected pair stays, duplicates included
    (scores on a standard test set are comparable only when all of it is scored)."""
    if not len(held.pair_hashes):
        _nothing_left(held, f"in the {split} set")
    return np.full(len(held.pair_hashes), SPLIT_IDS[split], np.uint8)


def assign_train(train: Collected, held: list[Collected], data: DataConfig,
                 carve: list[str]) -> np.ndarray:
    """Pass 2 for train: dedupe, decontaminate against given valid/test sets, then carve.

    Carving is by English sentence: distinct English sides are ranked by a seeded
    hash and the first `valid_size` (then `test_size`) go to valid (test), one pair
    each; every other pair sharing one of those English sides leaves train too
    (counted as decontaminated). Exact sizes, reproducible, no corpus shuffle.
    """
    keep = first_occurrences(train.pair_hashes)
    train.dropped[DUPLICATE] += int((~keep).sum())
    fate = np.where(keep, TRAIN, DROP).astype(np.uint8)
    if not keep.any():
        _nothing_left(train)
    if held:
        _decontaminate(train, fate, np.concatenate([h.src_hashes for h in held]))
    if carve:
        carved = _carve(train, fate, data, carve)
        _decontaminate(train, fate, train.src_hashes[carved])
    if not (fate == TRAIN).any():
        _nothing_left(train)
    return fate


def _carve(train: Collected, fate: np.ndarray, data: DataConfig, carve: list[str]) -> np.ndarray:
    """Move one pair each of the lowest-ranked distinct English sentences into the
    carved splits; returns the moved pairs' positions."""
    candidates = np.flatnonzero(fate == TRAIN)
    seed = _mix(np.array([data.seed], np.uint64))
    rank = _mix(train.src_hashes[candidates] ^ seed)
    firsts = np.unique(rank, return_index=True)[1]  # ascending rank: a seeded sample
    sizes = [data.valid_size if split == "valid" else data.test_size for split in carve]
    if len(firsts) <= sum(sizes):
        # A tenth of the sentences for each carved split, at least one, leaves most to train.
        fit = max(1, len(firsts) // (10 * len(carve)))
        raise UserError(
            f"only {len(firsts)} distinct English sentences are left after cleaning: too few "
            f"to carve {' + '.join(f'{s}_size={n}' for s, n in zip(carve, sizes))} and keep "
            f"some for training; lower them, e.g. "
            f"{' '.join(f'--set data.{s}_size={fit}' for s in carve)}, or give data.valid / "
            f"data.test sources")
    chosen = candidates[firsts[:sum(sizes)]]
    start = 0
    for split, size in zip(carve, sizes):
        fate[chosen[start:start + size]] = SPLIT_IDS[split]
        train.carved[split] = size
        start += size
    return chosen


def _decontaminate(train: Collected, fate: np.ndarray, held_src: np.ndarray) -> None:
    """Drop the train pairs whose English side is one of `held_src`."""
    leaking = (fate == TRAIN) & np.isin(train.src_hashes, held_src)
    fate[leaking] = DROP
    train.dropped[DECONTAMINATED] += int(leaking.sum())


def _nothing_left(clean: Collected, what: str = "to train on") -> None:
    sources = " and ".join(clean.labels)
    if not clean.read:
        raise UserError(f"nothing left {what}: {sources} holds no lines")
    raise UserError(f"nothing left {what}: all {clean.read} pairs read from {sources} were "
                    f"dropped ({_drop_summary(clean.dropped)})")


def first_occurrences(hashes: np.ndarray) -> np.ndarray:
    """True at the first occurrence of each distinct hash. 8-byte hashes instead of the
    pairs themselves keep memory small; a false duplicate needs a 64-bit collision
    (odds about 3e-8 for a million pairs)."""
    keep = np.zeros(len(hashes), dtype=bool)
    keep[np.unique(hashes, return_index=True)[1]] = True
    return keep


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a bijection of uint64, so ranks stay one per sentence."""
    x = x.astype(np.uint64, copy=True)
    for shift, factor in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):
        x ^= x >> np.uint64(shift)
        x *= np.uint64(factor)
    x ^= x >> np.uint64(31)
    return x


def distribute(collected: dict[str, Collected], fates: dict[str, np.ndarray], data: DataConfig,
               scratch: Path, stage: Path) -> dict[str, tuple[Path, Path]]:
    """Pass 3: one pair of cleaned text files per split, in corpus order, staged as the
    plain-text copies the prepared dir keeps: train's for subword sampling during
    training (and sentencepiece's input now), valid/test's as references for BLEU.
    """
    texts = {split: (stage / f"{split}.{data.src_lang}", stage / f"{split}.{data.tgt_lang}")
             for split in SPLITS}
    files = {SPLIT_IDS[split]: (open(src, "wb"), open(tgt, "wb"))
             for split, (src, tgt) in texts.items()}
    try:
        for split, clean in collected.items():
            _split_lines(clean, fates[split], files, f"splitting {split}")
    finally:
        for handles in files.values():
            for handle in handles:
                handle.close()
    return texts


def _split_lines(clean: Collected, fate: np.ndarray,
                 targets: dict[int, tuple[BinaryIO, BinaryIO]], desc: str) -> None:
    with open(clean.path, "rb") as lines, _progress(len(fate), desc) as bar:
        for start in range(0, len(fate), ENCODE_BATCH):
            for line, where in zip(islice(lines, ENCODE_BATCH),
                                   fate[start:start + ENCODE_BATCH].tolist()):
                if where != DROP:
                    src, tgt = line.split(b"\t")
                    files = targets[where]
                    files[0].write(src + b"\n")
                    files[1].write(tgt)  # keeps the line's newline
            bar.update(min(ENCODE_BATCH, len(fate) - start))


def encode_split(tokenizer: Tokenizer, src_path: Path, tgt_path: Path, stage: Path,
                 split: str) -> dict[str, int]:
    """Pass 4: encode a split's text in batches into its `.npy` files."""
    writer = EncodedWriter(stage, split, tokenizer.vocab_size)
    total = count_lines(src_path)
    try:
        with open(src_path, encoding="utf-8", newline="\n") as src_file, \
                open(tgt_path, encoding="utf-8", newline="\n") as tgt_file, \
                _progress(total, f"encoding {split}") as bar:
            while True:
                src = [line.rstrip("\n") for line in islice(src_file, ENCODE_BATCH)]
                if not src:
                    break
                tgt = [line.rstrip("\n") for line in islice(tgt_file, ENCODE_BATCH)]
                writer.add(tokenizer.encode(src), tokenizer.encode(tgt))
                bar.update(len(src))
    except BaseException:
        writer.abort()
        raise
    return writer.close()


# ----------------------------------------------------------------------------- manifest


def output_names(data: DataConfig) -> list[str]:
    """Every file a prepare run writes into --out (the manifest lists them too)."""
    names = [TOKENIZER_FILE, VOCAB_FILE]
    for split in SPLITS:
        names += split_files(split)
    for split in SPLITS:
        names += [f"{split}.{data.src_lang}", f"{split}.{data.tgt_lang}"]
    if data.alignments:
        names += ALIGNMENT_FILES
    return names + [MANIFEST_FILE]


def _manifest(cfg: Config, collected: dict[str, Collected], splits: dict[str, dict[str, int]],
              settings: dict[str, Any], vocab_size: int, stage: Path) -> dict[str, Any]:
    data = cfg.data
    counts = {}
    for split in SPLITS:
        clean = collected.get(split)
        if clean is None:  # carved off train
            counts[split] = {"carved_from": "train", "kept": splits[split]["pairs"]}
            continue
        counts[split] = {
            "read": clean.read,
            "kept": splits[split]["pairs"],
            "dropped": {reason: clean.dropped.get(reason, 0) for reason in DROP_REASONS},
            **({"carved": {s: clean.carved.get(s, 0) for s in ("valid", "test")}}
               if split == "train" else {}),
        }
    encoded = [TOKENIZER_FILE] + [name for split in SPLITS for name in split_files(split)]
    cleaning = {key: getattr(data, key) for key in (
        "max_tokens", "max_chars", "max_ratio", "valid_size", "test_size", "skip_invalid", "seed")}
    return {
        "format": FORMAT,
        "src_lang": data.src_lang,
        "tgt_lang": data.tgt_lang,
        "vocab_size": vocab_size,
        "splits": splits,
        "counts": counts,
        "sources": {split: clean.sources for split, clean in collected.items()},
        "cleaning": cleaning,
        "tokenizer": settings,
        "config_hash": config_hash(cfg),
        "data_hash": weighted_hash(data_hash(stage, encoded), collected["train"].sources),
    }


def weighted_hash(digest: str, sources: list[dict[str, Any]]) -> str:
    """The data hash, with the sources' weights in it unless all are 1: other weights make
    other epochs, which a resume must not mix."""
    weights = [source["weight"] for source in sources]
    if all(weight == 1.0 for weight in weights):
        return digest
    return hashlib.sha256(f"{digest} weights {weights}".encode()).hexdigest()


def config_hash(cfg: Config) -> str:
    """The data section's fingerprint, less `out`: where it is written changes nothing."""
    return dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, out="")).fingerprint("data")


def _report(out: Path, manifest: dict[str, Any]) -> None:
    sizes = ", ".join(f"{s} {manifest['splits'][s]['pairs']}" for s in SPLITS)
    train = manifest["counts"]["train"]
    print(f"prepared {out}: {sizes} pairs; vocab {manifest['vocab_size']}; "
          f"train read {train['read']:,}, dropped {_drop_summary(Counter(train['dropped']))}",
          file=sys.stderr)
    asked = manifest["tokenizer"].get("vocab_size")
    if isinstance(asked, int) and manifest["vocab_size"] < asked:
        print(f"note: the vocabulary has {manifest['vocab_size']:,} pieces, fewer than "
              f"data.vocab_size={asked:,}: the training text has no more pieces worth "
              f"adding (more text, or a smaller data.vocab_size, gives the size asked for)",
              file=sys.stderr)


def _drop_summary(dropped: Counter) -> str:
    """The pairs dropped, in words: "12 duplicates, 3 over data.max_tokens"."""
    parts = [f"{dropped[reason]:,} {DROP_WORDS[reason]}" for reason in DROP_REASONS
             if dropped.get(reason)]
    return ", ".join(parts) or "none"


# ----------------------------------------------------------------------------- --out


def check_out(folder: OutputFolder, force: bool, names: list[str]) -> FolderContents:
    """Refuse an --out holding anything without --force, and with --force any file of
    ours by name that an earlier prepare did not write. Returns what --out holds."""
    contents = folder.contents("--out")
    out, previous, users = folder.folder, contents.written, contents.users_files
    if contents.names and not force:
        if previous:
            others = (f" (and files prepare did not write, e.g. '{users[0]}', which --force "
                      f"keeps)" if users else "")
            raise UserError(f"{out}: already holds a prepared dataset{others}; "
                            f"pass --force to replace it")
        raise UserError(f"{out}: is not empty and holds files prepare did not write (e.g. "
                        f"'{users[0]}'); choose another --out, or pass --force to write beside "
                        f"them (prepare never deletes files it did not write)")
    folder.refuse_clash(names, contents, "prepared data")
    return contents


def is_manifest(record: dict[str, Any]) -> bool:
    """Whether a manifest.json is one of prepare's (the record of the files it wrote)."""
    return record.get("format") == FORMAT


# ----------------------------------------------------------------------------- helpers


def _progress(total: Optional[int], desc: str, **options: Any) -> tqdm:
    """A bar on stderr that shows up only once a step has taken a second: quick steps,
    and errors found at once, leave stderr to the one line that matters."""
    return tqdm(total=total, desc=desc, unit=" pairs", file=sys.stderr, delay=1.0,
                mininterval=0.5, dynamic_ncols=True, **options)


@contextmanager
def _status(desc: str) -> Iterator[None]:
    """An elapsed-time line for a step that reports no progress of its own (sentencepiece
    training, dataset loading): a thread refreshes it, once the step has taken a second."""
    bar = _progress(1, desc, bar_format="{desc}: {elapsed}")
    done = threading.Event()

    def tick() -> None:
        while not done.wait(1.0):
            bar.update(0)  # redraws the elapsed time (and marks the bar as shown)

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
        bar.close()
