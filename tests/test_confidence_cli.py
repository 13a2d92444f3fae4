"""The confidence as a user meets it: fitted at a run's end, `transcli calibrate`,
`translate --confidence`, `--min-confidence` and what is refused."""

from __future__ import annotations

import importlib.util
import json
import statistics
from pathlib import Path

import pytest
import sacrebleu
from helpers import PAIRS
from helpers.cli import one_error_line, run_cli
from helpers.server import Server
from helpers.training import prepare_sample, train_cli

ENGLISH = [en for en, _ in PAIRS[:6]]


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny run trained 150 updates on sample data with 60 valid pairs: its end fits
    the confidence."""
    folder = tmp_path_factory.mktemp("calibrated")
    data = prepare_sample(folder, 0, 400, "data.valid_size=60")
    run = folder / "run"
    result = run_cli(*train_cli(data, run, "train.max_steps=150"), timeout=300)
    assert result.returncode == 0, result.stderr
    assert "confidence fitted on 60 valid lines in" in result.stderr
    return run


@pytest.mark.slow
def test_training_fits_it_and_calibrate_fits_it_again(calibrated, tmp_path):
    fitted = json.loads((calibrated / "confidence.json").read_text())
    assert fitted["lines"] == 60 and len(fitted["weights"]) == len(fitted["features"]) + 1
    result = run_cli("calibrate", "-m", calibrated, "--lines", "55", "--checkpoint", "last")
    assert result.returncode == 0, result.stderr
    assert "confidence fitted on 55 valid lines" in result.stderr
    assert json.loads((calibrated / "confidence.json").read_text())["lines"] == 55


@pytest.mark.slow
def test_translate_writes_it_or_acts_on_it(calibrated, tmp_path):
    source = tmp_path / "in.en"
    source.write_text("\n".join(ENGLISH) + "\n\n")
    shown = run_cli("translate", "-m", calibrated, "-i", source, "--confidence")
    assert shown.returncode == 0, shown.stderr
    rows = [line.split("\t") for line in shown.stdout.splitlines()]
    assert len(rows) == len(ENGLISH) + 1 and all(len(row) == 2 for row in rows)
    assert all(0.0 <= float(value) <= 1.0 for _, value in rows[:-1])
    plain = run_cli("translate", "-m", calibrated, "-i", source)
    assert [text for text, _ in rows] == plain.stdout.splitlines()
    # between the two lowest values shown (rounded to 0.01: their midpoint is on the same
    # side of both exact values), or above the only one
    values = sorted({float(value) for _, value in rows[:-1]})
    least = round((values[0] + values[1]) / 2 if len(values) > 1 else values[0] + 0.01, 3)
    kept = run_cli("translate", "-m", calibrated, "-i", source, "--min-confidence", str(least))
    below = [i for i, (_, value) in enumerate(rows[:-1]) if float(value) < least]
    assert below
    assert [line for i, line in enumerate(kept.stdout.splitlines()) if i in below] == [
        ENGLISH[i] for i in below]
    assert f"{len(below)} line(s) below confidence {least:g}: written as their source" \
        in kept.stderr
    marked = run_cli("translate", "-m", calibrated, "-i", source, "--min-confidence",
                     str(least), "--below", "mark")
    assert [line.startswith("[?] ") for line in marked.stdout.splitlines()] == [
        i in below for i in range(len(ENGLISH) + 1)]


@pytest.mark.slow
def test_a_run_without_a_calibration_is_said(run_dir, tmp_path):
    source = tmp_path / "in.en"
    source.write_text(ENGLISH[0] + "\n")
    error = one_error_line(run_cli("translate", "-m", run_dir, "-i", source, "--confidence"))
    assert "no confidence calibration" in error and f"transcli calibrate {run_dir}" in error
    error = one_error_line(run_cli("calibrate", "-m", run_dir))
    assert "its prepared dir (not recorded) is not there" in error
    error = one_error_line(run_cli("translate", "-m", run_dir, "-i", source, "--confidence",
                                   "--n-best", "2", "--beam-size", "2"))
    assert "not with --attention or --n-best" in error


@pytest.mark.slow
def test_evaluate_says_how_the_confidence_ranks_the_lines(calibrated, tmp_path):
    """Against sacreBLEU's own sentence chrF and corpus BLEU, and the statistics module,
    from the confidences `translate --confidence` writes."""
    english, spanish = [en for en, _ in PAIRS], [es for _, es in PAIRS]
    source, reference = tmp_path / "in.en", tmp_path / "ref.es"
    source.write_text("\n".join(english) + "\n")
    reference.write_text("\n".join(spanish) + "\n")
    shown = run_cli("translate", "-m", calibrated, "-i", source, "--confidence")
    rows = [line.split("\t") for line in shown.stdout.splitlines()]
    texts, confidence = [text for text, _ in rows], [float(value) for _, value in rows]
    result = run_cli("evaluate", "-m", calibrated, "--src", source, "--ref", reference,
                     "--json")
    assert result.returncode == 0, result.stderr
    ranking = json.loads(result.stdout)["confidence"]
    chrf = [sacrebleu.sentence_chrf(text, [ref]).score for text, ref in zip(texts, spanish)]
    assert ranking["pearson"] == pytest.approx(statistics.correlation(confidence, chrf),
                                               abs=0.006)  # confidences rounded to 0.01
    top = sorted(range(len(texts)), key=lambda i: -confidence[i])[:round(0.8 * len(texts))]
    if len(set(confidence)) == len(confidence):  # no tie rounded away
        assert ranking["bleu_confident"] == pytest.approx(sacrebleu.corpus_bleu(
            [texts[i] for i in top], [[spanish[i] for i in top]]).score)
    assert ranking["bleu_all"] == pytest.approx(sacrebleu.corpus_bleu(texts, [spanish]).score)


@pytest.mark.slow
def test_serve_answers_each_text_s_confidence_and_its_alternatives(calibrated, run_dir,
                                                                    tmp_path):
    """transcli's fields beside LibreTranslate's: `confidence` (as translate gives it) and
    `alternativesConfidence`, one per alternative; a run without a calibration gives
    neither."""
    source = tmp_path / "in.en"
    source.write_text("\n".join(ENGLISH) + "\n")
    shown = run_cli("translate", "-m", calibrated, "--checkpoint", "last", "-i", source,
                    "--confidence")
    expected = [float(line.split("\t")[1]) for line in shown.stdout.splitlines()]
    server = Server(calibrated, tmp_path)
    try:
        status, body = server.translate(ENGLISH, source="en", target="es")
        assert status == 200, body
        assert body["confidence"] == pytest.approx(expected, abs=0.006)
        status, body = server.translate(ENGLISH[0], source="en", target="es", alternatives=2)
        assert status == 200 and isinstance(body["confidence"], float), body
        assert len(body["alternativesConfidence"]) == len(body["alternatives"])
        assert all(0.0 <= value <= 1.0 for value in body["alternativesConfidence"])
    finally:
        server.stop()
    (tmp_path / "plain").mkdir()
    plain = Server(run_dir, tmp_path / "plain")
    try:
        status, body = plain.translate(ENGLISH[0], source="en", target="es", alternatives=1)
        assert status == 200 and "confidence" not in body and "alternatives" in body
    finally:
        plain.stop()


@pytest.mark.slow
def test_the_benchmark_reports_each_set_and_the_speed(calibrated, tmp_path):
    import subprocess
    import sys

    from helpers import ROOT

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "dev.toy.en").write_text("\n".join(en for en, _ in PAIRS) + "\n")
    (corpus / "dev.toy.es").write_text("\n".join(es for _, es in PAIRS) + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "bench.confidence", "--model", str(calibrated), "--checkpoint",
         "best", "--lines", "12", "--sets", "dev.toy", "--corpus", str(corpus), "--work",
         str(tmp_path / "work"), "--speed-lines", "4"],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(result.stdout.split("RESULT ", 1)[1])
    toy = figures["dev.toy"]
    assert toy["lines"] == 12 and 0 <= toy["mean_confidence"] <= 1
    assert toy["bleu_all"] == pytest.approx(sacrebleu.corpus_bleu(
        (tmp_path / "work" / "dev.toy.hyp.es").read_text().splitlines(),
        [[es for _, es in PAIRS[:12]]]).score)
    assert figures["speed"]["speed_ratio"] > 0


@pytest.mark.slow
def test_documents_int8_and_ctranslate2_get_it_too(calibrated, tmp_path):
    """--min-confidence acts on a document's units (above every confidence: each unit
    written as its source, so the page comes back as it was); --int8 and --engine ct2
    give each line a confidence (CTranslate2's from its total log-prob alone)."""
    page = tmp_path / "page.md"
    page.write_text(f"# {ENGLISH[0]}\n\n{ENGLISH[1]} *{ENGLISH[2]}*\n\n- {ENGLISH[3]}\n")
    out = tmp_path / "page.es.md"
    kept = run_cli("translate", "-m", calibrated, "-i", page, "-o", out, "--min-confidence", "1")
    assert kept.returncode == 0, kept.stderr
    assert out.read_text() == page.read_text()
    assert "below confidence 1: written as their source" in kept.stderr
    source = tmp_path / "in.en"
    source.write_text("\n".join(ENGLISH) + "\n")
    engines = [["--int8"]]
    if importlib.util.find_spec("ctranslate2") is not None:
        engines.append(["--engine", "ct2"])
    for flags in engines:
        shown = run_cli("translate", "-m", calibrated, "-i", source, "--confidence", *flags)
        assert shown.returncode == 0, shown.stderr
        values = [float(line.split("\t")[1]) for line in shown.stdout.splitlines()]
        assert len(values) == len(ENGLISH) and all(0 <= value <= 1 for value in values), flags
