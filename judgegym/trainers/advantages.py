"""Group-relative advantages (GRPO): each trajectory's reward against the others of its group.

A group whose judge failed is dropped, never scored as zeros; a group whose rewards are all
equal carries no learning signal and gets zero advantages (the trainer may skip it).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from judgegym.trajectory import Group

ScaleRewards = Literal["group", "batch", "none"]

STD_EPSILON = 1e-4
"""Added to the standard deviation before dividing (as TRL does), so near-constant groups do not explode."""

ZERO_STD_TOLERANCE = 1e-8
"""A group whose reward standard deviation is below this counts as having zero variance."""

GroupRewards = Sequence[float | None] | Group | None
"""One group's rewards: a sequence of numbers (a 1-D tensor or array works too), a judged
`Group` (rewards from its trajectories, `failed` honoured), or None for a group whose judge
failed. A None or NaN reward inside a group fails the whole group."""


@dataclass(frozen=True)
class GroupAdvantages:
    """What `group_advantages` computed for a batch of groups.

    `advantages[i]` lines up with input group ``i``: one float per trajectory, or None when the
    group was dropped because its judge failed. Statistics cover the kept groups only.
    """

    advantages: list[list[float] | None]
    zero_std: list[bool]
    """Per input group: True when all its rewards were equal (its advantages are exactly 0);
    False for informative groups and for dropped ones."""
    n_groups: int
    n_failed: int
    """Groups dropped because their judge failed (None group, ``Group.failed``, a None or NaN reward)."""
    n_zero_std: int
    reward_mean: float
    """Mean reward over all kept trajectories (NaN if none were kept)."""
    reward_std: float
    """Sample standard deviation of all kept rewards (NaN with fewer than two)."""
    frac_reward_zero_std: float
    """Fraction of kept groups with zero reward variance (NaN if none were kept)."""

    @property
    def kept(self) -> list[int]:
        """Indices of the groups that were not dropped."""
        return [i for i, a in enumerate(self.advantages) if a is not None]

    def metrics(self) -> dict[str, float]:
        """Stable metric names for logging (TRL's where they exist)."""
        return {
            "reward": self.reward_mean,
            "reward_std": self.reward_std,
            "frac_reward_zero_std": self.frac_reward_zero_std,
            "groups": float(self.n_groups),
            "groups_failed": float(self.n_failed),
            "groups_zero_std": float(self.n_zero_std),
        }


def group_advantages(groups: Sequence[GroupRewards], scale_rewards: ScaleRewards = "group") -> GroupAdvantages:
    """GRPO advantages ``A_i = (r_i - mean(r_group)) / (std + eps)``.

    Args:
        groups: one entry per group (see `GroupRewards`); groups may differ in size.
        scale_rewards: what ``std`` is: ``"group"``, the group's own standard deviation (the
            GRPO paper); ``"batch"``, the standard deviation of every kept reward in the batch
            (more robust to groups with tiny spread); ``"none"``, no scaling at all (Dr. GRPO,
            which argues the division biases toward easy and hard questions).

    Standard deviations are sample ones (Bessel's correction), as ``torch.std`` in TRL. A group
    with zero variance (including a group of one) has advantages exactly 0 whatever the
    scaling; it is counted in `n_zero_std`. A failed group has advantages None and is counted in
    `n_failed`; it takes no part in the statistics or in the batch standard deviation.
    """
    if scale_rewards not in ("group", "batch", "none"):
        raise ValueError(f"scale_rewards must be 'group', 'batch' or 'none', got {scale_rewards!r}")
    rewards = [_rewards(i, group) for i, group in enumerate(groups)]
    kept = [r for r in rewards if r is not None]
    every_reward = [x for r in kept for x in r]
    batch_std = _std(every_reward)

    advantages: list[list[float] | None] = []
    zero_std: list[bool] = []
    for group_rewards in rewards:
        if group_rewards is None:
            advantages.append(None)
            zero_std.append(False)
            continue
        mean, std = _mean(group_rewards), _std(group_rewards)
        flat = not std >= ZERO_STD_TOLERANCE  # NaN (a group of one) counts as flat
        zero_std.append(flat)
        if flat:
            advantages.append([0.0] * len(group_rewards))
            continue
        scale = {"group": std + STD_EPSILON, "batch": batch_std + STD_EPSILON, "none": 1.0}[scale_rewards]
        advantages.append([(x - mean) / scale for x in group_rewards])

    n_zero_std = sum(zero_std)
    return GroupAdvantages(
        advantages=advantages,
        zero_std=zero_std,
        n_groups=len(rewards),
        n_failed=len(rewards) - len(kept),
        n_zero_std=n_zero_std,
        reward_mean=_mean(every_reward),
        reward_std=batch_std,
        frac_reward_zero_std=n_zero_std / len(kept) if kept else math.nan,
    )


def _rewards(index: int, group: GroupRewards) -> list[float] | None:
    """The group's rewards as floats, or None if the group failed."""
    if group is None:
        return None
    if isinstance(group, Group):
        if group.failed:
            return None
        values: list[Any] = [t.reward for t in group.trajectories]
    elif hasattr(group, "tolist"):  # torch tensor or numpy array
        values = group.tolist()
    else:
        values = list(group)
    if not values:
        raise ValueError(f"group {index} has no rewards; drop it, or mark it failed (None) if its judge failed")
    wrong = [v for v in values if v is not None and not isinstance(v, numbers.Real)]
    if wrong:
        raise TypeError(f"group {index}: rewards must be numbers or None, got {wrong[0]!r}")
    if any(v is None or math.isnan(v) for v in values):
        return None  # the judge did not score everyone, so nothing in the group is comparable
    return [float(v) for v in values]


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values) if values else math.nan


def _std(values: list[float]) -> float:
    if len(values) < 2:
        return math.nan
    mean = _mean(values)
    return math.sqrt(math.fsum((x - mean) ** 2 for x in values) / (len(values) - 1))


def widest_groups(groups: Sequence[GroupRewards], count: int) -> list[int]:
    """The indices of the `count` groups with the widest reward spread (sample standard
    deviation), widest first, ties by position; failed groups never, flat ones last. With no
    more groups than `count`, every group that did not fail. DAPO's dynamic sampling keeps
    drawing until a batch has `count` groups with spread; this is its fixed-budget form: play
    a few more groups than the step trains on and train on those that carry signal."""
    rewards = [_rewards(i, group) for i, group in enumerate(groups)]
    spread = [(i, _std(r) if len(r) > 1 else 0.0) for i, r in enumerate(rewards) if r is not None]
    ranked = sorted(spread, key=lambda item: (-item[1], item[0]))
    return [i for i, _ in ranked[:count]]


__all__ = ["STD_EPSILON", "GroupAdvantages", "GroupRewards", "ScaleRewards", "group_advantages", "widest_groups"]
