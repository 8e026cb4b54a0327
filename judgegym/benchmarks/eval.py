"""Play agents on envs, record every episode, and summarise: mean reward with a bootstrap
interval, success rate, pass^k, turns, tool use and tokens.

Runs are resumable: trajectories are appended to a JSONL file as they finish, and a rerun
with the same file skips the (agent, env, split, env config, seed, trial) already there.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from pydantic import ValidationError
from scipy import stats

from ..agents.base import Agent
from ..trajectory import Trajectory

log = logging.getLogger(__name__)

SUCCESS_THRESHOLD = 0.8
"""An episode succeeds when its reward is at least this (the verifiers' scale: a complete,
correct, policy-abiding episode scores 1, one with a real flaw scores below 0.8)."""

USAGE_KEYS = ("prompt_tokens", "completion_tokens")


async def play_episode(env: gym.Env, agent: Agent, seed: int, options: dict[str, Any] | None = None, *, trial: int = 0) -> Trajectory:
    """Play one episode to its end and return the judged trajectory.

    The agent sees the reset info plus ``info["trial"]``. ``Trajectory.info`` gets ``agent``
    and ``trial``; ``Trajectory.metrics`` gets the agent's token counts (``prompt_tokens``,
    ``completion_tokens``) when it reports them."""
    observation, info = env.reset(seed=seed, options=options)
    info = {**info, "trial": trial}
    usage = dict.fromkeys(USAGE_KEYS, 0)
    while True:
        action = await agent.act(observation, info)
        if isinstance(action, dict) and isinstance(action.get("usage"), dict):
            for key in USAGE_KEYS:
                usage[key] += int(action["usage"].get(key) or 0)
            action = {k: v for k, v in action.items() if k != "usage"}
        observation, _, terminated, truncated, step_info = env.step(action)
        if terminated or truncated:
            trajectory: Trajectory = step_info["trajectory"]
            trajectory.info.update(agent=agent.name, trial=trial)
            if any(usage.values()):
                trajectory.metrics.update({k: float(v) for k, v in usage.items()})
            return trajectory


def config_key(env_kwargs: dict[str, Any] | None) -> str:
    """A short, stable id of an env configuration (recorded on trajectories, part of the
    resume key: a run with other env options is another run)."""
    canonical = json.dumps(env_kwargs or {}, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def episode_key(trajectory: Trajectory) -> tuple[str, str, str, str, int, int]:
    """What identifies an episode of a run: (agent, env, split, env config, seed, trial)."""
    info = trajectory.info
    return (
        str(info.get("agent", "?")),
        trajectory.env_id or "?",
        trajectory.split or "?",
        str(info.get("env_config", "")),
        int(trajectory.seed if trajectory.seed is not None else -1),
        int(info.get("trial", 0)),
    )


@dataclass
class EvalRun:
    """The outcome of `evaluate`: the trajectories (old ones from the output file included)
    and the episodes that failed (agent or env errors; not written, so a rerun retries them)."""

    trajectories: list[Trajectory]
    failed: list[tuple[int, int, str]] = field(default_factory=list)
    """(seed, trial, error) of each failed episode."""
    resumed: int = 0
    """Episodes taken from the output file instead of played."""


async def evaluate(
    env_id: str,
    agent: Agent,
    *,
    episodes: int,
    trials: int = 1,
    seed: int = 0,
    concurrency: int = 8,
    env_kwargs: dict[str, Any] | None = None,
    judge: str = "verifier",
    out: str | os.PathLike[str] | None = None,
    on_episode: Callable[[Trajectory], None] | None = None,
) -> EvalRun:
    """Play `trials` attempts at each of `episodes` scenarios (seeds ``seed .. seed +
    episodes - 1``).

    `judge` is a pointwise judge spec (`judgegym.judges.make_judge`); the default is the
    env's verifier. Up to `concurrency` episodes run at once, each worker on its own env instance (a batched
    model agent generates their turns together). With `out`, finished episodes already in
    that JSONL file are skipped and new ones are appended as they finish, so an interrupted
    run loses at most the episodes in flight. An episode whose agent or env raises is logged
    and reported in `EvalRun.failed`; the others go on. Trajectories come back ordered by
    (seed, trial).
    """
    if episodes < 1 or trials < 1:
        raise ValueError(f"need episodes >= 1 and trials >= 1, got {episodes} and {trials}")
    env_kwargs = dict(env_kwargs or {})
    config = config_key({**env_kwargs, "judge": judge})
    env_args = json.loads(json.dumps({k: v for k, v in env_kwargs.items() if k != "split"}, default=str))
    if judge != "verifier":
        from ..judges.specs import make_judge

        env_kwargs["judge"] = make_judge(judge, env_id=env_id)
    done: dict[tuple[int, int], Trajectory] = {}
    if out is not None:
        for t in load_trajectories(out, repair=True):
            agent_name, t_env, _, t_config, t_seed, t_trial = episode_key(t)
            if (agent_name, t_env, t_config) == (agent.name, env_id, config) and seed <= t_seed < seed + episodes:
                done[(t_seed, t_trial)] = t
    todo: asyncio.Queue[tuple[int, int]] = asyncio.Queue()
    for s in range(seed, seed + episodes):
        for trial in range(trials):
            if (s, trial) not in done:
                todo.put_nowait((s, trial))
    results: dict[tuple[int, int], Trajectory] = {k: v for k, v in done.items() if k[1] < trials}
    run = EvalRun([], resumed=len(results))
    for t in results.values():
        if on_episode:
            on_episode(t)
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    sink = open(out, "a", encoding="utf-8") if out is not None else None  # noqa: SIM115  (closed below)

    async def worker() -> None:
        env = gym.make(env_id, **env_kwargs)
        try:
            while not todo.empty():
                s, trial = todo.get_nowait()
                try:
                    trajectory = await play_episode(env, agent, s, trial=trial)
                except Exception as exc:  # one broken episode must not lose the run
                    log.warning("episode seed=%d trial=%d failed: %s: %s", s, trial, type(exc).__name__, exc)
                    run.failed.append((s, trial, f"{type(exc).__name__}: {exc}"))
                    continue
                trajectory.info.update(env_config=config, env_args=env_args, judge=judge)
                results[(s, trial)] = trajectory
                if sink is not None:
                    sink.write(trajectory.model_dump_json() + "\n")
                    sink.flush()
                if on_episode:
                    on_episode(trajectory)
        finally:
            env.close()

    try:
        if not todo.empty():
            await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, todo.qsize())))))
    finally:
        if sink is not None:
            sink.close()
    run.trajectories = [results[k] for k in sorted(results)]
    return run


def load_trajectories(path: str | os.PathLike[str], *, repair: bool = False) -> list[Trajectory]:
    """Trajectories from a JSONL file ([] if it does not exist).

    A run killed mid-write leaves a partial last line: with `repair` it is cut off the file
    (with a warning) so appending can go on; without, it is an error like any bad line.
    Any other bad line raises ValueError naming the file and line."""
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    trajectories = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            trajectories.append(Trajectory.model_validate_json(raw))
        except ValidationError as exc:
            last = number == len(lines) and not data.endswith(b"\n")
            if repair and last:
                log.warning("%s: dropping a partial last line (an interrupted write)", path)
                with open(path, "r+b") as handle:
                    handle.truncate(len(data) - len(raw))
                break
            raise ValueError(f"{path}, line {number}: not a trajectory: {exc.errors()[0]['msg']}") from None
    return trajectories


def bootstrap_ci(values: Sequence[float], confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (degenerate when there is no spread)."""
    data = np.asarray(values, dtype=float)
    if len(data) < 2 or np.ptp(data) == 0:
        return float(data.mean()), float(data.mean())
    result = stats.bootstrap((data,), np.mean, confidence_level=confidence, n_resamples=n_resamples, method="percentile", random_state=seed)
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def pass_hat_k(successes_per_task: Iterable[tuple[int, int]], k: int) -> float:
    """tau-bench's pass^k: the chance that k attempts at a task ALL succeed, estimated per
    task without bias from its n trials with c successes as C(c, k) / C(n, k), then averaged
    over tasks. Needs n >= k for every task."""
    values = []
    for n, c in successes_per_task:
        if n < k:
            raise ValueError(f"pass^{k} needs at least {k} trials per task, one task has {n}")
        values.append(math.comb(c, k) / math.comb(n, k))
    if not values:
        raise ValueError("pass^k of no tasks")
    return float(np.mean(values))


@dataclass
class EvalSummary:
    """Aggregate of one agent's trajectories on one env (JSON-able with `asdict`)."""

    agent: str
    env_id: str
    split: str
    episodes: int
    """Trajectories summarised (scenarios x trials)."""
    mean_reward: float
    ci_low: float
    ci_high: float
    scenarios: int = 0
    trials: int = 1
    """Fewest trials any scenario has (pass^k is reported for k up to this)."""
    success_rate: float = 0.0
    success_threshold: float = SUCCESS_THRESHOLD
    pass_k: dict[int, float] = field(default_factory=dict)
    mean_turns: float = 0.0
    mean_tool_calls: float = 0.0
    tool_error_rate: float = 0.0
    """Failed tool calls / tool calls."""
    mean_tokens: float | None = None
    """Prompt + completion tokens per episode, when the agent reports them."""
    truncated: float = 0.0
    components: dict[str, float] = field(default_factory=dict)
    by_kind: dict[str, float] = field(default_factory=dict)
    failed: int = 0
    """Episodes that raised (not in the means)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(trajectories: Sequence[Trajectory], *, success_threshold: float = SUCCESS_THRESHOLD, failed: int = 0) -> EvalSummary:
    """Mean reward with a 95% bootstrap interval over episodes, success rate, pass^k for k
    up to the trials per scenario, mean turns / tool calls / tokens, the tool error rate,
    the mean of every metric, the mean reward per scenario kind, and the truncated share."""
    if not trajectories:
        raise ValueError("nothing to summarize: no trajectories")
    rewards = [t.reward or 0.0 for t in trajectories]
    low, high = bootstrap_ci(rewards)
    keys = sorted({k for t in trajectories for k in t.metrics})
    components = {k: float(np.mean([t.metrics[k] for t in trajectories if k in t.metrics])) for k in keys}
    kinds: dict[str, list[float]] = {}
    per_task: dict[tuple[str, int | None], list[bool]] = {}
    for t, r in zip(trajectories, rewards, strict=True):
        kinds.setdefault(str(t.info.get("task", {}).get("kind", "all")), []).append(r)
        per_task.setdefault((t.scenario_id, t.seed), []).append(r >= success_threshold)
    min_trials = min(len(v) for v in per_task.values())
    counts = [(len(v), sum(v)) for v in per_task.values()]
    tool_calls = sum(t.metrics.get("tool_calls", 0.0) for t in trajectories)
    tokens = [t.metrics["prompt_tokens"] + t.metrics["completion_tokens"] for t in trajectories if "prompt_tokens" in t.metrics]
    first = trajectories[0]
    return EvalSummary(
        agent=str(first.info.get("agent", "?")),
        env_id=first.env_id or "?",
        split=first.split or "?",
        episodes=len(trajectories),
        mean_reward=float(np.mean(rewards)),
        ci_low=low,
        ci_high=high,
        scenarios=len(per_task),
        trials=min_trials,
        success_rate=float(np.mean([r >= success_threshold for r in rewards])),
        success_threshold=success_threshold,
        pass_k={k: pass_hat_k(counts, k) for k in range(1, min_trials + 1)},
        mean_turns=components.get("turns", 0.0),
        mean_tool_calls=components.get("tool_calls", 0.0),
        tool_error_rate=sum(t.metrics.get("tool_errors", 0.0) for t in trajectories) / tool_calls if tool_calls else 0.0,
        mean_tokens=float(np.mean(tokens)) if tokens else None,
        truncated=float(np.mean([bool(t.termination and t.termination.truncated) for t in trajectories])),
        components=components,
        by_kind={k: float(np.mean(v)) for k, v in sorted(kinds.items())},
        failed=failed,
    )


__all__ = [
    "SUCCESS_THRESHOLD",
    "EvalRun",
    "EvalSummary",
    "bootstrap_ci",
    "config_key",
    "episode_key",
    "evaluate",
    "load_trajectories",
    "pass_hat_k",
    "play_episode",
    "summarize",
]
