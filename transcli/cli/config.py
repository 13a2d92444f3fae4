"""`transcli config`: every key (--list), or a config resolved as `train` would run it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
import yaml

from transcli.cli.options import ConfigOpt, SetOpt
from transcli.config.keys import config_keys, format_keys
from transcli.config.loading import load_config
from transcli.system.errors import UserError


def config(
    list_keys: bool = typer.Option(
        False, "--list", help="Every key with its type, default and meaning."),
    config: Optional[Path] = ConfigOpt,
    sets: Optional[list[str]] = SetOpt,
) -> None:
    """Show config keys (--list) or a resolved config.

    --list: every key with its type, default and meaning. Without it: the defaults, or
    --config with --set applied, as the YAML `train` would run with.

    Examples:

    \b
      transcli config --list
      transcli config -c configs/cpu-1h.yaml --set train.max_minutes=30
    """
    print_config(list_keys, config, list(sets or []))


def print_config(list_keys: bool, path: Optional[Path], sets: list[str]) -> None:
    """`transcli config`: the key table (`--list`), or the resolved config as YAML: the
    defaults, or `path`, with `sets` applied (what `train` would run with)."""
    if list_keys:
        if path is not None or sets:
            raise UserError("--list shows every key with its default; it takes no --config "
                            "or --set (leave --list out to see a config resolved)")
        print(format_keys(config_keys()))
        return
    cfg = load_config(path, sets)
    print(yaml.safe_dump(cfg.to_dict(), sort_keys=False, allow_unicode=True), end="")
