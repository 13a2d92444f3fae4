"""Where a training session starts: a new run, a resume, or a fine-tuning start from
another run's weights. Every rule about a run's past is here, and everything is checked
before the run dir is written.

What a resume may change is decided by one table (`RULES`, read by `rule_of`): every key
of `transcli config --list`, and the batch plan, is
- "must match": the model's shape, and (not keys) the data, vocabulary and tokenizer the
  run was trained on: refused even with --allow-changes, the weights would mean nothing;
- "named; needs --allow-changes": what the run learns or records of itself (the recipe,
  the decode settings `translate -m RUN` uses, prepare's settings, the batch plan):
  refused, each named, unless the user consents; then each is said when the run starts;
- "free this session": how this session runs and what it keeps or reports (its device,
  time limit, logging, checkpoints kept, early stopping).
`train.max_steps` ends a linear or cosine decay, so there it is the recipe; with noam it
is only where to stop (a smaller one stops this session early, and the run keeps its own).

A session starts in four moves: `start_session` checks (reading only, so every rank may
call it); `Start.load_init` loads fine-tuning's weights; `Start.restore` loads a resume's
step, the newest with both weights and training state (a state that torch or its holders
refuse is named in one line; its data position is checked against the batch plan it was
saved with, `BatchPlan.fingerprint`); `Start.record` writes the run dir.
"""

from __future__ import annotations

import enum
import json
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple, Optional

import torch

from transcli.config.loading import Override, load_config, with_overrides
from transcli.config.schema import Config, TrainConfig
from transcli.data.batching import BatchPlan, StreamPosition
from transcli.data.prepared_dir import PreparedDir
from transcli.data.tokenizer import TOKENIZER_FILE, Tokenizer
from transcli.export.ct2 import remove_stale_caches
from transcli.rundir.checkpoints import (
    TOKENIZER_KEY,
    discard_after,
    load_state,
    load_weights,
    resolve_checkpoint,
    stored_metadata,
)
from transcli.rundir.layout import (
    AVG_FILE,
    BEST_FILE,
    CHECKPOINT_DIR,
    CONFIG_FILE,
    RUN_FILE,
    RUN_FILES,
    complete_steps,
    dir_entries,
    has_trained,
    state_path,
    step_checkpoints,
    step_path,
)
from transcli.rundir.metrics import MetricsLog
from transcli.rundir.run import RunDir, write_run_files
from transcli.system.errors import UserError, first_line
from transcli.training.distributed import Dist
from transcli.training.optimization import Optimization
from transcli.training.report import say
from transcli.training.state import Best, Progress, set_rng_state
from transcli.training.validation import best_metric


class Rule(enum.Enum):
    MATCH = "must match"
    CONSENT = "named; needs --allow-changes"
    FREE = "free this session"


PLAN = "batch plan"  # the batches a data position counts in: their order and number


def _keys(section: str, names: str) -> list[str]:
    return [f"{section}.{name}" for name in names.split()]


# Every key of `transcli config --list`, and the batch plan, by what a resume may do with
# it (tests/test_resume.py walks the list: a new key must be placed here). A source's keys
# (data.train[].tsv, ...) follow their list's.
RULES: dict[Rule, list[str]] = {
    Rule.MATCH: _keys("model", "enc_layers dec_layers d_model d_ff heads pre_norm "
                               "share_embeddings tie_output max_positions"),
    Rule.CONSENT: [
        *_keys("model", "dropout attn_dropout act_dropout"),
        *_keys("data", "src_lang tgt_lang train valid test valid_size test_size max_tokens "
                       "max_chars max_ratio vocab_size tokenizer tokenizer_model "
                       "character_coverage byte_fallback input_sentence_size skip_invalid seed "
                       "alignments out"),
        *_keys("train", "batch_tokens accum_steps max_steps label_smoothing lr_factor "
                        "warmup_steps schedule final_lr_scale decay_minutes adam_beta1 "
                        "adam_beta2 adam_eps clip_grad_norm weight_decay seed precision "
                        "cpu_precision batch_shapes pad_multiple ema_decay sample_alpha "
                        "sample_nbest long_weight long_tokens case_augment "
                        "term_annotation guided_alignment guided_alignment_layer "
                        "guided_alignment_head guided_alignment_cost"),
        *_keys("decode", "strategy beam_size length_penalty word_reward word_reward_bound "
                         "max_len_a max_len_b batch_tokens n_best temperature top_k top_p "
                         "seed engine quantize cpu_gemm precision threads split_sentences "
                         "split protect truecase no_repeat_ngram retry_repeats glossary "
                         "glossary_method"),
        PLAN],
    Rule.FREE: _keys("train", "max_minutes device threads compile cuda_graphs log_every "
                              "valid_every save_every keep_last average_last valid_bleu_lines "
                              "early_stop_metric patience init_from tensorboard"),
}
_RULE_OF = {key: rule for rule, keys in RULES.items() for key in keys}
# Free keys a resume uses for its own session and does not record for the next.
SESSION_ONLY = ("max_minutes", "device", "threads")


def rule_of(key: str, decaying: bool = True) -> Rule:
    """What a resume may do with `key` (a dotted config key, or `PLAN`); `decaying`: the
    run's schedule decays to an end at train.max_steps (linear, cosine). A key no table
    names (a new one) needs consent: a resume never changes it silently."""
    if key == "train.max_steps" and not decaying:
        return Rule.FREE
    return _RULE_OF.get(key.split("[]", 1)[0], Rule.CONSENT)


def decays(*schedules: Any) -> bool:
    """Whether one of the `schedules` (train.schedule values) decays to an end at
    train.max_steps (noam does not)."""
    return any(schedule != "noam" for schedule in schedules)


class Change(NamedTuple):
    key: str
    old: Any
    new: Any
    rule: Rule

    def __str__(self) -> str:
        return f"{self.key}: {_shown(self.old)} -> {_shown(self.new)}"


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def config_changes(recorded: dict[str, Any], cfg: Config) -> list[Change]:
    """Every key whose value `cfg` changes from the `recorded` config (a `Config.to_dict()`
    as run.json keeps it, whatever its values), with its rule. A key the record lacks was
    added to transcli after the run was recorded, and the run trained as its default
    does (a new key's default is the behaviour before it): that is the value it had."""
    new, defaults = (json.loads(json.dumps(c.to_dict())) for c in (cfg, Config()))
    old_train = recorded.get("train") if isinstance(recorded.get("train"), dict) else {}
    decaying = decays(old_train.get("schedule", "noam"), new["train"]["schedule"])
    found = []
    for section, values in new.items():
        old_values = recorded.get(section) if isinstance(recorded.get(section), dict) else {}
        for key, value in values.items():
            old = old_values[key] if key in old_values else defaults[section][key]
            if old != value:
                dotted = f"{section}.{key}"
                found.append(Change(dotted, old, value, rule_of(dotted, decaying)))
    return found


def judge(run: RunDir, changes: list[Change], allowed: bool) -> list[str]:
    """Refuse what a resume may not change (naming each key), or, with `allowed`
    (--allow-changes), the lines that say what changes from here on."""
    match = [str(c) for c in changes if c.rule is Rule.MATCH]
    if match:
        raise UserError(f"{run.path}: --resume refused: the model config differs from "
                        f"{run.path / CONFIG_FILE} ({', '.join(match)})")
    consent = [str(c) for c in changes if c.rule is Rule.CONSENT]
    if consent and not allowed:
        raise UserError(f"{run.path}: --resume continues a run exactly, but these settings "
                        f"differ from the run's recipe (from -c, --set or an edit of its "
                        f"{CONFIG_FILE}): {'; '.join(consent)}. Leave them out to continue "
                        f"as the run was, or add --allow-changes to go on with them")
    return [f"--allow-changes: from here on {change}" for change in consent]


def recorded_config(previous: Config, cfg: Config) -> Config:
    """A resumed run's config to record: as given, but what was this session's alone,
    which a later `--resume` without --config would otherwise inherit: its `SESSION_ONLY`
    settings, and a smaller max_steps where that is free (stop early this time)."""
    kept: dict[str, Any] = {key: getattr(previous.train, key) for key in SESSION_ONLY}
    decaying = decays(previous.train.schedule, cfg.train.schedule)
    if rule_of("train.max_steps", decaying) is Rule.FREE:
        kept["max_steps"] = max(previous.train.max_steps, cfg.train.max_steps)
    return replace(cfg, train=replace(cfg.train, **kept))


def train_config(config: Optional[Path], run: RunDir, resume: bool,
                 overrides: Optional[list[Override]] = None,
                 flags: Optional[dict[str, Any]] = None) -> Config:
    """The config `train` runs: the file given; else, when resuming, the run's own
    `config.yaml` (so `--resume` alone continues with the settings the run had); else the
    defaults; with the command line's `flags` and `overrides`. `--resume` alone where no
    run is (a mistyped --out) is refused rather than starting the paper's base model;
    with --config it starts the run (the start-or-continue line of a job script)."""
    if config is not None or not resume:
        return load_config(config, overrides, flags)
    if run.existing_config is None:
        raise UserError(f"{run.path}: --resume: no run to continue here (no {CONFIG_FILE}); "
                        f"check --out, or start a run with --config")
    return with_overrides(run.existing_config, overrides, flags, str(run.path / CONFIG_FILE))


# ----------------------------------------------------------------------------- the start


@dataclass(frozen=True)
class StartOptions:
    """What `train`'s command line asks of the run dir."""

    resume: bool = False  # --resume: continue the run there
    force: bool = False  # --force: start afresh over the run there
    allow_changes: bool = False  # --allow-changes: a resume may change named settings


@dataclass
class Start:
    """Where a session starts, every check passed: a new run (step 0, maybe from another
    run's weights) or a resume from step `step`. `notes`: what the first lines say."""

    run: RunDir
    cfg: Config
    options: StartOptions
    step: int
    init: Optional[InitSource]
    identity: dict[str, Any]  # what run.json records of the data, the model, the origin
    recorded: dict[str, Any]  # the run's config as run.json recorded it ({} for a new run)
    notes: list[str] = field(default_factory=list)
    resume_line: str = ""  # the command line that continues the run where it stops

    @property
    def vocab_size(self) -> int:
        return self.identity["vocab_size"]

    @property
    def tokenizer_sha256(self) -> str:
        return self.identity["tokenizer_sha256"]

    def headline(self) -> str:
        """Where the session starts, as its first line says it."""
        where = f"resuming at step {self.step}" if self.step else "new run"
        origin = f" from the weights of {self.init.weights}" if self.init is not None else ""
        return f"{where}{origin} in {self.run.path}"

    def config_to_record(self) -> Config:
        """What config.yaml and run.json keep of this session's config."""
        previous = self.run.existing_config
        if not self.options.resume or previous is None:
            return self.cfg
        cfg = recorded_config(previous, self.cfg)
        if self.step:  # the run's origin stays its own (`_unused_init`)
            cfg = replace(cfg, train=replace(cfg.train, init_from=previous.train.init_from))
        return cfg

    def load_init(self, model: torch.nn.Module) -> None:
        """Fine-tuning: the weights the run starts from (before the optimizer is made: a
        weight average starts from them)."""
        if self.init is not None:
            load_weights(model, self.init.weights, self.tokenizer_sha256)

    def record(self, data: PreparedDir, dist: Dist, log: MetricsLog) -> None:
        """Once every check has passed (rank 0, the others waiting): clear what a resume
        redoes (or a new run replaces), record the run (`write_run_files`), cut the
        metrics log back to where the session starts."""
        dist.barrier()
        if dist.main:
            resume = self.options.resume
            if resume:
                discard_after(self.run.path, self.step)
            write_run_files(self.run, self.config_to_record(), self.identity, data,
                            fresh=not resume)
            remove_stale_caches(self.run.path)  # of the steps discarded, or the run replaced
            if resume:
                log.resume(self.step, lambda line: say(f"warning: {line}"))
        dist.barrier()

    def restore(self, model: torch.nn.Module, opt: Optimization, plan: BatchPlan
                ) -> Progress:
        """Load step `step`: its weights into `model`, its training state into `opt` and
        the random generators; the progress it had, its data position checked against
        `plan` and its early-stopping record against this session's metric. A state that
        does not fit (another program's file, a truncated edit, a wrong-sized Adam moment)
        is refused in one line, by the checks of torch and of what restores it."""
        if not self.step:
            return Progress()
        load_weights(model, step_path(self.run.path, self.step), self.tokenizer_sha256)
        path = state_path(self.run.path, self.step)
        state = load_state(self.run.path, self.step)
        try:
            if state["step"] != self.step:
                raise ValueError(f"it says step {state['step']}, its file name step {self.step}")
            progress = Progress.from_state(state)
            opt.load_state(state)
            set_rng_state(state["rng"])
        except Exception as exc:  # torch, numpy and the dataclasses raise assorted types
            reason = f"no {exc}" if isinstance(exc, KeyError) else first_line(exc)
            raise UserError(f"{path}: not a usable training state ({reason}); resume from an "
                            f"earlier checkpoint or start afresh with --force") from None
        progress.position = self._position(progress.position, state.get("plan"), plan, path)
        progress.best = self._best(progress.best)
        return progress

    def _position(self, position: StreamPosition, saved: Any, plan: BatchPlan,
                  path: Path) -> StreamPosition:
        """The saved data position, if the plan it counts in is `plan`; else (a batch
        setting changed, or transcli's batching) moved to the same share of its epoch,
        with consent, or the epoch started over when the saved plan is unknown."""
        epoch, index = position.epoch, position.index
        if not index:
            return position  # an epoch's start is the same in every plan
        now = plan.fingerprint(epoch)
        count = now["batches"]
        known = (isinstance(saved, dict) and isinstance(saved.get("batches"), int)
                 and saved.get("epoch") == epoch and saved["batches"] > 0)
        if known and saved == now:
            return position
        if not known and index < count:
            self.notes.append(f"note: {path.name} records no batch plan (an older transcli "
                              f"saved it): epoch {epoch} goes on at batch {index} of the "
                              f"{count} it has now")
            return position
        then = saved["batches"] if known else 0
        differs = (f"the batch plan of epoch {epoch} differs from the one step {self.step} "
                   f"was trained with ({then or 'unknown'} batches then, {count} now)")
        if rule_of(PLAN) is not Rule.FREE and not self.options.allow_changes:
            raise UserError(f"{self.run.path}: --resume continues a run exactly, but {differs}: "
                            f"a batch setting changed, or the batching of transcli did. Add "
                            f"--allow-changes to go on from the same share of the epoch")
        moved = index * count // then if known else 0
        where = "the same share of the epoch" if known else "the epoch starts over"
        self.notes.append(f"--allow-changes: {differs}: it goes on at batch {moved} ({where})")
        return StreamPosition(epoch, moved)

    def _best(self, best: Best) -> Best:
        """The early-stopping record, started over when it follows another metric than
        this session's (train.early_stop_metric, train.valid_bleu_lines); a record saved
        before it named its metric followed the run's recorded settings."""
        old = self.recorded.get("train")
        old = old if isinstance(old, dict) else {}
        before = best.metric or best_metric(
            old.get("early_stop_metric", TrainConfig.early_stop_metric),
            old.get("valid_bleu_lines", TrainConfig.valid_bleu_lines))
        now = best_metric(self.cfg.train.early_stop_metric, self.cfg.train.valid_bleu_lines)
        if before == now or best.value is None:
            return replace(best, metric=now)
        self.notes.append(f"note: the best checkpoint now follows valid {now.upper()}, not "
                          f"{before.upper()}: its record starts over, and "
                          f"{CHECKPOINT_DIR}/{BEST_FILE} is replaced at the next validation")
        return Best(metric=now)


def start_session(cfg: Config, data: PreparedDir, run: RunDir, options: StartOptions) -> Start:
    """Check that the run dir takes this session (a new run, or a resume of the run there
    on the same data and model, changing only what it may), that fine-tuning's weights
    fit the data and the model; say where training starts. Reads only: every rank may
    call it before rank 0 writes anything."""
    init = init_source(cfg, data, run, options.resume)
    identity = {"data_hash": data.data_hash, "vocab_size": data.vocab_size,
                "tokenizer_sha256": data.tokenizer.sha256,
                "model": cfg.fingerprint("model"), **origin_record(init, run, options.resume)}
    start = Start(run, cfg, options, 0, init, identity, {}, resume_line=(
        f"transcli train --data {shlex.quote(str(data.dir))} "
        f"--out {shlex.quote(str(run.path))} --resume"))
    if not options.resume:
        _check_new_run(run, options.force)
        return start
    if run.record is None:
        if dir_entries(run.path):
            raise UserError(f"{run.path}: --resume: not a transcli run dir (no {RUN_FILE})")
        return start
    if not has_trained(run.path):  # nothing saved that other data or shapes could spoil
        return start
    _check_same_data(run, identity, data.dir)
    start.recorded = _recorded(run)
    changes = config_changes(start.recorded, cfg)
    start.step = _resume_step(run)  # 0: nothing saved to go on from, a recipe is not changed
    start.notes += judge(run, changes if start.step else
                         [c for c in changes if c.rule is Rule.MATCH], options.allow_changes)
    start.notes += _unused_init(start)
    return start


def _unused_init(start: Start) -> list[str]:
    """A resume from a saved step loads no other run's weights: a train.init_from other
    than the run's own is said to be unused (and not recorded: `config_to_record`)."""
    spec = start.cfg.train.init_from
    old = start.recorded.get("train") if isinstance(start.recorded.get("train"), dict) else {}
    if not start.step or spec is None or spec == old.get("init_from"):
        return []
    return [f"note: --init-from {spec} is not used: the run goes on from its own step "
            f"{start.step}; fine-tuning from those weights starts a new run (another --out)"]


def _recorded(run: RunDir) -> dict[str, Any]:
    """The run's config as run.json recorded it (config.yaml for a run from before
    run.json kept it)."""
    recorded = (run.record or {}).get("config")
    if isinstance(recorded, dict):
        return recorded
    if run.existing_config is None:
        raise UserError(f"{run.path}: --resume: no {CONFIG_FILE} to compare the model with")
    return run.existing_config.to_dict()


def _resume_step(run: RunDir) -> int:
    """The newest step with weights and training state (0: logged, stopped before its
    first save: start over); weights without a state to go on from are refused."""
    steps = complete_steps(run.path)
    weights = step_checkpoints(run.path) or any(
        (run.path / CHECKPOINT_DIR / name).is_file() for name in (BEST_FILE, AVG_FILE))
    if not steps and weights:  # never start over on them
        raise UserError(f"{run.path}: --resume: no step has both its weights and its training "
                        f"state (step-N.state.pt) in {CHECKPOINT_DIR}/, so there is nothing to "
                        f"continue from; the weights there still translate. Start afresh with "
                        f"--force (it deletes them) or in another --out")
    return steps[-1] if steps else 0


def _check_new_run(run: RunDir, force: bool) -> None:
    """A new run: into an empty dir, over a run only with `force` (or one that never
    saved a step), beside other files only with `force` and never over one with the
    name of a file a run writes."""
    entries = dir_entries(run.path)
    if run.record is not None:
        if has_trained(run.path) and not force:
            raise UserError(f"{run.path}: already holds a run; use --resume to continue it "
                            f"or --force to start afresh (which deletes its checkpoints)")
        return
    if entries and not force:
        raise UserError(f"{run.path}: is not empty and holds files train did not write (e.g. "
                        f"'{entries[0]}'); choose another --out, or pass --force to write beside "
                        f"them (train never deletes files it did not write)")
    folder = run.path / CHECKPOINT_DIR
    clash = [name for name in RUN_FILES if name in entries]
    if folder.is_dir() and any(folder.iterdir()):
        clash.append(CHECKPOINT_DIR)
    if clash:
        raise UserError(f"{run.path / clash[0]}: exists and was not written by transcli train "
                        f"(no {RUN_FILE} beside it); refusing to overwrite it, even with --force")


def _check_same_data(run: RunDir, identity: dict[str, Any], data_dir: Path) -> None:
    """The run's data, vocabulary and tokenizer must be those of `identity`."""
    old = run.record or {}
    if old.get("data_hash") != identity["data_hash"]:
        raise UserError(f"{run.path}: --resume refused: the run was trained on a different "
                        f"prepared dataset than {data_dir} (data_hash "
                        f"{str(old.get('data_hash'))[:12]} != {str(identity['data_hash'])[:12]})")
    if old.get("vocab_size") != identity["vocab_size"]:
        raise UserError(f"{run.path}: --resume refused: the run's vocabulary has "
                        f"{old.get('vocab_size')} pieces, {data_dir} has {identity['vocab_size']}")
    if old.get("tokenizer_sha256", identity["tokenizer_sha256"]) != identity["tokenizer_sha256"]:
        raise UserError(f"{run.path}: --resume refused: {data_dir / TOKENIZER_FILE} is not the "
                        f"tokenizer the run was trained with (its SHA-256 differs from "
                        f"{RUN_FILE}'s record)")


# ----------------------------------------------------------------------------- init-from


@dataclass(frozen=True)
class InitSource:
    """The run whose weights a new run starts from (`train.init_from`), and the file."""

    run: Path
    weights: Path


def resolve_init(spec: str) -> InitSource:
    """RUN (its best checkpoint, else the last), RUN/CHECKPOINT (best, last, avg or a step
    number) or a weights file inside a run dir."""
    path = Path(spec)
    if path.is_dir():
        if not (path / CONFIG_FILE).is_file():
            raise UserError(f"--init-from {spec}: not a run directory (no {CONFIG_FILE})")
        return InitSource(path, resolve_checkpoint(path, "best"))
    if path.is_file():
        run = path.parent.parent if path.parent.name == CHECKPOINT_DIR else path.parent
        if not (run / CONFIG_FILE).is_file():
            raise UserError(f"--init-from {spec}: a weights file must lie in a run directory "
                            f"(its {CONFIG_FILE} and {TOKENIZER_FILE} are needed)")
        return InitSource(run, path)
    if (path.parent / CONFIG_FILE).is_file():
        return InitSource(path.parent, resolve_checkpoint(path.parent, path.name))
    raise UserError(f"--init-from {spec}: not found (give RUN, RUN/CHECKPOINT with CHECKPOINT "
                    f"best, last, avg or a step number, or a weights file)")


def init_source(cfg: Config, data: PreparedDir, run: RunDir, resume: bool
                ) -> Optional[InitSource]:
    """The checked weights a run starts from (fine-tuning): None without
    `train.init_from`, and for a resume that has checkpoints of its own (they win). Their
    vocabulary must be the data's, the weights trained with it, the model's shape the
    same."""
    spec = cfg.train.init_from
    if spec is None or (resume and complete_steps(run.path)):
        return None
    source = resolve_init(spec)
    origin = RunDir(source.run)
    difference = vocabulary_difference(origin.tokenizer, data.tokenizer)
    if difference:
        raise UserError(f"--init-from {source.run}: its vocabulary differs from {data.dir}'s "
                        f"({difference}); fine-tuning needs data prepared with the same "
                        f"sentencepiece model")
    trained_with = (stored_metadata(source.weights) or {}).get(TOKENIZER_KEY)
    if trained_with is not None and trained_with != data.tokenizer.sha256:
        raise UserError(f"--init-from {source.weights}: these weights were trained with "
                        f"another tokenizer than {data.dir}'s (SHA-256 {str(trained_with)[:12]}, "
                        f"the data's {data.tokenizer.sha256[:12]}): they belong to another run")
    changed = [str(c) for c in config_changes(origin.recorded_config.to_dict(), cfg)
               if c.rule is Rule.MATCH]
    if changed:
        raise UserError(f"--init-from {source.run}: the model config differs from its "
                        f"{CONFIG_FILE} ({', '.join(changed)}); train with that run's model "
                        f"settings, e.g. -c {source.run / CONFIG_FILE}")
    return source


def vocabulary_difference(a: Tokenizer, b: Tokenizer) -> Optional[str]:
    """None when the two sentencepiece models are the same file, else what differs."""
    if a.model_bytes == b.model_bytes:
        return None
    if a.vocab_size != b.vocab_size:
        return f"{a.vocab_size} pieces against {b.vocab_size}"
    for i in range(a.vocab_size):
        if a.sp.IdToPiece(i) != b.sp.IdToPiece(i):
            return f"piece {i} is {a.sp.IdToPiece(i)!r} against {b.sp.IdToPiece(i)!r}"
    return "the same pieces with other scores or settings, so text splits differently"


def origin_record(source: Optional[InitSource], run: RunDir, resume: bool) -> dict[str, Any]:
    """What run.json records of the run's start: the weights file it was initialised
    from (kept from the earlier run.json when a resume does not load them again)."""
    if source is not None:
        return {"init_from": str(source.weights.resolve())}
    earlier = (run.record if resume else None) or {}
    return {"init_from": earlier["init_from"]} if earlier.get("init_from") else {}
