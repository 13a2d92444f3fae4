"""`transcli info RUN`: what a run dir holds, read from its files without loading the model.

Model shape and settings come from `config.yaml`, the vocabulary from `spm.model`, the
parameter count from a weights file's header (safetensors lists each tensor's shape;
tied tensors are stored once, so the sum is the model's parameter count), progress from
`metrics.jsonl` and the checkpoint files, the run's origin from `run.json`. A run that
has not logged or saved anything yet is reported as such, not refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
from pathlib import Path
from typing import Any, Callable, Optional

from transcli.config.schema import Config, SourceConfig
from transcli.data.tokenizer import TOKENIZER_FILE
from transcli.rundir.checkpoints import stored_shapes
from transcli.rundir.layout import (
    AVG_FILE,
    BEST_FILE,
    CHECKPOINT_DIR,
    CONFIG_FILE,
    METRICS_FILE,
    STATE_PATTERN,
    STEP_PATTERN,
    complete_steps,
    step_checkpoints,
)
from transcli.rundir.metrics import read_metrics
from transcli.rundir.run import RunDir


def stored_parameters(path: Path) -> int:
    """Numbers stored in a safetensors file, read from its header alone."""
    return sum(math.prod(shape) for shape in stored_shapes(path).values())


def run_info(run: RunDir, warn: Optional[Callable[[str], None]] = None) -> dict[str, Any]:
    """Everything `info` shows, as plain data; `warn` hears of damaged metrics lines."""
    path, cfg = run.path, run.config
    folder = path / CHECKPOINT_DIR
    steps = [step for step, _ in step_checkpoints(path)]
    extra = [name for name in (BEST_FILE, AVG_FILE) if (folder / name).is_file()]
    weights = [file for _, file in step_checkpoints(path)][-1:] or [folder / n for n in extra]
    records = read_metrics(path / METRICS_FILE, warn=warn)
    train = [r for r in records if r.get("split") == "train"]
    valid = [r for r in records if r.get("split") == "valid"]
    best = [r for r in valid if r.get("best")]
    last_step = max([*steps, *(r["step"] for r in records)], default=0)
    return {
        "run": str(path),
        "model": cfg.to_dict()["model"],
        "parameters": stored_parameters(weights[0]) if weights else None,
        "parameters_from": str(weights[0]) if weights else None,
        "vocab_size": run.tokenizer.vocab_size if (path / TOKENIZER_FILE).is_file() else None,
        "steps": last_step,
        "epoch": train[-1].get("epoch") if train else None,
        "minutes": train[-1].get("minutes") if train else None,
        "decay_minutes": cfg.train.decay_minutes,
        "tgt_tokens": train[-1].get("tgt_tokens") if train else None,
        "src_tokens": train[-1].get("src_tokens") if train else None,
        "last_train": _pick(train[-1], "step", "loss", "nll", "lr") if train else None,
        "best_valid": _pick(best[-1], "step", "valid_bleu", "valid_nll", "valid_ppl")
        if best else None,
        "last_valid": _pick(valid[-1], "step", "valid_bleu", "valid_nll") if valid else None,
        "checkpoints": {"steps": steps, "resume_from": (complete_steps(path) or [None])[-1],
                        "best": BEST_FILE in extra, "avg": AVG_FILE in extra,
                        "keep_last": cfg.train.keep_last},
        "disk": disk_use(path),
        "origin": run.record or {},
        "config": cfg.to_dict(),
        "changed": changed_settings(cfg),
    }


def disk_use(run: Path) -> dict[str, int]:
    """Bytes the run dir holds, by what they are for."""
    use = dict.fromkeys(("step weights", "training state", "best and avg", "other"), 0)
    for path in run.rglob("*"):
        with contextlib.suppress(OSError):
            if not path.is_file() or path.is_symlink():
                continue
            kind = ("step weights" if STEP_PATTERN.match(path.name)
                    else "training state" if STATE_PATTERN.match(path.name)
                    else "best and avg" if path.parent.name == CHECKPOINT_DIR
                    and path.name in (BEST_FILE, AVG_FILE) else "other")
            use[kind] += path.stat().st_size
    return use


def _pick(record: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: record[key] for key in keys if key in record}


def changed_settings(cfg: Config) -> dict[str, Any]:
    """`section.key: value` for every setting that differs from the default."""
    ours, defaults = cfg.to_dict(), Config().to_dict()
    return {f"{section}.{key}": value for section, values in ours.items()
            for key, value in values.items() if value != defaults[section][key]}


# ----------------------------------------------------------------------------- text


def format_info(info: dict[str, Any]) -> str:
    """The report as aligned `label: value` lines."""
    m = info["model"]
    rows = [("run", info["run"]),
            ("model", f"{m['enc_layers']}+{m['dec_layers']} layers, d_model {m['d_model']}, "
                      f"d_ff {m['d_ff']}, {m['heads']} heads, "
                      f"{'pre' if m['pre_norm'] else 'post'}-norm, "
                      f"{m['max_positions']} positions"),
            ("parameters", f"{info['parameters']:,} ({Path(info['parameters_from']).name})"
             if info["parameters"] is not None else "no weights saved yet"),
            ("vocabulary", f"{info['vocab_size']:,} pieces ({TOKENIZER_FILE})"
             if info["vocab_size"] is not None else f"no {TOKENIZER_FILE}"),
            ("trained", _trained(info))]
    if info["last_train"]:
        last = info["last_train"]
        rows.append(("last train loss", f"{last['loss']:.4f} (NLL {last.get('nll', math.nan):.4f})"
                                        f" at step {last['step']}, lr {last.get('lr', 0):.3g}"))
    rows.append(("best validation", _validation(info["best_valid"]) if info["best_valid"]
                 else "none yet"))
    rows.append(("checkpoints", _checkpoints(info["checkpoints"])))
    rows.append(("disk", _disk(info["disk"], info["checkpoints"]["keep_last"])))
    origin = info["origin"]
    if origin.get("data_dir"):
        rows.append(("data", f"{origin['data_dir']} (data hash "
                             f"{str(origin.get('data_hash'))[:12]})"))
    if origin.get("init_from"):
        rows.append(("fine-tuned from", origin["init_from"]))
    changed = info["changed"]
    rows.append(("config", f"{Path(info['run']) / CONFIG_FILE}; "
                           f"{len(changed)} setting(s) differ from the defaults:"))
    width = max(len(label) for label, _ in rows)
    lines = [f"{label + ':':<{width + 1}} {value}" for label, value in rows]
    lines += [f"  {key}: {json.dumps(_compact(value), ensure_ascii=False)}"
              for key, value in changed.items()]
    return "\n".join(lines)


def _compact(value: Any) -> Any:
    """A source's keys without those at their defaults: {"tsv": "a.tsv"}, not the unset
    ones nor `split: train`, which only a dataset source reads."""
    if isinstance(value, list):
        return [_compact(item) for item in value]
    if isinstance(value, dict):
        defaults = dataclasses.asdict(SourceConfig())
        return {k: v for k, v in value.items() if v != defaults.get(k)}
    return value


def _trained(info: dict[str, Any]) -> str:
    if not info["steps"]:
        return "not yet (no update logged or saved)"
    text = f"{info['steps']:,} updates"
    if info["tgt_tokens"] is not None:
        text += (f", {info['tgt_tokens']:,} target + {info['src_tokens']:,} source tokens "
                 f"(as of the last log line)")
    if info["epoch"] is not None:
        text += f", epoch {info['epoch']}"
    if isinstance(info.get("minutes"), (int, float)):
        text += f", {info['minutes']:.1f} min of training"
        if info["decay_minutes"]:
            left = max(0.0, info["decay_minutes"] - info["minutes"])
            text += f" ({left:.1f} of the {info['decay_minutes']:g}-minute decay left)"
    return text


def _validation(best: dict[str, Any]) -> str:
    parts = []
    if "valid_bleu" in best:
        parts.append(f"BLEU {best['valid_bleu']:.2f} (greedy)")
    if "valid_nll" in best:
        parts.append(f"NLL {best['valid_nll']:.4f}")
    return ", ".join(parts) + f" at step {best['step']}"


def _checkpoints(checkpoints: dict[str, Any]) -> str:
    steps = checkpoints["steps"]
    parts = [f"steps {', '.join(map(str, steps))}" if steps else "no step checkpoints"]
    parts += [name for name in ("best", "avg") if checkpoints[name]]
    if checkpoints["resume_from"] is not None:
        parts.append(f"--resume continues from step {checkpoints['resume_from']}")
    return "; ".join(parts)


def _disk(use: dict[str, int], keep_last: int) -> str:
    """What the run dir's bytes are for: weights of the last `keep_last` steps, the one
    training state --resume reads, best/avg, and the rest (logs, tokenizer, exports)."""
    def mb(size: int) -> str:
        return f"{size / 1e6:,.1f} MB"

    return (f"{mb(sum(use.values()))}: step weights {mb(use['step weights'])} (the last "
            f"train.keep_last={keep_last}), training state for --resume "
            f"{mb(use['training state'])}, best and avg {mb(use['best and avg'])}, "
            f"other {mb(use['other'])}")
