"""Config loading: strict keys and types, ranges, overrides, round trip."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from helpers import ROOT

from transcli.config.loading import apply_override, load_config, save_config
from transcli.config.schema import Config
from transcli.system.errors import UserError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path | None, overrides: list[str] | None = None,
             flags: dict | None = None) -> str:
    with pytest.raises(UserError) as info:
        load_config(path, overrides, flags)
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


SHIPPED = ["base", "cpu-1h", "demo", "gpu-10m", "gpu-1h", "small", "tiny"]  # every file in configs/


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_configs_load(name: str) -> None:
    load_config(ROOT / "configs" / f"{name}.yaml")


def test_every_config_file_is_shipped_and_round_trips(tmp_path: Path) -> None:
    """Every file in configs/ is among those loaded above, and its resolved config saves
    and loads back to the same values."""
    assert {p.stem for p in (ROOT / "configs").glob("*.yaml")} == set(SHIPPED)
    for name in SHIPPED:
        cfg = load_config(ROOT / "configs" / f"{name}.yaml")
        save_config(cfg, tmp_path / f"{name}.yaml")
        assert load_config(tmp_path / f"{name}.yaml") == cfg


def test_the_cpu_hour_recipe_is_the_studies_winner() -> None:
    """configs/cpu-1h.yaml is what its header says: small.yaml's vocabulary and heads of 64
    in 2+2 layers of 320 without dropout, the same peak learning rate as small.yaml's model
    (lr_factor scaled by sqrt(320 / 256)), linear decay to zero when an hour of training is
    over (which stops it) and an EMA of the weights."""
    small, hour = (load_config(ROOT / "configs" / f"{name}.yaml") for name in ("small", "cpu-1h"))
    shape = {"enc_layers": 2, "dec_layers": 2, "d_model": 320, "d_ff": 1280, "heads": 5,
             "dropout": 0.0}
    assert dataclasses.replace(small.model, **shape) == hour.model
    assert hour.model.d_model // hour.model.heads == small.model.d_model // small.model.heads
    assert hour.data == small.data
    assert dataclasses.replace(hour.decode, word_reward=0.0, word_reward_bound=0.0) == small.decode
    assert hour.decode.word_reward > 0 and hour.decode.word_reward_bound > 0

    def peak(cfg: Config) -> float:  # the warm-up's last rate, by the paper's formula
        return cfg.train.lr_factor * cfg.model.d_model ** -0.5 * cfg.train.warmup_steps ** -0.5
    assert peak(hour) == pytest.approx(peak(small), rel=1e-3)
    recipe = {"max_steps", "decay_minutes", "cpu_precision", "schedule", "ema_decay", "lr_factor"}
    differ = {f.name for f in dataclasses.fields(small.train)
              if getattr(small.train, f.name) != getattr(hour.train, f.name)}
    assert differ == recipe and hour.train.decay_minutes == 60
    assert hour.train.max_steps >= 20_000  # the clock, not the steps, ends it
    assert hour.train.schedule == "linear" and hour.train.final_lr_scale == 0.0
    assert 0.99 <= hour.train.ema_decay < 1.0


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


def test_a_character_yaml_refuses_is_named_with_its_line(tmp_path: Path) -> None:
    """A control character (a binary file given as the config): its code and line, once."""
    path = write(tmp_path, "model:\n  d_model: 256\n\x07\n")
    assert error_of(path) == (f"{path}: line 3: malformed YAML: character #x0007 is not "
                              f"allowed in YAML")


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
    ("model.d_modl=3", "did you mean 'model.d_model'"),
    ("train.max_steps=abc", "must be int"),
    ("model=3", "must be"),
    ("model.d_model", "section.key=value"),
])
def test_bad_overrides(item: str, expected: str) -> None:
    with pytest.raises(UserError, match=expected.replace("(", r"\(")):
        apply_override(Config(), item)


def test_override_range_is_checked() -> None:
    assert "model.heads" in error_of(ROOT / "configs" / "tiny.yaml", ["model.heads=0"])


def test_a_word_reward_is_refused_with_the_ct2_engine() -> None:
    """CTranslate2's search cannot add it: a silently different search is refused."""
    message = error_of(ROOT / "configs" / "tiny.yaml",
                       ["decode.word_reward=0.2", "decode.engine=ct2"])
    assert "decode.word_reward" in message and "torch engine only" in message
    assert load_config(ROOT / "configs" / "tiny.yaml",
                       ["decode.word_reward=0.2"]).decode.word_reward == 0.2


@pytest.mark.parametrize("sets, key, expected", [
    (["train.cuda_graphs=true", "train.batch_shapes=16"], "train.cuda_graphs", "train.compile"),
    (["train.cuda_graphs=true", "train.compile=true"], "train.cuda_graphs", "batch_shapes"),
    (["train.batch_shapes=16", "train.sample_alpha=0.1"], "train.batch_shapes", "sample_alpha"),
    (["train.batch_shapes=-1"], "train.batch_shapes", "must be in [0, 256]"),
])
def test_cuda_graphs_and_batch_shapes_need_what_they_stand_on(sets: list[str], key: str,
                                                              expected: str) -> None:
    message = error_of(ROOT / "configs" / "tiny.yaml", sets)
    assert key in message and expected in message


def test_a_negative_word_reward_bound_is_refused() -> None:
    message = error_of(ROOT / "configs" / "tiny.yaml", ["decode.word_reward_bound=-1"])
    assert "decode.word_reward_bound" in message and "must be >= 0" in message


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


# ----------------------------------------------------------------------------- typed flags


def test_flags_are_typed_values_applied_before_set() -> None:
    cfg = load_config(ROOT / "configs" / "tiny.yaml", ["train.seed=9"],
                      flags={"train.max_steps": 5, "train.seed": 3, "data.out": Path("p/q"),
                             "train.lr_factor": 2, "train.device": None})
    assert cfg.train.max_steps == 5 and cfg.data.out == "p/q"
    assert cfg.train.seed == 9  # --set wins over a flag
    assert cfg.train.lr_factor == 2.0 and isinstance(cfg.train.lr_factor, float)
    assert cfg.train.device == "auto"  # None: flag not given


def test_typed_overrides_mix_with_set_text_in_order() -> None:
    cfg = load_config(ROOT / "configs" / "tiny.yaml",
                      [("decode.beam_size", 3), "decode.beam_size=5", ("decode.n_best", 2)])
    assert (cfg.decode.beam_size, cfg.decode.n_best) == (5, 2)


@pytest.mark.parametrize("flags, expected", [
    ({"train.max_steps": "5"}, "command line: 'train.max_steps' must be int, got str '5'"),
    ({"train.max_step": 5}, "unknown key 'train.max_step' (did you mean 'train.max_steps'?)"),
    ({"model.pre_norm": 1}, "'model.pre_norm' must be bool"),
])
def test_bad_flags_name_the_key(flags: dict, expected: str) -> None:
    assert expected in error_of(ROOT / "configs" / "tiny.yaml", flags=flags)


def test_a_flag_out_of_range_blames_the_command_line() -> None:
    message = error_of(ROOT / "configs" / "tiny.yaml", flags={"train.max_steps": 0})
    assert "command-line" in message and "train.max_steps" in message


# ----------------------------------------------------------------------------- bounds


@pytest.mark.parametrize("item", [
    "model.d_model=1048576", "model.d_ff=100000000", "model.heads=100000",
    "model.enc_layers=100000", "model.max_positions=10000000", "train.batch_tokens=1000000000",
    "decode.batch_tokens=1000000000", "train.accum_steps=1000000000", "decode.beam_size=1000000",
    "data.vocab_size=100000000", "data.max_chars=10000000000", "train.seed=-1",
    f"train.seed={2 ** 63}", "data.seed=-5", f"data.seed={2 ** 64}"])
def test_values_that_can_only_be_mistakes_are_refused(item: str) -> None:
    key = item.split("=")[0]
    message = error_of(ROOT / "configs" / "tiny.yaml", [item])
    assert f"'{key}' must be in [" in message


def test_the_largest_seed_is_accepted() -> None:
    cfg = load_config(None, [f"train.seed={2 ** 63 - 1}", f"data.seed={2 ** 63 - 1}"])
    assert cfg.data.seed == cfg.train.seed == 2 ** 63 - 1
    assert load_config(None, ["train.seed=0"]).train.seed == 0


@pytest.mark.parametrize("item", ["model.dropout=.nan", "train.lr_factor=.inf",
                                  "train.lr_factor=1e999", "decode.length_penalty=-.inf",
                                  f"train.max_minutes={10 ** 400}"])
def test_non_finite_numbers_are_refused(item: str) -> None:
    assert "must be a finite number" in error_of(None, [item])


# ----------------------------------------------------------------------------- YAML


@pytest.mark.parametrize("text, line, key", [
    ("model:\n  d_model: 256\n  heads: 4\n  d_model: 128\n", 4, "d_model"),
    ("train:\n  max_steps: 5\nmodel:\n  heads: 2\ntrain:\n  seed: 3\n", 5, "train"),
    ("data:\n  train:\n    - {tsv: a.tsv, tsv: b.tsv}\n", 3, "tsv"),
])
def test_a_key_given_twice_is_an_error(tmp_path: Path, text: str, line: int, key: str) -> None:
    path = write(tmp_path, text)
    column = text.splitlines()[line - 1].rindex(f"{key}:") + 1  # the second one
    assert error_of(path) == f"{path}: line {line}, column {column}: duplicate key '{key}'"


def test_a_key_given_twice_in_set_is_an_error() -> None:
    assert "duplicate key 'tsv'" in error_of(None, ["data.valid={tsv: a, tsv: b}"])


# ----------------------------------------------------------------------------- sources


@pytest.mark.parametrize("entry, key, expected", [
    ("{tsv: a.tsv, dataset: x}", "dataset", "give one source, not tsv and dataset"),
    ("{tgt_file: a.es}", "src_file", "src_file and tgt_file go together"),
    ("{tsv: a.tsv, subset: en-es}", "subset", "subset only applies to dataset"),
    ("{tsv: a.tsv, split: test}", "split", "split only applies to dataset"),
    ("{dataset: x, src_column: en}", "tgt_column", "src_column and tgt_column go together"),
    ("{file: corpus.xml}", "file", "cannot tell the format of corpus.xml from its name: "
                                   "give format (tmx)"),
    ("{format: tmx}", "file", "a tmx source needs file"),
    ("{format: moses, file: a.gz}", "format", "format 'moses' is not one of files, tsv, "
                                              "dataset, tmx"),
    ("{}", "src_file", "give a source: one of src_file+tgt_file, tsv, dataset, file"),
])
def test_source_entries_name_the_key_at_fault(tmp_path: Path, entry: str, key: str,
                                              expected: str) -> None:
    path = write(tmp_path, f"data:\n  valid: {entry}\n")
    assert error_of(path) == f"{path}: 'data.valid.{key}' {expected}"


@pytest.mark.parametrize("entry, fmt", [
    ("{src_file: a.en.gz, tgt_file: a.es.gz}", "files"), ("{tsv: a.tsv}", "tsv"),
    ("{dataset: opus100, subset: en-es, split: validation}", "dataset"),
    ("{file: memory.TMX}", "tmx"), ("{file: memory.xml, format: tmx}", "tmx"),
    ("{tsv: a.tsv, format: tsv, split: train}", "tsv"),
])
def test_source_entries_name_their_format(tmp_path: Path, entry: str, fmt: str) -> None:
    from transcli.config.formats import source_format

    cfg = load_config(write(tmp_path, f"data:\n  train: [{entry}]\n"))
    assert source_format(cfg.data.train[0].given()).name == fmt


def test_a_run_config_written_before_the_format_keys_loads(tmp_path: Path) -> None:
    """Run dirs hold every key of their time, defaults included."""
    path = write(tmp_path, "data:\n  train:\n  - src_file: a.en\n    tgt_file: a.es\n"
                           "    tsv: null\n    dataset: null\n    subset: null\n"
                           "    split: train\n    src_column: null\n    tgt_column: null\n")
    assert load_config(path).data.train[0].src_file == "a.en"


def test_a_decay_in_minutes_needs_a_schedule_that_ends(tmp_path: Path) -> None:
    path = write(tmp_path, "train:\n  schedule: noam\n  decay_minutes: 60\n")
    message = error_of(path)
    assert "train.decay_minutes" in message and "linear or cosine" in message


def test_an_unknown_cpu_gemm_is_refused() -> None:
    message = error_of(ROOT / "configs" / "tiny.yaml", ["decode.cpu_gemm=mkl"])
    assert "decode.cpu_gemm" in message and "auto, blas, onednn" in message
