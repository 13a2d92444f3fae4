"""`transcli score`: each given translation's log-probability under the model, as TSV."""

from __future__ import annotations

import itertools
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Iterator, Optional

import typer

from transcli.cli.options import CheckpointOpt, Device, ModelOpt, device_option, setting
from transcli.system.errors import UserError
from transcli.system.outputs import check_output, check_stdout
from transcli.system.text import count_lines, open_text, text_lines


def score(
    model: Path = ModelOpt,
    src: Path = typer.Option(..., help="Source sentences, one per line."),
    tgt: Path = typer.Option(..., help="Their translations, line by line."),
    output: str = typer.Option("-", "--output", "-o", help="Output TSV file, or - for stdout."),
    checkpoint: str = CheckpointOpt,
    batch_tokens: Optional[int] = setting(
        "decode.batch_tokens", "Tokens per batch and side, padding included."),
    device: Device = device_option(),
) -> None:
    """Log-probability of given translations under the model (forced decoding).

    One TSV line per pair, in input order: line index (from 0), total log-prob,
    log-prob per token, target tokens (end of sentence included). For filtering
    corpora and checking references. A pair with a blank side, or too long for the
    model, is kept but not scored: nan in both score columns (as translate keeps a
    blank line blank), which the example below leaves out before sorting.

    Examples:

    \b
      transcli score -m run --src corpus.en --tgt corpus.es -o scores.tsv
      awk -F'\\t' '$2 != "nan"' scores.tsv | sort -t$'\\t' -k3,3g | head   # least likely
    """
    score_files(model, checkpoint, src, tgt, output, batch_tokens, device or "auto")


def score_files(run_dir: Path, checkpoint: str, src: Path, tgt: Path, output: str,
                batch_tokens: int | None, device: str) -> None:
    """Write `index<TAB>total<TAB>per_token<TAB>tokens` for every line pair of `src` and
    `tgt` to `output` (a path, or - for stdout), in input order."""
    from transcli.inference.streaming import Output, drain, stream
    from transcli.rundir.run import open_run_dir
    from transcli.system.devices import pick_device

    if output == "-":  # `--tgt f > f`: said before "line counts differ" (f is empty now)
        check_stdout([src, tgt], "scores")
    pairs = _count_pairs(src, tgt)
    # --batch-tokens is decode.batch_tokens (0: chosen for the device), checked as it is
    run = open_run_dir(run_dir, [] if batch_tokens is None
                       else [("decode.batch_tokens", batch_tokens)])
    target = Output(output, [src, tgt, *run.inputs(checkpoint)], "scores")
    if output != "-":  # a wrong output is said before the model loads
        check_output(output, target.inputs, "scores")
    chosen = pick_device(device)
    from transcli.inference import device_defaults  # torch loads here
    from transcli.inference.scoring import PairScorer
    from transcli.inference.translator import inference_model

    model = inference_model(run, checkpoint, chosen)
    # decode.batch_tokens, or (0) greedy translation's budget for the device
    budget = device_defaults.batch_tokens(replace(run.config.decode, strategy="greedy"), model.cfg,
                                  model.vocab_size, chosen)
    scorer = PairScorer(model, run.tokenizer, budget)
    with open_text(src) as src_handle, open_text(tgt) as tgt_handle:
        lines = _pairs(text_lines(src_handle, src), text_lines(tgt_handle, tgt), src, tgt)
        drain(stream(lines, lambda chunk, first: [_row(first + i, *scores) for i, scores
                                                  in enumerate(scorer.score(chunk))],
                     target, total=pairs, progress=bool(pairs), unit="pair",
                     cost=lambda pair: len(pair[0]) + len(pair[1])))
    if scorer.too_long:
        print(f"transcli: warning: {scorer.too_long} pair(s) longer than the model's "
              f"{run.config.model.max_positions} positions were not scored (nan)",
              file=sys.stderr)


def _row(index: int, total: float, tokens: int) -> str:
    """One TSV line; a pair that was not scored (a blank side, too long) has nan scores."""
    per_token = total / tokens if tokens else math.nan
    return f"{index}\t{total:.4f}\t{per_token:.4f}\t{tokens}"


def _count_pairs(src: Path, tgt: Path) -> Optional[int]:
    """The number of pairs when both files can be counted up front (plain files), which
    must then have the same, non-zero number of lines; None for pipes and compressed files
    (`_pairs` checks their counts as it reads)."""
    counts = [count_lines(path) for path in (src, tgt)]
    if None in counts:
        return None
    if counts[0] != counts[1]:
        raise UserError(f"line counts differ: {src} has {counts[0]} lines, "
                        f"{tgt} has {counts[1]}")
    if not counts[0]:
        raise UserError(f"{src} and {tgt} are empty: no pairs to score")
    return counts[0]


def _pairs(sources: Iterator[str], targets: Iterator[str], src: Path, tgt: Path
           ) -> Iterator[tuple[str, str]]:
    """The line pairs, in order; files of different lengths are an error once one ends."""
    count = 0
    for count, (source, target) in enumerate(itertools.zip_longest(sources, targets), 1):
        if source is None or target is None:
            shorter = src if source is None else tgt
            raise UserError(f"line counts differ: {shorter} ends after {count - 1} lines, "
                            f"the other file goes on")
        yield source, target
    if not count:
        raise UserError(f"{src} and {tgt} are empty: no pairs to score")
