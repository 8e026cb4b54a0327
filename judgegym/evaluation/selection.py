"""Rejection sampling: which judged trajectories are worth imitating (`select_trajectories`),
by reward, best of each group, and judge components. SFT and the exports read it."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Iterator, Mapping

from ..trajectory import Group, Trajectory

log = logging.getLogger("judgegym.evaluation")


def select_trajectories(
    records: Iterable[Trajectory | Group],
    *,
    min_reward: float | None = None,
    best_of_group: bool = False,
    min_components: Mapping[str, float] | None = None,
) -> list[Trajectory]:
    """Rejection sampling: the trajectories worth imitating.

    Args:
        records: trajectories and/or groups. Lone trajectories form groups by (env_id,
            scenario_id), so the trials of an eval run compete with each other.
        min_reward: keep trajectories whose reward is at least this; unscored ones go.
        best_of_group: keep only the highest-reward trajectory of each group (the first on
            ties) among those the other filters keep; unscored ones are never chosen.
        min_components: keep trajectories whose judge components (``trajectory.metrics``)
            are at least these, e.g. ``{"recall": 1.0, "citation": 1.0}``; a trajectory
            without one of the named components goes.

    With any option, failed groups (judge errors: their rewards are not the judge's) are left
    out and counted in a warning. Without options every trajectory comes back.

    Raises:
        ValueError: a component in `min_components` that no record has (a typo would
            otherwise silently select nothing).
    """
    records = list(records)
    wanted = dict(min_components or {})
    if wanted:
        known = {key for _, trajectories in group_units(records) for t in trajectories for key in t.metrics}
        unknown = sorted(set(wanted) - known)
        if unknown:
            raise ValueError(f"no trajectory has the component(s) {unknown}; the components present are {sorted(known)}")
    filtering = min_reward is not None or best_of_group or bool(wanted)
    kept: list[Trajectory] = []
    failed = 0
    for group, trajectories in _scenario_units(records):
        if filtering and group is not None and group.failed:
            failed += 1
            continue
        if wanted:
            trajectories = [t for t in trajectories if all(t.metrics.get(k, -math.inf) >= v for k, v in wanted.items())]
        scored = [(reward, t) for t in trajectories if (reward := reward_of(t)) is not None]
        if min_reward is not None:
            scored = [(reward, t) for reward, t in scored if reward >= min_reward]
            trajectories = [t for _, t in scored]
        if best_of_group:
            trajectories = [max(scored, key=lambda pair: pair[0])[1]] if scored else []
        kept.extend(trajectories)
    if failed:
        log.warning("left out %d failed group(s): their rewards are not the judge's", failed)
    return kept


def reward_of(trajectory: Trajectory) -> float | None:
    """The reward, or None when the trajectory is unscored (None or NaN)."""
    reward = trajectory.reward
    return None if reward is None or math.isnan(reward) else reward


def group_units(records: Iterable[Trajectory | Group]) -> Iterator[tuple[Group | None, list[Trajectory]]]:
    """(group, its trajectories) per group, (None, [trajectory]) per lone trajectory."""
    for record in records:
        if isinstance(record, Group):
            yield record, record.trajectories
        elif isinstance(record, Trajectory):
            yield None, [record]
        else:
            raise TypeError(f"expected Trajectory or Group records, got {type(record).__name__}")


def _scenario_units(records: Iterable[Trajectory | Group]) -> list[tuple[Group | None, list[Trajectory]]]:
    """Like `group_units`, but lone trajectories of one (env_id, scenario_id) share a unit."""
    units: list[tuple[Group | None, list[Trajectory]]] = []
    lone: dict[tuple[str | None, str], list[Trajectory]] = {}
    for group, trajectories in group_units(records):
        if group is not None:
            units.append((group, trajectories))
            continue
        key = (trajectories[0].env_id, trajectories[0].scenario_id)
        if key not in lone:
            lone[key] = []
            units.append((None, lone[key]))
        lone[key].extend(trajectories)
    return units


__all__ = ["group_units", "reward_of", "select_trajectories"]
