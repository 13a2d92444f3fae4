"""Validation during training: valid loss, greedy BLEU, and the best/patience policy.

The valid split's loss uses the training objective (`objective.output_loss`); BLEU
decodes the first `train.valid_bleu_lines` valid sentences greedily with the cached
decoder. "Best" follows `train.early_stop_metric`: BLEU, or the valid NLL for `loss`
and for runs that decode no BLEU lines.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Optional

import torch

from transcli.config.schema import Config, DecodeConfig
from transcli.data.batching import plain_batches
from transcli.data.prepared_dir import PreparedDir
from transcli.data.tokenizer import Tokenizer
from transcli.model.transformer import Transformer
from transcli.model.vocab import PAD_ID
from transcli.rundir.checkpoints import save_weights
from transcli.system.errors import UserError
from transcli.system.text import read_text_file
from transcli.training.objective import LossSums, TeacherForcing
from transcli.training.optimization import Optimization
from transcli.training.state import Best, Progress


class ValidationSet:
    """The valid split's batches for loss, and the first lines of its text for BLEU with
    the greedy search's settings for `device` (fitted now: before the first update)."""

    def __init__(self, cfg: Config, data: PreparedDir, device: torch.device):
        from transcli.inference import device_defaults

        self.cfg, self.tokenizer = cfg, data.tokenizer
        # decode.precision is translate's: validation decodes in the training's own
        self.decode = device_defaults.fitted(replace(cfg.decode, strategy="greedy", beam_size=1,
                                             n_best=1, precision="auto"),
                                     cfg.model, data.vocab_size, device)
        split = data.split("valid")
        self.batches = list(plain_batches(split, cfg.train.batch_tokens,
                                          cfg.model.max_positions)) if len(split) else []
        self.sources: list[str] = []
        self.references: list[str] = []
        lines = cfg.train.valid_bleu_lines
        if lines and self.batches:
            self.sources, self.references = (_read_lines(path, lines)
                                             for path in data.text_paths("valid"))

    def validate(self, model: Transformer, opt: Optimization, p: Progress, best_path: Path,
                 device: torch.device, autocast: Callable[[], contextlib.AbstractContextManager]
                 ) -> tuple[dict[str, Any], Optional[str]]:
        """Valid loss and greedy BLEU of the averaged weights (the model's own without an
        average) at step `p.step`; the best checkpoint saved to `best_path` when they
        are the best so far; `p.best` updated. The validation's record for the metrics
        log, and the reason to stop early (or None)."""
        tc = self.cfg.train
        model.eval()
        with opt.averaged():
            scores = self.scores(model, device, autocast)
            metric = best_metric(tc.early_stop_metric, tc.valid_bleu_lines)
            p.best, improved, stop = update_best(p.best, p.step, scores, metric, tc.patience)
            if improved:
                save_weights(model, best_path, self.tokenizer.sha256)
        model.train()
        return ({"step": p.step, "split": "valid", "loss": scores["valid_loss"], **scores,
                 "best": improved}, stop)

    def scores(self, model: Transformer, device: torch.device,
               autocast: Callable[[], contextlib.AbstractContextManager]) -> dict[str, float]:
        """valid_loss, valid_nll, valid_ppl, valid_acc (and valid_bleu) of `model`."""
        objective = TeacherForcing(model, self.cfg.train.label_smoothing, PAD_ID)
        sums = torch.zeros(4, dtype=torch.float64, device=device)
        with torch.no_grad():
            for batch in self.batches:
                batch = batch.to(device)
                with autocast():
                    sums += objective(batch.src, batch.tgt_in, batch.tgt_out,
                                      batch.rows).double()
        scores = {f"valid_{key}": value for key, value in LossSums.of(sums).means().items()}
        if self.sources:  # decoded in the training precision on a GPU, in fp32 on the CPU
            with autocast() if device.type == "cuda" else contextlib.nullcontext():
                scores["valid_bleu"] = greedy_bleu(model, self.tokenizer, self.decode,
                                                   self.sources, self.references, device)
        return scores


def validation_set(cfg: Config, data: PreparedDir, device: torch.device
                   ) -> Optional[ValidationSet]:
    """The prepared dir's valid split for validation, or None when it has none."""
    valid = ValidationSet(cfg, data, device)
    return valid if valid.batches else None


def greedy_bleu(model: Transformer, tokenizer: Tokenizer, decode: DecodeConfig,
                sources: list[str], references: list[str], device: torch.device) -> float:
    """sacreBLEU of greedy translations (cached decoder): cheap enough to run often."""
    from transcli.inference.bleu import score
    from transcli.inference.translator import Translator

    hypotheses = Translator(model, tokenizer, decode, device).translate(sources)
    return score(hypotheses, [references], ter=False).bleu


def best_metric(early_stop_metric: Any, valid_bleu_lines: Any) -> str:
    """What "best" and patience follow: "bleu" (train.early_stop_metric bleu, with BLEU
    lines decoded), else the valid NLL ("nll")."""
    return "bleu" if early_stop_metric == "bleu" and valid_bleu_lines else "nll"


def update_best(best: Best, step: int, scores: dict[str, float], metric: str,
                patience: int) -> tuple[Best, bool, Optional[str]]:
    """The early-stopping record after a validation at `step` (`metric`: `best_metric`'s):
    (new record, whether this is the best so far, the reason to stop or None). A record
    of another metric is started over: a BLEU is no NLL."""
    if "valid_bleu" not in scores:
        metric = "nll"
    higher_better = metric == "bleu"
    value = scores["valid_bleu"] if higher_better else scores["valid_nll"]
    if best.value is None or best.metric not in ("", metric) or (
            value > best.value if higher_better else value < best.value):
        return Best(value, step, 0, metric), True, None
    stale = Best(best.value, best.step, best.stale + 1, metric)
    if patience and stale.stale >= patience:
        return stale, False, (f"early stop: no better valid {metric.upper()} in {stale.stale} "
                              f"validations (best {stale.value:.4g} at step {stale.step})")
    return stale, False, None


def _read_lines(path: Path, limit: int) -> list[str]:
    if not path.is_file():
        raise UserError(f"{path}: valid text for BLEU not found (re-run `transcli prepare`, "
                        f"or set train.valid_bleu_lines=0)")
    return read_text_file(path, limit)
