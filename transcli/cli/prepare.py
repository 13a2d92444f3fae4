"""`transcli prepare`: a parallel corpus in, a prepared dir out."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional

import typer

from transcli.cli.options import ConfigOpt, SetOpt, setting
from transcli.config.formats import SourceKeyError, source_format
from transcli.config.loading import load_config
from transcli.config.schema import DataConfig, SourceConfig
from transcli.system.errors import UserError


def prepare(
    config: Optional[Path] = ConfigOpt,
    src_file: Optional[Path] = typer.Option(None, help="English side, one sentence per line."),
    tgt_file: Optional[Path] = typer.Option(
        None, help="Spanish side, line-aligned with --src-file."),
    tsv: Optional[Path] = typer.Option(None, help="TSV: English in column 1, Spanish in column 2."),
    dataset: Optional[str] = typer.Option(
        None, help="Hugging Face dataset: hub name, local json/jsonl/csv/parquet file, "
        "save_to_disk directory, or a folder of such data files."),
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
    out: Optional[Path] = setting("data.out", "Output directory.", "--out", "-o"),
    force: bool = typer.Option(
        False, "--force", help="Write into a non-empty --out: replaces an earlier prepare's files, "
        "never deletes others."),
    skip_invalid: bool = typer.Option(
        False, "--skip-invalid", help="Skip and count malformed lines instead of stopping."),
    tokenizer_model: Optional[Path] = setting(
        "data.tokenizer_model", "Encode with this sentencepiece model (a file, or a run or "
        "prepared dir) instead of training one: data to fine-tune that run on.",
        "--tokenizer-model"),
    sets: Optional[list[str]] = SetOpt,
) -> None:
    """Read a parallel corpus, clean and split it, train sentencepiece, encode everything.

    Examples:

    \b
      transcli prepare -c configs/cpu-1h.yaml --src-file train.en --tgt-file train.es --out prep
      transcli prepare -c configs/cpu-1h.yaml --tsv pairs.tsv --out prep
      transcli prepare -c configs/cpu-1h.yaml --file memory.tmx --out prep
    """
    from transcli.data.prepare import prepare as run_prepare

    source = source_from_flags({
        "src_file": src_file, "tgt_file": tgt_file, "tsv": tsv, "dataset": dataset,
        "subset": subset, "split": split, "src_column": src_column, "tgt_column": tgt_column,
        "file": file, "format": format})
    flags = {"data.out": out, "data.skip_invalid": skip_invalid or None,
             "data.train": source and [source], "data.tokenizer_model": tokenizer_model}
    cfg = load_config(config, sets, flags)
    check_source_files(cfg.data, config, from_flags=source is not None)
    run_prepare(cfg, Path(cfg.data.out), force=force)


PATH_KEYS = ("src_file", "tgt_file", "tsv", "file")  # a source's keys that name a local file


def check_source_files(data: DataConfig, config: Optional[Path], from_flags: bool) -> None:
    """A source file that is missing, named with the flag or the config key that gave it:
    a config's relative paths are read from the current directory, not the config's."""
    splits = [("train", data.train), ("valid", [data.valid] if data.valid else []),
              ("test", [data.test] if data.test else [])]
    for split, sources in splits:
        for index, source in enumerate(sources):
            for key in PATH_KEYS:
                value = getattr(source, key)
                if value is None or Path(value).exists():
                    continue
                if split == "train" and from_flags:
                    raise UserError(f"--{key.replace('_', '-')} {value}: file not found")
                where = f"data.{split}" + (f"[{index}]" if split == "train" else "")
                raise UserError(f"{config or 'the defaults'}: {where}.{key}: {value}: file not "
                                f"found (a config's paths are read from the current "
                                f"directory, {Path.cwd()})")


def source_from_flags(flags: Mapping[str, Any]) -> Optional[SourceConfig]:
    """The training source named by `prepare`'s flags ({"src_file": path, "subset": None,
    ...} by SourceConfig key; None = not given), or None when none is given. Checked by
    the same table as the config's sources, with the messages naming flags."""
    given = {key: str(value) if isinstance(value, Path) else value
             for key, value in flags.items() if value is not None}
    if not given:
        return None
    try:
        source_format(given, name=lambda key: "--" + key.replace("_", "-"),
                      what="training source")
    except SourceKeyError as exc:
        raise UserError(str(exc)) from None
    return SourceConfig(**given)
