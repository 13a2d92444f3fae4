"""Spanish as the source: what the English tests check of the translator's side, with a
model translating Spanish to English (the tiny model memorising `PAIRS` and `SLOTS` the
other way). Numbers written the Spanish way (a decimal comma, `.` between thousands),
amounts, times, and every other span kind come back as written; paragraphs are cut at
`¿…?`, `¡…!` and kept whole at Spanish abbreviations (`Sra.`, `EE. UU.`); capitals come
back; glossary terms go from Spanish to English; documents keep their markup; `evaluate`,
`explain` and `score` read the run's direction."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from helpers import PAIRS, SLOTS, TINY_CONFIG
from helpers.cli import run_cli
from helpers.memorised import memorised_model

from transcli.config.loading import load_config, save_config
from transcli.config.schema import DecodeConfig
from transcli.data.tokenizer import TOKENIZER_FILE, Tokenizer
from transcli.documents.formats import FORMATS
from transcli.documents.translating import Document
from transcli.inference.glossary import Entry, Glossary
from transcli.inference.realtext import placeholder_pool
from transcli.inference.translator import Translator
from transcli.rundir.checkpoints import save_weights
from transcli.rundir.layout import CONFIG_FILE, step_path

pytestmark = pytest.mark.slow  # a model memorised for the module (`make test` keeps to 3 min)

ENGLISH = [en for en, _ in PAIRS]
SPANISH = [es for _, es in PAIRS]


def reverse_model(spm_path: Path):
    """The tiny model memorising PAIRS and SLOTS from Spanish to English."""
    first = placeholder_pool(Tokenizer(spm_path).sp)[:2]
    pairs = tuple((es, en) for en, es in PAIRS) + tuple(
        (es.format(*first), en.format(*first)) for en, es in SLOTS)
    return memorised_model(spm_path, pairs)


def reverse_translator(spm_path: Path, glossary: Glossary | None = None,
                       **decode: object) -> Translator:
    return Translator(reverse_model(spm_path), Tokenizer(spm_path),
                      replace(DecodeConfig(), **decode), "cpu", glossary=glossary)


@pytest.fixture(scope="module")
def translator(slot_spm: Path) -> Translator:
    return reverse_translator(slot_spm)


# Spans as a Spanish text writes them: a decimal comma, `.` between thousands, the
# currency after the amount, a 24-hour time, a percentage with a space.
SPANS = ["1.299,99", "3,5 %", "1.234,56 €", "12:30", "v1.4.2-rc1", "https://ejemplo.es/a?b=c",
         "soporte@ejemplo.es", "{nombre}", "%(cuenta)d", "@transcli", "#árboles", "東京"]


def test_each_span_written_the_spanish_way_comes_back_as_written(translator):
    lines = [f"Visita {span} hoy." for span in SPANS] + [
        f"Escribe a {SPANS[6]} y {SPANS[9]} ahora.", f"{SPANS[0]} está aquí."]
    assert translator.translate(lines) == [f"Visit {span} today." for span in SPANS] + [
        f"Write to {SPANS[6]} and {SPANS[9]} now.", f"{SPANS[0]} is here."]
    assert translator.tally.failed == 0


def test_a_paragraph_is_cut_at_spanish_question_and_exclamation_marks(translator):
    line = f"{SPANISH[1]} {SPANISH[2]}  {SPANISH[0]}"
    assert translator.translate([line]) == [f"{ENGLISH[1]} {ENGLISH[2]}  {ENGLISH[0]}"]


def test_spanish_abbreviations_stay_inside_their_sentence():
    from transcli.inference.sentences import split_sentences

    assert split_sentences("¿Dónde vive la Sra. García? Vive en EE. UU. desde 2020. "
                           "¡Qué bien!") == ["¿Dónde vive la Sra. García?",
                                             "Vive en EE. UU. desde 2020.", "¡Qué bien!"]


def test_capitals_come_back_in_their_case(translator):
    assert translator.translate(["ME GUSTAN LOS ÁRBOLES.", "¿QUIERES UN POCO DE CAFÉ?"]) == \
        ["I LIKE TREES.", "DO YOU WANT SOME COFFEE?"]


def test_a_spanish_glossary_term_is_written_in_english(slot_spm):
    glossary = Glossary([Entry("Tomás", ("Thomas",)), Entry("estación", ("terminal",))])
    translator = reverse_translator(slot_spm, glossary, glossary_method="placeholder")
    assert translator.translate(["Visita Tomás hoy.", "Visita TOMÁS hoy."]) == \
        ["Visit Thomas today.", "Visit THOMAS today."]


@pytest.mark.parametrize("fmt, source, expected", [
    ("html", f"<p>{SPANISH[0]}</p>\n<p><b>{SPANISH[3]}</b></p>\n",
     f"<p>{ENGLISH[0]}</p>\n<p><b>{ENGLISH[3]}</b></p>\n"),
    ("markdown", f"# {SPANISH[4]}\n\n- {SPANISH[5]}\n- `ls -la`\n",
     f"# {ENGLISH[4]}\n\n- {ENGLISH[5]}\n- `ls -la`\n"),
    ("srt", f"1\n00:00:01,000 --> 00:00:02,500\n{SPANISH[6]}\n",
     f"1\n00:00:01,000 --> 00:00:02,500\n{ENGLISH[6]}\n"),
    ("po", f'msgid ""\nmsgstr ""\n"Language: es\\n"\n\nmsgid "{SPANISH[7]}"\nmsgstr ""\n',
     f'msgid ""\nmsgstr ""\n"Language: es\\n"\n\nmsgid "{SPANISH[7]}"\nmsgstr "{ENGLISH[7]}"\n'),
])
def test_documents_in_spanish_keep_their_markup(translator, fmt, source, expected):
    translated = Document(FORMATS[fmt], source, "x").translated(translator.translate)
    assert translated == expected.encode()


@pytest.fixture(scope="module")
def spanish_run(tmp_path_factory: pytest.TempPathFactory, slot_spm: Path) -> Path:
    run = tmp_path_factory.mktemp("spanish") / "run-es-en"
    run.mkdir()
    save_config(load_config(TINY_CONFIG, ["data.src_lang=es", "data.tgt_lang=en",
                                          "decode.strategy=greedy"]), run / CONFIG_FILE)
    (run / TOKENIZER_FILE).write_bytes(slot_spm.read_bytes())
    save_weights(reverse_model(slot_spm), step_path(run, 1))
    return run


def test_the_commands_read_the_direction_from_the_run(spanish_run, tmp_path):
    """translate, evaluate (with a model), explain and score: Spanish in, English out,
    no flag repeated."""
    source, reference = tmp_path / "dev.es", tmp_path / "dev.en"
    source.write_text("".join(line + "\n" for line in SPANISH[:4]), encoding="utf-8")
    reference.write_text("".join(line + "\n" for line in ENGLISH[:4]), encoding="utf-8")
    done = run_cli("translate", "-m", spanish_run, "--checkpoint", "last", "-i", source)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ENGLISH[:4]
    done = run_cli("evaluate", "-m", spanish_run, "--checkpoint", "last", "--src", source,
                   "--ref", reference, "--json")
    assert done.returncode == 0, done.stderr
    assert '"bleu": 100.0' in done.stdout
    done = run_cli("explain", "-m", spanish_run, "--checkpoint", "last", SPANISH[1],
                   "--out", tmp_path / "pictures")
    assert done.returncode == 0, done.stderr
    assert f"Source: {SPANISH[1]}\nTranslation: {ENGLISH[1]}\n" in done.stdout
    # score: the memorised pairs are likely (near 0 per token) read Spanish to English,
    # unlikely the other way round
    per_token = {}
    for name, (src, tgt) in {"es-en": (source, reference), "en-es": (reference, source)}.items():
        done = run_cli("score", "-m", spanish_run, "--checkpoint", "last", "--src", src,
                       "--tgt", tgt)
        assert done.returncode == 0, done.stderr
        per_token[name] = [float(row.split("\t")[2]) for row in done.stdout.splitlines()]
    assert len(per_token["es-en"]) == 4 and min(per_token["es-en"]) > -0.5, per_token
    assert max(per_token["en-es"]) < min(per_token["es-en"]) - 1, per_token


def test_a_run_takes_its_direction_from_the_prepared_dir(tmp_path):
    """A dir prepared as Spanish to English (data.src_lang es; which text the files hold
    does not matter here), trained with a config that says nothing of the languages
    (English to Spanish by default): the run records the prepared dir's direction, which
    every command after `train` reads."""
    from helpers.training import fast_config, prepare_sample, train_dirs

    from transcli.rundir.run import open_run_dir

    prepared = prepare_sample(tmp_path, 0, 60, "data.src_lang=es", "data.tgt_lang=en")
    train_dirs(fast_config("train.max_steps=2"), prepared, tmp_path / "run")
    data = open_run_dir(tmp_path / "run").config.data
    assert (data.src_lang, data.tgt_lang) == ("es", "en")
