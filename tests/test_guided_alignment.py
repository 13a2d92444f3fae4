"""`train.guided_alignment`: the cost against a formula written out, the loss of an update,
the config's checks, exact resume with it on, a tiny model whose guided head learns
to point at the words the prepared alignments link, and placement (tags, dropped spans,
emoji, explain's alignments) read from that head alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import TINY_CONFIG
from helpers.training import (
    assert_training_resumes_exactly,
    fast_config,
    prepare_sample,
    train_dirs,
)

from transcli.config.loading import load_config
from transcli.config.schema import guided_head
from transcli.data.batching import AlignTargets, collate
from transcli.data.prepared_dir import open_prepared_dir
from transcli.inference.alignment import cross_attention
from transcli.inference.attention import explain
from transcli.inference.engines import TorchEngine
from transcli.inference.search import Hypothesis
from transcli.inference.translator import load_translator
from transcli.model.transformer import Transformer
from transcli.model.vocab import BOS_ID, EOS_ID
from transcli.rundir.checkpoints import load_weights
from transcli.rundir.layout import METRICS_FILE, step_path
from transcli.rundir.metrics import read_metrics
from transcli.rundir.run import open_run_dir
from transcli.system.errors import UserError
from transcli.training.objective import (
    EPSILON,
    Guide,
    TeacherForcing,
    alignment_cost,
    guide_of,
    training_loss,
)

GUIDED = "train.guided_alignment=0.5"


@pytest.fixture(scope="module")
def aligned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """400 sample pairs prepared with alignments."""
    return prepare_sample(tmp_path_factory.mktemp("guided"), 0, 400, "data.alignments=true")


def targets(links: list[list[tuple[int, int, int]]], shape: tuple[int, int, int]
            ) -> AlignTargets:
    """`AlignTargets` of (row, target, source) links, as `with_alignment` lays them out."""
    _, width, length = shape
    flat = sorted((b * width + t) * length + s for row in links for b, t, s in row)
    index = np.array(flat, np.int64)
    row_of = index // length
    rows, counts = np.unique(row_of, return_counts=True)
    value = 1.0 / counts[np.searchsorted(rows, row_of)]
    return AlignTargets(torch.from_numpy(index), torch.from_numpy(value.astype(np.float32)),
                        torch.from_numpy(rows))


def test_the_costs_equal_their_formulas_on_a_tiny_batch() -> None:
    torch.manual_seed(0)
    shape = (2, 3, 4)
    mask = torch.tensor([[True] * 4, [True, True, False, False]])
    scores = torch.randn(shape).masked_fill(~mask[:, None, :], float("-inf"))
    weights = scores.softmax(-1)
    links = [[(0, 0, 1), (0, 0, 2), (0, 2, 3)], [(1, 1, 0)]]  # row 0, target 1: none
    align = targets(links, shape)
    dense = torch.zeros(shape)
    for row in links:
        for b, t, s in row:
            dense[b, t, s] = 1.0
    per_row = dense.sum(-1, keepdim=True)
    target = torch.where(per_row > 0, dense / per_row.clamp(min=1), 0.0)
    aligned_rows = (per_row.squeeze(-1) > 0)
    ce = -(target * torch.log(weights + EPSILON)).sum()
    mse = 0.5 * ((weights - target) ** 2).sum(-1)[aligned_rows].sum()
    for cost, expected in (("ce", ce), ("mse", mse)):
        got = alignment_cost(weights, align, cost)
        assert got[0].item() == pytest.approx(expected.item(), rel=1e-6), cost
        assert got[1].item() == 3  # aligned rows: (0, 0), (0, 2), (1, 1)
    assert training_loss(torch.tensor([2.0, 0, 0, 0, 3.0, 3.0]), 0.1) == pytest.approx(2.3)
    assert training_loss(torch.tensor([2.0, 0, 0, 0]), 0.1) == 2.0


def test_the_guided_head_is_the_one_asked_for_and_its_loss_reaches_only_it(aligned: Path
                                                                          ) -> None:
    cfg = fast_config(GUIDED, "model.dec_layers=2", "train.guided_alignment_head=2")
    guide = guide_of(cfg.train, cfg.model)
    assert guide == Guide(layer=1, head=1, cost="ce")
    data = open_prepared_dir(aligned)
    torch.manual_seed(0)
    model = Transformer(cfg.model, data.vocab_size).eval()  # no dropout: losses compared
    batch = collate(data.split("train"), np.arange(4), alignments=data.alignments("a test"))
    sums = TeacherForcing(model, 0.1, 0, guide=guide)(batch.src, batch.tgt_in, batch.tgt_out,
                                                      batch.rows, batch.align)
    assert len(sums) == 6 and sums[5].item() == batch.align.rows.numel() > 0
    sums[4].backward()  # the alignment cost alone: the second layer's cross-attention
    q = model.decoder[1].cross_attn.q.weight.grad.view(2, -1, cfg.model.d_model)
    assert q[1].abs().sum() > 0 and q[0].abs().sum() == 0  # the second head's queries only
    assert model.decoder[0].cross_attn.q.weight.grad.abs().sum() > 0  # through its input
    plain = TeacherForcing(model, 0.1, 0)(batch.src, batch.tgt_in, batch.tgt_out, batch.rows)
    assert torch.allclose(plain, sums[:4])  # the same loss, the head an ordinary head


@pytest.mark.parametrize("sets, message", [
    (["model.dec_layers=1", "train.guided_alignment_layer=2"],
     "'train.guided_alignment_layer' is 2 but the model has 1 decoder layers"),
    (["model.heads=2", "train.guided_alignment_head=3"],
     "'train.guided_alignment_head' is 3 but a layer has 2 heads"),
    (["train.guided_alignment_cost=kl"], "must be one of ce, mse"),
    (["train.guided_alignment=0.1", "train.sample_alpha=0.1"],
     "needs train.sample_alpha: 0"),
])
def test_settings_guided_alignment_cannot_run_are_refused(sets: list[str], message: str,
                                                          tmp_path: Path) -> None:
    from helpers.training import TINY

    with pytest.raises(UserError, match=message):
        load_config(TINY, sets)


@pytest.mark.slow
def test_resume_is_exact_with_guided_alignment(aligned: Path, tmp_path: Path) -> None:
    straight, _ = assert_training_resumes_exactly(GUIDED, aligned, tmp_path)
    split = tmp_path / "split"
    align_losses = [[(r["step"], r["align_loss"]) for r in read_metrics(run / METRICS_FILE,
                                                                        "train")]
                    for run in (straight, split)]
    assert align_losses[0] == align_losses[1] and len(align_losses[0]) == 4  # 5 10 15 16


def head_agreement(run: Path, data_dir: Path, cfg, pairs: int = 64) -> float:
    """The share of aligned target pieces whose guided head's strongest source piece is
    one the prepared alignment links them to (teacher-forced, the first `pairs` pairs)."""
    data = open_prepared_dir(data_dir)
    links = data.alignments("a test")
    model = Transformer(cfg.model, data.vocab_size)
    load_weights(model, step_path(run, cfg.train.max_steps))
    model.eval()
    batch = collate(data.split("train"), np.arange(pairs), alignments=links)
    guide = guide_of(fast_config(GUIDED, *SHAPE).train, cfg.model)
    with torch.no_grad():
        _, weights = model.decode_watching(batch.tgt_in, model.encode(batch.src),
                                           guide.layer, guide.head)
    best = weights.argmax(-1).reshape(-1)  # each (row, target) position's source
    length = weights.size(-1)
    linked = set(batch.align.index.tolist())
    rows = batch.align.rows.tolist()
    return sum((row * length + int(best[row])) in linked for row in rows) / len(rows)


SHAPE = ["model.dec_layers=2", "model.heads=2", "train.max_steps=300", "train.save_every=300",
         "train.valid_every=1000", "train.log_every=50"]


def test_the_engine_places_by_the_aligning_head_and_averages_without_one() -> None:
    """`TorchEngine.attention` (what places tags, dropped spans and emoji) is the head's
    weights as training's `decode_watching` computes them, else the average of all."""
    cfg = load_config(TINY_CONFIG, ["model.dec_layers=2", "model.heads=2"])
    torch.manual_seed(0)
    model = Transformer(cfg.model, 64).eval()
    source, target = [5, 9, 12, 7, EOS_ID], [11, 4, 30]
    with torch.no_grad():
        _, watched = model.decode_watching(torch.tensor([[BOS_ID, *target]]),
                                           model.encode(torch.tensor([source])), 1, 0)
    found = TorchEngine(model, "cpu", (1, 0)).attention([source], [target])[0]
    torch.testing.assert_close(found, watched[0].float())
    every = cross_attention(model, source, target + [EOS_ID])
    torch.testing.assert_close(TorchEngine(model, "cpu").attention([source], [target])[0],
                               every.mean(dim=(0, 1)))
    assert not torch.allclose(found, every.mean(dim=(0, 1)))
    # explain's (and --attention's) Pharaoh alignment: the head's strongest source piece
    piece = {EOS_ID: "</s>"}.get
    drawn = explain(model, lambda i: piece(i, f"p{i}"), source,
                    Hypothesis(target, 0.0, 0.0, True), (1, 0))
    assert drawn.alignment() == [(int(i), j) for j, i in
                                 enumerate(found[:len(target), :len(source) - 1].argmax(1))]


@pytest.mark.slow
def test_the_guided_head_learns_where_words_went(aligned: Path, tmp_path: Path) -> None:
    """300 updates of the tiny model with and without guided alignment (same seed): the
    guided head's strongest source piece is a linked one far more often; the guided run's
    translator places by that head, the other by the average."""
    guided_cfg = fast_config(GUIDED, *SHAPE)
    plain_cfg = fast_config(*SHAPE)
    train_dirs(guided_cfg, aligned, tmp_path / "guided")
    train_dirs(plain_cfg, aligned, tmp_path / "plain")
    guided = head_agreement(tmp_path / "guided", aligned, guided_cfg)
    plain = head_agreement(tmp_path / "plain", aligned, plain_cfg)
    assert guided > plain + 0.25 and guided > 0.5, (guided, plain)
    losses = [r["align_loss"] for r in read_metrics(tmp_path / "guided" / METRICS_FILE,
                                                    "train")]
    assert losses[-1] < losses[0] * 0.7
    engines = [load_translator(open_run_dir(tmp_path / run), "last", "cpu").engine
               for run in ("guided", "plain")]
    assert [engine.head for engine in engines] == [guided_head(guided_cfg.train,
                                                               guided_cfg.model), None]
    assert engines[0].head == (1, 0)


@pytest.mark.slow  # compiling, even without code generation, takes tens of seconds here
def test_compiled_training_with_guided_alignment_trains_as_eager(
        aligned: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`train.compile` compiles the states and the guided head's weights together (as
    tests/test_compiling.py, with the aot_eager backend)."""
    from transcli.training import compiling

    monkeypatch.setattr(compiling, "BACKEND", "aot_eager")
    sets = [GUIDED, "train.max_steps=20", "train.valid_every=1000", "train.save_every=1000",
            "train.precision=fp32"]
    train_dirs(fast_config(*sets), aligned, tmp_path / "eager")
    train_dirs(fast_config(*sets, "train.compile=true"), aligned, tmp_path / "compiled")
    runs = [read_metrics(tmp_path / run / METRICS_FILE, "train") for run in ("eager", "compiled")]
    for key in ("loss", "align_loss"):
        assert [r[key] for r in runs[1]] == pytest.approx([r[key] for r in runs[0]], rel=1e-4)
