"""Config loading: strict keys and types, ranges, overrides, round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from transcli.config import Config, apply_override, load_config, save_config
from transcli.errors import UserError

ROOT = Path(__file__).resolve().parent.parent


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path | None, overrides: list[str] | None = None) -> str:
    with pytest.raises(UserError) as info:
        load_config(path, overrides)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_base_config_holds_the_papers_hyperparameters() -> None:
    cfg = load_config(ROOT / "configs" / "base.yaml")
    m, t, d = cfg.model, cfg.train, cfg.data
    assert (m.enc_layers, m.dec_layers, m.d_model, m.d_ff, m.heads) == (6, 6, 512, 2048, 8)
    assert m.d_model // m.heads == 64
    assert m.dropout == 0.1 and not m.pre_norm and m.share_embeddings and m.tie_output
    assert t.label_smoothing == 0.1 and t.warmup_steps == 4000 and t.max_steps == 100_000
    assert (t.adam_beta1, t.adam_beta2, t.adam_eps) == (0.9, 0.98, 1e-9)
    assert t.batch_tokens * t.accum_steps == 25000
    assert d.vocab_size == 32000


@pytest.mark.parametrize("name", ["base", "small", "tiny"])
def test_shipped_configs_load(name: str) -> None:
    load_config(ROOT / "configs" / f"{name}.yaml")


def test_unknown_key_names_file_key_and_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, "model:\n  d_modle: 256\n")
    message = error_of(path)
    assert str(path) in message and "model.d_modle" in message and "d_model" in message


def test_unknown_section_is_refused(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, "trian:\n  max_steps: 5\n"))
    assert "'trian'" in message and "did you mean 'train'" in message


def test_wrong_type_names_key(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, "train:\n  max_steps: lots\n"))
    assert "train.max_steps" in message and "must be int" in message


def test_bool_is_not_an_int(tmp_path: Path) -> None:
    assert "model.heads" in error_of(write(tmp_path, "model:\n  heads: true\n"))


def test_d_model_not_divisible_by_heads(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, "model:\n  d_model: 100\n  heads: 8\n"))
    assert "model.d_model" in message and "divisible" in message


@pytest.mark.parametrize("value", ["1.0", "-0.1"])
def test_dropout_out_of_range(tmp_path: Path, value: str) -> None:
    message = error_of(write(tmp_path, f"model:\n  dropout: {value}\n"))
    assert "model.dropout" in message and "[0, 1)" in message


def test_nested_source_errors_name_the_list_item(tmp_path: Path) -> None:
    path = write(tmp_path, "data:\n  train:\n    - tsv: a.tsv\n    - src_file: a.en\n")
    message = error_of(path)
    assert "data.train[1]" in message and "tgt_file" in message


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "model:\n  d_model: 256\n  heads: [4\n")
    message = error_of(path)
    assert str(path) in message and "line 4" in message


def test_missing_file(tmp_path: Path) -> None:
    message = error_of(tmp_path / "nope.yaml")
    assert "nope.yaml" in message and "not found" in message


def test_overrides_are_typed() -> None:
    cfg = load_config(ROOT / "configs" / "tiny.yaml", [
        "model.d_model=128", "model.dropout=0", "train.adam_eps=1e-8",
        "model.pre_norm=true", "data.train=[{tsv: pairs.tsv}]"])
    assert cfg.model.d_model == 128
    assert cfg.model.dropout == 0.0 and isinstance(cfg.model.dropout, float)
    assert cfg.train.adam_eps == 1e-8
    assert cfg.model.pre_norm is True
    assert cfg.data.train[0].tsv == "pairs.tsv"


@pytest.mark.parametrize("item, expected", [
    ("model.d_modl=3", "did you mean 'd_model'"),
    ("train.max_steps=abc", "must be int"),
    ("model=3", "must be"),
    ("model.d_model", "section.key=value"),
])
def test_bad_overrides(item: str, expected: str) -> None:
    with pytest.raises(UserError, match=expected.replace("(", r"\(")):
        apply_override(Config(), item)


def test_override_range_is_checked() -> None:
    assert "model.heads" in error_of(ROOT / "configs" / "tiny.yaml", ["model.heads=0"])


def test_round_trip(tmp_path: Path) -> None:
    cfg = load_config(ROOT / "configs" / "small.yaml",
                      ["data.train=[{src_file: a.en, tgt_file: a.es}]", "data.valid={tsv: v.tsv}"])
    save_config(cfg, tmp_path / "resolved.yaml")
    again = load_config(tmp_path / "resolved.yaml")
    assert again == cfg
    assert again.fingerprint() == cfg.fingerprint()


def test_errors_blame_the_file_unless_the_command_line_touched_that_section(tmp_path: Path) -> None:
    path = write(tmp_path, "model:\n  d_model: 64\n  heads: 3\n")
    assert error_of(path, ["data.out=elsewhere"]).startswith(f"{path}: 'model.d_model'")
    assert "command-line" in error_of(ROOT / "configs" / "tiny.yaml", ["model.heads=3"])
