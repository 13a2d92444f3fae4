"""A tiny Transformer trained in the test process to memorise the fixture pairs,
and a one-thread context for running tiny models fast on a busy machine.

Untrained models almost never emit EOS; search and translation tests also need
one that ends its sentences, with confident (well-separated) choices. A few
hundred Adam steps on 16 pairs take a couple of seconds on one CPU thread. Trained
inline so the tests do not depend on `transcli.training.loop`.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
from pathlib import Path
from typing import Iterator

import torch
import torch.nn.functional as F

from helpers import ROOT, TINY_CONFIG
from transcli.config.loading import load_config, save_config
from transcli.data.tokenizer import TOKENIZER_FILE, Tokenizer
from transcli.model.transformer import Transformer
from transcli.model.vocab import BOS_ID, EOS_ID, PAD_ID
from transcli.rundir.checkpoints import save_weights
from transcli.rundir.layout import CONFIG_FILE, step_path

# English lines outside the memorised pairs (search and translate tests)
UNSEEN = ["The cat eats bread.", "Where is my book?", "We like the beach.",
          "My grandmother opened the shop.", "Coffee?"]


def pad(rows: list[list[int]]) -> torch.Tensor:
    out = torch.full((len(rows), max(map(len, rows))), PAD_ID, dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, :len(row)] = torch.tensor(row)
    return out


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Ops on a d_model-64 model are too small to split: on a machine shared with
    other jobs, more torch threads make them slower, not faster."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@functools.cache
def memorised_model(spm_path: Path, pairs: tuple[tuple[str, str], ...],
                    steps: int = 200) -> Transformer:
    """The tiny config trained on `pairs` until it reproduces them (eval mode, CPU)."""
    tokenizer = Tokenizer(spm_path)
    torch.manual_seed(0)
    model = Transformer(load_config(TINY_CONFIG).model, tokenizer.vocab_size)
    src_ids = tokenizer.encode([en for en, _ in pairs])
    tgt_ids = tokenizer.encode([es for _, es in pairs])
    src = pad([ids + [EOS_ID] for ids in src_ids])
    tgt_in = pad([[BOS_ID] + ids for ids in tgt_ids])
    tgt_out = pad([ids + [EOS_ID] for ids in tgt_ids])
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    with one_torch_thread():
        for _ in range(steps):
            logp = model(src, tgt_in)
            loss = F.nll_loss(logp.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD_ID)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model.eval()


SAMPLE = ROOT / "data" / "sample"


def sample_pairs(*splits: str) -> list[tuple[str, str]]:
    """The (English, Spanish) pairs of data/sample's `splits`, in file order."""
    pairs = []
    for split in splits:
        en = (SAMPLE / f"{split}.en").read_text(encoding="utf-8").splitlines()
        es = (SAMPLE / f"{split}.es").read_text(encoding="utf-8").splitlines()
        pairs += list(zip(en, es))
    return pairs


@functools.cache
def sample_model(spm_path: Path, steps: int = 200, batch: int = 32) -> Transformer:
    """The tiny config trained a little on data/sample's training pairs (random batches of
    `batch` pairs, one torch thread, about ten seconds). Far from a good translator, but
    it ends its sentences and its output depends on the source: real-looking test
    sentences for comparing decoders and exports (eval mode, CPU)."""
    tokenizer = Tokenizer(spm_path)
    pairs = sample_pairs("train")
    src = [ids + [EOS_ID] for ids in tokenizer.encode([en for en, _ in pairs])]
    tgt = tokenizer.encode([es for _, es in pairs])
    torch.manual_seed(0)
    model = Transformer(load_config(TINY_CONFIG).model, tokenizer.vocab_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    order = torch.Generator().manual_seed(0)
    model.train()
    with one_torch_thread():
        for _ in range(steps):
            picked = torch.randint(len(pairs), (batch,), generator=order).tolist()
            logp = model(pad([src[i] for i in picked]), pad([[BOS_ID] + tgt[i] for i in picked]))
            gold = pad([tgt[i] + [EOS_ID] for i in picked])
            loss = F.nll_loss(logp.flatten(0, 1), gold.flatten(), ignore_index=PAD_ID)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model.eval()


def untrained_run(folder: Path, sets: list[str], spm_path: Path) -> tuple[Path, Transformer]:
    """A run dir (config, tokenizer, one checkpoint) of an untrained tiny model with the
    `sets` layout; its LayerNorms are perturbed, since untrained ones (all 1 and 0) would
    hide an export that mixes them up."""
    run = folder / "run"
    run.mkdir()
    cfg = load_config(TINY_CONFIG, sets)
    save_config(cfg, run / CONFIG_FILE)
    shutil.copyfile(spm_path, run / TOKENIZER_FILE)
    torch.manual_seed(1)
    model = Transformer(cfg.model, Tokenizer(spm_path).vocab_size).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "norm" in name:
                parameter.add_(torch.randn_like(parameter) * 0.2)
    save_weights(model, step_path(run, 1))
    return run, model
