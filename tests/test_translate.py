"""`Translator`, `load_translator` and the `translate` command on a memorised run dir:
order, empty lines, batch independence, long lines, n-best, pipes and errors."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from helpers import PAIRS, ROOT
from helpers.cli import one_error_line, run_cli
from helpers.memorised import TINY_CONFIG, UNSEEN, memorised_model

from transcli.cli.translate import translate_file
from transcli.config.loading import load_config
from transcli.config.schema import DecodeConfig
from transcli.data.tokenizer import Tokenizer
from transcli.inference.translator import Translator, load_translator, token_batches
from transcli.model.transformer import Transformer
from transcli.rundir.checkpoints import save_weights
from transcli.rundir.run import open_run_dir
from transcli.system.errors import UserError

ENGLISH = [en for en, _ in PAIRS]
SPANISH = [es for _, es in PAIRS]




def translator(tiny_spm: Path, **decode) -> Translator:
    model = memorised_model(tiny_spm, tuple(PAIRS))
    return Translator(model, Tokenizer(tiny_spm), replace(DecodeConfig(), **decode), "cpu")


@pytest.mark.parametrize("beam", [1, 3])
def test_order_and_empty_lines(tiny_spm, beam):
    lines = ["", ENGLISH[3], "   ", ENGLISH[0], "", "", ENGLISH[7], ENGLISH[3], ""]
    expected = ["", SPANISH[3], "", SPANISH[0], "", "", SPANISH[7], SPANISH[3], ""]
    assert translator(tiny_spm, beam_size=beam).translate(lines) == expected


@pytest.mark.parametrize("beam", [1, 3])
def test_independent_of_batch_size_and_neighbours(tiny_spm, beam):
    lines = ENGLISH + UNSEEN
    big = translator(tiny_spm, beam_size=beam, batch_tokens=100_000).translate(lines)
    one_by_one = translator(tiny_spm, beam_size=beam, batch_tokens=1).translate(lines)
    order = list(range(len(lines)))
    random.Random(0).shuffle(order)
    shuffled = translator(tiny_spm, beam_size=beam, batch_tokens=40).translate(
        [lines[i] for i in order])
    assert one_by_one == big
    assert [shuffled[order.index(i)] for i in range(len(lines))] == big
    assert big[:len(SPANISH)] == SPANISH


def test_token_batches_respect_the_budget():
    lengths = [5, 1, 9, 3, 3, 30, 2, 8]
    batches = token_batches(lengths, budget=12)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        longest = max(lengths[i] for i in batch)
        assert len(batch) == 1 or len(batch) * longest <= 12
    assert [5] in batches  # longer than the budget: alone, not dropped


def test_nbest_scores(tiny_spm):
    results = translator(tiny_spm, beam_size=3, n_best=3).translate_nbest(
        [ENGLISH[1], "", UNSEEN[0]])
    assert [len(r) for r in results] == [3, 3, 3]
    assert results[0][0][0] == SPANISH[1]
    assert results[1] == [("", 0.0)] * 3
    for hyps in results:
        scores = [score for _, score in hyps]
        assert scores == sorted(scores, reverse=True) and all(s <= 0 for s in scores)


def test_a_line_too_long_for_the_model_is_translated_in_halves_and_said(run_dir, capsys):
    """A line longer than the model's positions was cut to fit (its end lost, with a
    warning); now it is halved until each half fits, and the check's line says so."""
    long_line = " ".join(["trees"] * 40)
    lines = [long_line, ENGLISH[0], long_line + " again"]
    translator = load_translator(open_run_dir(run_dir, ["model.max_positions=24"]), "last", "cpu")
    out = translator.translate(lines)
    translator.tally.report()
    assert len(out) == 3 and out[1] == SPANISH[0]
    assert translator.tally.truncated == 0 and translator.tally.problems["cut"] >= 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cut by the length limit" in err[0] and "truncated" not in err[0]


def test_training_mode_is_restored(tiny_spm):
    t = translator(tiny_spm, beam_size=1)
    t.engine.model.train()
    try:
        assert t.translate([ENGLISH[2]]) == [SPANISH[2]]  # dropout off while decoding
        assert t.engine.model.training
    finally:
        t.engine.model.eval()


def test_decode_threads_is_applied(run_dir):
    """`decode.threads` sets torch's threads for translation."""
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        run = open_run_dir(run_dir, ["decode.threads=2"])
        load_translator(run, "last", "cpu").translate(ENGLISH[:1])
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_errors_name_the_file(run_dir, tmp_path):
    (tmp_path / "in.txt").write_text("Hello.\n", encoding="utf-8")
    cases = [
        (tmp_path / "no-run", "last", tmp_path / "in.txt", "no-run: run directory not found"),
        (run_dir, "last", tmp_path / "missing.txt", "missing.txt: file not found"),
        (run_dir, "last", tmp_path, "is a directory, not a file"),
    ]
    for model, checkpoint, source, message in cases:
        with pytest.raises(UserError, match=message):
            translate_file(model, checkpoint, str(source), "-", [], "cpu")
    other = tmp_path / "other.safetensors"  # from a run with a 300-piece vocabulary
    save_weights(Transformer(load_config(TINY_CONFIG).model, 300), other)
    with pytest.raises(UserError, match="other.safetensors: checkpoint does not match"):
        translate_file(run_dir, str(other), str(tmp_path / "in.txt"), "-", [], "cpu")
    (tmp_path / "bad.txt").write_bytes(b"fine\n\xff\xfe\n")
    with pytest.raises(UserError, match=r"bad.txt: line 2 is not valid UTF-8"):
        translate_file(run_dir, "last", str(tmp_path / "bad.txt"), "-", [], "cpu")


# ---------------------------------------------------------------- the command line

ONE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1"}  # see memorised.one_torch_thread


def transcli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return run_cli("translate", *args, stdin=stdin, text=False)


@pytest.mark.slow
def test_cli_stdin_stdout_equals_files(run_dir, tmp_path):
    lines = ["", *ENGLISH[:6], "", "  ", UNSEEN[0], "Ünïcode\u2028inside a line\r"]
    text = ("\r\n".join(lines[:3]) + "\n" + "\n".join(lines[3:])).encode("utf-8")
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_bytes(text)  # mixed line endings, no final newline
    files = transcli("-m", str(run_dir), "--checkpoint", "last", "--beam-size", "2",
                     "-i", str(source), "-o", str(target))
    assert files.returncode == 0, files.stderr
    piped = transcli("-m", str(run_dir), "--checkpoint", "last", "--beam-size", "2",
                     stdin=text)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == target.read_bytes()
    out = piped.stdout.decode("utf-8").split("\n")
    assert out[-1] == "" and len(out) - 1 == len(lines)
    assert out[:7] == ["", *SPANISH[:6]]
    assert out[7:9] == ["", ""]


def test_without_best_the_checkpoint_used_is_named(run_dir):
    """The run has no best yet (it never validated): translate uses its newest step and
    says so, where asking for it by name says nothing."""
    default = transcli("-m", str(run_dir), stdin=f"{ENGLISH[0]}\n".encode())
    assert default.returncode == 0 and default.stdout.decode() == SPANISH[0] + "\n"
    assert "no best checkpoint yet" in default.stderr.decode()
    assert "step-0000200.safetensors" in default.stderr.decode()
    named = transcli("-m", str(run_dir), "--checkpoint", "last", stdin=f"{ENGLISH[0]}\n".encode())
    assert named.stdout == default.stdout and "best" not in named.stderr.decode()


def test_cli_nbest_tsv(run_dir):
    result = transcli("-m", str(run_dir), "--checkpoint", "last", "--beam-size", "3",
                      "--n-best", "2", stdin=f"{ENGLISH[4]}\n\n{ENGLISH[5]}\n".encode())
    assert result.returncode == 0, result.stderr
    rows = [line.split("\t") for line in result.stdout.decode().splitlines()]
    assert [row[0] for row in rows] == ["0", "0", "1", "1", "2", "2"]
    assert all(len(row) == 3 for row in rows)
    assert rows[0][1] == SPANISH[4] and rows[4][1] == SPANISH[5] and rows[2][1] == ""
    assert float(rows[0][2]) >= float(rows[1][2])


def test_cli_nbest_tsv_has_three_columns_when_a_kept_span_holds_a_tab(run_dir):
    result = transcli("-m", str(run_dir), "--checkpoint", "last", "--beam-size", "2",
                      "--n-best", "2", stdin=b"Run `a\tb` now.\n")
    assert result.returncode == 0, result.stderr
    rows = [line.split("\t") for line in result.stdout.decode().splitlines()]
    assert [len(row) for row in rows] == [3, 3]
    assert all("`a b`" in row[1] for row in rows)


def test_cli_error_is_one_line(tmp_path):
    result = transcli("-m", str(tmp_path / "nowhere"), stdin=b"Hello.\n")
    assert result.returncode == 1
    assert result.stderr.decode().splitlines() == [
        f"transcli: error: {tmp_path / 'nowhere'}: run directory not found; `transcli train` "
        f"makes one: transcli train -c configs/cpu-1h.yaml --data PREPARED --out "
        f"{tmp_path / 'nowhere'}"]


@pytest.mark.slow
def test_cli_pipe_into_head(run_dir, tmp_path):
    """`cat big.txt | transcli translate | head -1`: more output than a pipe holds, so
    translate blocks on a write until the reader leaves; then exit 0, no traceback."""
    big = tmp_path / "big.txt"
    big.write_text("\n".join(ENGLISH * 1000) + "\n", encoding="utf-8")  # 16,000 lines
    with open(big, "rb") as stdin:
        process = subprocess.Popen(
            [sys.executable, "-m", "transcli", "translate", "-m", str(run_dir), "--checkpoint",
             "last", "--greedy", "--max-len-a", "0", "--max-len-b", "3"],
            stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
            env=ONE_THREAD)
        first = process.stdout.readline()
        process.stdout.close()
        assert process.wait(timeout=120) == 0
    said = process.stderr.read().decode().splitlines()
    assert first.strip() and all(line.startswith(("transcli: note: ", "transcli: warning: "))
                                 and "failed their check" in line or "note" in line
                                 for line in said), said


@pytest.mark.parametrize("input, output, problem", [
    ("x.docx", "x.txt", "the output is Word document, as the input, but its name says"),
    ("in.txt", "out.gz", "translate writes plain text, not .gz: give -o"),
    ("in.txt", "out.es.xz", "translate writes plain text, not .xz"),
])
def test_an_output_named_as_another_kind_of_file_is_refused(run_dir, tmp_path, input, output,
                                                            problem):
    """`-o out.gz` wrote plain text into a .gz, `-i x.docx -o x.txt` a zip into a .txt."""
    (tmp_path / "in.txt").write_text("I like trees.\n", encoding="utf-8")
    result = run_cli("translate", "-m", run_dir, "--checkpoint", "last",
                     "-i", tmp_path / input, "-o", tmp_path / output)
    assert problem in one_error_line(result) and not (tmp_path / output).exists()
