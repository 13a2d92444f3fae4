"""Where the model looks while it translates: encoder-decoder attention as pictures and
as an alignment (`translate --attention DIR`, `transcli explain`).

Each line is translated as `translate` translates it (its one path, the run's search
and settings); then the decoder runs teacher-forced over that translation with every layer's
cross-attention keeping its weights (`model.CrossAttention.keep_weights`, off
everywhere else, so training and plain translation do not pay for it). That gives,
per decoder layer and head, how much each target piece (row) attended to each source
piece (column) when it was predicted; rows sum to 1.

Written per input line N (counted from 1) into DIR:
    line-0000N.png          heads and layers averaged, the alignment marked
    line-0000N-layers.png   one panel per decoder layer (heads averaged)
    line-0000N.txt          the pieces with their indices, and the aligned pairs
    alignments.txt          one line per input line: the Pharaoh `i-j` pairs
    transcli-attention.json the files written and their content hashes, so that a
                            later run with --force replaces them and nothing else
"""

from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Optional

from torch import Tensor

from transcli.config.schema import DecodeConfig
from transcli.inference.alignment import cross_attention
from transcli.inference.engines import TorchEngine
from transcli.inference.positions import source_ids
from transcli.inference.search import Hypothesis
from transcli.model.transformer import Transformer
from transcli.model.vocab import EOS_ID
from transcli.system.errors import UserError
from transcli.system.outputs import FolderContents, OutputFolder, output_file

ALIGNMENTS_FILE = "alignments.txt"
RECORD_FILE = "transcli-attention.json"  # the files transcli wrote into the folder
TITLE_CHARS = 90  # longer texts are cut in picture titles
FIGURE_WIDTH = 24.0  # inches the per-layer panels of one row may take together


@dataclass
class Attention:
    """The cross-attention of one translation."""

    source: list[str]  # source pieces, then "</s>"
    target: list[str]  # target pieces, then "</s>" when the translation ended
    layers: Tensor  # [layers, len(target), len(source)], heads averaged; rows sum to 1
    aligning: Optional[Tensor] = None  # the head trained to align, where the run has one

    @property
    def mean(self) -> Tensor:
        """Layers and heads averaged: [len(target), len(source)], rows sum to 1."""
        return self.layers.mean(dim=0)

    def alignment(self) -> list[tuple[int, int]]:
        """Pharaoh pairs (source piece i, target piece j), indices from 0, one per target
        piece: the source piece it attended to most (the aligning head's row argmax,
        else `mean`'s). The
        end-of-sentence token is left out on both sides: models park attention on the
        source `</s>`, which stands for no text."""
        text_rows = [j for j, piece in enumerate(self.target) if piece != "</s>"]
        columns = len(self.source) - 1  # the source always ends with </s>
        if not columns:
            return []
        weights = self.aligning if self.aligning is not None else self.mean
        best = weights[:, :columns].argmax(dim=1).tolist()
        return [(best[j], j) for j in text_rows]


def pharaoh(pairs: list[tuple[int, int]]) -> str:
    return " ".join(f"{i}-{j}" for i, j in pairs)


def explain(model: Transformer, piece: Any, source: list[int], hypothesis: Hypothesis,
            head: Optional[tuple[int, int]] = None) -> Attention:
    """The `Attention` of one translation; `piece` maps an id to its piece; `head`: the
    (layer, head) trained to align, if any."""
    target = hypothesis.tokens + ([EOS_ID] if hypothesis.eos else [])  # never empty
    weights = cross_attention(model, source, target)
    return Attention([piece(i) for i in source], [piece(i) for i in target],
                     weights.mean(dim=1), weights[head] if head else None)


# ----------------------------------------------------------------------------- pictures


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot


@functools.lru_cache(maxsize=1)
def _font_glyphs() -> frozenset[int]:
    """The code points the pictures' font has glyphs for: the font matplotlib picks first
    for its default family (DejaVu Sans unless a matplotlibrc says otherwise)."""
    from matplotlib import font_manager, ft2font

    path = font_manager.findfont(font_manager.FontProperties())
    return frozenset(ft2font.FT2Font(path).get_charmap())


def drawable(text: str) -> str:
    """`text` as a picture can show it. A character the font has no glyph for (an emoji, a
    CJK character) or that draws nothing (a control character, a tab, an unusual space)
    is written as its escape, as Python's `ascii()` writes it (`\\U0001f333`, `\\x07`):
    the picture then shows which character is there rather than an empty box, matplotlib
    has nothing to warn about, and the .txt file beside the picture keeps the text as it
    is. Every text is drawn literally (`parse_math=False`): a `$` is a dollar sign."""
    glyphs = _font_glyphs()
    return "".join(char if char.isprintable() and ord(char) in glyphs else ascii(char)[1:-1]
                   for char in text)


def _panel_size(attention: Attention) -> tuple[float, float]:
    """Inches for one heatmap: about a third of an inch per piece, within limits."""
    width = min(24.0, max(4.0, 0.36 * len(attention.source) + 1.6))
    height = min(24.0, max(3.0, 0.32 * len(attention.target) + 1.6))
    return width, height


def _heatmap(ax: Any, matrix: Tensor, attention: Attention, labels: bool = True) -> Any:
    """Rows: translation pieces; columns: source pieces; one colour scale, 0 to 1, for
    every panel so that they compare."""
    image = ax.imshow(matrix.numpy(), cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto",
                      interpolation="nearest")
    ax.set_xticks(range(len(attention.source)), list(map(drawable, attention.source)),
                  rotation=60, ha="right", rotation_mode="anchor", fontsize=9,
                  parse_math=False)
    ax.set_yticks(range(len(attention.target)), list(map(drawable, attention.target)),
                  fontsize=9, parse_math=False)
    if labels:
        ax.set_xlabel("source pieces")
        ax.set_ylabel("translation pieces")
    return image


def _title(english: str, spanish: str) -> str:
    def cut(text: str) -> str:
        text = drawable(text)
        return text if len(text) <= TITLE_CHARS else text[:TITLE_CHARS - 1] + "…"

    return f"{cut(english)}\n→ {cut(spanish)}"


def plot_mean(attention: Attention, title: str, path: Path | BinaryIO) -> None:
    """One heatmap of the attention averaged over layers and heads, the alignment's
    pairs circled in red."""
    plt = _pyplot()
    width, height = _panel_size(attention)
    fig, ax = plt.subplots(figsize=(width + 1.2, height + 0.8), layout="constrained")
    image = _heatmap(ax, attention.mean, attention)
    pairs = attention.alignment()
    ax.scatter([i for i, _ in pairs], [j for _, j in pairs], s=60, facecolors="none",
               edgecolors="red", linewidths=1.2, label="alignment")
    fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02, label="attention weight")
    ax.set_title(title + "\n(all decoder layers and heads averaged)", fontsize=10,
                 parse_math=False)
    _save(fig, path)


def plot_layers(attention: Attention, title: str, path: Path | BinaryIO) -> None:
    """One heatmap per decoder layer (heads averaged), up to three per row."""
    plt = _pyplot()
    count = attention.layers.size(0)
    width, height = _panel_size(attention)
    columns = max(1, min(count, 3, int(FIGURE_WIDTH // width)))  # long sentences: fewer
    rows = math.ceil(count / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(columns * width + 1.0, rows * height + 0.8),
                             squeeze=False, layout="constrained")
    image = None
    for index, ax in enumerate(axes.flat):
        if index >= count:
            ax.axis("off")
            continue
        image = _heatmap(ax, attention.layers[index], attention, labels=index % columns == 0)
        ax.set_title(f"decoder layer {index + 1} (heads averaged)", fontsize=10)
    fig.suptitle(title, fontsize=10, parse_math=False)
    fig.colorbar(image, ax=axes.ravel().tolist(), fraction=0.02, pad=0.01,
                 label="attention weight")
    _save(fig, path)


def _save(fig: Any, path: Path | BinaryIO) -> None:
    """Write the picture to `path` (an `output_file`: its OS errors are said there,
    naming the picture's own name)."""
    try:
        fig.savefig(path, format="png", dpi=100)
    finally:
        _pyplot().close(fig)


def describe(attention: Attention, english: str, spanish: str) -> str:
    """The text beside the pictures: pieces with their indices, then the aligned pairs."""
    pairs = attention.alignment()
    lines = [f"Source: {english}", f"Translation: {spanish}",
             "source pieces: " + " ".join(f"{i}:{p}" for i, p in enumerate(attention.source)),
             "target pieces: " + " ".join(f"{j}:{p}" for j, p in enumerate(attention.target)),
             f"alignment (source-target): {pharaoh(pairs)}"]
    lines += [f"  {attention.source[i]} -> {attention.target[j]}" for i, j in pairs]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- writing


def check_decode(decode: DecodeConfig, command: str = "--attention") -> None:
    """Refuse the settings attention cannot be shown for (before any model is loaded);
    `command` names what asked for the pictures."""
    if decode.engine != "torch":
        raise UserError(f"{command} needs the torch engine (decode.engine=torch): "
                        f"CTranslate2 does not expose the attention weights")
    if decode.split_sentences:
        raise UserError(f"{command} and --split-sentences do not go together: each "
                        f"picture shows one translation of one input line")


def check_folder(folder: Path, force: bool, option: str) -> FolderContents:
    """Refuse, before any work, a folder the attention files may not go into (`option`
    names it): a file, or a non-empty folder without `force`. Returns what it holds."""
    contents = OutputFolder(folder, RECORD_FILE).contents(option)
    if contents.names and not force:
        raise UserError(f"{folder}: not empty; pass --force to replace the attention files "
                        f"transcli wrote there (other files are kept), or give another {option}")
    return contents


class AttentionWriter:
    """Translates lines by `Translator.translate_nbest` and writes each line's pictures,
    description and alignment into `folder` (see the module doc)."""

    def __init__(self, folder: Path, translator: Any, force: bool = False,
                 option: str = "--attention"):
        """`force`: write into a non-empty `folder`, replacing the files an earlier run
        wrote there (`RECORD_FILE` lists them) and never another file."""
        check_decode(translator.decode, "explain" if option == "--out" else option)
        assert isinstance(translator.engine, TorchEngine)
        self.folder = Path(folder)
        self.output = OutputFolder(self.folder, RECORD_FILE)
        self.option, self.force = option, force
        self.translator = translator
        self.written: list[Optional[Path]] = []  # the last call's description files
        self._stack = contextlib.ExitStack()
        self._alignments: Any = None

    def __enter__(self) -> AttentionWriter:
        self.output.clear(check_folder(self.folder, self.force, self.option))
        self._alignments = self._stack.enter_context(self._file(ALIGNMENTS_FILE, "alignments",
                                                                streamed=True))
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stack.__exit__(*exc)

    def _file(self, name: str, what: str, streamed: bool = False
              ) -> contextlib.AbstractContextManager[BinaryIO]:
        return output_file(self.folder / name, what, record=self.output.record,
                           streamed=streamed)

    def translate(self, lines: list[str], first: int) -> list[list[tuple[str, float]]]:
        """Translations of `lines` (input lines first, first + 1, ...) by
        `Translator.translate_nbest`, `translate`'s own path; the best one of each line is
        explained: forced through the decoder after the line whole as the model reads it
        (spans masked, case normalised). A line with nothing to translate (a URL, a
        number, an emoji alone) is copied, as `translate` copies it: no pictures, as for
        a blank line."""
        translator = self.translator
        results = translator.translate_nbest(lines, first)
        plans = [translator.preparer.plan(line, split=False) for line in lines]
        read = [plan.units[0].text if plan.units and not plan.units[0].copied else ""
                for plan in plans]
        positions = translator.engine.max_positions
        sources, _ = source_ids(translator.tokenizer, read, positions)
        targets, _ = source_ids(translator.tokenizer, [hyps[0][0] for hyps in results],
                                positions)
        found = [[Hypothesis(target[:-1], 0.0, 0.0, True)] if source and target[:-1] else []
                 for source, target in zip(sources, targets)]
        model = translator.engine.model
        self.written = []
        for index, (line, source, hyps, texts) in enumerate(zip(lines, sources, found, results)):
            if not hyps:
                self._alignments.write(b"\n")
                self.written.append(None)
                continue
            attention = explain(model, translator.tokenizer.sp.IdToPiece, source, hyps[0],
                                translator.engine.head)
            stem = f"line-{first + index + 1:05d}"
            title = _title(line.strip(), texts[0][0])
            with self._file(f"{stem}.png", "picture") as out:
                plot_mean(attention, title, out)
            with self._file(f"{stem}-layers.png", "picture") as out:
                plot_layers(attention, title, out)
            with self._file(f"{stem}.txt", "description") as out:
                out.write(describe(attention, line.strip(), texts[0][0]).encode())
            self._alignments.write((pharaoh(attention.alignment()) + "\n").encode())
            self.written.append(self.folder / f"{stem}.txt")
        self._alignments.flush()
        return results
