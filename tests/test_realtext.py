"""Real text through the translator: protected spans, characters the vocabulary lacks,
ALL-CAPS and Title Case, paragraphs (transcli/inference/realtext.py and the modules it
runs: spans.py, casing.py, sentences.py).

The model tests use a tiny model memorising `PAIRS` and pairs with a number where a
span goes ("Visit 19 today." -> "Visita 19 hoy."), on a sentencepiece model of that text
(no Greek, CJK, emoji or "Ø": an old run's vocabulary, without byte fallback): a span
comes back where the model put its placeholder, so each kind's place is checked
exactly.
"""

from __future__ import annotations

import time
import unicodedata
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, TypeVar

import pytest
from helpers import PAIRS, SLOTS, TINY_CONFIG
from helpers.memorised import memorised_model
from helpers.timing import grows_linearly

from transcli.config.loading import load_config, save_config
from transcli.config.schema import DecodeConfig
from transcli.data.tokenizer import TOKENIZER_FILE, Tokenizer
from transcli.inference.alignment import Alignment, piece_spans
from transcli.inference.casing import TITLE, UPPER, Truecaser, case_of, recased
from transcli.inference.realtext import placeholder_pool
from transcli.inference.search import Hypothesis
from transcli.inference.sentences import sentence_bounds
from transcli.inference.spans import KINDS, NUMBERS, find_spans, mask, restore
from transcli.inference.translator import Translator, load_translator
from transcli.model.transformer import Transformer
from transcli.model.vocab import UNK_ID
from transcli.rundir.checkpoints import save_weights
from transcli.rundir.layout import CONFIG_FILE, step_path
from transcli.rundir.run import open_run_dir

T = TypeVar("T")

# ----------------------------------------------------------------------------- no model


@pytest.mark.parametrize("kind", KINDS, ids=[kind.name for kind in KINDS])
def test_each_kind_is_found_in_its_example_and_restored(kind):
    spans = find_spans(kind.example)
    assert spans and {span.kind for span in spans} == {kind.name}
    masked = mask(kind.example, spans)
    assert all(span.text not in masked.text for span in spans)
    assert restore(masked.text, masked) == kind.example


@pytest.mark.parametrize("text, expected", [
    ("Visit https://example.com/a?b=1. Then go.", ["https://example.com/a?b=1"]),
    ("Mail jane.doe+x@mail.co.uk or @bob, #1 and #trees.",
     ["jane.doe+x@mail.co.uk", "@bob", "#1", "#trees"]),
    ("It costs $1,299.99 or 1.234,56 €, at 12:30 on 12/31/2024, 10% off, 50 % more.",
     ["$1,299.99", "1.234,56 €", "12:30", "12/31/2024", "10%", "50 %"]),
    ("Run `ls -a`, see docs/INFERENCE.md, ~/notes.txt and C:\\Users\\me\\a.txt.",
     ["`ls -a`", "docs/INFERENCE.md", "~/notes.txt", "C:\\Users\\me\\a.txt"]),
    ("Hi {name}, {{user}} has %d of %(count)s {0:.2f} and 50 more.",
     ["{name}", "{{user}}", "%d", "%(count)s", "{0:.2f}", "50"]),
    ("Love 😀, 👍🏽 👨‍👩‍👧 🇪🇸 ❤️ and 東京 or Москва.",
     ["😀", "👍🏽", "👨\u200d👩\u200d👧", "🇪🇸", "❤️", "東京", "Москва"]),
    ("Words and/or km/h, well-known, e.g. the 1990s, the 3rd, U.S. and Ph.D. stay words.", []),
    ("Close it with </>, then a -> b if x <= y; 5 + 3 - 1.", ["</>", "->", "<=", "5", "3",
                                                              "1"]),
    # identifiers, by rule: a digit, a . between letters, a + or # after letters, or a
    # capital after a small letter; a currency sign with its amount; a time
    ("You need Python 3.12; in 3.5 s, Section 2 of Form 1040 is read.", ["Python 3.12", "3.5",
                                                                          "2", "1040"]),
    ("Tom and Mary 1.0.0-beta.2 or iPhone 15-inch.", ["1.0.0-beta.2", "iPhone", "15-inch"]),
    ("Video.js, Node.js 20, C++, C#, COVID-19, iPhone 15 Pro, v1.4.2-rc1, ISO-8859-1, "
     "3x, H2O, mp3, JavaScript, C++17, WPTRunner, USB-C and Wi-Fi, not URLs, DVDs or a "
     "T-shirt.",
     ["Video.js", "Node.js 20", "C++", "C#", "COVID-19", "iPhone 15 Pro", "v1.4.2-rc1",
      "ISO-8859-1", "3x", "H2O", "mp3", "JavaScript", "C++17", "WPTRunner", "USB-C",
      "Wi-Fi"]),
    ("WELL-KNOWN SPANISH-SPEAKING COUNTRIES.", []),
    ("It costs €5, US$5.40, 5 €, 1.234,56 €, £1.2bn, 20 USD, $19.99 USD or $3k at 5 p.m.",
     ["€5", "US$5.40", "5 €", "1.234,56 €", "£1.2bn", "20 USD", "$19.99 USD", "$3k",
      "5 p.m."]),
])
def test_spans_found(text, expected):
    assert [span.text for span in find_spans(text)] == expected


def test_unknown_characters_are_protected_with_their_word():
    known = set("abcdefghijklmnopqrstuvwxyz ")
    spans = find_spans("the Ørsted plant → here", lambda c: c.lower() not in known)
    assert [(span.text, span.kind) for span in spans] == [("Ørsted", "unknown"),
                                                          ("→", "unknown")]


def test_restore_puts_each_span_back_exactly_once():
    text = "Visit www.a.org and www.b.org now"
    masked = mask(text, find_spans(text))
    # reordered, doubled and dropped placeholders: each span once, in the model's order
    assert restore("Ve 702 y 701 701 ya", masked) == "Ve www.b.org y www.a.org ya"
    # a dropped one goes at the same share of the sentence, at a word boundary
    out = restore("Ve y 702 ya", masked)
    assert out.count("www.a.org") == out.count("www.b.org") == 1
    assert restore("Hola.", mask("Hi 😀.", find_spans("Hi 😀."))) == "Hola 😀."
    # a number the model made of a placeholder ("7011") stands for it
    assert restore("Ve 7011 y 702 ya", masked) == "Ve www.a.org y www.b.org ya"


def test_placeholders_inside_words_are_not_ours():
    masked = mask("Road and 5.5", find_spans("Road and 5.5"))
    assert masked.text == "Road and 701"
    assert restore("Carretera A701 y 701", masked) == "Carretera A701 y 5.5"


def test_a_sentence_part_has_its_own_spans():
    text = "See www.a.org. Then www.b.org 😀. End 😀 here."
    masked = mask(text, find_spans(text))
    assert masked.text == "See 701. Then 702. End here."
    assert masked.placeholders == ("701", "702", None, None)
    start = masked.text.index("Then")
    part = masked.part(start, masked.text.index("End") - 1)
    assert part.text == "Then 702." and [span.text for span in part.spans] == ["www.b.org", "😀"]
    assert part.where(1) == (8, 8)  # taken out before the full stop
    assert restore("Luego 702.", part) == "Luego www.b.org 😀."


def test_plain_numbers_stand_for_themselves():
    masked = mask("At 5 o'clock, 5 or 1,5 of 701 people.", find_spans(
        "At 5 o'clock, 5 or 1,5 of 701 people."))
    assert masked.text == "At 5 o'clock, 702 or 703 of 701 people."
    assert restore("A las 5, 702 o 703 de 701 personas.", masked) == \
        "A las 5, 5 o 1,5 de 701 personas."


def test_case_of_and_recased():
    assert case_of("I LIKE TREES.") == UPPER
    assert case_of("Where Is The Station?") == TITLE
    assert [case_of(text) for text in ("I like trees.", "OK.", "Tom", "iPhone Users")] == \
        [None, None, None, None]
    assert recased("¿dónde está?", UPPER) == "¿DÓNDE ESTÁ?"
    assert recased("¿dónde está la estación?", TITLE) == "¿Dónde Está La Estación?"


def test_sentence_bounds_keep_the_spacing_between_sentences():
    text = "One here.  Two there!\tThree?"
    bounds = sentence_bounds(text)
    assert [text[a:b] for a, b in bounds] == ["One here.", "Two there!", "Three?"]
    assert [text[b:a] for (_, b), (a, _) in zip(bounds, bounds[1:])] == ["  ", "\t"]


# ----------------------------------------------------------------------------- a real model


def slot_model(spm_path: Path) -> Transformer:
    """The tiny model memorising PAIRS and SLOTS, with the vocabulary's placeholders."""
    tokenizer = Tokenizer(spm_path)
    first = placeholder_pool(tokenizer.sp)[:2]
    assert UNK_ID not in sum(tokenizer.encode(list(first)), [])
    pairs = tuple(PAIRS) + tuple((en.format(*first), es.format(*first)) for en, es in SLOTS)
    return memorised_model(spm_path, pairs)


def slot_translator(spm_path: Path, **decode: object) -> Translator:
    return Translator(slot_model(spm_path), Tokenizer(spm_path),
                      replace(DecodeConfig(), **decode), "cpu")


@pytest.fixture(scope="module")
def translator(slot_spm: Path) -> Translator:
    return slot_translator(slot_spm)


SPANS = ["https://example.com/docs/install?lang=en", "support@example.org", "1,299.99",
         "`pip install transcli`", "@transcli", "#trees", "/home/user/notes.txt",
         "{name}", "%(count)d", "λόγος", "東京", "Ørsted", "Ø→Ω"]


def test_each_span_kind_comes_back_where_the_model_put_it(translator):
    lines = [f"Visit {span} today." for span in SPANS] + [
        f"Write to {SPANS[1]} and {SPANS[4]} now.", f"{SPANS[9]} is here."]
    expected = [f"Visita {span} hoy." for span in SPANS] + [
        f"Escribe a {SPANS[1]} y {SPANS[4]} ahora.", f"{SPANS[9]} está aquí."]
    assert translator.translate(lines) == expected


def test_without_protection_an_old_vocabulary_loses_the_characters(slot_spm, translator):
    """The old-run path: "Ø", "→", "Ω", Greek, CJK and emoji have no piece (no byte
    fallback); protected, they come through; unprotected, the model never sees them,
    and where it writes a number of its own instead, the check sees the digit added and
    the line is translated again with its spans protected."""
    lines = ["Visit Ø→Ω today.", "Visit 東京 today.", "I like trees 😀."]
    assert translator.translate(lines) == ["Visita Ø→Ω hoy.", "Visita 東京 hoy.",
                                           "Me gustan los árboles 😀."]
    bare = slot_translator(slot_spm, protect=False)
    assert bare.translate(lines) == ["Visita Ø→Ω hoy.", "Visita 東京 hoy.",
                                     "Me gustan los árboles."]
    assert (bare.tally.failed, bare.tally.problems["digits"], bare.tally.repaired) == (2, 2, 2)
    assert translator.tally.failed == 0


def test_an_emoji_is_taken_out_and_put_back_by_the_attention(translator):
    """The model reads "I like trees." and "Where is the station?", which it knows; the
    attention says where the emoji were."""
    assert translator.translate(["I like 😀 trees 🌳.", "😀 Where is the station? 🎉"]) == [
        "Me gustan 😀 los árboles 🌳.", "😀 ¿Dónde está la estación? 🎉"]


def test_a_line_with_nothing_to_translate_is_copied(translator):
    assert translator.translate(["https://example.com", "  😀 ", "12:30", ""]) == [
        "https://example.com", "😀", "12:30", ""]


def test_all_caps_and_title_case_come_back_in_their_case(translator):
    lines = ["I LIKE TREES.", "MY SISTER HAS TWO CATS.", "Do You Want Some Coffee?",
             "VISIT HTTPS://EXAMPLE.COM TODAY."]
    assert translator.translate(lines) == [
        "ME GUSTAN LOS ÁRBOLES.", "MI HERMANA TIENE DOS GATOS.", "¿Quieres Un Poco De Café?",
        "VISITA HTTPS://EXAMPLE.COM HOY."]


def test_truecaser_picks_the_vocabulary_likeliest_casing(sample_spm):
    """On a vocabulary of real text (data/sample's)."""
    truecase = Truecaser(Tokenizer(sample_spm).sp)
    assert truecase("MY SISTER HAS TWO CATS.", UPPER) == "My sister has two cats."
    assert truecase("Where Is The Train Station?", TITLE) == "Where is the train station?"
    assert truecase("WE SPEAK SPANISH ON SUNDAYS.", UPPER) == "We speak Spanish on Sundays."
    assert truecase("We Met TOM In The EU", TITLE) == "We met TOM in the EU"  # acronyms kept


def test_paragraphs_are_split_and_keep_their_spacing(slot_spm):
    line = f"{PAIRS[0][0]}  {PAIRS[1][0]}\t{PAIRS[2][0]}"
    joined = f"{PAIRS[0][1]}  {PAIRS[1][1]}\t{PAIRS[2][1]}"
    assert slot_translator(slot_spm).translate([line]) == [joined]
    whole = slot_translator(slot_spm, split=False).translate([line])
    assert whole != [joined]  # the model alone, on three sentences at once
    assert slot_translator(slot_spm, split=False, split_sentences=True).translate([line]) == \
        [joined]


@pytest.fixture
def slot_run(slot_spm: Path, tmp_path: Path) -> Path:
    """A run dir of the slot model (greedy search)."""
    run = tmp_path / "run"
    run.mkdir()
    save_config(load_config(TINY_CONFIG, ["decode.strategy=greedy"]), run / CONFIG_FILE)
    (run / TOKENIZER_FILE).write_bytes(slot_spm.read_bytes())
    save_weights(slot_model(slot_spm), step_path(run, 1))
    return run


@pytest.mark.slow
def test_ct2_gives_the_torch_engine_spans(slot_run):
    """Through CTranslate2 the same lines come back the same (greedy search is exact),
    and spans it places by its own attention come back once each."""
    lines = [f"Visit {span} today." for span in SPANS] + ["I LIKE TREES.", "I like 😀 trees 🌳."]
    torch_out = load_translator(open_run_dir(slot_run), "last", "cpu").translate(lines)
    ct2_out = load_translator(open_run_dir(slot_run, ["decode.engine=ct2"]), "last",
                              "cpu").translate(lines)
    assert ct2_out[:-1] == torch_out[:-1]
    assert ct2_out[-1].count("😀") == ct2_out[-1].count("🌳") == 1
    assert ct2_out[-1].replace("😀 ", "").replace(" 🌳", "") == "Me gustan los árboles."


def test_served_requests_keep_their_spans(slot_run):
    """`serve`'s worker merges requests into one model call: each line's spans and case
    come back as `translate` gives them."""
    pytest.importorskip("fastapi", reason="needs the serve extra")
    from test_serve import batched  # the serve tests' own way of sending requests at once

    requests = [["I like trees 😀.", "I LIKE TREES."], [f"Visit {SPANS[0]} today."]]
    answers, alone, batcher = batched(slot_run, [], requests)
    assert batcher.model_calls == 1 and answers == alone
    assert answers == [["Me gustan los árboles 😀.", "ME GUSTAN LOS ÁRBOLES."],
                       [f"Visita {SPANS[0]} hoy."]]


def test_an_unknown_piece_the_model_emits_is_never_shown(translator, slot_spm):
    ids = Tokenizer(slot_spm).encode(["Me gustan"])[0]
    found = [[Hypothesis(ids[:1] + [UNK_ID] + ids[1:], 0.0, 0.0, True)]]
    assert translator.texts(found) == [[("Me gustan", 0.0)]]
    bare = slot_translator(slot_spm, protect=False)
    assert "⁇" in bare.texts(found)[0][0][0]


def test_piece_spans_find_each_piece_in_the_text():
    assert piece_spans(["▁Me", "▁gusta", "n", "▁19", "."], "Me gustan 19.") == [
        (0, 2), (3, 8), (8, 9), (10, 12), (12, 13)]
    assert piece_spans(["▁a", "<unk>", "▁b"], "a ⁇ b")[1] == (1, 1)  # not there as written


def test_alignment_places_between_what_came_from_either_side():
    # source "I like 19 trees ." -> target "Me gustan los árboles ." (19 dropped)
    source = [(0, 1), (2, 6), (7, 9), (10, 15), (15, 16)]
    target = [(0, 2), (3, 9), (10, 13), (14, 21), (21, 22)]
    alignment = Alignment(source, target, links=[0, 1, 3, 3, 4])
    text = "Me gustan los árboles."
    assert alignment.place(7, 9, text, near=0) == text.index("los")
    # no link says anything (all to the placeholder): the nearest boundary to `near` wins
    assert Alignment(source, target, [2] * 5).place(7, 9, text, near=14) == 14


def cpu_seconds(work: Callable[[], T]) -> tuple[float, T]:
    """The CPU time `work()` takes in this process, the least of three runs (other
    processes on the machine do not change it, as they change the time on the clock),
    and what it returns."""
    times = []
    for _ in range(3):
        started = time.process_time()
        result = work()
        times.append(time.process_time() - started)
    return min(times), result


def linear(work: Callable[[int], Callable[[], T]], size: int) -> T:
    """What `work(size)()` returns, once it is seen to cost less than 25 times what
    `work(size // 10)()` costs: linear time (10 times; up to 14 measured), not quadratic
    (100 times)."""
    tenth, _ = cpu_seconds(work(size // 10))
    whole, result = cpu_seconds(work(size))
    assert whole < 25 * tenth, f"{size} items: {whole:.3f} s; {size // 10}: {tenth:.4f} s"
    return result


def restoring(emoji: int) -> Callable[[], Any]:
    line = " ".join("tree 😀" for _ in range(emoji))
    masked = mask(line, find_spans(line))
    return lambda: (restore(masked.text, masked), restore("árbol " * 50, masked))


def test_a_line_of_thousands_of_emoji_is_restored_in_linear_time():
    """20,000 emoji taken out of one line (a 140,000-character line, well within what
    translate reads): each was placed and inserted by copying the whole line, about
    four minutes; every one comes back, in place, in a fraction of a second."""
    restored, other = linear(restoring, 20000)
    assert restored == " ".join("tree 😀" for _ in range(20000))
    assert other.count("😀") == 20000


def cutting(sentences: int) -> Callable[[], Any]:
    line = " ".join("Go 😀." for _ in range(sentences))
    masked = mask(line, find_spans(line))
    return lambda: [masked.part(start, end) for start, end in sentence_bounds(masked.text)]


def test_a_line_of_thousands_of_sentences_with_spans_is_cut_in_linear_time():
    """Each sentence's spans were found by looking at all the line's: 8,000 sentences
    with an emoji each took 5 s, 30,000 over a minute. Then each sentence's end was
    checked on a copy of the rest of the line: 100,000 (a 700 KB line) took 2.3 s, 45
    times what 10,000 took."""
    parts = linear(cutting, 100000)
    assert len(parts) == 100000 and all(len(part.spans) == 1 for part in parts)


def test_a_number_left_unmasked_when_the_placeholders_run_out_keeps_its_digits():
    """Past the pool's 299 placeholders the spans are left as they are: "701.5" was then
    read as placeholder 701 at restore, and came back as ".5"."""
    line = " ".join(f"u{i}@x.org" for i in range(300)) + " costs 701.5 and 702"
    masked = mask(line, find_spans(line))
    assert restore(masked.text, masked) == line


def masking(emoji: int) -> Callable[[], Any]:
    line = " ".join("tree 😀" for _ in range(emoji))
    spans = find_spans(line)
    return lambda: mask(line, spans)


def test_a_line_of_hundreds_of_thousands_of_emoji_is_masked_in_linear_time():
    """Taking each emoji out copied the rest of the line: 300,000 (a 2 MB line, within
    the 4 MiB translate reads) took a minute and a half to mask, a third of a second now."""
    masked = linear(masking, 300000)
    assert masked.text == " ".join("tree" for _ in range(300000))


def test_the_placeholders_never_run_out():
    """Past the pool (353 placeholders for the CPU hour's model) the later spans of a line
    were sent as they are, and came back mangled ("hipótesis://386"): now every span is
    masked, by the numbers after the pool's, none of them a number of the line."""
    line = " ".join(f"Go to http://e{i}.io/x now, 10{i:02d} times." for i in range(393))
    masked = mask(line, find_spans(line), pool=NUMBERS[:50])
    assert len(masked.spans) == 393 * 2 and "http" not in masked.text
    urls = [p for span, p in zip(masked.spans, masked.placeholders) if span.kind == "url"]
    assert len(set(urls)) == 393 and not set(urls) & {f"10{i:02d}" for i in range(393)}
    assert restore(masked.text, masked) == line


def test_a_glossary_form_that_is_a_number_is_no_placeholder():
    """A form equal to a placeholder ("soon" -> "19") was the model's copy of a URL's
    placeholder, and went back as the URL."""
    text = "Visit https://example.com/a soon."
    masked = mask(text, find_spans(text), pool=("19", "20"), avoid=["19"])
    assert masked.text == "Visit 20 soon."


def test_a_tab_a_soft_hyphen_and_a_zero_width_space_inside_text(translator):
    """The model never saw them: "I like\\ttrees." came back as flies of fashion, and a
    soft hyphen lost half its word. A tab reads as a space, the invisible ones go, and
    NFD text reads as NFC; a tab between sentences is kept."""
    lines = ["I like\ttrees.", "I like tr\u00adees.", "I like tr\u200bees.", "I like\x00 trees.",
             "I like trees.\tWhere is the station?", "Visit 東京 today.",
             unicodedata.normalize("NFD", "Visit naïve today.")]
    assert translator.translate(lines) == [
        PAIRS[0][1], PAIRS[0][1], PAIRS[0][1], PAIRS[0][1], f"{PAIRS[0][1]}\t{PAIRS[1][1]}",
        "Visita 東京 hoy.", "Visita na\u00efve hoy."]
    assert translator.tally.failed == 0


def hostile_line(size: int) -> str:
    """A line of `size` characters made of runs that made reading it quadratic: dots,
    dashes, "a.a.a.", "1.1.1.", "a. a. a.", "a-a-a-", "@", "C+C+", "€1 " and words."""
    runs = [".", "-", "a.", "1.", "a. ", "a-", "@", "C+", "€1 ", "x1-", "A. ", "the cat sat. "]
    each = size // len(runs)
    return "".join((run * (each // len(run) + 1))[:each] for run in runs)


def test_spans_and_sentences_of_a_hostile_line_take_linear_time():
    """A 100,000-character line of `a.a.a.` held the model worker about a minute
    (10K characters 1.2 s, 40K 11.7 s); now a megabyte takes about ten times what a
    tenth of it takes (the bound: 40 times, and 3 s, for a busy machine)."""
    def work(text: str) -> None:
        masked = mask(text, find_spans(text))
        for start, end in sentence_bounds(masked.text):
            masked.part(start, end)

    small, big = grows_linearly(work, hostile_line, 1_000_000)
    assert big is not None, f"a megabyte took over 40 times {small:.2f} s"


def test_a_span_ending_in_a_full_stop_takes_the_sentence_s():
    """"The meeting is at 5 p.m." is read "The meeting is at 701": the model's full stop
    after the placeholder was a second one ("a las 5 p.m..")."""
    text = "The meeting is at 5 p.m."
    masked = mask(text, find_spans(text))
    assert masked.text == "The meeting is at 701"
    assert restore("La reunión es a las 701.", masked) == "La reunión es a las 5 p.m."
    assert restore("La reunión es a las 701", masked) == "La reunión es a las 5 p.m."
