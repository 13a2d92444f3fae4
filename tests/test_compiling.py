"""`train.compile` on the CPU: a run compiles a bounded number of graphs whatever its
batch shapes, and trains as eager does.

torch.compile runs here with the `aot_eager` backend: dynamo captures the graphs and AOT
autograd derives their backward as on a GPU, without inductor's C++ and Triton code
generation (minutes on two cores). tests/test_gpu.py runs inductor and CUDA graphs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.training import fast_config, losses, train_dirs

from transcli.rundir.layout import METRICS_FILE
from transcli.rundir.metrics import read_metrics
from transcli.training import compiling

# Tiny batches over the 32 pairs: batches of many shapes (rows x source x target).
MANY_SHAPES = ["train.batch_tokens=30", "train.max_steps=40", "train.log_every=10",
               "train.valid_every=1000", "train.save_every=1000", "model.dropout=0",
               "train.precision=fp32"]


@pytest.mark.slow  # compiling, even without code generation, takes tens of seconds here
def test_a_compiled_run_over_many_batch_shapes_compiles_a_few_graphs_and_trains_as_eager(
        prepared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    """Without dynamic shapes every new batch shape would compile anew, and torch would
    stop compiling after its limit: here 40 updates meet more shapes than GRAPH_LIMIT and
    compile at most 3 graphs (a size of 1 specialises). The losses are eager's, up to
    float reordering."""
    monkeypatch.setattr(compiling, "BACKEND", "aot_eager")
    train_dirs(fast_config(*MANY_SHAPES), prepared, tmp_path / "eager")
    train_dirs(fast_config(*MANY_SHAPES, "train.compile=true"), prepared, tmp_path / "compiled")
    lines = read_metrics(tmp_path / "compiled" / METRICS_FILE, "train")
    last = lines[-1]
    assert last["batch_shapes"] > compiling.GRAPH_LIMIT
    assert 1 <= last["compiles"] <= 3
    assert f"for {last['batch_shapes']} batch shapes (limit {compiling.GRAPH_LIMIT})" in \
        capsys.readouterr().err
    eager, compiled = losses(tmp_path / "eager"), losses(tmp_path / "compiled")
    assert [step for step, _ in compiled] == [step for step, _ in eager] == [10, 20, 30, 40]
    assert [loss for _, loss in compiled] == pytest.approx([loss for _, loss in eager],
                                                           rel=1e-4)


def test_without_a_cpp_compiler_compile_is_refused_in_one_line_and_the_loss_stays_eager(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where torch.compile has no C++ compiler for the CPU, `train.compile` stops before
    training (it would fail with a traceback at the first update), and the loss's
    chunks, which compile by themselves where they can, run eagerly instead."""
    import torch

    from transcli.config.schema import ModelConfig, TrainConfig
    from transcli.model.transformer import Transformer
    from transcli.system.errors import UserError
    from transcli.training import objective

    monkeypatch.setattr(objective, "cpp_compiler", lambda: None)
    monkeypatch.setattr(objective, "COMPILE_MIN_LOGITS", 0)
    model = Transformer(ModelConfig(enc_layers=1, dec_layers=1, d_model=8, d_ff=16, heads=2),
                        11)
    with pytest.raises(UserError, match="train.compile: .* C.. compiler"):
        compiling.CompiledStates(model, TrainConfig(compile=True), torch.device("cpu"))
    objective.compiled_epilogue.cache_clear()
    try:
        assert objective.epilogue_for(torch.zeros(2, 11)) is objective.softmax_epilogue
    finally:
        objective.compiled_epilogue.cache_clear()  # later tests find the real compiler
