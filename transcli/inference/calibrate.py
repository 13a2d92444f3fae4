"""Fitting a run's confidence (`confidence.Calibration`): at the end of training, and
by `transcli calibrate`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import torch

from transcli.data.prepared_dir import PreparedDir
from transcli.inference.confidence import Calibration, features, fit
from transcli.inference.translator import Translator, load_translator
from transcli.rundir.run import RunDir
from transcli.system.errors import UserError

CALIBRATION_LINES = 500  # the valid lines a calibration translates (the first ones)
MIN_LINES = 50  # fewer valid lines than this calibrate nothing worth the name


def fitted_at_the_end(run: RunDir, data: PreparedDir, device: torch.device) -> Optional[str]:
    """At a run's end: its best checkpoint's confidence fitted on `data`'s valid split
    (`calibrate_run`) where it has `MIN_LINES` pairs or more and the run a checkpoint;
    what was fitted, said."""
    if len(data.split("valid")) < MIN_LINES or not run.updates():
        return None
    started = time.perf_counter()
    fitted = calibrate_run(run, "best", str(device), CALIBRATION_LINES, data)
    return (f"confidence fitted on {fitted.lines} valid lines in "
            f"{time.perf_counter() - started:.0f} s (Pearson {fitted.pearson:.2f} against "
            f"their sentence chrF)")


def calibrate_run(run: RunDir, checkpoint: str, device: str, lines: int = CALIBRATION_LINES,
                  data: Optional[PreparedDir] = None) -> Calibration:
    """Fit a run's calibration on the first `lines` of the valid split of `data` (by
    default the prepared dir the run records), translated by `checkpoint` with the run's
    decode settings, and save it in the run dir."""
    from transcli.system.text import read_text_file

    paths = (data or _prepared(run)).text_paths("valid")
    sources, references = (read_text_file(path, lines) if path.is_file() else []
                           for path in paths)
    if len(sources) < MIN_LINES:
        raise UserError(f"{paths[0]}: {len(sources)} valid line(s): a confidence is "
                        f"fitted on at least {MIN_LINES}")
    calibration = calibrate(load_translator(run, checkpoint, device), sources, references)
    calibration.save(run.path)
    return calibration


def _prepared(run: RunDir) -> PreparedDir:
    """The prepared dir `run` was trained on, as its run.json records it."""
    from transcli.data.prepared_dir import open_prepared_dir

    data_dir = (run.record or {}).get("data_dir")
    if not data_dir or not Path(data_dir).is_dir():
        raise UserError(f"{run.path}: its prepared dir ({data_dir or 'not recorded'}) is not "
                        f"there: the confidence is fitted on its valid split")
    return open_prepared_dir(data_dir)


def calibrate(translator: Translator, sources: list[str], references: list[str]
              ) -> Calibration:
    """The calibration of `translator`'s best translations of `sources`, against the
    sentence chrF of each with its reference."""
    from sacrebleu.metrics import CHRF

    chrf = CHRF()
    ids, found = translator.search_lines(sources, range(len(sources)))
    rows, quality = [], []
    for source, hyps, texts, reference in zip(ids, found, translator.texts(found), references):
        if hyps:
            rows.append(features(hyps[0], len(source) - 1))
            quality.append(chrf.sentence_score(texts[0][0], [reference]).score / 100)
    return fit(rows, quality)
