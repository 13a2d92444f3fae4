"""Markup that real files hold and the model's output cannot keep by itself: tags that
hold no words (a link around an image, an empty `<i></i>`), rows of badges, code spans
side by side, table cells after a cell of code, elements a page leaves open. The model is
a stand-in here (any function of lines: what it writes is what the layer must survive);
the real model's side is in test_documents_real.py."""

from __future__ import annotations

import random
import re

import pytest

from transcli.documents.formats import FORMATS
from transcli.documents.translating import translate_text


def reversed_words(lines: list[str], first: int) -> list[str]:
    """A translation that moves every word: tags placed by position land elsewhere."""
    return ["ES " + " ".join(reversed(line.split())) for line in lines]


def one_sentence(lines: list[str], first: int) -> list[str]:
    """The same translation whatever the line: a model that ignores its input."""
    return ["Me gustan los árboles verdes." for _ in lines]


def nothing(lines: list[str], first: int) -> list[str]:
    return ["" for _ in lines]


MODELS = [reversed_words, one_sentence, nothing]


def tags_of(text: str) -> list[str]:
    return re.findall(r"<[^<>]+>", text)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("page", [
    '<p>I like <a href="/x"><img src="logo.png"></a> green trees.</p>',
    '<p><a href="https://ci/x"><img src="https://ci/x.svg" alt="Build Status"></a> '
    '<img src="https://l.svg" alt="license"> <a href="https://v/"><img src="https://v.svg" '
    'alt="Version info"></a><br> A <i>cat(1)</i> clone with wings.</p>',
    "<p>I <b><i></i></b>like <span><br></span> trees.</p>"])
def test_html_tags_that_hold_no_words_come_back_whole(page, model):
    out = translate_text(page, FORMATS["html"], model)
    assert [re.sub(r'alt="[^"]*"', "", tag) for tag in tags_of(out)] == [
        re.sub(r'alt="[^"]*"', "", tag) for tag in tags_of(page)]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("fmt, text, kept", [
    ("srt", "1\n00:00:01,000 --> 00:00:02,000\n<i></i>I like trees.\n\n", ["<i></i>"]),
    ("po", 'msgid "<b><br/></b> I like trees."\nmsgstr ""\n', ["<b><br/></b>"]),
    ("markdown", "I **`x`** like trees.\n", ["**`x`**"]),
    ("markdown", "See [`fzf`](https://github.com/junegunn/fzf) for more.\n",
     ["[`fzf`](https://github.com/junegunn/fzf)"]),
])
def test_markup_that_holds_no_words_keeps_its_contents_and_its_end(fmt, text, kept, model):
    out = translate_text(text, FORMATS[fmt], model)
    for markup in kept:
        assert markup in out


BADGES = ("[![Version](https://img.shields.io/v.svg)](https://example.org/project/x/) "
          "[![Build](https://ci.example.org/b.svg)](https://ci.example.org/) "
          "[![License: MIT](https://img.shields.io/l.svg)](LICENSE)\n")


@pytest.mark.parametrize("model", MODELS)
def test_a_row_of_badges_keeps_every_link_and_image(model):
    out = translate_text(BADGES, FORMATS["markdown"], model)
    targets = re.findall(r"\]\(([^)]*)\)", BADGES)
    assert re.findall(r"\]\(([^)]*)\)", out) == targets
    assert out.count("[![") == 3


def test_a_run_with_no_words_is_not_sent_to_the_model():
    seen: list[str] = []

    def model(lines: list[str], first: int) -> list[str]:
        seen.extend(lines)
        return lines

    translate_text('<p><a href="/x"><img src="x.png"></a> <code>ls</code></p>\n',
                   FORMATS["html"], model)
    translate_text("[`fzf`](https://github.com/junegunn/fzf) [![CI](https://b.svg)](https://c/)"
                   "\n\n| `full` | `x` |\n|--|--|\n| `E1` | — |\n", FORMATS["markdown"], model)
    assert seen == ["CI"]  # the badge's alt text alone, from the Markdown


@pytest.mark.parametrize("text", [
    "Keep colours (`bat` `--color=always`).\n", "`bat` `--color=always` keeps colours.\n",
    "| a | Keep colours with `bat` `--color=always` |\n|--|--|\n| b | c |\n"])
def test_code_spans_side_by_side_stay_apart(text):
    rng = random.Random(0)

    def model(lines: list[str], first: int) -> list[str]:
        out = []
        for line in lines:
            words = line.split()
            rng.shuffle(words)
            out.append(" ".join(words[:rng.randint(0, len(words))]))
        return out

    for _ in range(200):
        out = translate_text(text, FORMATS["markdown"], model)
        assert "``" not in out and "`bat` `--color=always`" in out


def test_every_table_cell_after_a_cell_without_words_is_translated():
    table = ("| Feature | Description | Price |\n|---|---|---|\n"
             "| `full` | Enables all available components. | — |\n"
             "| `E1` | — | Costs more in the city. |\n"
             "| $5 | Some words here. | More words there. |\n")
    out = translate_text(table, FORMATS["markdown"], lambda lines, first: [
        line.upper() for line in lines])
    for cell in ("ENABLES ALL AVAILABLE COMPONENTS.", "COSTS MORE IN THE CITY.",
                 "SOME WORDS HERE.", "MORE WORDS THERE."):
        assert cell in out
    assert "`full`" in out and "`E1`" in out and "| $5 |" in out


@pytest.mark.parametrize("page, translated, kept", [
    ("<div><pre>ls -la</div><p>I like trees.</p>", "I LIKE TREES.", "<pre>ls -la</div>"),
    ("<p><code>make install</p><p>I like trees.</p>", "I LIKE TREES.",
     "<code>make install</p>"),
    ("<li><kbd>Ctrl</li><li>I like trees.</li>", "I LIKE TREES.", "<kbd>Ctrl</li>"),
    ("<div><svg><text>A</text></div><p>I like trees.</p>", "I LIKE TREES.",
     "<svg><text>A</text></div>"),
    ('<svg><circle r="1"/><p>I like trees.</p>', "I LIKE TREES.", '<circle r="1"/>'),
    ("<pre>ls <span>x</span> <p>not</p></pre><p>I like trees.</p>", "I LIKE TREES.",
     "<pre>ls <span>x</span> <p>not</p></pre>"),
    ("<svg><foreignObject><p>x</p></foreignObject></svg><p>I like trees.</p>",
     "I LIKE TREES.", "<foreignObject><p>x</p></foreignObject></svg>"),
])
def test_an_element_kept_as_it_is_ends_where_browsers_end_it(page, translated, kept):
    out = translate_text(page, FORMATS["html"], lambda lines, first: [
        line.upper() for line in lines])
    assert translated in out and kept in out


@pytest.mark.parametrize("page", [
    "<p>I like <!-- a --!> trees.</p>", "<p>I like <!--> trees.</p>",
    "<p>I like <!---> trees.</p>", "<p>I like </> trees.</p>"])
def test_comments_and_empty_end_tags_are_read_as_browsers_read_them(page):
    out = translate_text(page, FORMATS["html"], lambda lines, first: [
        line.upper() for line in lines])
    markup = re.search(r"<!--(?:.*?--!?>|>|->)|</>", page).group()
    assert out == page.replace("I like", "I LIKE").replace("trees.", "TREES.") or (
        markup in out and "TREES." in out and "LIKE" in out)
    assert out.count(markup) == 1


def test_a_comment_is_not_ended_by_dashes_and_a_space():
    """`-- >` does not end a comment for a browser: the text after it is the comment's."""
    out = translate_text("<p>A <!-- x -- > I like trees --> b</p>", FORMATS["html"],
                         lambda lines, first: [line.upper() for line in lines])
    assert "<!-- x -- > I like trees -->" in out
