"""The word alignments `prepare` makes (`data.alignments`): what they link, how well, and
what they cost.

    python -m bench.alignment show --data PREPARED --pairs 20
    python -m bench.alignment gold --data PREPARED --gold GOLD.jsonl [--eflomal PYTHON]
    python -m bench.alignment time [--pairs N] [--rounds 2] [--keep DIR]

`show` prints pairs of a prepared dir with alignments, each target word with the source
words it is linked to, for checking by eye. `gold` aligns hand-aligned pairs (JSON lines
with "src_words", "tgt_words" and "alignment": [[source, target], ...], 0-based, e.g. the
EN-ES Golden Collection of Graça et al. 2008) together with the prepared dir's train
split, and prints precision, recall and AER (sure = possible = the links given) of each
direction, their union, and each way `symmetrise.py` has; with --eflomal, the same words
aligned by eflomal (its `eflomal.Aligner`, run by that Python, which has it installed) and
symmetrised alike, side by side. `time` runs `transcli prepare` of the shared corpus
(configs/cpu-1h.yaml's settings) without and with data.alignments, in turns, and prints
each one's wall time and peak memory with the machine's load beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple, Optional

import numpy as np

from bench.common import CORPORA, ROOT, child_env, set_flags
from transcli.data.aligner import Side, WordAlignments, align
from transcli.data.alignments import PieceTable, Words, split_words
from transcli.data.prepared_dir import open_prepared_dir
from transcli.data.symmetrise import METHODS, symmetrise

Link = tuple[int, int]


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.alignment", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("show", "gold", "time"))
    parser.add_argument("--data", type=Path, help="a prepared dir (with alignments for show)")
    parser.add_argument("--pairs", type=int, help="show: pairs (default 20); time: the "
                        "corpus' first N pairs (default: all)")
    parser.add_argument("--first", type=int, default=0, help="show: the first pair shown")
    parser.add_argument("--gold", type=Path, help="gold: hand-aligned pairs (JSON lines)")
    parser.add_argument("--eflomal", help="gold: a Python with eflomal installed")
    parser.add_argument("--rounds", type=int, default=2, help="time: turns of each")
    parser.add_argument("--keep", type=Path, help="time: keep the prepared dir with "
                        "alignments here (for show)")
    args = parser.parse_args(argv)
    if args.mode in ("show", "gold") and args.data is None:
        parser.error(f"{args.mode} needs --data")
    if args.mode == "gold" and args.gold is None:
        parser.error("gold needs --gold")
    return args


def main(argv: Optional[list[str]] = None) -> None:
    args = parse_args(argv)
    if args.mode == "time":
        time_prepare(args.pairs, args.rounds, args.keep)
    elif args.mode == "show":
        show(args.data, args.first, args.pairs or 20)
    else:
        gold(args.data, args.gold, args.eflomal)


# ----------------------------------------------------------------------------- show


def word_texts(sp, tokens: np.ndarray, words: Words, pair: int) -> list[str]:
    """The words of one sentence of a split's side, as their pieces spell them."""
    texts = []
    for w in range(words.side.starts[pair], words.side.starts[pair + 1]):
        ids = tokens[words.piece_starts[w]:words.piece_starts[w + 1]].tolist()
        texts.append(sp.Decode(ids).strip() or "".join(sp.IdToPiece(i) for i in ids))
    return texts


def show(data: Path, first: int, count: int) -> None:
    prepared = open_prepared_dir(data)
    split, links = prepared.split("train"), prepared.alignments("bench.alignment show")
    sp, table = prepared.tokenizer.sp, PieceTable.of(prepared.tokenizer)
    src = split_words(split.src_tokens, split.src_offsets, table)
    tgt = split_words(split.tgt_tokens, split.tgt_offsets, table)
    for pair in range(first, min(first + count, len(split))):
        s_words = word_texts(sp, split.src_tokens, src, pair)
        t_words = word_texts(sp, split.tgt_tokens, tgt, pair)
        s_of = _piece_word(src, split.src_offsets, pair)
        t_of = _piece_word(tgt, split.tgt_offsets, pair)
        linked = sorted({(s_of[s], t_of[t]) for s, t in links.pair_links(pair).tolist()})
        print(f"#{pair} {' '.join(s_words)}\n    {' '.join(t_words)}")
        for j, word in enumerate(t_words):
            sources = [s_words[i] for i, t in linked if t == j]
            print(f"    {word} <- {' '.join(sources) if sources else '(none)'}")


def _piece_word(words: Words, offsets: np.ndarray, pair: int) -> np.ndarray:
    """Each piece of one sentence: the index of its word in the sentence."""
    starts = words.piece_starts[words.side.starts[pair]:words.side.starts[pair + 1]]
    pieces = np.arange(offsets[pair], offsets[pair + 1])
    return np.searchsorted(starts, pieces, side="right") - 1


# ----------------------------------------------------------------------------- gold


class GoldPair(NamedTuple):
    src: list[str]
    tgt: list[str]
    links: set[Link]


def read_gold(path: Path) -> list[GoldPair]:
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        pairs.append(GoldPair(record["src_words"], record["tgt_words"],
                              {(int(s), int(t)) for s, t in record["alignment"]}))
    return pairs


def token_words(sp, tokens: list[str], ids: list[int], table: PieceTable) -> list[int]:
    """Each gold token's word among the words `split_words` makes of `ids` (the tokens
    joined by spaces and encoded): the word holding the token's first character."""
    lengths = []
    for i in ids:
        piece = sp.IdToPiece(i)
        if sp.IsByte(i):  # a character's leading byte counts it
            lengths.append(int(not 0x80 <= int(piece[3:5], 16) < 0xC0))
        else:
            lengths.append(len(piece.replace("\u2581", " ")))
    ends = np.cumsum(lengths) - 1  # the encoding starts with a space the text has not
    words = split_words(np.array(ids), np.array([0, len(ids)]), table)
    piece_word = np.searchsorted(words.piece_starts[:-1], np.arange(len(ids)), "right") - 1
    starts, at = [], 0
    for token in tokens:
        starts.append(at)
        at += len(token) + 1
    pieces = np.searchsorted(ends, np.array(starts), side="left")
    return piece_word[np.minimum(pieces, len(ids) - 1)].tolist()


def gold(data: Path, path: Path, eflomal: Optional[str]) -> None:
    prepared = open_prepared_dir(data)
    split, sp = prepared.split("train"), prepared.tokenizer.sp
    table = PieceTable.of(prepared.tokenizer)
    pairs = read_gold(path)
    enc = [sp.Encode([" ".join(p.src) for p in pairs]), sp.Encode([" ".join(p.tgt) for p in pairs])]
    sides = []
    for side, (tokens, offsets) in enumerate(((split.src_tokens, split.src_offsets),
                                              (split.tgt_tokens, split.tgt_offsets))):
        extra = [i for ids in enc[side] for i in ids]
        lengths = np.r_[np.diff(offsets), [len(ids) for ids in enc[side]]]
        sides.append(split_words(np.r_[np.asarray(tokens, np.int64), extra],
                                 np.r_[0, np.cumsum(lengths)], table))
    maps = [[token_words(sp, getattr(p, name), ids, table) for p, ids in zip(pairs, enc[k])]
            for k, name in enumerate(("src", "tgt"))]
    first = len(split)
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        found = align(sides[0].side, sides[1].side, Path(scratch))
        print(f"transcli's IBM Model 2: {len(split) + len(pairs):,} pairs aligned in "
              f"{time.perf_counter() - started:.0f} s (load {os.getloadavg()[0]:.1f})")
    systems = {"transcli": found}
    if eflomal:
        systems["eflomal"] = eflomal_alignments(eflomal, sides[0].side, sides[1].side)
    for name, found in systems.items():
        for method, links in predicted(found, sides[0].side, sides[1].side, first).items():
            scored = score(pairs, links, maps)
            print(f"{name:9} {method:24} precision {scored[0]:.3f} recall {scored[1]:.3f} "
                  f"AER {scored[2]:.3f}")


def predicted(found: WordAlignments, src: Side, tgt: Side, first: int
              ) -> dict[str, list[set[Link]]]:
    """Word links of the pairs from `first` on, by each way of reading the directions."""
    out: dict[str, list[set[Link]]] = {m: [] for m in ("target->source", "source->target",
                                                       "union", *METHODS)}
    for k in range(first, len(src.lengths)):
        fwd = found.forward[tgt.starts[k]:tgt.starts[k + 1]].tolist()
        rev = found.reverse[src.starts[k]:src.starts[k + 1]].tolist()
        a = {(i, j) for j, i in enumerate(fwd) if i >= 0}
        b = {(i, j) for i, j in enumerate(rev) if j >= 0}
        out["target->source"].append(a)
        out["source->target"].append(b)
        out["union"].append(a | b)
        for method in METHODS:
            out[method].append(set(symmetrise(fwd, rev, method)))
    return out


def score(pairs: list[GoldPair], links: list[set[Link]], maps: list[list[list[int]]]
          ) -> tuple[float, float, float]:
    """Precision, recall and AER at the gold tokens: a gold token pair is predicted when
    the words holding them are linked."""
    hit = guessed = wanted = 0
    for k, (pair, found) in enumerate(zip(pairs, links)):
        s_map, t_map = maps[0][k], maps[1][k]
        guess = {(s, t) for s in range(len(pair.src)) for t in range(len(pair.tgt))
                 if (s_map[s], t_map[t]) in found}
        hit += len(guess & pair.links)
        guessed += len(guess)
        wanted += len(pair.links)
    precision, recall = hit / max(guessed, 1), hit / max(wanted, 1)
    return precision, recall, 1 - 2 * hit / max(guessed + wanted, 1)


def eflomal_alignments(python: str, src: Side, tgt: Side) -> WordAlignments:
    """Both directions of eflomal (`eflomal.Aligner().align`, its defaults) on the same
    words (each word type written as a token), read back as `WordAlignments`."""
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        for side, name in ((src, "src"), (tgt, "tgt")):
            with open(work / name, "w", encoding="utf-8") as out:
                for k in range(len(side.lengths)):
                    words = side.types[side.starts[k]:side.starts[k + 1]]
                    out.write(" ".join(f"w{t}" for t in words.tolist()) + "\n")
        script = ("import eflomal, sys; d = sys.argv[1]; eflomal.Aligner().align("
                  "open(d + '/src'), open(d + '/tgt'), links_filename_fwd=d + '/fwd', "
                  "links_filename_rev=d + '/rev', quiet=True)")
        started = time.perf_counter()
        subprocess.run([python, "-c", script, str(work)], check=True)
        print(f"eflomal: aligned in {time.perf_counter() - started:.0f} s")
        forward = np.full(len(tgt.types), -1)
        reverse = np.full(len(src.types), -1)
        for k, (fwd, rev) in enumerate(zip((work / "fwd").read_text().splitlines(),
                                           (work / "rev").read_text().splitlines())):
            for i, j in (map(int, link.split("-")) for link in fwd.split()):
                forward[tgt.starts[k] + j] = i
            for i, j in (map(int, link.split("-")) for link in rev.split()):
                reverse[src.starts[k] + i] = j
    return WordAlignments(forward, reverse)


# ----------------------------------------------------------------------------- time


def time_prepare(pairs: Optional[int], rounds: int, keep: Optional[Path]) -> None:
    """`transcli prepare` of the shared corpus without and with data.alignments, in turns;
    the last with them moved to `keep` if given."""
    config = ROOT / "configs" / "cpu-1h.yaml"
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        files = []
        for lang in ("en", "es"):
            text = (CORPORA / f"train.{lang}").read_text(encoding="utf-8").splitlines()
            files.append(work / f"corpus.{lang}")
            files[-1].write_text("\n".join(text[:pairs]) + "\n", encoding="utf-8")
        for turn in range(rounds):
            for aligned in (False, True):
                out = work / f"out-{turn}-{aligned}"
                args = [sys.executable, "-m", "transcli", "prepare", "--config", str(config),
                        "--src-file", str(files[0]), "--tgt-file", str(files[1]),
                        "--out", str(out), *set_flags([f"data.alignments={aligned}"])]
                load = os.getloadavg()[0]
                started = time.perf_counter()
                with open(work / "prepare.log", "w", encoding="utf-8") as log:
                    process = subprocess.Popen(args, env=child_env(), stdout=log, stderr=log)
                    _, status, usage = os.wait4(process.pid, 0)
                if status:
                    sys.exit(f"prepare failed: {(work / 'prepare.log').read_text()[-500:]}")
                seconds = time.perf_counter() - started
                print(f"prepare {'with' if aligned else 'without'} alignments: {seconds:.1f} s, "
                      f"peak memory {usage.ru_maxrss / 1024:.0f} MB, CPU "
                      f"{usage.ru_utime + usage.ru_stime:.0f} s (load {load:.1f} before), "
                      f"exit {os.waitstatus_to_exitcode(status)}", flush=True)
        if keep is not None:
            shutil.move(str(out), str(keep))


if __name__ == "__main__":
    main()
