"""`transcli evaluate` and `score`: the figures are the `sacrebleu` command's own.

Each comparison runs the real `sacrebleu` command and `transcli evaluate` on the
same files, including the awkward ones (CRLF, no final newline, byte-order mark,
empty lines, several references), and asks for identical numbers and signatures.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
from helpers import PAIRS
from helpers.cli import one_error_line, run_cli

from transcli.cli.evaluate import evaluate_cli
from transcli.inference.bleu import score
from transcli.system.errors import UserError

SACREBLEU = Path(sys.executable).with_name("sacrebleu")
METRICS = {"BLEU": "bleu", "chrF2": "chrf", "TER": "ter"}

HYP = ("El gato está en la mesa.\nMe gusta los árboles.\n\n"
       "¿Dónde está la estación?\nMañana vamos a la playa con mi niña.\n")
REF_A = ("El gato está sobre la mesa.\nMe gustan los árboles.\n\n"
         "¿Dónde está la estación?\nMañana iremos a la playa con mi niña.\n")
REF_B = ("Hay un gato en la mesa.\nMe gustan los árboles.\nHola.\n"
         "¿Dónde queda la estación?\nMañana vamos a ir a la playa con mi hija.\n")

CASES = {
    "one reference, accents and an empty line": (HYP, [REF_A]),
    "two references": (HYP, [REF_A, REF_B]),
    "three references": (HYP, [REF_A, REF_B, REF_A.upper()]),
    # CRLF endings, no final newline, trailing blanks, a BOM, a lone CR and a
    # Unicode line separator inside lines: sacrebleu splits on '\n' only.
    "awkward bytes": ("\ufeffEl gato está en la mesa. \r\nMe gusta\rlos árboles.\t\r\n"
                      "\r\n¿Dónde\u2028está la estación?\r\n  Mañana vamos a la playa.",
                      [REF_A, "El gato\r\nMe gustan los árboles.\r\n \r\n"
                              "¿Dónde está?\u2028\r\nMañana iremos a la playa.\r\n"]),
}


def transcli(*args: str | Path) -> subprocess.CompletedProcess:
    return run_cli(*args, timeout=60)


def sacrebleu_json(refs: list[Path], hyp: Path) -> dict[str, dict]:
    """The `sacrebleu` command's scores (4 decimals) and signatures, by metric key."""
    result = subprocess.run(
        [str(SACREBLEU), *map(str, refs), "-i", str(hyp), "-m", "bleu", "chrf", "ter",
         "-w", "4", "--format", "json"], capture_output=True, text=True, check=True,
        timeout=60)
    return {METRICS[entry["name"]]: entry for entry in json.loads(result.stdout)}


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.mark.parametrize("hyp_text, ref_texts", CASES.values(), ids=CASES.keys())
def test_json_figures_equal_the_sacrebleu_command(tmp_path: Path, hyp_text: str,
                                                  ref_texts: list[str]) -> None:
    hyp = write(tmp_path / "hyp.es", hyp_text)
    refs = [write(tmp_path / f"ref{i}.es", text) for i, text in enumerate(ref_texts)]
    result = transcli("evaluate", "--hyp", hyp, *[a for r in refs for a in ("--ref", r)],
                      "--json")
    assert result.returncode == 0, result.stderr
    ours = json.loads(result.stdout)
    theirs = sacrebleu_json(refs, hyp)
    assert set(theirs) == {"bleu", "chrf", "ter"}
    for key, entry in theirs.items():
        assert f"{ours[key]:.4f}" == f"{entry['score']:.4f}", key
        assert ours["signatures"][key] == entry["signature"], key
    assert ours["nrefs"] == len(refs)
    assert ours["lines"] == hyp_text.count("\n") + (not hyp_text.endswith("\n"))


def test_gzipped_reference_is_read_like_sacrebleu(tmp_path: Path) -> None:
    hyp = write(tmp_path / "hyp.es", HYP)
    ref = tmp_path / "ref.es.gz"
    ref.write_bytes(gzip.compress(REF_A.encode("utf-8")))
    result = transcli("evaluate", "--hyp", hyp, "--ref", ref, "--json")
    assert result.returncode == 0, result.stderr
    assert f"{json.loads(result.stdout)['bleu']:.4f}" == \
        f"{sacrebleu_json([ref], hyp)['bleu']['score']:.4f}"


def test_text_output_has_one_line_per_metric_with_its_signature(tmp_path: Path) -> None:
    hyp = write(tmp_path / "hyp.es", HYP)
    ref = write(tmp_path / "ref.es", REF_A)
    result = transcli("evaluate", "--hyp", hyp, "--ref", ref)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert [line.split(" = ")[0] for line in lines] == ["BLEU", "chrF2", "TER", "Loops"]
    assert "(signature: nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" in lines[0]
    theirs = sacrebleu_json([ref], hyp)
    assert lines[1].startswith(f"chrF2 = {theirs['chrf']['score']:.1f}  (signature: ")


def run_error(*args: str | Path) -> str:
    """The single stderr line of a failing `transcli evaluate`."""
    result = transcli("evaluate", *args)
    assert result.stdout == ""
    return one_error_line(result)


def test_missing_file_is_one_line_naming_it(tmp_path: Path) -> None:
    ref = write(tmp_path / "ref.es", REF_A)
    message = run_error("--hyp", tmp_path / "absent.es", "--ref", ref)
    assert "absent.es: file not found" in message
    message = run_error("--hyp", ref, "--ref", ref, "--ref", tmp_path / "gone.es")
    assert "gone.es" in message


def test_a_dash_is_named_as_not_a_file_here(tmp_path: Path) -> None:
    ref = write(tmp_path / "ref.es", REF_A)
    assert run_error("--hyp", "-", "--ref", ref).endswith(
        "--hyp -: evaluate reads files, not standard input; give --hyp a file")
    assert run_error("--hyp", ref, "--ref", ref, "--ref", "-").endswith(
        "--ref -: evaluate reads files, not standard input; give --ref a file")


def test_a_report_redirected_into_an_input_is_refused(tmp_path: Path) -> None:
    """`evaluate --hyp h -r f >> f` would append the report to the reference."""
    ref = write(tmp_path / "ref.es", REF_A)
    before = ref.read_bytes()
    with open(ref, "ab") as appended:
        result = subprocess.run([sys.executable, "-m", "transcli", "evaluate", "--hyp",
                                 str(ref), "--ref", str(ref)], stdout=appended,
                                stderr=subprocess.PIPE, text=True, timeout=60)
    assert result.returncode == 1 and ref.read_bytes() == before
    assert result.stderr.strip() == (
        f"transcli: error: {ref}: is both an input and standard output (`>` empties it "
        f"before the command starts); write the scores to another file")


def test_mismatched_line_counts_name_both_files_and_counts(tmp_path: Path) -> None:
    hyp = write(tmp_path / "hyp.es", "uno\ndos\n")
    ref = write(tmp_path / "ref.es", REF_A)
    ok = write(tmp_path / "ok.es", "uno\ndos")  # no final newline: still 2 lines
    message = run_error("--hyp", hyp, "--ref", ok, "--ref", ref)
    assert "hyp.es has 2 lines" in message and "ref.es has 5" in message


def test_invalid_utf8_names_file_and_line(tmp_path: Path) -> None:
    hyp = tmp_path / "hyp.es"
    hyp.write_bytes(b"bien\nel a\xf1o\n")  # Latin-1, not UTF-8
    ref = write(tmp_path / "ref.es", "bien\nel año\n")
    message = run_error("--hyp", hyp, "--ref", ref)
    assert "hyp.es: line 2 is not valid UTF-8" in message


def call(**options: object) -> None:
    """evaluate_cli with the CLI's defaults, overridden by `options`."""
    arguments: dict[str, object] = dict(ref=[], hyp=None, model=None, src=None,
                                        checkpoint="best", hyp_out=None,
                                        as_json=True, device="cpu")
    evaluate_cli(**{**arguments, **options})  # type: ignore[arg-type]


@pytest.mark.parametrize("options, expected", [
    ({}, "give --hyp FILE to score, or --model RUN_DIR --src FILE"),
    ({"hyp": Path("h"), "model": Path("m")}, "not both"),
    ({"model": Path("m")}, "--model needs --src FILE"),
    ({"hyp": Path("h"), "src": Path("s")}, "--src only applies with --model"),
    ({"hyp": Path("h"), "overrides": ["decode.beam_size=5"]},
     "--beam-size only applies with --model"),
    ({"hyp": Path("h"), "overrides": [("decode.quantize", "int8")]},
     "--int8 only applies with --model"),
    ({"hyp": Path("h"), "hyp_out": Path("o")}, "--hyp-out only applies with --model"),
])
def test_option_combinations(options: dict, expected: str) -> None:
    with pytest.raises(UserError, match=expected.replace("-", r"\-")):
        call(ref=[Path("r")], **options)


def test_empty_files_have_nothing_to_score(tmp_path: Path) -> None:
    empty = write(tmp_path / "empty.es", "")
    with pytest.raises(UserError, match="empty.es: no lines to score"):
        call(ref=[empty], hyp=empty)


def test_model_mode_translates_src_and_writes_hyp_out(
        run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--model translates --src (a BOM and CRLF endings: read as `translate` reads) with a
    real run's model, one trained to memorise PAIRS: its translations are the references."""
    english, spanish = [en for en, _ in PAIRS[:6]], [es for _, es in PAIRS[:6]]
    src = tmp_path / "src.en"
    src.write_bytes(("\ufeff" + "".join(f"{line}\r\n" for line in english)).encode("utf-8"))
    ref = write(tmp_path / "ref.es", "".join(f"{line}\n" for line in spanish))
    out = tmp_path / "hyp.es"
    call(ref=[ref], model=run_dir, src=src, checkpoint="last",
         overrides=[("decode.beam_size", 3)], hyp_out=out, device="cpu")
    assert out.read_text(encoding="utf-8") == "".join(f"{line}\n" for line in spanish)
    report = json.loads(capsys.readouterr().out)
    assert report["bleu"] == pytest.approx(100.0) and report["hyp"] == str(out)
    assert report["src"] == str(src) and report["checkpoint"] == "last"
    assert report["model"] == str(run_dir) and set(report["signatures"]) == {"bleu", "chrf", "ter"}


def test_model_mode_checks_line_counts_before_translating(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transcli.inference.translator", types.SimpleNamespace())
    src = write(tmp_path / "src.en", "one\ntwo\nthree\n")
    ref = write(tmp_path / "ref.es", "uno\ndos\n")
    with pytest.raises(UserError, match="src.en has 3 lines, .*ref.es has 2"):
        call(ref=[ref], model=tmp_path / "run", src=src)


def test_score_matches_sacrebleu_api_and_can_skip_ter() -> None:
    from sacrebleu.metrics import BLEU, CHRF

    hyps, refs = HYP.splitlines(), [REF_A.splitlines(), REF_B.splitlines()]
    scores = score(hyps, refs, ter=False)
    assert scores.bleu == BLEU().corpus_score(hyps, refs).score
    assert scores.chrf == CHRF().corpus_score(hyps, refs).score
    assert scores.ter is None and set(scores.metrics) == {"bleu", "chrf"}
    assert (scores.lines, scores.nrefs) == (5, 2)
    assert scores.metrics["bleu"].with_signature().startswith("BLEU|nrefs:2|case:mixed|")


def test_score_rejects_empty_or_misaligned_input() -> None:
    with pytest.raises(ValueError):
        score([], [[]])
    with pytest.raises(ValueError):
        score(["a", "b"], [["a"]])
    with pytest.raises(ValueError):
        score(["a"], [])


@pytest.mark.slow
def test_model_mode_takes_translate_s_decoding_flags_and_shows_progress(
        run_dir: Path, tmp_path: Path) -> None:
    english, spanish = [en for en, _ in PAIRS], [es for _, es in PAIRS]
    src, ref = write(tmp_path / "src.en", "\n".join(english) + "\n"), \
        write(tmp_path / "ref.es", "\n".join(spanish) + "\n")
    full = transcli("evaluate", "-m", run_dir, "--src", src, "--ref", ref, "--json", "--greedy")
    assert full.returncode == 0, full.stderr
    assert json.loads(full.stdout)["bleu"] == pytest.approx(100.0)
    assert "100%" in full.stderr and f"{len(english)}/{len(english)}" in full.stderr
    cut = transcli("evaluate", "-m", run_dir, "--src", src, "--ref", ref, "--json",
                   "--strategy", "beam", "--beam-size", "2", "--max-len-a", "0",
                   "--max-len-b", "2", "--set", "decode.length_penalty=1.0")
    assert cut.returncode == 0, cut.stderr
    # The limit of 2 pieces cut every translation: each was searched again with room
    # (the check of every sentence), and evaluate says so.
    scores = json.loads(cut.stdout)
    assert (scores["checks_failed"], scores["checks_repaired"]) == (len(english),) * 2
    assert scores["bleu"] == pytest.approx(100.0)


def test_scores_added_up_chunk_by_chunk_equal_the_whole_corpus_s() -> None:
    """evaluate scores a chunk of lines at a time: the sums of sacreBLEU's sentence
    statistics give the corpus figures of the whole, with two reference sets."""
    from transcli.inference.bleu import CorpusScorer

    hyps = [f"{HYP.splitlines()[i % 3]} {i}" for i in range(200)]
    refs = [[f"{REF_A.splitlines()[i % 3]} {i}" for i in range(200)],
            [f"{REF_B.splitlines()[i % 3]} {i % 7}" for i in range(200)]]
    whole = score(hyps, refs)
    scorer = CorpusScorer()
    for start in range(0, 200, 7):
        scorer.add(hyps[start:start + 7], [r[start:start + 7] for r in refs])
    chunked = scorer.result()
    assert chunked.to_dict() == whole.to_dict()
