"""Translating lines with a trained model.

`Translator` holds a model in memory and turns a list of lines into translations:
lines are encoded, sorted by length into token-budget batches, searched by an
engine (`engines.py`: the strategy `decode.strategy` names on the torch model, or
CTranslate2) and put back in input order; empty lines stay empty. `translate`,
`evaluate`, `explain` and `serve` build one from an opened run dir (`load_translator`),
the training loop from the model it trains.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Callable, Optional, Sequence

import torch

from transcli.config.schema import DecodeConfig, guided_head
from transcli.data.terms import trained_with_annotation
from transcli.data.tokenizer import Tokenizer
from transcli.inference import device_defaults
from transcli.inference.alignment import Alignment, Translated, alignments, placements
from transcli.inference.checks import Tally
from transcli.inference.confidence import SURE, Calibration, Line, confidence, joined
from transcli.inference.constrained import NO_TERMS, TermEncoder, Terms
from transcli.inference.cpu_matmul import cpu_linears, use_onednn
from transcli.inference.engines import Ct2Engine, Engine, TorchEngine
from transcli.inference.glossary import Glossary, read_glossary
from transcli.inference.positions import source_ids
from transcli.inference.quantize import quantize_int8
from transcli.inference.realtext import Plan, Preparer, Unit
from transcli.inference.repair import review
from transcli.inference.repeats import collapsed, degenerate, retry_loops
from transcli.inference.search import Hypothesis
from transcli.inference.spans import relative_place
from transcli.model.transformer import Transformer
from transcli.model.vocab import UNK_ID
from transcli.rundir.run import RunDir
from transcli.system.devices import pick_device
from transcli.system.runtime import inference_setup

Loops = Callable[[int, str], bool]  # whether line i's translation (text) loops

class Translator:
    """An engine (transcli's model, or CTranslate2), its tokenizer and search settings:
    lines in, lines out.

    Nothing here touches the disk, so the training loop can call it for
    validation BLEU as often as it likes.
    """

    def __init__(self, model: Transformer | Engine, tokenizer: Tokenizer, decode: DecodeConfig,
                 device: str | torch.device | None = None, *,
                 glossary: Optional[Glossary] = None, annotated: bool = False,
                 calibration: Optional[Calibration] = None,
                 head: Optional[tuple[int, int]] = None):
        """`model`: a Transformer (searched by `TorchEngine` on `device`) or any other
        `Engine` (with `decode.batch_tokens` set: `load_translator` chooses it for
        CTranslate2's device). `glossary`: terms written in Spanish (`realtext.Preparer`;
        `load_translator` reads `decode.glossary`), by annotation where the model was
        `annotated` (`train.term_annotation`). `calibration`: what gives each
        translation its confidence (`load_translator` reads the run's). `head`: the
        cross-attention head the run trained to align (`train.guided_alignment`), which
        places tags and spans on the torch engine."""
        if isinstance(model, torch.nn.Module):
            self.engine: Engine = TorchEngine(model, device, head)
            decode = device_defaults.fitted(decode, model.cfg, model.vocab_size, self.engine.device)
        else:
            self.engine = model
        self.tokenizer = tokenizer
        self.decode = decode
        self.preparer = Preparer(decode, tokenizer.sp, glossary, annotated)
        self.target_tokens = 0  # tokens of the best hypotheses so far, EOS excluded
        self.retried = 0  # sentences searched again because their translation looped
        # inputs cut to fit, translations that failed their check (`repair.review`)
        self.tally = Tally(positions=self.engine.max_positions)
        self.term_encoder = TermEncoder(tokenizer.sp)
        self.calibration = calibration

    def translate(self, lines: list[str], first: int = 0) -> list[str]:
        """The best translation of each line, in input order."""
        return [line.best for line in self.translate_lines(lines, first)]

    def translate_nbest(self, lines: list[str], first: int = 0,
                        indices: Sequence[int] | None = None) -> list[list[tuple[str, float]]]:
        """Up to `decode.n_best` (text, score) pairs per line (`translate_lines`)."""
        return [line.hypotheses for line in self.translate_lines(lines, first, indices)]

    def translate_lines(self, lines: list[str], first: int = 0,
                        indices: Sequence[int] | None = None) -> list[Line]:
        """Each line's translation: up to `decode.n_best` (text, score) pairs, best first,
        and the confidence of the best (`Line`); an empty line gets empty hypotheses with
        score 0. `first` is the index of `lines[0]` in the whole input: sampling seeds
        each line by its index (or by `indices[i]`: lines of several inputs translated
        together keep their own).

        Each line goes through `realtext.Preparer.plan`: spans protected, case
        normalised, split into sentences where `decode` asks (then its sentences are
        translated apart, their translations joined with the line's own spacing and
        scored by the sum of their scores; n_best is 1 then)."""
        if indices is None:
            indices = range(first, first + len(lines))
        plans = [self.preparer.plan(line) for line in lines]
        found = iter(self.translate_units(plans, indices))
        return [line_of(plan, [next(found) for _ in plan.units], self.decode.n_best)
                for plan in plans]

    def translate_units(self, plans: list[Plan], indices: Sequence[int]) -> list[Line]:
        """The (text, score) hypotheses of every unit of `plans`, in order, finished
        (`Unit.finish`: case and spans back; a span whose placeholder the best one lacks
        placed by the attention, `alignment.Alignment.place`), and the best one's
        confidence: a unit with nothing to translate is its own translation, sure. Every
        unit of plan i is seeded by `indices[i]`: a line's samples do not depend on
        others."""
        units = [unit for plan in plans for unit in plan.units]
        todo = [i for i, unit in enumerate(units) if not unit.copied]
        seeds = [index for index, plan in zip(indices, plans) for _ in plan.units]
        bare = [units[i].masked.without(units[i].text) for i in todo]

        def loops(j: int, text: str) -> bool:  # without the placeholders, wherever they go
            return degenerate(bare[j], units[todo[j]].masked.without(text))

        sources, found = self.search_lines([units[i].text for i in todo],
                                           [seeds[i] for i in todo], loops,
                                           self.constraints([units[i] for i in todo]))
        texts = self.texts(found)
        places = placements(self.engine.attention, self.tokenizer.sp, [
            Translated(units[i].masked, units[i].text, source, self._shown(hyps[0].tokens),
                       text[0][0]) if hyps else None
            for i, source, hyps, text in zip(todo, sources, found, texts)])
        results = [Line([(unit.source, 0.0)] * self.decode.n_best, SURE) for unit in units]
        for j, (i, hyps) in enumerate(zip(todo, texts)):
            if self.decode.retry_repeats and found[j] and loops(j, hyps[0][0]):
                hyps = [(collapsed(hyps[0][0]), hyps[0][1]), *hyps[1:]]  # the last resort
            sure = [confidence(self.calibration, h, sources[j]) for h in found[j]] or [SURE]
            results[i] = Line([(units[i].finish(text, places[j] if k == 0 else relative_place),
                                score) for k, (text, score) in enumerate(hyps)], sure[0],
                              tuple(sure[1:]))
        review(self, [units[i] for i in todo], [results[i] for i in todo], found, sources,
               [seeds[i] for i in todo])
        return results

    def alignments(self, lines: list[str], done: list[str]) -> list[Optional[Alignment]]:
        """Which characters of each line each piece of its translation (`done`) came from
        (one forced pass for all, `alignment.alignments`): what places a document's tags."""
        sources, _ = source_ids(self.tokenizer, lines, self.engine.max_positions)
        targets, _ = source_ids(self.tokenizer, done, self.engine.max_positions)
        return alignments(self.engine.attention, self.tokenizer.sp, [  # targets: EOS off
            (line, source, text, target[:-1]) for line, source, text, target
            in zip(lines, sources, done, targets)])

    def constraints(self, units: Sequence[Optional[Unit]]) -> list[Terms]:
        """Each unit's glossary terms (`Unit.terms`) as constraints of the search."""
        return [self.term_encoder(unit.terms if unit else ()) for unit in units]

    def search_lines(self, lines: list[str], indices: Sequence[int],
                     loops: Optional[Loops] = None,
                     constraints: Optional[Sequence[Terms]] = None,
                     decode: Optional[DecodeConfig] = None
                     ) -> tuple[list[list[int]], list[list[Hypothesis]]]:
        """Each line's source ids (with EOS; [] for a blank line) and its hypotheses, best
        first ([] for a blank line), by `decode`'s search (this translator's by default);
        `indices[i]` is line i's index (it seeds sampling).
        A line with `constraints` (its glossary terms) is searched apart, by constrained
        beam search. With `decode.retry_repeats`, a line whose best translation loops
        (`loops`; by default `repeats.degenerate` against it) is searched again
        (`repeats.retry_loops`)."""
        sources, cut = source_ids(self.tokenizer, lines, self.engine.max_positions)
        self.tally.truncated += sum(cut)
        todo = [i for i, ids in enumerate(sources) if ids]
        terms = list(constraints) if constraints else [NO_TERMS] * len(lines)
        decode = decode or self.decode
        found = self._search_all(sources, todo, indices, terms, decode)
        if decode.retry_repeats:
            self.retried += retry_loops(
                found, lambda found: self.tokenizer.decode(
                    [hyps[0].tokens if hyps else [] for hyps in found]),
                loops or (lambda i, text: degenerate(lines[i], text)),
                lambda looping, n: self._search_all(sources, looping, indices, terms, replace(
                    decode, no_repeat_ngram=n)))
        return sources, found

    def _search_all(self, sources: list[list[int]], todo: list[int], indices: Sequence[int],
                    constraints: Sequence[Terms], decode: DecodeConfig | None = None
                    ) -> list[list[Hypothesis]]:
        """The hypotheses of the sources numbered in `todo` ([] for the others), searched
        in token-budget batches: those without constraints, then those with."""
        found: list[list[Hypothesis]] = [[] for _ in sources]
        for group in ([i for i in todo if not constraints[i]], [i for i in todo if constraints[i]]):
            for batch in token_batches([len(sources[i]) for i in group], self.decode.batch_tokens):
                picked = [group[j] for j in batch]
                for i, hyps in zip(picked, self._search(
                        [sources[i] for i in picked], [indices[i] for i in picked], decode,
                        [constraints[i] for i in picked] if constraints[picked[0]] else None)):
                    found[i] = hyps
        return found

    def texts(self, found: list[list[Hypothesis]]) -> list[list[tuple[str, float]]]:
        """(text, score) of each hypothesis; a line without any gets n_best empty ones.
        With `decode.protect` an unknown piece the model emits is left out, never shown
        as sentencepiece's `⁇`: it stands for nothing of the input, whose characters the
        vocabulary lacks are protected."""
        texts = iter(self.tokenizer.decode([self._shown(h.tokens)
                                            for hyps in found for h in hyps]))
        empty = [("", 0.0)] * self.decode.n_best
        return [[(next(texts), h.score) for h in hyps] if hyps else list(empty)
                for hyps in found]

    def _shown(self, tokens: list[int]) -> list[int]:
        """The pieces of a hypothesis that its text shows (`texts`)."""
        return [i for i in tokens if i != UNK_ID] if self.decode.protect else tokens

    def derived(self, decode: Optional[DecodeConfig] = None,
                glossary: Optional[Glossary] = None) -> Translator:
        """This translator with other search settings (`decode`, this one's batch budget
        kept) or another glossary, sharing its engine, tokenizer, calibration and tally:
        what a request that asks for them (`serve`'s alternatives, its own terms) is
        translated by. This one is left as it is."""
        other = copy.copy(self)
        if decode is not None:
            other.decode = replace(decode, batch_tokens=self.decode.batch_tokens)
        other.preparer = self.preparer.derived(other.decode, glossary or self.preparer.glossary)
        return other

    def _search(self, sources: list[list[int]], indices: list[int],
                decode: DecodeConfig | None = None,
                constraints: Optional[list[Terms]] = None) -> list[list[Hypothesis]]:
        """One batch through the engine; max target length per sentence is
        a * (source tokens without EOS) + b, EOS included, within the model's positions."""
        d = decode or self.decode
        max_len = [max(1, min(int(d.max_len_a * (len(ids) - 1) + d.max_len_b),
                              self.engine.max_positions)) for ids in sources]
        found = self.engine.search(sources, max_len, indices, decode or d, constraints)
        self.target_tokens += sum(len(hyps[0].tokens) for hyps in found)
        return found


def line_of(plan: Plan, parts: list[Line], n_best: int) -> Line:
    """A line's translation from its units' (`parts`): a line of one sentence keeps its
    n-best, a line of several their best ones joined; an empty line gets `n_best` empty
    hypotheses."""
    if len(parts) == 1:
        return Line([(plan.join([text]), score) for text, score in parts[0].hypotheses],
                    parts[0].confidence, parts[0].others)
    if parts:
        best = [part.hypotheses[0] for part in parts]
        return Line([(plan.join([text for text, _ in best]), sum(score for _, score in best))],
                    joined([part.confidence for part in parts],
                           [unit.text for unit in plan.units]))
    return Line([("", 0.0)] * n_best, SURE)


def token_batches(lengths: list[int], budget: int) -> list[list[int]]:
    """Indices into `lengths`, longest first, grouped so that each batch's padded size
    (sentences x longest) stays within `budget` (a longer sentence goes alone)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for i in order:
        if batches and (len(batches[-1]) + 1) * lengths[batches[-1][0]] <= budget:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def inference_model(run: RunDir, checkpoint: str, device: torch.device,
                    decode: Optional[DecodeConfig] = None) -> Transformer:
    """A run's checkpoint as a model on `device`, set up for inference as `decode` (the
    run's by default) asks: torch's threads on the CPU from `decode.threads`; int8 or CPU
    products; on CUDA in `decode.precision` (`device_defaults.precision`)."""
    decode = decode or run.config.decode
    # A precision the device lacks is refused here, before the weights are read.
    dtype = device_defaults.model_dtype(decode, device)
    inference_setup(device, decode.threads)
    model = run.model(run.checkpoint(checkpoint), device)
    if decode.quantize == "int8":
        return quantize_int8(model)
    if device.type == "cpu":
        return cpu_linears(model, use_onednn(decode.cpu_gemm))
    return model.to(dtype)


def load_translator(run: RunDir, checkpoint: str = "best", device: str = "auto",
                    decode: Optional[DecodeConfig] = None) -> Translator:
    """A Translator for a run's checkpoint, with `decode` (the run's settings by
    default), the engine `decode.engine` names and the glossary `decode.glossary` names
    (read once, before the model loads: a bad line is said at once)."""
    target = pick_device(device)
    decode = decode or run.config.decode
    glossary = read_glossary(decode.glossary) if decode.glossary else None
    annotated = trained_with_annotation(run.config)
    calibration = Calibration.load(run.path)
    if decode.engine == "ct2":
        from transcli.export.ct2 import cached_export

        compute_type = device_defaults.ct2_compute_type(decode, target)
        decode = device_defaults.fitted(decode, run.config.model, run.tokenizer.vocab_size, target)
        inference_setup(target, decode.threads)
        model_dir = cached_export(run, run.checkpoint(checkpoint), decode.quantize)
        engine = Ct2Engine(model_dir, run.tokenizer, run.config.model.max_positions, target,
                           compute_type)
        return Translator(engine, run.tokenizer, decode, glossary=glossary, annotated=annotated,
                          calibration=calibration)
    return Translator(inference_model(run, checkpoint, target, decode), run.tokenizer, decode,
                      target, glossary=glossary, annotated=annotated, calibration=calibration,
                      head=guided_head(run.config.train, run.config.model))
