"""The GRPO policy loss and its helpers, as pure tensor functions: the clipped-ratio objective
with dapo / grpo / dr_grpo normalisation and an optional k3 KL penalty, sampler/trainer
importance-sampling weights, and per-token log-probabilities from logits.

Notation (DeepSeekMath GRPO, DAPO, Dr. GRPO papers): for token ``t`` of completion ``i``,
``r_{i,t} = pi_theta(o_{i,t} | q, o_{i,<t}) / pi_theta_old(o_{i,t} | q, o_{i,<t})`` is the
probability ratio, ``A_i`` the group-relative advantage of completion ``i`` (the same for all
its tokens), ``eps_low`` / ``eps_high`` the clip range and ``beta`` the KL coefficient.
"""

from __future__ import annotations

from typing import Literal

import torch

LossType = Literal["dapo", "grpo", "dr_grpo"]
ImportanceSamplingMode = Literal["truncate", "mask"]

IMPORTANCE_SAMPLING_METRICS = ("is/logprob_diff_mean_abs", "is/logprob_diff_max_abs", "is/frac_capped", "is/weight_mean")
"""The metrics `importance_sampling_weights` returns (``*_max_abs`` is a maximum, the rest means)."""


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    loss_type: LossType = "dapo",
    beta: float = 0.0,
    ref_logprobs: torch.Tensor | None = None,
    num_items_in_batch: int | torch.Tensor | None = None,
    num_sequences_in_batch: int | None = None,
    max_completion_length: int | None = None,
    importance_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The GRPO loss of one micro-batch, to be minimised (``loss.backward()``).

    Per active token::

        l_{i,t} = -min(r_{i,t} A_i, clip(r_{i,t}, 1 - eps_low, 1 + eps_high) A_i) * w_{i,t}
                  + beta * KL_{i,t}
        KL_{i,t} = exp(ref_{i,t} - logp_{i,t}) - (ref_{i,t} - logp_{i,t}) - 1     (k3 estimator, >= 0)

    where ``w`` are the optional sampler/trainer `importance_weights` (1 if None). Normalisation:

    - ``"dapo"`` (default): ``sum_{i,t} l_{i,t} / N`` with ``N`` = `num_items_in_batch`, the active
      tokens of the whole optimizer step (all micro-batches), so that summing the micro-batch
      losses of a gradient-accumulation step gives exactly the loss and gradient of one big
      batch. If None, ``N`` is this micro-batch's active tokens. Under DDP, which averages
      gradients over processes, pass the global count divided by the world size (as TRL does).
    - ``"grpo"``: each sequence's mean over its active tokens, then the mean over sequences
      (long completions weigh less per token). With `num_sequences_in_batch` (the sequences of
      the whole optimizer step) the sum over this micro-batch's sequences is divided by it, so
      accumulation is exact too; if None, by this micro-batch's ``B``.
    - ``"dr_grpo"``: ``sum_{i,t} l_{i,t} / (B * L)`` with ``L`` = `max_completion_length`, a
      constant (required), and ``B`` = `num_sequences_in_batch` or this micro-batch's ``B``.

    Args:
        logprobs: (B, T) log-probabilities of the completion tokens under the policy being
            trained (with gradient).
        old_logprobs: (B, T) the same under the policy that sampled (``pi_theta_old``, the
            trainer's copy at rollout time). None means on-policy: ``logprobs.detach()``, so
            ``r = 1`` but the gradient is the policy gradient ``-A * grad logp``.
        advantages: (B,) one advantage per sequence.
        mask: (B, T) 1 on tokens that count (sampled assistant tokens), 0 on prompt, env and
            padding tokens. Values of the other tensors at masked positions never matter, not
            even NaN or inf.
        epsilon, epsilon_high: the clip range ``[1 - epsilon, 1 + epsilon_high]``;
            `epsilon_high` defaults to `epsilon` (DAPO's "clip-higher" sets it larger, e.g. 0.28).
        beta: KL coefficient; with ``beta > 0``, `ref_logprobs` (B, T) are required (the
            reference policy: the base model with the adapter disabled).
        importance_weights: (B, T) per-token factors correcting for the sampler (e.g. vLLM)
            and the trainer disagreeing on old log-probabilities, already truncated or masked
            (see `importance_sampling_weights`); treated as constants.

    Returns:
        ``(loss, metrics)``: a scalar tensor and floats over this micro-batch's active tokens:
        ``clip_ratio/low_mean`` (tokens with ``r < 1 - eps_low`` and ``A < 0``, whose gradient is
        clipped away), ``clip_ratio/high_mean`` (``r > 1 + eps_high`` and ``A > 0``),
        ``clip_ratio/region_mean`` (either), ``ratio/mean``, ``num_tokens``, and ``kl`` (the mean
        k3 KL) when `ref_logprobs` are given.
    """
    epsilon_high = epsilon if epsilon_high is None else epsilon_high
    if not 0 <= epsilon < 1 or epsilon_high < 0:
        raise ValueError(f"need 0 <= epsilon < 1 and epsilon_high >= 0, got epsilon={epsilon}, epsilon_high={epsilon_high}")
    if loss_type not in ("dapo", "grpo", "dr_grpo"):
        raise ValueError(f"loss_type must be 'dapo', 'grpo' or 'dr_grpo', got {loss_type!r}")
    if loss_type == "dr_grpo" and not max_completion_length:
        raise ValueError("loss_type='dr_grpo' divides by a constant: give max_completion_length (the generation limit in tokens)")
    if beta < 0:
        raise ValueError(f"beta must be >= 0, got {beta}")
    if beta > 0 and ref_logprobs is None:
        raise ValueError("beta > 0 needs ref_logprobs (log-probabilities under the reference model)")
    _check_shapes(logprobs, mask, old_logprobs=old_logprobs, ref_logprobs=ref_logprobs, importance_weights=importance_weights)
    if advantages.shape != logprobs.shape[:1]:
        raise ValueError(f"advantages must have shape ({logprobs.shape[0]},), one per sequence, got {tuple(advantages.shape)}")

    active = mask.bool()
    weight = active.to(torch.float32)
    logprobs = logprobs.float()
    old = logprobs.detach() if old_logprobs is None else old_logprobs.detach().float()
    # torch.where, not multiplication: a masked NaN or inf must not reach exp() or the gradient.
    log_ratio = torch.where(active, logprobs - old, 0.0)
    ratio = torch.exp(log_ratio)  # r_{i,t}
    advantage = advantages.detach().float().unsqueeze(1)  # A_i, broadcast over t
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon_high)
    per_token = -torch.min(ratio * advantage, clipped * advantage)
    if importance_weights is not None:
        per_token = per_token * torch.where(active, importance_weights.detach().float(), 0.0)

    kl = None
    if ref_logprobs is not None:
        ref_minus_logp = torch.where(active, ref_logprobs.detach().float() - logprobs, 0.0)
        kl = torch.exp(ref_minus_logp) - ref_minus_logp - 1
        if beta > 0:
            per_token = per_token + beta * kl

    per_token = per_token * weight
    batch = logprobs.shape[0]
    if loss_type == "dapo":
        tokens = weight.sum() if num_items_in_batch is None else torch.as_tensor(num_items_in_batch, dtype=torch.float32)
        loss = per_token.sum() / tokens.to(per_token.device).clamp(min=1.0)
    elif loss_type == "grpo":
        per_sequence = per_token.sum(dim=1) / weight.sum(dim=1).clamp(min=1.0)
        loss = per_sequence.sum() / (num_sequences_in_batch or batch)
    else:
        loss = per_token.sum() / ((num_sequences_in_batch or batch) * max_completion_length)

    with torch.no_grad():
        n_active = weight.sum().clamp(min=1.0)
        low = (ratio < 1 - epsilon) & (advantage < 0) & active
        high = (ratio > 1 + epsilon_high) & (advantage > 0) & active
        metrics = {
            "clip_ratio/low_mean": (low.sum() / n_active).item(),
            "clip_ratio/high_mean": (high.sum() / n_active).item(),
            "clip_ratio/region_mean": ((low | high).sum() / n_active).item(),
            "ratio/mean": ((ratio * weight).sum() / n_active).item(),
            "num_tokens": weight.sum().item(),
        }
        if kl is not None:
            metrics["kl"] = ((kl * weight).sum() / n_active).item()
    return loss, metrics


def importance_sampling_weights(
    trainer_logprobs: torch.Tensor,
    sampler_logprobs: torch.Tensor,
    mask: torch.Tensor,
    *,
    mode: ImportanceSamplingMode = "truncate",
    cap: float = 2.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Per-token weights correcting for the sampler and the trainer disagreeing on ``pi_old``.

    A fast sampler (vLLM, other kernels, bf16) computes slightly different probabilities than
    the trainer's forward pass of the same weights, so its samples are mildly off-policy.
    With ``rho_t = pi_trainer(o_t) / pi_sampler(o_t) = exp(trainer_logprobs - sampler_logprobs)``:

    - ``"truncate"`` (TIS, Yao et al. 2025): ``w_t = min(rho_t, cap)``;
    - ``"mask"`` (MIS): ``w_t = rho_t`` where ``rho_t <= cap``, else 0 (drop the token).

    Args:
        trainer_logprobs: (B, T) old log-probabilities from the trainer's own forward pass.
        sampler_logprobs: (B, T) the log-probabilities the sampler reported for the same tokens.
        mask: (B, T) active tokens; weights are 0 elsewhere.

    Returns:
        ``(weights, metrics)``: (B, T) float32 weights without gradient, to pass to
        `policy_loss` as `importance_weights`, and over active tokens
        ``is/logprob_diff_mean_abs``, ``is/logprob_diff_max_abs``, ``is/frac_capped`` (tokens
        with ``rho > cap``) and ``is/weight_mean``.
    """
    if mode not in ("truncate", "mask"):
        raise ValueError(f"mode must be 'truncate' or 'mask', got {mode!r}")
    if cap <= 0:
        raise ValueError(f"cap must be > 0, got {cap}")
    _check_shapes(trainer_logprobs, mask, sampler_logprobs=sampler_logprobs)
    with torch.no_grad():
        active = mask.bool()
        weight = active.to(torch.float32)
        diff = torch.where(active, trainer_logprobs.float() - sampler_logprobs.float(), 0.0)
        rho = torch.exp(diff)
        capped = (rho > cap) & active
        weights = torch.clamp(rho, max=cap) if mode == "truncate" else torch.where(capped, 0.0, rho)
        weights = weights * weight
        n_active = weight.sum().clamp(min=1.0)
        metrics = {
            "is/logprob_diff_mean_abs": (diff.abs().sum() / n_active).item(),
            "is/logprob_diff_max_abs": diff.abs().max().item() if diff.numel() else 0.0,
            "is/frac_capped": (capped.sum() / n_active).item(),
            "is/weight_mean": (weights.sum() / n_active).item(),
        }
    return weights, metrics


def selective_log_softmax(logits: torch.Tensor, ids: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """``log softmax(logits / temperature)[..., ids]``: the log-probability of each chosen token.

    The sampler draws from the temperature-scaled distribution, so the trainer divides by the
    same temperature to compute the same ``pi_theta_old`` and ``pi_theta``. (Top-p / top-k
    truncation at sampling time is not reproduced: use ``top_p=1`` when training.)

    Args:
        logits: (..., T, V) logits whose position ``t`` predicts ``ids[..., t]`` (shift them
            yourself: logits of a causal LM at ``t`` predict the token at ``t + 1``).
        ids: (..., T) the chosen token ids.

    Returns:
        (..., T) float32 log-probabilities. Rows are processed one at a time in float32, so
        a (B, T, V) float32 copy of a bf16 batch is never made.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 (greedy decoding has no log-probabilities to train on), got {temperature}")
    if logits.shape[:-1] != ids.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and ids {tuple(ids.shape)} disagree: need logits (..., T, V) and ids (..., T)")
    flat_logits, flat_ids = logits.reshape(-1, logits.shape[-1]), ids.reshape(-1)
    chunk = max(1, ids.shape[-1]) if ids.dim() else 1
    out = []
    for start in range(0, flat_ids.shape[0], chunk):
        rows = flat_logits[start : start + chunk].float() / temperature
        chosen = rows.gather(-1, flat_ids[start : start + chunk].unsqueeze(-1)).squeeze(-1)
        out.append(chosen - torch.logsumexp(rows, dim=-1))
    if not out:
        return torch.zeros(ids.shape, dtype=torch.float32, device=logits.device)
    return torch.cat(out).reshape(ids.shape)


def _check_shapes(reference: torch.Tensor, mask: torch.Tensor, **others: torch.Tensor | None) -> None:
    if reference.dim() != 2:
        raise ValueError(f"log-probabilities must be (B, T), got shape {tuple(reference.shape)}")
    for name, tensor in {"mask": mask, **others}.items():
        if tensor is not None and tensor.shape != reference.shape:
            raise ValueError(f"{name} has shape {tuple(tensor.shape)}, expected {tuple(reference.shape)} like the log-probabilities")


__all__ = [
    "IMPORTANCE_SAMPLING_METRICS",
    "ImportanceSamplingMode",
    "LossType",
    "importance_sampling_weights",
    "policy_loss",
    "selective_log_softmax",
]
