"""`transcli prepare`: every input shape, every drop reason, splits, determinism, bad input.

Corpora are a few hundred generated pairs written to tmp_path; sentencepiece
trains on them in a fraction of a second (tiny vocab, soft limit).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest
from helpers import TINY_CONFIG as TINY
from helpers.cli import one_error_line, run_cli

from transcli.config.loading import load_config
from transcli.config.schema import Config, SourceConfig
from transcli.data.encoded import EncodedSplit, load_manifest
from transcli.data.prepare import prepare
from transcli.data.tokenizer import Tokenizer
from transcli.system.errors import UserError

SETTINGS = ["data.vocab_size=376", "data.valid_size=5", "data.test_size=5"]

NOUNS = [("cat", "gato"), ("dog", "perro"), ("boy", "niño"), ("year", "año"),
         ("gentleman", "señor"), ("tree", "árbol"), ("song", "canción"), ("train", "tren"),
         ("house", "casa"), ("book", "libro"), ("mountain", "montaña"), ("coffee", "café")]
ADJECTIVES = [("big", "grande"), ("small", "pequeño"), ("old", "viejo"), ("new", "nuevo"),
              ("beautiful", "bonito"), ("quiet", "tranquilo")]


def corpus() -> list[tuple[str, str]]:
    """About 200 distinct pairs with ¿ ¡ ñ and accents, all of them clean."""
    pairs = []
    for en_noun, es_noun in NOUNS:
        pairs.append((f"Where is the {en_noun}?", f"¿Dónde está el {es_noun}?"))
        for en_adj, es_adj in ADJECTIVES:
            pairs.append((f"The {en_noun} is {en_adj}.", f"El {es_noun} es {es_adj}."))
            pairs.append((f"What a {en_adj} {en_noun}!", f"¡Qué {es_noun} tan {es_adj}!"))
    return pairs


def write_pair(folder: Path, pairs: list[tuple[str, str]], name: str = "corpus"
               ) -> tuple[Path, Path]:
    src, tgt = folder / f"{name}.en", folder / f"{name}.es"
    src.write_text("".join(f"{s}\n" for s, _ in pairs), encoding="utf-8")
    tgt.write_text("".join(f"{t}\n" for _, t in pairs), encoding="utf-8")
    return src, tgt


def config(*sources: SourceConfig, sets: tuple[str, ...] = (), **data: Any) -> Config:
    cfg = load_config(TINY, SETTINGS + list(sets))
    cfg.data.train = list(sources)
    for key, value in data.items():
        setattr(cfg.data, key, value)
    cfg.validate()
    return cfg


def file_source(src: Path, tgt: Path) -> SourceConfig:
    return SourceConfig(src_file=str(src), tgt_file=str(tgt))


def run_prepare(cfg: Config, out: Path, force: bool = False) -> dict[str, Any]:
    prepare(cfg, out, force)
    return load_manifest(out)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def decoded_sources(out: Path, split: str) -> list[str]:
    tokenizer = Tokenizer(out / "spm.model")
    encoded = EncodedSplit(out, split)
    return tokenizer.decode([encoded.src(i).tolist() for i in range(len(encoded))])


def transcli(*args: str, env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess:
    return run_cli(*args, env=env)


# ----------------------------------------------------------------------------- input shapes


def test_file_pair_through_the_cli(tmp_path: Path) -> None:
    pairs = corpus()
    src, tgt = write_pair(tmp_path, pairs)
    out = tmp_path / "prepared"
    result = transcli("prepare", "--config", str(TINY), "--src-file", str(src),
                      "--tgt-file", str(tgt), "--out", str(out),
                      *[arg for s in SETTINGS for arg in ("--set", s)])
    assert result.returncode == 0, result.stderr
    manifest = load_manifest(out)
    assert manifest["src_lang"] == "en" and manifest["tgt_lang"] == "es"
    assert sorted(os.listdir(out)) == sorted(manifest["files"])
    assert {"valid.en", "valid.es", "test.en", "test.es", "spm.model", "spm.vocab"} <= set(
        manifest["files"])
    sizes = {split: manifest["splits"][split]["pairs"] for split in ("train", "valid", "test")}
    assert sizes == {"train": len(pairs) - 10, "valid": 5, "test": 5}
    assert manifest["counts"]["train"]["read"] == len(pairs)
    assert manifest["vocab_size"] == Tokenizer(out / "spm.model").vocab_size
    assert manifest["vocab_size"] < 376  # a small corpus: prepare says it got fewer pieces
    assert f"the vocabulary has {manifest['vocab_size']} pieces, fewer than " \
           f"data.vocab_size=376" in result.stderr
    assert len(manifest["data_hash"]) == 64 and manifest["config_hash"]
    for split in ("train", "valid", "test"):
        encoded = EncodedSplit(out, split)
        assert len(encoded) == sizes[split]
        assert int(encoded.src_lengths.sum()) == manifest["splits"][split]["src_tokens"]
        assert int(encoded.tgt_lengths.sum()) == manifest["splits"][split]["tgt_tokens"]
    # The text copies are the encoded valid pairs, and real pairs of the corpus.
    tokenizer = Tokenizer(out / "spm.model")
    valid = EncodedSplit(out, "valid")
    assert tokenizer.decode([valid.tgt(i).tolist() for i in range(5)]) == lines(out / "valid.es")
    assert set(zip(lines(out / "valid.en"), lines(out / "valid.es"))) <= set(pairs)


def test_tsv_ignores_extra_columns(tmp_path: Path) -> None:
    pairs = corpus()
    tsv = tmp_path / "anki.tsv"
    tsv.write_text("".join(f"{s}\t{t}\tCC-BY 2.0 (France) Attribution: tatoeba.org #{i}\n"
                           for i, (s, t) in enumerate(pairs)), encoding="utf-8")
    out = tmp_path / "out"
    manifest = run_prepare(config(SourceConfig(tsv=str(tsv))), out)
    assert manifest["counts"]["train"]["read"] == len(pairs)
    assert manifest["splits"]["train"]["pairs"] == len(pairs) - 10
    assert set(zip(lines(out / "test.en"), lines(out / "test.es"))) <= set(pairs)


def _translation_rows(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    return [{"translation": {"en": s, "es": t, "fr": "-"}, "id": i}
            for i, (s, t) in enumerate(pairs)]


@pytest.mark.parametrize("shape", ["jsonl-translation", "csv-columns", "parquet-named-columns",
                                   "disk-dict", "disk-dataset", "hub-folder"])
def test_hugging_face_local_datasets(tmp_path: Path, shape: str) -> None:
    datasets = pytest.importorskip("datasets")
    pairs = corpus()
    source = SourceConfig(dataset=str(tmp_path / "data"))
    if shape == "jsonl-translation":
        path = tmp_path / "data.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in _translation_rows(pairs)),
                        encoding="utf-8")
        source.dataset = str(path)
    elif shape == "csv-columns":
        table = datasets.Dataset.from_dict({"en": [s for s, _ in pairs],
                                            "es": [t for _, t in pairs]})
        table.to_csv(str(tmp_path / "data.csv"))
        source.dataset = str(tmp_path / "data.csv")
    elif shape == "parquet-named-columns":
        table = datasets.Dataset.from_dict({"english": [s for s, _ in pairs],
                                            "spanish": [t for _, t in pairs]})
        table.to_parquet(str(tmp_path / "data.parquet"))
        source = SourceConfig(dataset=str(tmp_path / "data.parquet"),
                              src_column="english", tgt_column="spanish")
    elif shape == "hub-folder":  # a dataset repository's files: a card and parquet shards
        (tmp_path / "data" / "data").mkdir(parents=True)
        (tmp_path / "data" / "README.md").write_text("# en-es pairs\n")
        table = datasets.Dataset.from_list(_translation_rows(pairs))
        table.to_parquet(str(tmp_path / "data" / "data" / "train-00000-of-00001.parquet"))
    else:
        table = datasets.Dataset.from_list(_translation_rows(pairs))
        saved = datasets.DatasetDict({"train": table}) if shape == "disk-dict" else table
        saved.save_to_disk(str(tmp_path / "data"))
    out = tmp_path / "out"
    manifest = run_prepare(config(source), out)
    assert manifest["counts"]["train"]["read"] == len(pairs)
    assert manifest["splits"]["train"]["pairs"] == len(pairs) - 10
    assert set(zip(lines(out / "valid.en"), lines(out / "valid.es"))) <= set(pairs)
    assert not list(tmp_path.glob(".out.transcli-*")), "scratch dir left behind"


def test_several_train_sources_and_given_valid_test(tmp_path: Path) -> None:
    pairs = corpus()
    first, second = pairs[:100], pairs[100:]
    held = [("A new sentence for validation.", "Una frase nueva para validar."),
            ("Another held-out sentence.", "Otra frase apartada.")]
    tsv = tmp_path / "second.tsv"
    tsv.write_text("".join(f"{s}\t{t}\n" for s, t in second), encoding="utf-8")
    cfg = config(file_source(*write_pair(tmp_path, first)), SourceConfig(tsv=str(tsv)),
                 valid=file_source(*write_pair(tmp_path, held, "valid")),
                 test=file_source(*write_pair(tmp_path, held[:1], "test")))
    out = tmp_path / "out"
    manifest = run_prepare(cfg, out)
    assert manifest["splits"]["train"]["pairs"] == len(pairs)  # nothing carved
    assert [s["read"] for s in manifest["sources"]["train"]] == [100, len(second)]
    assert lines(out / "valid.en") == [s for s, _ in held]
    assert lines(out / "test.es") == [held[0][1]]
    assert manifest["counts"]["valid"]["read"] == 2


# ----------------------------------------------------------------------------- cleaning


def test_each_drop_reason_is_counted(tmp_path: Path) -> None:
    good = corpus()
    long_word = "word " * 30
    noisy = [
        ("", "Vacío."), ("Only English.", "   "),  # empty: 2
        ("x" * 250, "Demasiado largo."),  # too_long_chars (max_chars=200): 1
        (long_word.strip() + ".", long_word.strip() + "."),  # too_long_tokens (max 20): 1
        ("Hi.", "Hola, ¿cómo estás hoy, amigo mío?"),  # ratio (> 3): 1
        good[0], good[1], good[1],  # duplicates of corpus pairs: 3
        ("The  cat\u3000is big. ", "El gato\u00a0es grande."),  # duplicate once normalised: 1
    ]
    tsv = tmp_path / "noisy.tsv"
    rows = [f"{s}\t{t}".encode() for s, t in good + noisy]
    rows += [b"no tab on this line", b"bad \xff byte\tmal"]  # no_tab: 1, invalid_utf8: 1
    tsv.write_bytes(b"\n".join(rows) + b"\n")
    cfg = config(SourceConfig(tsv=str(tsv)), max_chars=200, max_tokens=20, max_ratio=3.0,
                 skip_invalid=True)
    manifest = run_prepare(cfg, tmp_path / "out")
    train = manifest["counts"]["train"]
    assert train["dropped"] == {"invalid_utf8": 1, "no_tab": 1, "malformed": 0, "empty": 2,
                                "too_long_chars": 1, "too_long_tokens": 1, "ratio": 1,
                                "duplicate": 4, "decontaminated": 0}
    assert train["read"] == len(rows)
    assert train["read"] == (train["kept"] + sum(train["dropped"].values())
                             + sum(train["carved"].values()))
    assert train["kept"] == len(good) - 10


def test_decontamination_removes_train_pairs_whose_english_is_held_out(tmp_path: Path) -> None:
    pairs = corpus()
    valid = pairs[:3]
    # Same English, another Spanish: still contamination.
    train = pairs + [(valid[0][0], "Otra traducción distinta.")]
    cfg = config(file_source(*write_pair(tmp_path, train)),
                 valid=file_source(*write_pair(tmp_path, valid, "valid")), valid_size=0)
    out = tmp_path / "out"
    manifest = run_prepare(cfg, out)
    assert manifest["counts"]["train"]["dropped"]["decontaminated"] == 4
    train_english = set(decoded_sources(out, "train"))
    assert not train_english & {s for s, _ in valid}
    assert not train_english & set(lines(out / "test.en"))


def test_carved_splits_share_no_english_with_train(tmp_path: Path) -> None:
    pairs = corpus()
    # Tatoeba-style alternates: many English sentences with two translations.
    alternates = [(s, t.replace(".", "!")) for s, t in pairs[::2]]
    out = tmp_path / "out"
    manifest = run_prepare(config(file_source(*write_pair(tmp_path, pairs + alternates)),
                                  valid_size=20, test_size=20), out)
    valid_en, test_en = lines(out / "valid.en"), lines(out / "test.en")
    assert len(valid_en) == 20 and len(test_en) == 20
    assert len(set(valid_en) | set(test_en)) == 40  # one pair per held-out English sentence
    train_english = set(decoded_sources(out, "train"))
    assert not train_english & (set(valid_en) | set(test_en))
    assert manifest["counts"]["train"]["dropped"]["decontaminated"] > 0


def test_normalisation_nfc_and_whitespace(tmp_path: Path) -> None:
    pairs = corpus()
    decomposed = [(f"  {s}   ", unicodedata.normalize("NFD", t).replace(" ", " \t "))
                  for s, t in pairs]
    out = tmp_path / "out"
    run_prepare(config(file_source(*write_pair(tmp_path, decomposed))), out)
    for line in lines(out / "valid.es") + lines(out / "test.es") + lines(out / "valid.en"):
        assert line == unicodedata.normalize("NFC", line) == " ".join(line.split())
    assert set(zip(lines(out / "valid.en"), lines(out / "valid.es"))) <= set(pairs)


def test_bom_crlf_and_control_characters_are_not_text(tmp_path: Path) -> None:
    pairs = corpus()
    src, tgt = tmp_path / "windows.en", tmp_path / "windows.es"
    src.write_bytes(("\ufeff" + "".join(f"{s}\r\n" for s, _ in pairs)).encode("utf-8"))
    tgt.write_bytes(("\ufeff" + "".join(f"{t}\x00\r\n" for _, t in pairs)).encode("utf-8"))
    out = tmp_path / "out"
    manifest = run_prepare(config(file_source(src, tgt)), out)
    assert manifest["counts"]["train"]["dropped"]["duplicate"] == 0
    english = {s for s, _ in pairs}
    assert set(decoded_sources(out, "train")) | set(lines(out / "valid.en")) == english - set(
        lines(out / "test.en"))
    assert set(zip(lines(out / "test.en"), lines(out / "test.es"))) <= set(pairs)


def test_round_trip_keeps_spanish_characters(tmp_path: Path) -> None:
    pairs = corpus()
    out = tmp_path / "out"
    run_prepare(config(file_source(*write_pair(tmp_path, pairs))), out)
    tokenizer = Tokenizer(out / "spm.model")
    texts = [t for _, t in pairs] + ["¿Dónde está el niño? ¡Qué año tan bonito!"]
    assert tokenizer.decode(tokenizer.encode(texts)) == texts
    assert tokenizer.sp.PieceToId("ñ") != tokenizer.sp.unk_id()


def test_bpe_and_sampled_tokenizer_input(tmp_path: Path) -> None:
    src, tgt = write_pair(tmp_path, corpus())
    cfg = config(file_source(src, tgt), tokenizer="bpe", input_sentence_size=150)
    manifest = run_prepare(cfg, tmp_path / "a")
    assert manifest["tokenizer"]["model_type"] == "bpe"
    assert manifest["tokenizer"]["sampled"] == 150 < manifest["tokenizer"]["sentences"]
    run_prepare(cfg, tmp_path / "b")
    spm_a, spm_b = (tmp_path / name / "spm.model" for name in ("a", "b"))
    assert spm_a.read_bytes() == spm_b.read_bytes()


# ----------------------------------------------------------------------------- determinism


def test_same_input_gives_byte_identical_output(tmp_path: Path) -> None:
    src, tgt = write_pair(tmp_path, corpus())
    for name in ("one", "two"):
        run_prepare(config(file_source(src, tgt)), tmp_path / name)
    files = sorted(os.listdir(tmp_path / "one"))
    assert files == sorted(os.listdir(tmp_path / "two"))
    for name in files:
        one, two = tmp_path / "one" / name, tmp_path / "two" / name
        assert one.read_bytes() == two.read_bytes(), name
    run_prepare(config(file_source(src, tgt), seed=2), tmp_path / "other-seed")
    assert lines(tmp_path / "one" / "valid.en") != lines(tmp_path / "other-seed" / "valid.en")


# ----------------------------------------------------------------------------- bad input


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    src, tgt = write_pair(tmp_path, corpus())
    bad = {"src": src, "tgt": tgt, "short": tmp_path / "short.es",
           "latin1": tmp_path / "latin1.en", "tsv": tmp_path / "notab.tsv",
           "blank_en": tmp_path / "blank.en", "blank_es": tmp_path / "blank.es"}
    bad["short"].write_text("".join(f"{t}\n" for _, t in corpus()[:-1]), encoding="utf-8")
    latin1 = [s for s, _ in corpus()]
    latin1[6] = "The café is open."
    bad["latin1"].write_bytes("\n".join(latin1).encode("latin-1") + b"\n")
    bad["tsv"].write_text("Hello.\tHola.\tCC-BY\nGoodbye. Adiós.\n", encoding="utf-8")
    bad["blank_en"].write_text("\n \n", encoding="utf-8")
    bad["blank_es"].write_text("Hola.\n\n", encoding="utf-8")
    return bad


BAD_INPUTS = {
    "mismatched line counts": (["--src-file", "{src}", "--tgt-file", "{short}"],
                               ["corpus.en has {n} lines", "short.es has {n_short}"]),
    "missing file": (["--src-file", "{src}", "--tgt-file", "{src}.missing"],
                     ["corpus.en.missing: file not found"]),
    "directory as file": (["--tsv", "{tmp}"], ["is a directory"]),
    "invalid UTF-8": (["--src-file", "{latin1}", "--tgt-file", "{tgt}"],
                      ["latin1.en: line 7 is not valid UTF-8", "--skip-invalid"]),
    "TSV line without tab": (["--tsv", "{tsv}"], ["notab.tsv:2: no tab"]),
    "nothing left": (["--src-file", "{blank_en}", "--tgt-file", "{blank_es}"],
                     ["nothing left to train on", "2 with an empty side"]),
    "unknown hub dataset": (["--dataset", "no-such-owner/no-such-dataset"],
                            ["dataset 'no-such-owner/no-such-dataset'", "hub is unreachable"]),
    "a folder that is not a dataset": (["--dataset", "{tmp}"], [
        "dataset '{tmp}': a folder that is not a dataset (it holds {tmp}/blank.en, which is "
        "not a json, jsonl, csv or parquet file); --dataset takes a hub name"]),
    "a folder of data files that do not fit": (["--dataset", "{mixed}"], [
        "a folder that is not a dataset (its data files do not share one set of columns)"]),
    "unknown column": (["--dataset", "{jsonl}", "--src-column", "english", "--tgt-column", "es"],
                       ["no column 'english'", "columns: translation"]),
    "missing translation language": (["--dataset", "{jsonl}", "--set", "data.tgt_lang=de"],
                                     ["translation column has no 'de'"]),
    "two sources": (["--tsv", "{tsv}", "--src-file", "{src}", "--tgt-file", "{tgt}"],
                    ["give one training source"]),
    "too few to carve": (["--src-file", "{src}", "--tgt-file", "{tgt}", "--set",
                          "data.valid_size=1000"],  # the line to paste instead:
                         ["too few to carve", "--set data.valid_size=", "--set data.test_size="]),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, files: dict[str, Path],
                                                   case: str) -> None:
    jsonl = tmp_path / "data.jsonl"
    jsonl.write_text(json.dumps({"translation": {"en": "Hi.", "es": "Hola."}}) + "\n")
    mixed = tmp_path / "mixed"  # json files as /tmp holds them: settings, not one dataset
    mixed.mkdir()
    (mixed / "settings.json").write_text('{"threads": 4}\n')
    (mixed / "pairs.json").write_text('{"translation": {"en": "Hi.", "es": "Hola."}}\n')
    args, expected = BAD_INPUTS[case]
    names = {**{k: str(v) for k, v in files.items()}, "tmp": str(tmp_path), "jsonl": str(jsonl),
             "mixed": str(mixed)}
    out = tmp_path / "out"
    result = transcli("prepare", "--config", str(TINY), *[a.format(**names) for a in args],
                      "--out", str(out), env={"HF_HUB_OFFLINE": "1"})
    error = one_error_line(result)
    for fragment in expected:
        assert fragment.format(n=len(corpus()), n_short=len(corpus()) - 1, **names) in error
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]


def test_pipes_are_read_once_and_still_checked_for_alignment(tmp_path: Path,
                                                             files: dict[str, Path]) -> None:
    """`--src-file <(zcat x.en.gz)`: a pipe cannot be counted up front."""
    out = tmp_path / "out"
    command = (f"'{sys.executable}' -m transcli prepare --config '{TINY}' --out '{out}' "
               f"--src-file <(cat '{files['src']}') --tgt-file <(head -n 100 '{files['tgt']}')")
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    error = one_error_line(result)
    assert f"has {len(corpus())} lines but" in error and "has 100" in error
    assert not out.exists()
    command = command.replace("head -n 100", "cat")
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert load_manifest(out)["counts"]["train"]["read"] == len(corpus())


def test_skip_invalid_counts_instead_of_failing(tmp_path: Path, files: dict[str, Path]) -> None:
    cfg = config(file_source(files["latin1"], files["tgt"]), skip_invalid=True)
    manifest = run_prepare(cfg, tmp_path / "out")
    assert manifest["counts"]["train"]["dropped"]["invalid_utf8"] == 1


@pytest.mark.slow
def test_out_holding_other_files_is_refused_and_never_emptied(tmp_path: Path) -> None:
    src, tgt = write_pair(tmp_path, corpus())
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    args = ["prepare", "--config", str(TINY), "--src-file", str(src), "--tgt-file", str(tgt),
            "--out", str(out), "--set", "data.vocab_size=376"]
    error = one_error_line(transcli(*args))
    assert "notes.txt" in error and "--force" in error
    assert os.listdir(out) == ["notes.txt"]

    assert transcli(*args, "--force").returncode == 0
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert "manifest.json" in os.listdir(out)

    # Its own output: refused without --force, replaced with it; notes.txt survives both.
    assert "already holds a prepared dataset" in one_error_line(transcli(*args))
    assert transcli(*args, "--force", "--set", "data.seed=7").returncode == 0
    assert load_manifest(out)["cleaning"]["seed"] == 7
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_force_never_overwrites_a_file_it_did_not_write(tmp_path: Path) -> None:
    src, tgt = write_pair(tmp_path, corpus())
    out = tmp_path / "out"
    out.mkdir()
    (out / "valid.en").write_text("my own references\n", encoding="utf-8")
    with pytest.raises(UserError, match="valid.en: exists and was not written"):
        prepare(config(file_source(src, tgt)), out, force=True)
    assert lines(out / "valid.en") == ["my own references"]
    assert os.listdir(out) == ["valid.en"]


def test_corrupt_encoded_file_names_the_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_prepare(config(file_source(*write_pair(tmp_path, corpus()))), out)
    data = (out / "train.src.npy").read_bytes()
    (out / "train.src.npy").write_bytes(data[: len(data) // 2])
    with pytest.raises(UserError, match="train.src.npy"):
        EncodedSplit(out, "train")
    (out / "valid.idx.npy").unlink()
    with pytest.raises(UserError, match="valid.idx.npy: encoded split file not found"):
        EncodedSplit(out, "valid")


def test_encoded_lengths_match_tokens(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_prepare(config(file_source(*write_pair(tmp_path, corpus()))), out)
    tokenizer = Tokenizer(out / "spm.model")
    valid = EncodedSplit(out, "valid")
    expected = tokenizer.encode(lines(out / "valid.en"))
    assert [valid.src(i).tolist() for i in range(len(valid))] == expected
    assert valid.src_lengths.tolist() == [len(ids) for ids in expected]
    assert valid.src(0).dtype == np.int64


# ----------------------------------------------------------------------------- formats


def write_tmx(path: Path, units: list[str]) -> Path:
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4">\n'
                    '<header srclang="en" datatype="plaintext"/>\n<body>\n'
                    + "".join(f"{unit}\n" for unit in units) + "</body>\n</tmx>\n",
                    encoding="utf-8")
    return path


def tmx_unit(src: str, tgt: str, src_lang: str = "en", tgt_lang: str = "es") -> str:
    from xml.sax.saxutils import escape

    return (f'<tu><tuv xml:lang="{src_lang}"><seg>{escape(src)}</seg></tuv>'
            f'<tuv xml:lang="{tgt_lang}"><seg>{escape(tgt)}</seg></tuv></tu>')


def test_tmx_translation_memory(tmp_path: Path) -> None:
    pairs = corpus()
    units = [tmx_unit(s, t, *(("en-GB", "ES") if i % 2 else ("en", "es-419")))
             for i, (s, t) in enumerate(pairs)]
    # Inline markup: <ph> holds a formatting code, <hi> holds text.
    units.append('<tu><tuv xml:lang="es"><seg>Un <hi>gato</hi> verde<ph>&lt;br/&gt;</ph>'
                 '</seg></tuv><tuv xml:lang="fr"><seg>Un chat vert</seg></tuv>'
                 '<tuv xml:lang="en"><seg>A <hi>green</hi> cat<ph x="1">{1}</ph></seg></tuv></tu>')
    tmx = write_tmx(tmp_path / "memory.tmx", units)
    out = tmp_path / "out"
    manifest = run_prepare(config(SourceConfig(file=str(tmx))), out)
    assert manifest["sources"]["train"] == [{"format": "tmx", "file": str(tmx),
                                             "read": len(pairs) + 1,
                                             "pairs": len(pairs) + 1 - 10, "weight": 1.0}]
    assert manifest["splits"]["train"]["pairs"] == len(pairs) + 1 - 10
    texts = set(decoded_sources(out, "train")) | set(lines(out / "valid.en") + lines(
        out / "test.en"))
    assert "A green cat" in texts and texts <= {s for s, _ in pairs} | {"A green cat"}


def test_tmx_problems_are_named(tmp_path: Path) -> None:
    pairs = corpus()
    units = [tmx_unit(s, t) for s, t in pairs[:50]]
    units.insert(7, '<tu><tuv xml:lang="en"><seg>Only English.</seg></tuv></tu>')
    tmx = write_tmx(tmp_path / "memory.tmx", units + [tmx_unit(s, t) for s, t in pairs[50:]])
    with pytest.raises(UserError, match=r"memory.tmx: translation unit 8: no 'es' text; "
                                        r"pass --skip-invalid"):
        run_prepare(config(SourceConfig(file=str(tmx))), tmp_path / "out")
    manifest = run_prepare(config(SourceConfig(file=str(tmx)), skip_invalid=True),
                           tmp_path / "out")
    assert manifest["counts"]["train"]["dropped"]["malformed"] == 1
    broken = tmp_path / "broken.xml"
    broken.write_text(write_tmx(tmp_path / "x.tmx", units[:3]).read_text().replace(
        "</seg></tuv></tu>\n<tu>", "</seg></tuv>\n<tu>", 1), encoding="utf-8")
    error = one_error_line(transcli("prepare", "--config", str(TINY), "--file", str(broken),
                                    "--format", "tmx", "--out", str(tmp_path / "o2")))
    assert "broken.xml:8: not valid TMX/XML (mismatched tag)" in error  # unit 1 unclosed


@pytest.mark.parametrize("suffix, compress", [(".gz", "gzip"), (".bz2", "bz2"), (".xz", "lzma")])
def test_compressed_files_read_like_plain_ones(tmp_path: Path, suffix: str, compress: str) -> None:
    import importlib

    module = importlib.import_module(compress)
    pairs = corpus()
    src, tgt = write_pair(tmp_path, pairs)
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    packed = {}
    for path in (src, tgt, tsv):
        packed[path] = path.with_name(path.name + suffix)
        packed[path].write_bytes(module.compress(path.read_bytes()))
    run_prepare(config(file_source(src, tgt)), tmp_path / "plain")
    run_prepare(config(file_source(packed[src], packed[tgt])), tmp_path / "packed")
    run_prepare(config(SourceConfig(tsv=str(packed[tsv]))), tmp_path / "packed-tsv")
    for name in ("train.src.npy", "train.tgt.npy", "valid.en", "test.es", "spm.model"):
        plain = (tmp_path / "plain" / name).read_bytes()
        assert (tmp_path / "packed" / name).read_bytes() == plain, name
        assert (tmp_path / "packed-tsv" / name).read_bytes() == plain, name


def test_compressed_files_are_still_checked(tmp_path: Path) -> None:
    import gzip

    pairs = corpus()
    src, tgt = write_pair(tmp_path, pairs)
    short = tmp_path / "short.es.gz"
    short.write_bytes(gzip.compress("".join(f"{t}\n" for _, t in pairs[:-1]).encode()))
    with pytest.raises(UserError, match=f"has {len(pairs)} lines but .*short.es.gz has "
                                        f"{len(pairs) - 1}"):
        run_prepare(config(file_source(src, short)), tmp_path / "out")
    truncated = tmp_path / "cut.en.gz"
    truncated.write_bytes(gzip.compress(src.read_bytes())[:-30])
    with pytest.raises(UserError, match="cut.en.gz: cannot read"):
        run_prepare(config(file_source(truncated, tgt)), tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------- edge cases


@pytest.mark.parametrize("header", ["en\tes", "English\tSpanish\tAttribution",
                                    "source_text\ttarget_text"])
def test_a_tsv_header_row_is_skipped_not_a_pair(tmp_path: Path, header: str,
                                                capsys: pytest.CaptureFixture) -> None:
    pairs = corpus()
    tsv = tmp_path / "with-header.tsv"
    tsv.write_text(header + "\n" + "".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    out = tmp_path / "out"
    manifest = run_prepare(config(SourceConfig(tsv=str(tsv)), valid_size=100), out)
    assert manifest["counts"]["train"]["read"] == len(pairs)
    assert manifest["sources"]["train"][0]["header"] == header.split("\t")[:2]
    held = lines(out / "valid.en") + lines(out / "test.en")
    assert header.split("\t")[0] not in held and len(held) == 105
    assert "with-header.tsv:1 is a header row" in capsys.readouterr().err


def test_a_first_pair_without_punctuation_is_not_taken_for_a_header(tmp_path: Path) -> None:
    pairs = [("Good morning", "Buenos días")] + corpus()
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    manifest = run_prepare(config(SourceConfig(tsv=str(tsv))), tmp_path / "out")
    assert manifest["counts"]["train"]["read"] == len(pairs)
    assert "header" not in manifest["sources"]["train"][0]


def test_malformed_json_lines_are_named_or_skipped(tmp_path: Path) -> None:
    rows = [json.dumps(row) for row in _translation_rows(corpus())]
    rows[4] = '{"translation": {"en": "Hi.", "es": }}'  # line 5
    rows[9] = '["not", "an", "object"]'  # line 10
    rows[11] = json.dumps({"translation": {"en": "Only English."}})  # line 12
    rows[12] = json.dumps({"translation": {"en": "Null.", "es": None}})  # line 13
    rows.insert(20, "")  # blank lines are no records
    broken = list(rows)
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    error = one_error_line(transcli("prepare", "--config", str(TINY), "--dataset", str(path),
                                    "--out", str(tmp_path / "out")))
    assert "pairs.jsonl:5: malformed JSON (Expecting value at column 37)" in error
    assert "--skip-invalid" in error
    expected = {4: "pairs.jsonl:10: not a JSON object", 9: "pairs.jsonl:12: no 'es' text",
                11: "pairs.jsonl:13: no 'es' text"}
    for fixed, message in expected.items():
        rows[fixed] = json.dumps({"translation": {"en": f"Fixed {fixed}.", "es": "Arreglado."}})
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
        with pytest.raises(UserError, match=message):
            run_prepare(config(SourceConfig(dataset=str(path))), tmp_path / "out")
    path.write_text("\n".join(broken) + "\n", encoding="utf-8")
    manifest = run_prepare(config(SourceConfig(dataset=str(path)), skip_invalid=True),
                           tmp_path / "out")
    train = manifest["counts"]["train"]
    assert train["dropped"]["malformed"] == 4 and train["read"] == len(rows) - 1


def test_bad_lines_before_the_first_record_are_counted_once(tmp_path: Path) -> None:
    """The first record decides the layout; lines before it are still read, and counted,
    once, when the file is."""
    path = tmp_path / "pairs.jsonl"
    rows = [json.dumps(row) for row in _translation_rows(corpus())]
    path.write_bytes(b"{oops\n\xff\n" + "\n".join(rows).encode() + b"\n")
    manifest = run_prepare(config(SourceConfig(dataset=str(path)), skip_invalid=True),
                           tmp_path / "out")
    dropped = manifest["counts"]["train"]["dropped"]
    assert (dropped["malformed"], dropped["invalid_utf8"]) == (1, 1)
    assert manifest["counts"]["train"]["read"] == len(rows) + 2


def test_a_dataset_row_missing_a_language_is_named(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    rows = _translation_rows(corpus())
    rows[6]["translation"]["es"] = None
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "data"))
    source = SourceConfig(dataset=str(tmp_path / "data"))
    with pytest.raises(UserError, match=r"dataset '.*data': row 7: no 'es' text; pass "
                                        r"--skip-invalid"):
        run_prepare(config(source), tmp_path / "out")
    manifest = run_prepare(config(source, skip_invalid=True), tmp_path / "out")
    assert manifest["counts"]["train"]["dropped"]["malformed"] == 1
    assert manifest["counts"]["train"]["read"] == len(rows)


def test_given_valid_and_test_sets_are_kept_whole(tmp_path: Path) -> None:
    long = "word " * 300
    held = [("A sentence.", "Una frase."), ("Yes.", "Sí, claro que sí, por supuesto, amigo mío."),
            (long.strip() + ".", long.strip() + "."), ("A sentence.", "Una frase."),
            ("  Spaced   out. ", "Con\u00a0espacios.")]
    empty = [("Nothing on the other side.", "  ")]
    cfg = config(file_source(*write_pair(tmp_path, corpus())), max_chars=200,
                 valid=file_source(*write_pair(tmp_path, held + empty, "valid")),
                 test=file_source(*write_pair(tmp_path, held, "test")))
    out = tmp_path / "out"
    manifest = run_prepare(cfg, out)
    normalised = [" ".join(s.split()) for s, _ in held]
    assert lines(out / "valid.en") == lines(out / "test.en") == normalised
    assert len(EncodedSplit(out, "valid")) == len(held) == manifest["splits"]["test"]["pairs"]
    assert manifest["counts"]["valid"]["dropped"]["empty"] == 1
    assert sum(manifest["counts"]["test"]["dropped"].values()) == 0


def test_prepare_into_the_current_directory(tmp_path: Path) -> None:
    src, tgt = write_pair(tmp_path, corpus())
    here = tmp_path / "here"
    here.mkdir()
    args = ["prepare", "--config", TINY, "--src-file", src, "--tgt-file", tgt, "--out", "."]
    result = run_cli(*args, cwd=here)
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(here)) == sorted(load_manifest(here)["files"])
    assert "already holds a prepared dataset" in one_error_line(run_cli(*args, cwd=here))
    assert run_cli(*args, "--force", "--set", "data.seed=3", cwd=here).returncode == 0
    assert sorted(os.listdir(here)) == sorted(load_manifest(here)["files"])


@pytest.mark.parametrize("args, expected", [
    (["--file", "{tmp}/memory.xml"], "cannot tell the format of {tmp}/memory.xml from its "
                                     "name: give --format (tmx)"),
    (["--format", "tmx"], "a tmx source needs --file"),
    (["--subset", "en-es"], "--subset only applies to --dataset"),
    (["--file", "{tmp}/m.tmx", "--dataset", "x"], "give one training source, not --dataset "
                                                  "and --file"),
    (["--format", "moses", "--file", "m.gz"], "--format 'moses' is not one of files, tsv, "
                                              "dataset, tmx"),
])
def test_source_flags_are_checked_by_the_format_table(tmp_path: Path, args: list[str],
                                                      expected: str) -> None:
    result = transcli("prepare", "--config", str(TINY), "--out", str(tmp_path / "out"),
                      *[arg.format(tmp=tmp_path) for arg in args])
    assert one_error_line(result) == f"transcli: error: {expected.format(tmp=tmp_path)}"


def test_the_summary_says_why_pairs_were_dropped_in_words() -> None:
    from collections import Counter

    from transcli.data.prepare import _drop_summary

    said = _drop_summary(Counter({"decontaminated": 4, "duplicate": 1200, "empty": 0}))
    assert said == ("1,200 duplicates, 4 whose source is also in valid or test (left out of "
                    "train so that those scores stay honest)")
    assert _drop_summary(Counter()) == "none"


def test_a_missing_source_file_names_its_config_key_or_flag(tmp_path: Path) -> None:
    """A config's relative paths are read from the current directory: run from elsewhere,
    the error says which key gave the path and where it was looked for."""
    config = tmp_path / "mine.yaml"
    config.write_text("data:\n  train:\n    - src_file: corpus/a.en\n      tgt_file: corpus/a.es\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    line = one_error_line(run_cli("prepare", "-c", config, "--out", "p", cwd=elsewhere))
    assert line == (f"transcli: error: {config}: data.train[0].src_file: corpus/a.en: file not "
                    f"found (a config's paths are read from the current directory, {elsewhere})")
    line = one_error_line(run_cli("prepare", "-c", config, "--src-file", "x.en", "--tgt-file",
                                  "x.es", "--out", "p", cwd=elsewhere))
    assert line == "transcli: error: --src-file x.en: file not found"
    assert list(elsewhere.iterdir()) == []
