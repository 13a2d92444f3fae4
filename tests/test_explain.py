"""Attention pictures and alignments: the captured weights against the fused kernel and
against cached decoding, the alignment rule, the files written, and refusals."""

from __future__ import annotations

import math

import pytest
import torch
from helpers import PAIRS
from helpers.cli import one_error_line, run_cli
from helpers.memorised import memorised_model

from transcli.data.tokenizer import Tokenizer
from transcli.inference.alignment import cross_attention, kept_weights
from transcli.inference.attention import ALIGNMENTS_FILE, Attention, drawable
from transcli.model.transformer import merge_heads, split_heads
from transcli.model.vocab import BOS_ID, EOS_ID

ENGLISH = [en for en, _ in PAIRS]
SPANISH = [es for _, es in PAIRS]

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_kept_weights_are_the_kernels_attention(tiny_spm):
    """softmax(QK^T/sqrt(d_k)) written out, times V, gives what the fused kernel gave."""
    model = memorised_model(tiny_spm, tuple(PAIRS))
    layer = model.decoder[0].cross_attn
    memory = model.encode(torch.tensor([[5, 6, 7, EOS_ID, 0], [8, 9, EOS_ID, 0, 0]]))
    kv = layer.memory_kv(memory.states)
    x = torch.randn(2, 4, model.cfg.d_model)
    with torch.no_grad(), kept_weights(model):
        fused = layer(x, kv, memory.mask)
        weights = layer.weights
    by_hand = layer.out(merge_heads(weights @ kv[1]))
    assert torch.allclose(fused, by_hand, atol=1e-5)
    assert torch.allclose(weights.sum(-1), torch.ones(2, model.cfg.heads, 4))
    assert (weights[1, :, :, 3:] == 0).all()  # padding gets nothing
    assert not layer.keep_weights and layer.weights is None  # off again after the block


def test_teacher_forced_weights_equal_those_of_cached_decoding(tiny_spm):
    """Row j of the teacher-forced pass is what the decoder attended to at decoding step j
    (`Transformer.step`, the search's cached path): its cross-attention inputs are caught
    at each step and the weights worked out by hand from them."""
    model = memorised_model(tiny_spm, tuple(PAIRS))
    assert not model.cfg.pre_norm  # post-norm: the block's input is the attention's input
    tokenizer = Tokenizer(tiny_spm)
    source = tokenizer.encode([ENGLISH[0]])[0] + [EOS_ID]
    target = tokenizer.encode([SPANISH[0]])[0] + [EOS_ID]
    forced = cross_attention(model, source, target)  # [layers, heads, T, S]
    inputs: list[list[torch.Tensor]] = [[] for _ in model.decoder]
    hooks = [layer.cross_attn_block.register_forward_pre_hook(
        lambda module, args, i=i: inputs[i].append(args[0])) for i, layer in
        enumerate(model.decoder)]
    try:
        with torch.no_grad():
            memory = model.encode(torch.tensor([source]))
            state = model.start_decoding(memory)
            for previous in [BOS_ID] + target[:-1]:
                model.step(torch.tensor([previous]), state)
            by_hand = []
            for layer, xs in zip(model.decoder, inputs):
                k, _ = layer.cross_attn.memory_kv(memory.states)  # [1, heads, S, d_k]
                q = split_heads(layer.cross_attn.q(torch.stack(xs, dim=1)), model.cfg.heads)
                by_hand.append(torch.softmax(q @ k.transpose(-1, -2) / k.size(-1) ** 0.5,
                                             dim=-1)[0])
    finally:
        for hook in hooks:
            hook.remove()
    assert torch.allclose(forced, torch.stack(by_hand), atol=1e-5)


def test_alignment_takes_each_target_piece_s_strongest_source_piece():
    layers = torch.tensor([[[0.1, 0.6, 0.3], [0.2, 0.1, 0.7], [0.5, 0.4, 0.1]],
                           [[0.1, 0.8, 0.1], [0.6, 0.1, 0.3], [0.1, 0.1, 0.8]]])
    attention = Attention(["▁a", "▁b", "</s>"], ["▁x", "▁y", "</s>"], layers)
    # mean rows: [0.1, 0.7, 0.2], [0.4, 0.1, 0.5] -> </s> column left out -> 0, [.., ..]
    assert attention.alignment() == [(1, 0), (0, 1)]


@pytest.mark.slow
def test_translate_writes_pictures_and_alignments(run_dir, tiny_spm, tmp_path):
    run = run_dir
    folder = tmp_path / "attention"
    lines = [ENGLISH[0], "", ENGLISH[1]]
    result = run_cli("translate", "-m", run, "--attention", folder,
                     stdin="".join(line + "\n" for line in lines))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [SPANISH[0], "", SPANISH[1]]
    alignments = (folder / ALIGNMENTS_FILE).read_text(encoding="utf-8").split("\n")
    assert alignments[1] == "" and len(alignments) == 4  # one line per input line
    tokenizer = Tokenizer(tiny_spm)
    for number, spanish, pharaoh in ((1, SPANISH[0], alignments[0]),
                                     (3, SPANISH[1], alignments[2])):
        for name in (f"line-{number:05d}.png", f"line-{number:05d}-layers.png"):
            assert (folder / name).read_bytes().startswith(PNG_MAGIC)
        pairs = [tuple(map(int, pair.split("-"))) for pair in pharaoh.split()]
        pieces = len(tokenizer.encode([spanish])[0])
        assert [j for _, j in pairs] == list(range(pieces))  # one pair per target piece
        text = (folder / f"line-{number:05d}.txt").read_text(encoding="utf-8")
        assert f"alignment (source-target): {pharaoh}" in text
    assert not (folder / "line-00002.png").exists()


def test_a_line_without_words_is_copied_with_attention_as_without(run_dir, tmp_path):
    """A URL or a number alone is copied by translate; with --attention the model was
    asked for its placeholder and its words were written around it ("42 ¿Te trabajos.")."""
    lines = "https://example.com/a\n42\n"
    plain = run_cli("translate", "-m", run_dir, stdin=lines)
    folder = tmp_path / "attention"
    result = run_cli("translate", "-m", run_dir, "--attention", folder, stdin=lines)
    assert result.returncode == 0, result.stderr
    assert result.stdout == plain.stdout == lines
    assert not (folder / "line-00001.png").exists()  # nothing translated: no pictures
    explained = run_cli("explain", "-m", run_dir, "42", "-o", tmp_path / "explained")
    assert "(line 1 has no words to translate, so it is copied: nothing to explain)" \
        in explained.stdout


def test_averaged_rows_sum_to_one(tiny_spm):
    model = memorised_model(tiny_spm, tuple(PAIRS))
    tokenizer = Tokenizer(tiny_spm)
    source = tokenizer.encode([ENGLISH[2]])[0] + [EOS_ID]
    target = tokenizer.encode([SPANISH[2]])[0] + [EOS_ID]
    weights = cross_attention(model, source, target)
    attention = Attention(["x"] * len(source), ["y"] * len(target), weights.mean(dim=1))
    assert attention.layers.shape == (model.cfg.dec_layers, len(target), len(source))
    assert torch.allclose(attention.mean.sum(dim=1), torch.ones(len(target)), atol=1e-5)
    assert not math.isnan(attention.mean.sum().item())


@pytest.mark.slow
def test_explain_command_prints_the_alignment(run_dir, tmp_path):
    run = run_dir
    result = run_cli("explain", "-m", run, ENGLISH[0], "-o", tmp_path / "pictures")
    assert result.returncode == 0, result.stderr
    assert f"Translation: {SPANISH[0]}" in result.stdout
    assert "alignment (source-target): " in result.stdout
    assert (tmp_path / "pictures" / "line-00001.png").is_file()


@pytest.mark.slow
def test_refusals_are_one_line(run_dir, tmp_path):
    run = run_dir
    line = one_error_line(run_cli("translate", "-m", run, "--attention", tmp_path / "a",
                                  "--split-sentences", stdin="Hi.\n"))
    assert "--attention and --split-sentences" in line
    line = one_error_line(run_cli("translate", "-m", run, "--attention", tmp_path / "a",
                                  "--engine", "ct2", stdin="Hi.\n"))
    assert "needs the torch engine" in line
    assert not (run / "ct2-step-0000200-float32").exists()  # refused before any export
    (tmp_path / "file").write_text("x")
    line = one_error_line(run_cli("translate", "-m", run, "--attention", tmp_path / "file",
                                  stdin="Hi.\n"))
    assert "must name a directory" in line


def test_drawable_escapes_what_the_font_cannot_draw():
    assert drawable("año ▁el $x$ → …") == "año ▁el $x$ → …"  # the font has these
    assert drawable("a🌳\x07\tb\udcff") == "a\\U0001f333\\x07\\tb\\udcff"


@pytest.mark.slow
def test_explain_draws_emoji_control_characters_and_dollars_without_noise(run_dir, tmp_path):
    """The English text is drawn in the titles: an emoji and control characters (no glyph
    in the font) once gave matplotlib's "Glyph missing" warnings, and `$\\frac` a mathtext
    traceback."""
    folder = tmp_path / "pictures"
    english = f"{ENGLISH[0]} 🌳\x07\x01\t $\\frac and $ more"
    result = run_cli("explain", "-m", run_dir, english, "-o", folder)
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert f"Source: {english}\n" in result.stdout  # the text itself, beside the pictures
    for name in ("line-00001.png", "line-00001-layers.png"):
        assert (folder / name).read_bytes().startswith(PNG_MAGIC)


@pytest.mark.slow
def test_explain_explains_each_line_of_an_argument_as_translate_does(run_dir, tmp_path):
    """A newline inside an argument makes two lines, as in `translate` and `serve`; an
    empty line gets a note and no pictures, and the numbering runs across arguments."""
    folder = tmp_path / "pictures"
    result = run_cli("explain", "-m", run_dir, f"{ENGLISH[0]}\r\n{ENGLISH[1]}", "",
                     ENGLISH[2], "-o", folder)
    assert result.returncode == 0, result.stderr
    spanish = [line.removeprefix("Translation: ") for line in result.stdout.splitlines()
               if line.startswith("Translation: ")]
    assert spanish == SPANISH[:3]
    assert "(line 3 is empty: nothing to explain)" in result.stdout
    assert [line.removeprefix("Source: ") for line in result.stdout.splitlines()
            if line.startswith("Source: ")] == ENGLISH[:3]
    assert {path.name for path in folder.glob("line-*.png")} == {
        f"line-{n:05d}{kind}.png" for n in (1, 2, 4) for kind in ("", "-layers")}
    alignments = (folder / ALIGNMENTS_FILE).read_text(encoding="utf-8").split("\n")
    assert len(alignments) == 5 and alignments[2] == ""  # one line per line, as translate


@pytest.mark.slow
def test_explain_prints_translate_s_translation_of_every_line(run_dir, tmp_path):
    """One path: the Spanish each description shows is what `translate` writes for the
    line, a paragraph of two sentences, a looping unseen line and a line cut by a short
    length limit included; a line of a URL alone is copied by both."""
    from helpers.memorised import UNSEEN

    lines = [ENGLISH[0], f"{ENGLISH[1]} {ENGLISH[2]}", "https://example.com/a", *UNSEEN[:3],
             ENGLISH[3]]
    source = tmp_path / "in.en"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    limits = ["--set", "decode.max_len_b=6"]
    translated = run_cli("translate", "-m", run_dir, "--checkpoint", "last", "-i", source,
                         *limits)
    assert translated.returncode == 0, translated.stderr
    explained = run_cli("explain", "-m", run_dir, "--checkpoint", "last", *lines, "-o",
                        tmp_path / "pictures", *limits)
    assert explained.returncode == 0, explained.stderr
    spanish = [line.removeprefix("Translation: ") for line in explained.stdout.splitlines()
               if line.startswith("Translation: ")]
    written = translated.stdout.splitlines()
    assert spanish == [text for index, text in enumerate(written) if index != 2]
    assert written[2] == lines[2] and "(line 3 has no words to translate" in explained.stdout


@pytest.mark.slow
def test_explain_and_attention_into_the_run_dir_are_refused(run_dir, tmp_path):
    """--out / --attention inside the run dir, even with --force: one line, nothing
    written among the run's files."""
    before = sorted(p.name for p in run_dir.rglob("*"))
    error = one_error_line(run_cli("explain", "-m", run_dir, "--force", ENGLISH[0], "-o",
                                   run_dir / "checkpoints"))
    assert error == (f"transcli: error: {run_dir / 'checkpoints'}: is inside the run dir "
                     f"{run_dir}; give --out a folder of its own")
    error = one_error_line(run_cli("translate", "-m", run_dir, "--attention", run_dir,
                                   "--force", stdin=ENGLISH[0] + "\n"))
    assert error.endswith(f"is inside the run dir {run_dir}; give --attention a folder of "
                          f"its own")
    assert sorted(p.name for p in run_dir.rglob("*")) == before


def test_explain_checks_the_run_before_reading_stdin(tmp_path):
    """Issue: `yes | explain -m typo` read all of stdin (it grew to 3 GB) before checking
    -m. Here stdin stays open: a reader of all of it would wait for ever."""
    import subprocess

    from helpers.training import transcli_process

    proc = transcli_process("explain", "-m", str(tmp_path / "typo"), stdin=subprocess.PIPE)
    try:
        proc.stdin.write("I like trees.\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 1
        assert "typo: run directory not found" in proc.stderr.read()
    finally:
        proc.kill()
        proc.stdin.close()


def test_explain_with_ct2_writes_nothing_before_refusing(run_dir, tmp_path):
    """Issue: `explain --engine ct2` exported RUN/ct2-best-float32, then refused."""
    import shutil

    run = shutil.copytree(run_dir, tmp_path / "run")
    line = one_error_line(run_cli("explain", "-m", run, "--engine", "ct2", "-o",
                                  tmp_path / "pictures", ENGLISH[0]))
    assert "explain needs the torch engine" in line
    assert not list(run.glob("ct2-*")) and not (tmp_path / "pictures").exists()
