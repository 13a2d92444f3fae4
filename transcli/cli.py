"""The command line: parses options, maps them to typed config values, calls one
library function.

Precedence: YAML file < command-line flags < `--set section.key=value`.
Any `UserError` becomes one line on stderr and exit status 1.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal, Optional

import typer

from transcli.config import load_config

app = typer.Typer(
    help="Train and run an English-to-Spanish Transformer.\n\nAn option whose default is a "
    "config key, e.g. (train.max_steps), sets that key; left out, the config's value holds.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ConfigOpt = typer.Option(None, "--config", "-c", help="YAML config file (defaults when omitted).")
SetOpt = typer.Option(None, "--set", help="Override any setting: section.key=value (repeatable).")
Device = Optional[Literal["auto", "cpu", "cuda"]]
EngineOpt = typer.Option(
    None, help="torch, or ct2: CTranslate2 (exported into the run dir on first use).",
    show_default="decode.engine")
Int8Opt = typer.Option(False, "--int8", help="int8 weights (decode.quantize=int8).")


def _device(default: str = "auto") -> Any:
    """--device, alike on every command (train's default is its config key)."""
    return typer.Option(None, "--device", show_default=default,
                        help="Where to run: auto (CUDA when present), cpu or cuda.")


def _setting(key: str, help: str, *names: str) -> Any:
    """An option that sets config key `key`; --help shows that key as its default."""
    return typer.Option(None, *names, help=help, show_default=key)


def _given(flags: dict[str, Any]) -> list[tuple[str, Any]]:
    """Typed (key, value) overrides for the flags that were given."""
    return [(key, value) for key, value in flags.items() if value is not None]


CheckpointOpt = typer.Option("best", help="best, last, avg, a step number, or a checkpoint path.")
# Decoding options, alike in translate, evaluate and explain.
GreedyOpt = typer.Option(
    False, help="Greedy search (same output as --beam-size 1 without --word-reward).")
StrategyOpt = _setting(
    "decode.strategy", "beam, greedy or sample (decode.temperature, top_k, top_p, seed).")
BeamOpt = _setting("decode.beam_size", "Beam width (implies --strategy beam).")
LengthPenaltyOpt = _setting(
    "decode.length_penalty",
    "GNMT length penalty alpha: score = log-prob / ((5 + len) / 6) ** alpha.")
WordRewardOpt = _setting(
    "decode.word_reward",
    "Added to a hypothesis' score per target token: > 0 counters beam search's short "
    "translations (torch engine).")
WordRewardBoundOpt = _setting(
    "decode.word_reward_bound",
    "The word reward counts at most this x source tokens (+ EOS) target tokens; 0: no bound.")
MaxLenAOpt = _setting(
    "decode.max_len_a", "Max target tokens = a * source tokens + b (capped by the model).")
MaxLenBOpt = _setting(
    "decode.max_len_b", "Max target tokens = a * source tokens + b (capped by the model).")
BatchTokensOpt = _setting(
    "decode.batch_tokens", "Source tokens per batch, padding included, before beams.")
SplitOpt = typer.Option(
    False, "--split-sentences",
    help="Translate each sentence of a multi-sentence line apart and join them "
    "(decode.split_sentences).")


def _decode_flags(greedy: bool, strategy: Optional[str], beam_size: Optional[int],
                  length_penalty: Optional[float] = None, max_len_a: Optional[float] = None,
                  max_len_b: Optional[int] = None, batch_tokens: Optional[int] = None,
                  split_sentences: bool = False, **more: Any) -> list[tuple[str, Any]]:
    """Typed `decode.*` overrides for the decoding flags that were given; `more` maps
    other decode keys to values (None: not given)."""
    if greedy or strategy is None and beam_size is not None:
        strategy = "greedy" if greedy else "beam"
    return _given({"decode.strategy": strategy, "decode.beam_size": beam_size,
                   "decode.length_penalty": length_penalty, "decode.max_len_a": max_len_a,
                   "decode.max_len_b": max_len_b, "decode.batch_tokens": batch_tokens,
                   "decode.split_sentences": split_sentences or None,
                   **{f"decode.{key}": value for key, value in more.items()}})


def _version(value: bool) -> None:
    if value:
        from transcli import __version__

        print(f"transcli {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Train and run an English-to-Spanish Transformer."""


@app.command()
def prepare(
    config: Optional[Path] = ConfigOpt,
    src_file: Optional[Path] = typer.Option(None, help="English side, one sentence per line."),
    tgt_file: Optional[Path] = typer.Option(
        None, help="Spanish side, line-aligned with --src-file."),
    tsv: Optional[Path] = typer.Option(None, help="TSV: English in column 1, Spanish in column 2."),
    dataset: Optional[str] = typer.Option(
        None, help="Hugging Face dataset: hub name, local json/jsonl/csv/parquet file, "
        "or save_to_disk directory."),
    subset: Optional[str] = typer.Option(None, help="Dataset configuration, e.g. en-es."),
    split: Optional[str] = typer.Option(None, help="Dataset split.", show_default="train"),
    src_column: Optional[str] = typer.Option(
        None, help="Dataset column holding English (default: a `translation` column, else 'en')."),
    tgt_column: Optional[str] = typer.Option(
        None, help="Dataset column holding Spanish (default: a `translation` column, else 'es')."),
    file: Optional[Path] = typer.Option(
        None, help="A one-file corpus in another format, e.g. a .tmx translation memory."),
    format: Optional[str] = typer.Option(
        None, help="Format of --file when its suffix does not tell (e.g. tmx).",
        show_default="from the suffix"),
    out: Optional[Path] = _setting("data.out", "Output directory.", "--out", "-o"),
    force: bool = typer.Option(
        False, help="Write into a non-empty --out: replaces an earlier prepare's files, "
        "never deletes others."),
    skip_invalid: bool = typer.Option(
        False, help="Skip and count malformed lines instead of stopping."),
    tokenizer_model: Optional[Path] = _setting(
        "data.tokenizer_model", "Encode with this sentencepiece model (a file, or a run or "
        "prepared dir) instead of training one: data to fine-tune that run on.",
        "--tokenizer-model"),
    sets: Optional[list[str]] = SetOpt,
) -> None:
    """Read a parallel corpus, clean and split it, train sentencepiece, encode everything."""
    from transcli.prepare import prepare as run_prepare
    from transcli.prepare import source_from_flags

    source = source_from_flags({
        "src_file": src_file, "tgt_file": tgt_file, "tsv": tsv, "dataset": dataset,
        "subset": subset, "split": split, "src_column": src_column, "tgt_column": tgt_column,
        "file": file, "format": format})
    flags = {"data.out": out, "data.skip_invalid": skip_invalid or None,
             "data.train": source and [source], "data.tokenizer_model": tokenizer_model}
    cfg = load_config(config, sets, flags)
    run_prepare(cfg, Path(cfg.data.out), force=force)


@app.command()
def train(
    config: Optional[Path] = ConfigOpt,
    data: Path = typer.Option(..., help="Directory written by `transcli prepare`."),
    out: Path = typer.Option(..., "--out", "-o", help="Run directory (checkpoints, logs)."),
    resume: bool = typer.Option(
        False, help="Continue the run in --out where it stopped (with its config.yaml when "
        "--config is not given)."),
    force: bool = typer.Option(False, help="Start afresh in an --out holding another run."),
    max_steps: Optional[int] = _setting("train.max_steps", "Stop after this many updates."),
    save_every: Optional[int] = _setting("train.save_every", "Checkpoint every N updates."),
    valid_every: Optional[int] = _setting("train.valid_every", "Validate every N updates."),
    seed: Optional[int] = _setting("train.seed", "Random seed."),
    device: Device = _device("train.device"),
    init_from: Optional[str] = _setting(
        "train.init_from", "Fine-tune: start from another run's weights, RUN or "
        "RUN/CHECKPOINT (best, last, avg, a step) or a weights file; same vocabulary and "
        "model shape, new optimizer and schedule."),
    sets: Optional[list[str]] = SetOpt,
) -> None:
    """Train the Transformer on a prepared dataset, with checkpoints and validation.

    SIGINT/SIGTERM finish the current update, save and exit 0. Under
    `torchrun --nproc_per_node N -m transcli train ...` each process trains on
    every N-th batch (DistributedDataParallel).
    """
    from transcli.rundir import train_config_path
    from transcli.train import train as run_train

    flags = {"train.max_steps": max_steps, "train.save_every": save_every,
             "train.valid_every": valid_every, "train.seed": seed, "train.device": device,
             "train.init_from": init_from}
    cfg = load_config(train_config_path(config, out, resume), sets, flags)

    run_train(cfg, data_dir=data, run_dir=out, resume=resume, force=force)


@app.command()
def translate(
    model: Path = typer.Option(..., "--model", "-m", help="Run directory written by `train`."),
    checkpoint: str = CheckpointOpt,
    input: str = typer.Option("-", "--input", "-i", help="Input file, or - for stdin."),
    output: str = typer.Option("-", "--output", "-o", help="Output file, or - for stdout."),
    greedy: bool = GreedyOpt,
    strategy: Optional[str] = StrategyOpt,
    beam_size: Optional[int] = BeamOpt,
    length_penalty: Optional[float] = LengthPenaltyOpt,
    word_reward: Optional[float] = WordRewardOpt,
    word_reward_bound: Optional[float] = WordRewardBoundOpt,
    max_len_a: Optional[float] = MaxLenAOpt,
    max_len_b: Optional[int] = MaxLenBOpt,
    batch_tokens: Optional[int] = BatchTokensOpt,
    n_best: Optional[int] = _setting(
        "decode.n_best", "K > 1 writes K lines per input line as TSV: line index (from 0), "
        "hypothesis, score (length-penalised log-prob, plus any word reward); K <= beam "
        "size, or K samples."),
    split_sentences: bool = SplitOpt,
    attention: Optional[Path] = typer.Option(
        None, help="Write each line's encoder-decoder attention heatmaps (PNG) and "
        "alignment (Pharaoh i-j) into this directory."),
    engine: Optional[str] = EngineOpt,
    int8: bool = Int8Opt,
    device: Device = _device(),
    sets: Optional[list[str]] = SetOpt,
) -> None:
    """Translate English lines to Spanish, in input order, from a file or stdin.

    At a terminal, each line is translated as Enter is pressed (Ctrl-D or Ctrl-C ends);
    files and pipes are read in chunks. Defaults come from the run's config (decode
    section). An empty line gives an empty line; a line too long for the model is
    truncated, with one warning at the end.
    """
    from transcli.translate import translate_file

    overrides = _decode_flags(greedy, strategy, beam_size, length_penalty, max_len_a,
                              max_len_b, batch_tokens, split_sentences, n_best=n_best,
                              word_reward=word_reward, word_reward_bound=word_reward_bound,
                              engine=engine,
                              quantize="int8" if int8 else None)
    translate_file(model, checkpoint, input, output, [*overrides, *(sets or [])],
                   device or "auto", attention)


@app.command()
def evaluate(
    ref: list[Path] = typer.Option(..., "--ref", "-r", help="Reference file (repeatable)."),
    hyp: Optional[Path] = typer.Option(None, help="Hypotheses to score (instead of --model)."),
    model: Optional[Path] = typer.Option(None, "--model", "-m", help="Run dir to translate with."),
    src: Optional[Path] = typer.Option(None, help="Source file to translate (with --model)."),
    checkpoint: str = CheckpointOpt,
    hyp_out: Optional[Path] = typer.Option(None, help="Write the scored hypotheses here."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object."),
    greedy: bool = GreedyOpt,
    strategy: Optional[str] = StrategyOpt,
    beam_size: Optional[int] = BeamOpt,
    length_penalty: Optional[float] = LengthPenaltyOpt,
    word_reward: Optional[float] = WordRewardOpt,
    word_reward_bound: Optional[float] = WordRewardBoundOpt,
    max_len_a: Optional[float] = MaxLenAOpt,
    max_len_b: Optional[int] = MaxLenBOpt,
    batch_tokens: Optional[int] = BatchTokensOpt,
    split_sentences: bool = SplitOpt,
    engine: Optional[str] = EngineOpt,
    int8: bool = Int8Opt,
    device: Device = _device(),
    sets: Optional[list[str]] = SetOpt,
) -> None:
    """Score translations with sacreBLEU (BLEU, chrF and TER, with their signatures),
    translating --src first with --model.

    With --model: a progress bar on stderr, and translate's decoding options.
    """
    from transcli.evaluate import evaluate_cli

    overrides = _decode_flags(greedy, strategy, beam_size, length_penalty, max_len_a,
                              max_len_b, batch_tokens, split_sentences, engine=engine,
                              word_reward=word_reward, word_reward_bound=word_reward_bound,
                              quantize="int8" if int8 else None)
    evaluate_cli(ref=ref, hyp=hyp, model=model, src=src, checkpoint=checkpoint,
                 hyp_out=hyp_out, as_json=json_out, device=device or "auto",
                 overrides=[*overrides, *(sets or [])])


@app.command()
def score(
    model: Path = typer.Option(..., "--model", "-m", help="Run directory written by `train`."),
    src: Path = typer.Option(..., help="English sentences, one per line."),
    tgt: Path = typer.Option(..., help="Their Spanish translations, line by line."),
    output: str = typer.Option("-", "--output", "-o", help="Output TSV file, or - for stdout."),
    checkpoint: str = CheckpointOpt,
    batch_tokens: Optional[int] = _setting(
        "decode.batch_tokens", "Tokens per batch and side, padding included."),
    device: Device = _device(),
) -> None:
    """Log-probability of given translations under the model (forced decoding).

    One TSV line per pair, in input order: line index (from 0), total log-prob,
    log-prob per token, target tokens (end of sentence included). For filtering
    corpora and checking references.
    """
    from transcli.score import score_files

    score_files(model, checkpoint, src, tgt, output, batch_tokens, device or "auto")


@app.command()
def explain(
    text: list[str] = typer.Argument(..., help="English sentence(s) to translate and explain."),
    model: Path = typer.Option(..., "--model", "-m", help="Run directory written by `train`."),
    out: Path = typer.Option(Path("attention"), "--out", "-o",
                             help="Directory for the heatmaps and alignments."),
    checkpoint: str = CheckpointOpt,
    greedy: bool = GreedyOpt,
    beam_size: Optional[int] = BeamOpt,
    device: Device = _device(),
    sets: Optional[list[str]] = SetOpt,
) -> None:
    """Translate sentences and show where the model looked (attention heatmaps).

    Writes encoder-decoder attention heatmaps (PNG: all layers averaged, and one panel
    per layer) and the alignment they imply (Pharaoh i-j) into --out; prints the pieces
    and the aligned pairs.
    """
    from transcli.explain import explain_texts

    overrides = _decode_flags(greedy, None, beam_size, n_best=1)
    explain_texts(model, checkpoint, text, out, [*overrides, *(sets or [])], device or "auto")


@app.command()
def info(
    run: Path = typer.Argument(..., help="Run directory written by `train`."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """What a run is: model, training progress, checkpoints, config.

    Parameters, vocabulary, model shape, steps and tokens trained, best validation,
    checkpoints present, and the settings that differ from the defaults (--json: the
    whole config).
    """
    from transcli.info import print_info

    print_info(run, json_out)


@app.command("config")
def config_command(
    list_keys: bool = typer.Option(
        False, "--list", help="Every key with its type, default and meaning."),
    config: Optional[Path] = ConfigOpt,
    sets: Optional[list[str]] = SetOpt,
) -> None:
    """Show config keys (--list) or a resolved config.

    --list: every key with its type, default and meaning. Without it: the defaults, or
    --config with --set applied, as the YAML `train` would run with.
    """
    from transcli.configkeys import print_config

    print_config(list_keys, config, list(sets or []))


@app.command()
def export(
    model: Path = typer.Option(..., "--model", "-m", help="Run directory written by `train`."),
    format: str = typer.Option(
        ..., "--format", "-f", help="ct2 (CTranslate2) or hf (Hugging Face MarianMTModel)."),
    out: Path = typer.Option(..., "--out", "-o", help="Directory to write."),
    checkpoint: str = typer.Option(
        "best", help="best, last, avg, a step number, or a checkpoint path."),
    quantize: Optional[str] = typer.Option(
        None, help="ct2 weights: int8, int16 or float16 (default: float32)."),
    force: bool = typer.Option(
        False, help="Write into a non-empty --out: replaces the files an export writes, "
        "never deletes others."),
) -> None:
    """Export a checkpoint for another inference library: CTranslate2 or transformers.

    The exported model gives transcli's greedy translations; what a format cannot
    represent exactly is refused. Needs the package's ct2 or hf extra (see the README).
    """
    from transcli.export import export_run

    export_run(model, format, out, checkpoint, quantize, force)
    print(f"transcli: exported {format} model to {out}", file=sys.stderr)


def main() -> None:
    from transcli.exits import run_command

    sys.exit(run_command(app))
