"""`train --init-from`: a new run starts from another run's weights (its first loss is
that of those weights), with its own optimizer; a resume never reloads them; another
vocabulary or model shape is refused with one line before the run dir is touched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers.cli import one_error_line, run_cli
from helpers.training import SAMPLE, TINY, fast_config, losses, train_cli, train_dirs
from safetensors.torch import load_file

from transcli.data.batching import BatchPlan, BatchStream, StreamPosition, collate
from transcli.data.encoded import EncodedSplit
from transcli.data.prepared_dir import open_prepared_dir
from transcli.model.vocab import PAD_ID
from transcli.rundir.layout import RUN_FILE, step_path
from transcli.rundir.run import RunDir, open_run_dir
from transcli.system.errors import UserError
from transcli.training.distributed import Dist
from transcli.training.loop import Trainer
from transcli.training.objective import LossSums, TeacherForcing
from transcli.training.resume import StartOptions, resolve_init


@pytest.fixture(scope="module")
def source_run(prepared: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run trained 20 updates: the "general" model to start from."""
    run = tmp_path_factory.mktemp("general") / "run"
    train_dirs(fast_config("train.max_steps=20"), prepared, run)  # validates at 10 and 20
    return run


def first_batch_loss(run: Path, checkpoint: str, data: Path, cfg) -> float:
    """The label-smoothed loss of `run`'s weights on the first batch a run with `cfg`
    trains on: computed here from the batch plan and the objective, not by the trainer."""
    split = EncodedSplit(data, "train")
    plan = BatchPlan(split.src_lengths, split.tgt_lengths, cfg.train.batch_tokens,
                     cfg.train.seed, cfg.model.max_positions)
    batch = collate(split, BatchStream(plan, StreamPosition()).next())
    opened = open_run_dir(run)
    model = opened.model(opened.checkpoint(checkpoint))
    with torch.no_grad():
        sums = TeacherForcing(model, cfg.train.label_smoothing, PAD_ID)(
            batch.src, batch.tgt_in, batch.tgt_out)
    return LossSums.of(sums).means()["loss"]


def test_a_fine_tuned_run_starts_from_the_weights(source_run, prepared, tmp_path):
    sets = ["train.max_steps=3", "train.log_every=1", "train.seed=7", "train.valid_every=1000"]
    cfg = fast_config(*sets, f"train.init_from={source_run}/20")
    train_dirs(cfg, prepared, tmp_path / "tuned")
    expected = first_batch_loss(source_run, "20", prepared, cfg)
    first = losses(tmp_path / "tuned")[0]
    assert first == (1, pytest.approx(expected, rel=1e-5))
    train_dirs(fast_config(*sets), prepared, tmp_path / "fresh")  # the same run from scratch
    assert abs(losses(tmp_path / "fresh")[0][1] - expected) > 0.5
    record = json.loads((tmp_path / "tuned" / RUN_FILE).read_text())
    assert record["init_from"] == str(step_path(source_run, 20).resolve())


def test_a_resume_does_not_load_the_initial_weights_again(source_run, prepared, tmp_path):
    run = tmp_path / "tuned"
    sets = [f"train.init_from={source_run}", "train.valid_every=1000", "train.save_every=5"]
    train_dirs(fast_config("train.max_steps=5", *sets), prepared, run)
    trainer = Trainer(fast_config("train.max_steps=10", *sets), open_prepared_dir(prepared),
                      RunDir(run), Dist(), torch.device("cpu"), StartOptions(resume=True))
    assert trainer.start.init is None
    saved = load_file(str(step_path(run, 5)))
    assert torch.equal(trainer.model.state_dict()["decoder.0.ffn.inner.weight"],
                       saved["decoder.0.ffn.inner.weight"])
    assert json.loads((run / RUN_FILE).read_text())["init_from"] == \
        str((source_run / "checkpoints" / "best.safetensors").resolve())


@pytest.mark.parametrize("spec, expected", [
    ("{run}", "best.safetensors"),
    ("{run}/last", "step-0000020.safetensors"),
    ("{run}/20", "step-0000020.safetensors"),
    ("{run}/checkpoints/step-0000010.safetensors", "step-0000010.safetensors"),
])
def test_init_from_forms(source_run, spec, expected):
    source = resolve_init(spec.format(run=source_run))
    assert source.run == source_run and source.weights.name == expected


def test_another_vocabulary_is_refused(source_run, other_prepared, tmp_path):
    with pytest.raises(UserError, match=r"vocabulary differs from .*prep2.*\(.*(pieces|piece)"):
        train_dirs(fast_config(f"train.init_from={source_run}"), other_prepared, tmp_path / "x")
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_another_model_shape_is_one_line(source_run, prepared, tmp_path):
    result = run_cli(*train_cli(prepared, tmp_path / "x", "model.d_ff=48"),
                     "--init-from", source_run)
    line = one_error_line(result)
    assert "model config differs" in line and "model.d_ff: 64 -> 48" in line
    assert not (tmp_path / "x").exists()
    line = one_error_line(run_cli(*train_cli(prepared, tmp_path / "x"),
                                  "--init-from", tmp_path / "nowhere"))
    assert "nowhere: not found" in line


def test_a_domain_corpus_prepared_with_the_runs_tokenizer_fine_tunes(source_run, tmp_path):
    """`prepare --tokenizer-model RUN` encodes new text with the run's vocabulary, so
    `--init-from RUN` accepts it (a tokenizer trained on it would be refused)."""
    text = {lang: (SAMPLE / f"train.{lang}").read_text(encoding="utf-8").splitlines()[100:140]
            for lang in ("en", "es")}
    for lang, lines in text.items():
        (tmp_path / f"domain.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli("prepare", "-c", TINY, "--src-file", tmp_path / "domain.en",
                     "--tgt-file", tmp_path / "domain.es", "--out", tmp_path / "domain",
                     "--tokenizer-model", source_run, "--set", "data.valid_size=4",
                     "--set", "data.test_size=4")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "domain" / "spm.model").read_bytes() == \
        (source_run / "spm.model").read_bytes()
    train_dirs(fast_config(f"train.init_from={source_run}", "train.max_steps=5"),
          tmp_path / "domain", tmp_path / "tuned")
    assert json.loads((tmp_path / "tuned" / RUN_FILE).read_text())["init_from"]


def test_weights_trained_with_another_tokenizer_are_refused(source_run, prepared, tmp_path):
    """Issue: --init-from took weights that record another tokenizer's hash (translate
    refuses them), when the run they lie in has the data's spm.model."""
    import shutil

    from transcli.rundir.checkpoints import save_weights

    run = Path(shutil.copytree(source_run, tmp_path / "general"))
    model = open_run_dir(run).model(step_path(run, 20))
    save_weights(model, step_path(run, 20), tokenizer_sha256="0" * 64)
    with pytest.raises(UserError, match="step-0000020.safetensors: these weights were trained "
                                        "with another tokenizer"):
        train_dirs(fast_config(f"train.init_from={run}/20"), prepared, tmp_path / "x")
    assert not (tmp_path / "x").exists()
