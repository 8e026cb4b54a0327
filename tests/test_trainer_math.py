"""GRPO arithmetic on hand-computed cases: group advantages, the clipped policy loss and its
normalisations (exact under gradient accumulation), the k3 KL, importance-sampling weights,
and per-token log-probabilities."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import examples

from judgegym.trainers.advantages import STD_EPSILON, group_advantages
from judgegym.trainers.loss import importance_sampling_weights, policy_loss, selective_log_softmax
from judgegym.trajectory import Group, Trajectory

# -- advantages ---------------------------------------------------------------------------


def test_group_scaling_divides_by_each_groups_sample_std():
    result = group_advantages([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0, 1.0]], "group")
    # [1, 2, 3]: mean 2, sample std 1.  [0, 0, 1, 1]: mean 0.5, sample std sqrt(1/3).
    assert result.advantages[0] == pytest.approx([-1 / (1 + STD_EPSILON), 0.0, 1 / (1 + STD_EPSILON)])
    s = math.sqrt(1 / 3) + STD_EPSILON
    assert result.advantages[1] == pytest.approx([-0.5 / s, -0.5 / s, 0.5 / s, 0.5 / s])
    assert (result.n_groups, result.n_failed, result.n_zero_std) == (2, 0, 0)
    assert result.reward_mean == pytest.approx(8 / 7)  # (1+2+3+0+0+1+1) / 7
    assert result.frac_reward_zero_std == 0.0


def test_batch_scaling_uses_the_std_of_every_reward_and_flat_groups_get_zeros():
    result = group_advantages([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]], "batch")
    # all six rewards: mean 3.5, squared deviations 6.25 + 2.25 + 0.25 + 3 * 2.25 = 15.5, sample var 15.5 / 5
    batch_std = math.sqrt(3.1)
    assert result.reward_std == pytest.approx(batch_std)
    assert result.advantages[0] == pytest.approx([-1 / (batch_std + STD_EPSILON), 0.0, 1 / (batch_std + STD_EPSILON)])
    assert result.advantages[1] == [0.0, 0.0, 0.0]
    assert result.zero_std == [False, True]
    assert result.n_zero_std == 1 and result.frac_reward_zero_std == 0.5


def test_no_scaling_only_centres():
    result = group_advantages([[1.0, 2.0, 6.0]], "none")
    assert result.advantages == [[-2.0, -1.0, 3.0]]
    assert group_advantages(torch.tensor([[1.0, 2.0, 6.0]]), "none").advantages == [[-2.0, -1.0, 3.0]]  # a (groups, G) tensor


def test_failed_groups_are_dropped_and_counted_never_zeroed():
    judged = Group(scenario_id="s", trajectories=[Trajectory(scenario_id="s", reward=r) for r in (0.0, 1.0)])
    failed = Group(scenario_id="t", trajectories=[Trajectory(scenario_id="t", reward=0.0)] * 2, failed=True)
    groups = [None, [1.0, None, 0.0], [0.0, float("nan")], failed, judged, torch.tensor([2.0, 2.0])]
    result = group_advantages(groups, "group")
    assert result.advantages[:4] == [None, None, None, None]
    assert result.advantages[4] == pytest.approx([-0.5 / (math.sqrt(0.5) + STD_EPSILON), 0.5 / (math.sqrt(0.5) + STD_EPSILON)])
    assert result.advantages[5] == [0.0, 0.0]
    assert (result.n_groups, result.n_failed, result.n_zero_std) == (6, 4, 1)
    assert result.kept == [4, 5]
    assert result.reward_mean == pytest.approx(1.25)  # only kept rewards: 0, 1, 2, 2
    assert result.frac_reward_zero_std == 0.5
    assert result.metrics()["groups_failed"] == 4.0


def test_a_group_of_one_has_no_variance_and_bad_input_is_refused():
    assert group_advantages([[0.7]]).advantages == [[0.0]]
    assert group_advantages([[0.7]]).n_zero_std == 1
    with pytest.raises(ValueError, match="group 1 has no rewards"):
        group_advantages([[1.0, 2.0], []])
    with pytest.raises(TypeError, match="numbers"):
        group_advantages([["high", 1.0]])
    with pytest.raises(ValueError, match="scale_rewards"):
        group_advantages([[1.0, 2.0]], "std")  # type: ignore[arg-type]


def test_all_groups_failed_gives_nan_statistics_not_zeros():
    result = group_advantages([None, None])
    assert result.n_failed == 2 and math.isnan(result.reward_mean) and math.isnan(result.frac_reward_zero_std)


# -- policy loss --------------------------------------------------------------------------


def _t(rows):
    return torch.tensor(rows, dtype=torch.float32)


def test_ratio_one_gives_minus_advantage_per_token_with_each_normalisation():
    logp = _t([[-1.0, -2.0, 0.0], [-0.5, 0.0, 0.0]]).requires_grad_()
    advantages = _t([1.0, -0.5])
    mask = _t([[1, 1, 0], [1, 0, 0]])
    # per-token losses: row 0 -> -1, -1; row 1 -> +0.5.  sum = -1.5 over 3 active tokens.
    dapo, metrics = policy_loss(logp, logp.detach(), advantages, mask)
    assert dapo.item() == pytest.approx(-1.5 / 3)
    assert metrics["ratio/mean"] == pytest.approx(1.0) and metrics["clip_ratio/region_mean"] == 0.0 and metrics["num_tokens"] == 3
    grpo, _ = policy_loss(logp, None, advantages, mask, loss_type="grpo")
    assert grpo.item() == pytest.approx((-1.0 + 0.5) / 2)  # per-sequence means -1 and +0.5
    dr, _ = policy_loss(logp, None, advantages, mask, loss_type="dr_grpo", max_completion_length=4)
    assert dr.item() == pytest.approx(-1.5 / (2 * 4))
    dapo.backward()
    # d/dlogp of -r*A at r = 1 is -A, divided by the 3 active tokens; masked tokens get nothing
    torch.testing.assert_close(logp.grad, _t([[-1 / 3, -1 / 3, 0.0], [0.5 / 3, 0.0, 0.0]]))


@pytest.mark.parametrize(
    ("ratio", "advantage", "loss", "clipped", "side"),
    [
        (1.5, 1.0, -1.2, True, "high"),  # min(1.5, 1.2) = 1.2: the gain is capped
        (1.5, -1.0, 1.5, False, None),  # min(-1.5, -1.2) = -1.5: the pessimistic bound keeps the gradient
        (0.5, 1.0, -0.5, False, None),  # min(0.5, 0.8) = 0.5
        (0.5, -1.0, 0.8, True, "low"),  # min(-0.5, -0.8) = -0.8: the gain is capped
    ],
)
def test_clipping_on_both_sides(ratio, advantage, loss, clipped, side):
    old = _t([[-1.0]])
    logp = (old + math.log(ratio)).requires_grad_()
    value, metrics = policy_loss(logp, old, _t([advantage]), _t([[1]]))
    assert value.item() == pytest.approx(loss, abs=1e-6)
    value.backward()
    expected_grad = 0.0 if clipped else -advantage * ratio  # d(-r A)/d logp = -A r
    assert logp.grad.item() == pytest.approx(expected_grad, abs=1e-6)
    assert metrics["clip_ratio/region_mean"] == (1.0 if clipped else 0.0)
    assert metrics["clip_ratio/low_mean"] == (1.0 if side == "low" else 0.0)
    assert metrics["clip_ratio/high_mean"] == (1.0 if side == "high" else 0.0)


def test_epsilon_high_widens_only_the_upper_bound():
    old = _t([[-1.0, -1.0]])
    logp = old + torch.log(_t([[1.25, 0.75]]))
    up = _t([1.0])
    symmetric, _ = policy_loss(logp[:, :1], old[:, :1], up, _t([[1]]), epsilon=0.2)
    asymmetric, metrics = policy_loss(logp[:, :1], old[:, :1], up, _t([[1]]), epsilon=0.2, epsilon_high=0.28)
    assert symmetric.item() == pytest.approx(-1.2) and asymmetric.item() == pytest.approx(-1.25)
    assert metrics["clip_ratio/high_mean"] == 0.0
    down = _t([-1.0])  # r = 0.75 < 0.8 with A < 0 is clipped at 0.8 whatever epsilon_high is
    low, metrics = policy_loss(logp[:, 1:], old[:, 1:], down, _t([[1]]), epsilon=0.2, epsilon_high=0.28)
    assert low.item() == pytest.approx(0.8) and metrics["clip_ratio/low_mean"] == 1.0


def test_k3_kl_on_a_hand_example():
    logp = torch.log(_t([[0.5]]))
    ref = torch.log(_t([[0.25]]))
    # ref - logp = ln 0.5; k3 = 0.5 - ln 0.5 - 1 = ln 2 - 0.5
    k3 = math.log(2) - 0.5
    loss, metrics = policy_loss(logp, None, _t([0.0]), _t([[1]]), beta=0.1, ref_logprobs=ref)
    assert loss.item() == pytest.approx(0.1 * k3)
    assert metrics["kl"] == pytest.approx(k3)
    no_kl, metrics = policy_loss(logp, None, _t([0.0]), _t([[1]]))
    assert no_kl.item() == 0.0 and "kl" not in metrics
    with pytest.raises(ValueError, match="ref_logprobs"):
        policy_loss(logp, None, _t([0.0]), _t([[1]]), beta=0.1)


def test_importance_weights_scale_the_policy_term_only():
    logp = _t([[-1.0, -1.0]])
    ref = logp + math.log(0.5)
    weights = _t([[0.5, 2.0]])
    loss, _ = policy_loss(logp, None, _t([1.0]), _t([[1, 1]]), importance_weights=weights)
    assert loss.item() == pytest.approx(-(0.5 + 2.0) / 2)
    with_kl, _ = policy_loss(logp, None, _t([0.0]), _t([[1, 1]]), importance_weights=weights, beta=1.0, ref_logprobs=ref)
    assert with_kl.item() == pytest.approx(math.log(2) - 0.5)  # k3 of each token, unweighted


def _random_batch(seed: int, batch: int = 4, length: int = 6):
    generator = torch.Generator().manual_seed(seed)
    logp = -torch.rand(batch, length, generator=generator) * 3
    old = logp + torch.randn(batch, length, generator=generator) * 0.3  # some ratios clip
    ref = logp + torch.randn(batch, length, generator=generator) * 0.2
    advantages = torch.randn(batch, generator=generator)
    lengths = torch.tensor([6, 2, 4, 1][:batch])
    mask = (torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)).float()
    return logp, old, ref, advantages, mask


@pytest.mark.parametrize("loss_type", ["dapo", "grpo", "dr_grpo"])
def test_gradient_accumulation_is_exact(loss_type):
    logp, old, ref, advantages, mask = _random_batch(0)
    options = {"loss_type": loss_type, "beta": 0.05, "ref_logprobs": ref, "max_completion_length": 8, "epsilon_high": 0.28}

    whole = logp.clone().requires_grad_()
    loss, _ = policy_loss(whole, old, advantages, mask, **options)
    loss.backward()

    split = logp.clone().requires_grad_()
    step = {"num_items_in_batch": int(mask.sum()), "num_sequences_in_batch": 4}
    total = 0.0
    for rows in (slice(0, 2), slice(2, 4)):
        micro = {**options, "ref_logprobs": ref[rows]}
        part, _ = policy_loss(split[rows], old[rows], advantages[rows], mask[rows], **micro, **step)
        part.backward()
        total += part.item()

    assert total == pytest.approx(loss.item(), rel=1e-6)
    torch.testing.assert_close(split.grad, whole.grad)


def test_grpo_and_dapo_differ_only_when_lengths_differ():
    logp, old, _, advantages, mask = _random_batch(1)
    dapo, _ = policy_loss(logp, old, advantages, mask, loss_type="dapo")
    grpo, _ = policy_loss(logp, old, advantages, mask, loss_type="grpo")
    assert abs(dapo.item() - grpo.item()) > 1e-3
    full = torch.ones_like(mask)
    dapo, _ = policy_loss(logp, old, advantages, full, loss_type="dapo")
    grpo, _ = policy_loss(logp, old, advantages, full, loss_type="grpo")
    assert dapo.item() == pytest.approx(grpo.item())


def test_dr_grpo_divides_by_a_constant_whatever_the_padding():
    logp, old, _, advantages, mask = _random_batch(2)
    loss, _ = policy_loss(logp, old, advantages, mask, loss_type="dr_grpo", max_completion_length=10)
    padded = [torch.cat([x, torch.zeros(4, 3)], dim=1) for x in (logp, old, mask)]
    same, _ = policy_loss(padded[0], padded[1], advantages, padded[2], loss_type="dr_grpo", max_completion_length=10)
    assert same.item() == pytest.approx(loss.item())
    per_token_sum, _ = policy_loss(logp, old, advantages, mask, loss_type="dapo", num_items_in_batch=1)
    assert loss.item() == pytest.approx(per_token_sum.item() / (4 * 10))
    with pytest.raises(ValueError, match="max_completion_length"):
        policy_loss(logp, old, advantages, mask, loss_type="dr_grpo")


@settings(max_examples=examples(60), deadline=None)
@given(
    garbage=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=24, max_size=24),
    loss_type=st.sampled_from(["dapo", "grpo", "dr_grpo"]),
)
def test_masked_positions_never_change_loss_or_gradient(garbage, loss_type):
    logp, old, ref, advantages, mask = _random_batch(3)
    noise = torch.tensor(garbage, dtype=torch.float32).reshape(4, 6)
    inactive = mask == 0
    results = []
    for fill in (False, True):
        tensors = [torch.where(inactive & fill, noise, x) for x in (logp, old, ref)]
        weights = torch.where(inactive & fill, noise, torch.ones_like(logp))
        trained = tensors[0].clone().requires_grad_()
        loss, metrics = policy_loss(
            trained,
            tensors[1],
            advantages,
            mask,
            loss_type=loss_type,
            max_completion_length=6,
            beta=0.1,
            ref_logprobs=tensors[2],
            importance_weights=weights,
        )
        loss.backward()
        results.append((loss.detach(), trained.grad, metrics))
    (loss_a, grad_a, metrics_a), (loss_b, grad_b, metrics_b) = results
    assert torch.isfinite(loss_b)
    torch.testing.assert_close(loss_a, loss_b)
    torch.testing.assert_close(grad_a, grad_b)
    assert (grad_b[inactive] == 0).all()
    assert metrics_a == pytest.approx(metrics_b)


def test_shape_and_argument_errors_say_what_is_wrong():
    logp, old, _, advantages, mask = _random_batch(4)
    with pytest.raises(ValueError, match=r"mask has shape \(4, 5\)"):
        policy_loss(logp, old, advantages, mask[:, :5])
    with pytest.raises(ValueError, match="one per sequence"):
        policy_loss(logp, old, advantages[:3], mask)
    with pytest.raises(ValueError, match="loss_type"):
        policy_loss(logp, old, advantages, mask, loss_type="bnpo")  # type: ignore[arg-type]


# -- importance sampling ------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "expected"), [("truncate", [0.5, 1.5, 2.0, 0.0]), ("mask", [0.5, 1.5, 0.0, 0.0])])
def test_importance_sampling_weights_truncate_or_mask(mode, expected):
    sampler = _t([[-1.0, -1.0, -1.0, -1.0]])
    trainer = sampler + torch.log(_t([[0.5, 1.5, 3.0, 9.0]]))
    mask = _t([[1, 1, 1, 0]])
    weights, metrics = importance_sampling_weights(trainer, sampler, mask, mode=mode, cap=2.0)
    assert weights.tolist()[0] == pytest.approx(expected)
    assert not weights.requires_grad
    assert metrics["is/frac_capped"] == pytest.approx(1 / 3)
    assert metrics["is/logprob_diff_max_abs"] == pytest.approx(math.log(3))  # the masked ln 9 does not count
    assert metrics["is/logprob_diff_mean_abs"] == pytest.approx((math.log(2) + math.log(1.5) + math.log(3)) / 3)
    assert metrics["is/weight_mean"] == pytest.approx(sum(expected) / 3)


# -- log-probabilities --------------------------------------------------------------------


def test_selective_log_softmax_divides_logits_by_temperature():
    logits = _t([[[0.0, math.log(3.0)]]])
    ids = torch.tensor([[1]])
    assert selective_log_softmax(logits, ids).item() == pytest.approx(math.log(3 / 4))
    root3 = math.sqrt(3.0)  # logits / 2 = [0, ln sqrt 3]
    assert selective_log_softmax(logits, ids, temperature=2.0).item() == pytest.approx(math.log(root3 / (1 + root3)))
    with pytest.raises(ValueError, match="temperature"):
        selective_log_softmax(logits, ids, temperature=0.0)


def test_selective_log_softmax_matches_log_softmax_and_keeps_the_gradient():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 11, generator=generator).to(torch.bfloat16).requires_grad_()
    ids = torch.randint(0, 11, (3, 5), generator=generator)
    got = selective_log_softmax(logits, ids, temperature=0.7)
    expected = torch.log_softmax(logits.float() / 0.7, dim=-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    assert got.dtype == torch.float32 and got.shape == (3, 5)
    torch.testing.assert_close(got, expected)
    got.sum().backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0


def test_widest_groups_picks_the_groups_with_spread_and_never_failed_ones():
    from judgegym.trainers.advantages import widest_groups

    groups = [[0.5, 0.5], None, [0.4, 0.6], [0.0, 1.0], [1.0, float("nan")], [0.2, 0.8]]
    assert widest_groups(groups, 2) == [3, 5]  # failed (None, NaN) never; ties would go by position
    assert widest_groups(groups, 4) == [3, 5, 2, 0]  # a flat group only when nothing wider is left
    assert widest_groups(groups, 10) == [3, 5, 2, 0] and widest_groups([], 2) == []
