"""`transcli evaluate`: score translations, or translate and score, with sacreBLEU.

With `--model` it translates `--src` through the same function as `transcli translate`;
every check on the inputs that can be made up front runs before that (slow) step.
Files are read, translated and scored a chunk at a time.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional

import typer

from transcli.cli.options import CheckpointOpt, DecodeSetOpt, Device, device_option, with_decoding
from transcli.config.loading import Override, override_parts
from transcli.inference.bleu import CorpusScorer, Scores, format_text, scored_lines
from transcli.system.errors import UserError
from transcli.system.outputs import check_output, check_stdout
from transcli.system.text import count_lines, open_text, text_lines

if TYPE_CHECKING:
    from transcli.inference.checks import Tally
    from transcli.inference.glossary import TermUse

SCORE_CHUNK = 10_000  # lines scored at a time


@with_decoding
def evaluate(
    *,
    ref: list[Path] = typer.Option(..., "--ref", "-r", metavar="<path>",
                                   help="Reference file (repeatable)."),
    hyp: Optional[Path] = typer.Option(None, help="Hypotheses to score (instead of --model)."),
    model: Optional[Path] = typer.Option(None, "--model", "-m", help="Run dir to translate with."),
    src: Optional[Path] = typer.Option(None, help="Source file to translate (with --model)."),
    checkpoint: str = CheckpointOpt,
    hyp_out: Optional[str] = typer.Option(None, help="Write the scored hypotheses here."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object."),
    decoding: list[tuple[str, Any]],
    device: Device = device_option(),
    sets: Optional[list[str]] = DecodeSetOpt,
) -> None:
    """Score translations with sacreBLEU (BLEU, chrF and TER, with their signatures),
    translating --src first with --model.

    With --model: a progress bar on stderr, and translate's decoding options; where the
    run has a confidence calibration, how well each line's confidence ranks the lines
    (its correlation with their sentence chrF, the BLEU of the most confident 80%).

    Examples:

    \b
      transcli evaluate --hyp news.es --ref news.ref.es
      transcli evaluate -m run --src test.en --ref test.es --hyp-out test.hyp.es --json
    """
    evaluate_cli(ref=ref, hyp=hyp, model=model, src=src, checkpoint=checkpoint,
                 hyp_out=hyp_out, as_json=json_out, device=device or "auto",
                 overrides=[*decoding, *(sets or [])])


def evaluate_cli(ref: list[Path], hyp: Optional[Path], model: Optional[Path],
                 src: Optional[Path], checkpoint: str, hyp_out: Optional[str | Path], as_json: bool,
                 device: str, overrides: Optional[list[Override]] = None) -> None:
    """Score `hyp`, or the translation of `src` by `model` (with `decode.*` `overrides`,
    as `translate` takes them), against every `ref`; print the scores as text or JSON.
    Every check on the inputs that can be made up front runs before the (slow)
    translation starts; the files are then read, translated and scored a chunk at a
    time, so memory does not grow with them."""
    overrides = list(overrides or [])
    for option, value in (("--hyp", hyp), ("--src", src), *(("--ref", path) for path in ref)):
        if str(value) == "-":  # not a file name here: "-: file not found" would mislead
            raise UserError(f"{option} -: evaluate reads files, not standard input; give "
                            f"{option} a file")
    _check_options(hyp, model, src, overrides, hyp_out)
    given = hyp if model is None else src
    assert given is not None
    check_stdout([given, *ref], "scores")  # the report would land in an input
    total = _check_counts(given, ref)
    terms: Optional[TermUse] = None  # with --model and a glossary
    tally: Optional[Tally] = None  # with --model
    confidences: Optional[list[float]] = None  # with --model and a calibrated run
    with contextlib.ExitStack() as stack:
        refs = [scored_lines(stack.enter_context(_lines(path))) for path in ref]
        if model is None:
            hyps = scored_lines(stack.enter_context(_lines(given)))
            inputs: dict[str, Any] = {"hyp": str(hyp)}
        else:
            hyps, terms, tally, confidences = stack.enter_context(_translations(
                model, checkpoint, given, ref, hyp_out, total, device, overrides))
            inputs = {"model": str(model), "checkpoint": checkpoint, "src": str(src),
                      "hyp": None if hyp_out is None else str(hyp_out)}
        scorer = CorpusScorer(per_line=confidences is not None)
        scores = _score(scorer, hyps, refs, given, ref)
    if terms is not None:
        scores = replace(scores, terms=(terms.used, terms.applicable))
    if tally is not None:
        scores = replace(scores, checks=(tally.failed, tally.repaired, tally.untranslated))
    if confidences is not None:
        scores = replace(scores, ranking=scorer.ranking(confidences))
    if as_json:
        print(json.dumps({**scores.to_dict(), **inputs, "refs": [str(p) for p in ref]},
                         ensure_ascii=False, indent=1))
    else:
        print(format_text(scores))


def _check_counts(given: Path, refs: list[Path]) -> Optional[int]:
    """The line count of the hypotheses (or source) when every file can be counted up
    front (plain files), after checking that the references have it too."""
    counts = [count_lines(path) for path in (given, *refs)]
    if None in counts:
        return None  # a pipe or a compressed file: checked as it is read
    for path, count in zip(refs, counts[1:]):
        if count != counts[0]:
            raise UserError(f"line counts differ: {given} has {counts[0]} lines, "
                            f"{path} has {count}")
    if not counts[0]:
        raise UserError(f"{given}: no lines to score")
    return counts[0]


@contextlib.contextmanager
def _lines(path: Path) -> Iterator[Iterator[str]]:
    """A file's lines by transcli's rule, a byte-order mark kept (as sacreBLEU does)."""
    with open_text(path) as handle:
        yield text_lines(handle, path, keep_bom=True)


@contextlib.contextmanager
def _translations(model: Path, checkpoint: str, src: Path, refs: list[Path],
                  hyp_out: Optional[str | Path], total: Optional[int], device: str,
                  overrides: list[Override]
                  ) -> Iterator[tuple[Iterator[str], Optional[TermUse], Tally,
                                      Optional[list[float]]]]:
    """The translations of `src` with the code `transcli translate` uses (the 1-best),
    chunk by chunk as they are scored, each written to `hyp_out` too, which appears whole
    when scoring ends; a progress bar on stderr. With a glossary, its term use, counted
    as the chunks are translated (complete once the translations are read through); the
    translator's tally of checks, and each line's confidence where the run has a
    calibration (complete then too)."""
    from transcli.inference.glossary import TermUse
    from transcli.inference.streaming import Output, stream
    from transcli.inference.translator import load_translator
    from transcli.rundir.run import open_run_dir

    run = open_run_dir(model, [("decode.n_best", 1), *overrides])
    inputs = [*refs, src, *run.inputs(checkpoint)]
    output = None if hyp_out is None else Output(hyp_out, inputs, "hypotheses")
    if hyp_out is not None:
        check_output(hyp_out, inputs, "hypotheses")
    translator = load_translator(run, checkpoint, device)
    glossary = translator.preparer.glossary
    terms = TermUse(glossary) if glossary is not None else None
    confidences: Optional[list[float]] = [] if translator.calibration is not None else None

    def work(lines: list[str], first: int) -> list[str]:
        done = translator.translate_lines(lines, first)
        translations = [line.best for line in done]
        if confidences is not None:
            confidences.extend(line.confidence or 0.0 for line in done)
        if terms is not None:
            terms.add(lines, translations)
        return translations

    with open_text(src) as handle, contextlib.closing(stream(
            text_lines(handle, src), work, output, total=total)) as hyps:
        # as sacrebleu reads --hyp-out
        yield (line.rstrip() for line in hyps), terms, translator.tally, confidences
    translator.tally.report()
    if note := run.young_note():  # after the scores: an error there stays one line
        print(f"transcli: {note}", file=sys.stderr)


def _score(scorer: CorpusScorer, hyps: Iterator[str], refs: list[Iterator[str]], given: Path,
           ref_paths: list[Path]) -> Scores:
    """Scores of the hypotheses against the references by `scorer`, a chunk at a time;
    files that end at different lines are refused, naming the shorter."""
    while hyp_chunk := list(itertools.islice(hyps, SCORE_CHUNK)):
        ref_chunks = [list(itertools.islice(lines, len(hyp_chunk))) for lines in refs]
        for path, chunk in zip(ref_paths, ref_chunks):
            if len(chunk) < len(hyp_chunk):
                raise UserError(f"line counts differ: {path} ends before {given}")
        scorer.add(hyp_chunk, ref_chunks)
    for path, lines in zip(ref_paths, refs):
        if next(lines, None) is not None:
            raise UserError(f"line counts differ: {given} ends before {path}")
    if not scorer.lines:
        raise UserError(f"{given}: no lines to score")
    return scorer.result()


def _check_options(hyp: Optional[Path], model: Optional[Path], src: Optional[Path],
                   overrides: list[Override], hyp_out: Optional[str | Path]) -> None:
    """Exactly one way of getting hypotheses, and no option that would be ignored."""
    if hyp is not None and model is not None:
        raise UserError("give either --hyp FILE or --model RUN_DIR, not both")
    if hyp is None and model is None:
        raise UserError("give --hyp FILE to score, or --model RUN_DIR --src FILE "
                        "to translate and score")
    if model is not None and src is None:
        raise UserError("--model needs --src FILE, the English text to translate")
    if model is None:
        for option, value in (("--src", src), ("--hyp-out", hyp_out)):
            if value is not None:
                raise UserError(f"{option} only applies with --model RUN_DIR")
        if overrides:
            raise UserError(f"{_option_name(overrides[0])} only applies with --model RUN_DIR")


def _option_name(override: Override) -> str:
    """The flag that gives an override: ("decode.beam_size", 5) or "decode.beam_size=5"
    -> --beam-size."""
    key, value = override_parts(override)
    if key == "decode.quantize" and value == "int8":
        return "--int8"
    if not key.startswith("decode."):
        return f"--set {key}={value}"
    return "--" + key.removeprefix("decode.").replace("_", "-")
