"""The training objective of Vaswani et al. (2017), 5.4: label-smoothed cross-entropy.

Two implementations of one loss: `label_smoothed_nll` from log-probabilities (the
reference, plain autograd) and `output_loss`, which applies the output layer itself
chunk by chunk and computes its gradients in the same pass, so the [tokens, V]
logits of a batch never exist whole and no log-softmax is stored for backward.
Tests hold the two equal; training uses the second (`python -m bench.train_speed`).

With `train.guided_alignment`, the loss also has a term that trains one cross-attention
head toward the prepared dir's word alignments (`alignment_cost`, `Guide`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, fields
from typing import Any, Callable, NamedTuple, Optional

import torch
from torch import Tensor

from transcli.config.schema import ModelConfig, TrainConfig, guided_head
from transcli.data.batching import AlignTargets

# Target positions whose [rows, vocab] logits exist at once in `output_loss`: on the CPU
# a chunk that stays in cache; on a GPU, logits of up to 512 MiB (float32), so that a
# batch of 12K target tokens over a 10K vocabulary is one chunk: each chunk launches
# about 25 kernels, and a GPU update is bound by its launches (docs/GPU.md).
CPU_CHUNK_ROWS = 1024
GPU_CHUNK_LOGITS = 1 << 27


def chunk_rows(device_type: str, vocab: int) -> int:
    if device_type == "cpu":
        return CPU_CHUNK_ROWS
    return max(CPU_CHUNK_ROWS, GPU_CHUNK_LOGITS // max(vocab, 1))


# ----------------------------------------------------------------------------- the loss


@dataclass
class LossSums:
    """Sums over target tokens (an update, an interval, a validation): means come last,
    so micro-batches and processes add up before the division."""

    loss: float = 0.0  # label-smoothed cross-entropy
    nll: float = 0.0  # plain negative log-likelihood
    tokens: float = 0.0  # non-pad target tokens
    correct: float = 0.0  # tokens whose gold id scored the row's maximum

    @classmethod
    def of(cls, values: Tensor | list[float]) -> LossSums:
        """From the 4-vector `output_loss` returns (or a sum of them)."""
        values = values.tolist() if isinstance(values, Tensor) else values
        return cls(*values[:4])

    def add(self, other: LossSums) -> None:
        for f in fields(LossSums):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def means(self) -> dict[str, float]:
        """Per-token loss, NLL, perplexity and accuracy."""
        tokens = max(self.tokens, 1.0)
        nll = self.nll / tokens
        return {"loss": self.loss / tokens, "nll": nll, "ppl": math.exp(min(nll, 50.0)),
                "acc": self.correct / tokens}


def label_smoothed_nll(log_probs: Tensor, target: Tensor, eps: float, pad_id: int
                       ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Cross-entropy against (1 - eps) * one-hot + eps / V * uniform, over non-pad targets.

    log_probs [..., V], target [...]. Returns sums, not means, so micro-batches and
    ranks add up before the division by the update's target-token count:
    (smoothed loss, plain NLL, target tokens, correct argmax predictions), all 0-dim
    tensors on log_probs' device (no host sync).
    """
    log_probs = log_probs.reshape(-1, log_probs.size(-1))
    target = target.reshape(-1)
    real = target != pad_id
    nll = -log_probs.gather(1, target[:, None]).squeeze(1)
    nll = nll.masked_fill(~real, 0.0)
    nll_sum = nll.sum()
    if eps > 0:
        uniform = -log_probs.mean(dim=-1).masked_fill(~real, 0.0)
        loss_sum = (1.0 - eps) * nll_sum + eps * uniform.sum()
    else:
        loss_sum = nll_sum
    # The gold token scoring the row's maximum: 6x cheaper than argmax on CPU.
    correct = ((-nll.detach() >= log_probs.detach().amax(dim=-1)) & real).sum()
    return loss_sum, nll_sum.detach(), real.sum(), correct


# Left out of torch.compile's graphs (train.compile runs it eagerly; it is matrix
# products and a hand-fused softmax): torch 2.11 traced its autograd.Function wrong,
# giving zero gradients (compiled training did not learn) or, with dropout on,
# stopping with an AssertionError inside dynamo.
@torch.compiler.disable
def output_loss(hidden: Tensor, weight: Tensor, target: Tensor, eps: float,
                pad_id: int) -> Tensor:
    """`label_smoothed_nll(log_softmax(hidden @ weight.T), target, eps, pad_id)` as one
    float32 4-vector [loss, nll, tokens, correct]; only `loss` carries a gradient.

    hidden [..., d] (decoder output), weight [V, d] (the output layer), target [...].
    Under autocast the matmuls run in its dtype and the softmax in float32, as the
    reference does.
    """
    device_type = hidden.device.type
    dtype = (torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type)
             else hidden.dtype)
    with torch.autocast(device_type, enabled=False):
        return _LinearSmoothedNLL.apply(hidden, weight, target, eps, pad_id, dtype)


class _LinearSmoothedNLL(torch.autograd.Function):
    """Forward computes the loss and, while each chunk's softmax is at hand, the gradient
    of the summed loss w.r.t. hidden and weight; backward only scales them."""

    @staticmethod
    def forward(ctx: Any, hidden: Tensor, weight: Tensor, target: Tensor, eps: float,
                pad_id: int, dtype: torch.dtype) -> Tensor:
        h = hidden.reshape(-1, hidden.size(-1)).to(dtype)
        w = weight.to(dtype)
        t = target.reshape(-1)
        wants_grad = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        grad_h = torch.empty_like(h) if wants_grad else None
        grad_w = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) \
            if wants_grad else None
        sums = torch.zeros(4, dtype=torch.float32, device=hidden.device)
        step = chunk_rows(h.device.type, w.size(0))
        for start in range(0, h.size(0), step):
            rows = slice(start, start + step)
            grad = _chunk(h[rows], w, t[rows], eps, pad_id, sums, wants_grad)
            if grad is not None:
                grad_h[rows] = grad @ w
                grad_w.add_((grad.t() @ h[rows]).float())
        ctx.save_for_backward(grad_h, grad_w)
        ctx.shapes = (hidden.shape, hidden.dtype, weight.dtype)
        return sums

    @staticmethod
    def backward(ctx: Any, grad_sums: Tensor) -> tuple[Optional[Tensor], ...]:
        grad_h, grad_w = ctx.saved_tensors
        shape, h_dtype, w_dtype = ctx.shapes
        scale = grad_sums[0]  # the other entries carry no gradient
        grad_hidden = None if grad_h is None else (grad_h * scale).view(shape).to(h_dtype)
        grad_weight = None if grad_w is None else (grad_w * scale).to(w_dtype)
        return grad_hidden, grad_weight, None, None, None, None


def _chunk(h: Tensor, w: Tensor, target: Tensor, eps: float, pad_id: int, sums: Tensor,
           wants_grad: bool) -> Optional[Tensor]:
    """Add one chunk's [loss, nll, tokens, correct] to `sums`; return d(loss)/d(logits)
    in the compute dtype (None without gradients)."""
    logits = h @ w.t()
    chunk_sums, grad = epilogue_for(logits)(logits, target, eps, pad_id, wants_grad)
    sums += chunk_sums
    return grad


def softmax_epilogue(logits: Tensor, target: Tensor, eps: float, pad_id: int,
                     wants_grad: bool) -> tuple[Tensor, Optional[Tensor]]:
    """A chunk's [loss, nll, tokens, correct] sums from its logits, and d(loss)/d(logits)
    in the logits' dtype (None without gradients). With p = softmax(logits) and
    q = (1 - eps) * one-hot + eps / V, d(-sum q log p)/d(logits) = p - q."""
    vocab = logits.size(1)
    real = target != pad_id
    scores = logits.float()
    top = scores.amax(dim=-1, keepdim=True)
    gold = scores.gather(1, target[:, None])
    mean = scores.mean(dim=-1, keepdim=True)
    exp = scores.sub_(top).exp_()  # in place: the scores are not needed any more
    total = exp.sum(dim=-1, keepdim=True)
    log_z = top + total.log()  # log-sum-exp of the logits
    nll = (log_z - gold).squeeze(1).masked_fill(~real, 0.0)
    uniform = (log_z - mean).squeeze(1).masked_fill(~real, 0.0)
    sums = torch.stack([(1.0 - eps) * nll.sum() + eps * uniform.sum(), nll.sum(),
                        real.sum().float(), ((gold >= top).squeeze(1) & real).sum().float()])
    if not wants_grad:
        return sums, None
    # Padding rows get no gradient: their per-row factors are zero, saving a masking pass.
    weight = real[:, None].to(exp.dtype)
    if torch.compiler.is_compiling():  # the gold entries in the same pass (no scatter):
        gold_entries = torch.arange(vocab, device=logits.device) == target[:, None]
        grad = (exp * (weight / total) - weight * (eps / vocab)
                + torch.where(gold_entries, weight * (eps - 1.0), 0.0))
        return sums, grad.to(logits.dtype)  # one loop writes the gradient in logits' dtype
    grad = exp.mul_(weight / total).sub_(weight * (eps / vocab))
    grad.scatter_add_(1, target[:, None], weight * (eps - 1.0))
    return sums, grad.to(logits.dtype)


# Logits of a chunk from which, on the CPU, `softmax_epilogue` runs compiled: one C++ loop
# over them for the sums and one for the gradient instead of about ten passes of float32
# (half the epilogue's time at configs/cpu-1h.yaml's 1,024 x 8,000; compiling takes a few
# seconds once per process, which smaller models, the tests' among them, do not repay).
COMPILE_MIN_LOGITS = 1 << 22


def epilogue_for(logits: Tensor) -> Callable[..., tuple[Tensor, Optional[Tensor]]]:
    """`softmax_epilogue` for this chunk: compiled for large chunks on the CPU, where
    torch.compile has a C++ compiler."""
    if logits.device.type != "cpu" or logits.numel() < COMPILE_MIN_LOGITS:
        return softmax_epilogue
    return compiled_epilogue() or softmax_epilogue


@functools.cache
def compiled_epilogue() -> Optional[Callable[..., tuple[Tensor, Optional[Tensor]]]]:
    """`softmax_epilogue` compiled for any number of rows, or None without a C++ compiler
    for torch.compile (it would fail at its first call)."""
    return torch.compile(softmax_epilogue, dynamic=True) if cpp_compiler() else None


@functools.cache
def cpp_compiler() -> Optional[str]:
    """The C++ compiler torch.compile's CPU code is built with (inductor's own search:
    g++), or None where there is none: compiling would fail at the first call."""
    from torch._inductor import cpp_builder

    try:
        return cpp_builder.get_cpp_compiler()
    except Exception:  # torch's InvalidCxxCompiler, or a search that could not run
        return None


# ----------------------------------------------------------------------------- guided alignment

EPSILON = 1e-6  # ce: log(attention + EPSILON), as Marian's


class Guide(NamedTuple):
    """The cross-attention head guided alignment trains (0-based), and its cost."""

    layer: int
    head: int
    cost: str  # a name of `config.schema.ALIGNMENT_COSTS`


def guide_of(tc: TrainConfig, model: ModelConfig) -> Optional[Guide]:
    """The head `train.guided_alignment` trains (`schema.guided_head`), or None when it
    is off."""
    head = guided_head(tc, model)
    return None if head is None else Guide(*head, tc.guided_alignment_cost)


def alignment_cost(weights: Tensor, align: AlignTargets, cost: str) -> Tensor:
    """[cost sum, aligned rows] of a batch: the guided head's weights [B, T, S] against
    its alignment targets (`AlignTargets`: each aligned row's links, its weights summing
    to 1). ce: -sum over links of value x log(weight + EPSILON), a cross-entropy per
    aligned row (Marian's cost); mse: half the squared difference, over every source
    position of the aligned rows (Marian's first cost). Rows without links cost nothing."""
    flat = weights.reshape(-1)
    if cost == "ce":
        total = -(align.value * torch.log(flat.index_select(0, align.index) + EPSILON)).sum()
    else:
        width = weights.size(-1)
        rows = weights.reshape(-1, width).index_select(0, align.rows)
        position = torch.searchsorted(align.rows, align.index // width)
        target = torch.zeros_like(rows).reshape(-1).index_put_(
            (position * width + align.index % width,), align.value.to(rows.dtype))
        total = 0.5 * (rows.reshape(-1) - target).square().sum()
    return torch.stack([total.float(), torch.tensor(float(align.rows.numel()),
                                                    device=total.device)])


def training_loss(sums: Tensor, guided_weight: float) -> Tensor:
    """What an update minimises, from a batch's sums (`TeacherForcing`): the smoothed
    loss, plus `guided_weight` x the alignment cost when the sums hold one."""
    return sums[0] + guided_weight * sums[4] if len(sums) > 4 else sums[0]


# ----------------------------------------------------------------------------- the module

States = Callable[[Tensor, Tensor], Any]


def teacher_forced_states(model: torch.nn.Module, guide: Optional[Guide] = None) -> States:
    """(src, tgt_in) -> the decoder's last states [batch, tgt_len, d_model], and with a
    `guide` its head's attention weights too (`Transformer.decode_watching`): the part
    of an update that `train.compile` compiles (batch shapes are all it depends on)."""
    if guide is not None:
        return lambda src, tgt_in: model.decode_watching(tgt_in, model.encode(src),
                                                         guide.layer, guide.head)
    return lambda src, tgt_in: model.decode_hidden(tgt_in, model.encode(src))


class TeacherForcing(torch.nn.Module):
    """The model and its training loss as one module (what DDP wraps): encode `src`,
    decode `tgt_in` (BOS + target), score against `tgt_out` (target + EOS). `states`:
    what computes the decoder's states, `teacher_forced_states` unless a compiled one.
    `guide`: the head guided alignment trains (`train.guided_alignment`)."""

    def __init__(self, model: torch.nn.Module, label_smoothing: float, pad_id: int,
                 states: Optional[States] = None, guide: Optional[Guide] = None):
        super().__init__()
        self.model = model
        self.label_smoothing = label_smoothing
        self.pad_id = pad_id
        self.guide = guide
        self.states = states or teacher_forced_states(model, guide)

    def forward(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor,
                rows: Optional[Tensor] = None, align: Optional[AlignTargets] = None
                ) -> Tensor:
        """[loss, nll, tokens, correct] sums, as `output_loss`; with a guide, followed by
        [alignment cost, aligned rows] (`alignment_cost` against `align`). `rows`: the
        flat indices of tgt_out's real positions (`Batch.rows`): only they reach the
        output layer."""
        if self.guide is None:
            hidden, weights = self.states(src, tgt_in), None
        else:
            hidden, weights = self.states(src, tgt_in)
        if rows is not None:
            hidden = hidden.reshape(-1, hidden.size(-1)).index_select(0, rows)
            tgt_out = tgt_out.reshape(-1).index_select(0, rows)
        sums = output_loss(hidden, self.model.output_weight, tgt_out, self.label_smoothing,
                           self.pad_id)
        if weights is None:
            return sums
        if align is None:
            raise ValueError("guided alignment needs the batch's alignment targets")
        return torch.cat([sums, alignment_cost(weights, align, self.guide.cost)])
