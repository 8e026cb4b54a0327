"""Play agents on envs and summarise the rewards with bootstrap confidence intervals."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from scipy import stats

from ..agents.base import Agent
from ..trajectory import Trajectory


async def play_episode(env: gym.Env, agent: Agent, seed: int, options: dict[str, Any] | None = None) -> Trajectory:
    """Play one episode to its end and return the judged trajectory (``info["agent"]`` set)."""
    observation, info = env.reset(seed=seed, options=options)
    while True:
        action = await agent.act(observation, info)
        observation, _, terminated, truncated, step_info = env.step(action)
        if terminated or truncated:
            trajectory: Trajectory = step_info["trajectory"]
            trajectory.info["agent"] = agent.name
            return trajectory


async def evaluate(
    env_id: str,
    agent: Agent,
    *,
    episodes: int,
    seed: int = 0,
    concurrency: int = 8,
    env_kwargs: dict[str, Any] | None = None,
    on_episode: Callable[[Trajectory], None] | None = None,
) -> list[Trajectory]:
    """Play `episodes` episodes with seeds ``seed .. seed + episodes - 1``.

    Up to `concurrency` episodes run at once, each worker on its own env instance; the
    result is in seed order. `on_episode` is called as each episode finishes.
    """
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    seeds: asyncio.Queue[int] = asyncio.Queue()
    for s in range(seed, seed + episodes):
        seeds.put_nowait(s)
    results: dict[int, Trajectory] = {}

    async def worker() -> None:
        env = gym.make(env_id, **(env_kwargs or {}))
        try:
            while not seeds.empty():
                s = seeds.get_nowait()
                results[s] = await play_episode(env, agent, s)
                if on_episode:
                    on_episode(results[s])
        finally:
            env.close()

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, episodes)))))
    return [results[s] for s in sorted(results)]


def bootstrap_ci(values: Sequence[float], confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (degenerate when there is no spread)."""
    data = np.asarray(values, dtype=float)
    if len(data) < 2 or np.ptp(data) == 0:
        return float(data.mean()), float(data.mean())
    result = stats.bootstrap((data,), np.mean, confidence_level=confidence, n_resamples=n_resamples, method="percentile", random_state=seed)
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


@dataclass
class EvalSummary:
    """Aggregate of one agent's trajectories on one env."""

    agent: str
    env_id: str
    split: str
    episodes: int
    mean_reward: float
    ci_low: float
    ci_high: float
    components: dict[str, float] = field(default_factory=dict)
    by_kind: dict[str, float] = field(default_factory=dict)
    truncated: float = 0.0


def summarize(trajectories: Sequence[Trajectory]) -> EvalSummary:
    """Mean reward with a 95% bootstrap interval, the mean of every metric, the mean reward
    per scenario kind, and the share of truncated episodes."""
    if not trajectories:
        raise ValueError("nothing to summarize: no trajectories")
    rewards = [t.reward or 0.0 for t in trajectories]
    low, high = bootstrap_ci(rewards)
    keys = sorted({k for t in trajectories for k in t.metrics})
    components = {k: float(np.mean([t.metrics[k] for t in trajectories if k in t.metrics])) for k in keys}
    kinds: dict[str, list[float]] = {}
    for t, r in zip(trajectories, rewards, strict=True):
        kinds.setdefault(str(t.info.get("task", {}).get("kind", "all")), []).append(r)
    first = trajectories[0]
    return EvalSummary(
        agent=str(first.info.get("agent", "?")),
        env_id=first.env_id or "?",
        split=first.split or "?",
        episodes=len(trajectories),
        mean_reward=float(np.mean(rewards)),
        ci_low=low,
        ci_high=high,
        components=components,
        by_kind={k: float(np.mean(v)) for k, v in sorted(kinds.items())},
        truncated=float(np.mean([bool(t.termination and t.termination.truncated) for t in trajectories])),
    )


__all__ = ["EvalSummary", "bootstrap_ci", "evaluate", "play_episode", "summarize"]
