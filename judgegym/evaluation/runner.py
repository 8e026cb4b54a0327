"""Play agents on envs and record every episode (`evaluate`, `play_episode`), and read the
records back (`load_trajectories`).

Runs are resumable: trajectories are appended to a JSONL file as they finish, and a rerun
with the same file skips the (agent, env, split, env config, seed, trial) already there.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
from pydantic import ValidationError

from ..agents.base import Agent
from ..envs import env_urls, make_env
from ..trajectory import Trajectory

log = logging.getLogger(__name__)

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
    env_url: str | None = None,
    on_resumed: Callable[[list[Trajectory]], None] | None = None,
) -> EvalRun:
    """Play `trials` attempts at each of `episodes` scenarios (seeds ``seed .. seed +
    episodes - 1``).

    `judge` is a pointwise judge spec (`judgegym.judges.make_judge`); the default is the
    env's verifier. Up to `concurrency` episodes run at once, each worker on its own env instance (a batched
    model agent generates their turns together). With `out`, finished episodes already in
    that JSONL file are skipped and new ones are appended as they finish, so an interrupted
    run loses at most the episodes in flight. `on_episode` is called with each episode as it
    finishes; `on_resumed`, once before any plays, with those read back from `out`. An episode whose agent or env raises is logged
    and reported in `EvalRun.failed`; the others go on. Trajectories come back ordered by
    (seed, trial).

    With `env_url` (one ``judgegym serve`` URL, or several separated by commas, used in
    turn by the workers) the episodes play on served envs (`RemoteEnv`) and `judge` scores
    them here; `env_kwargs` may then hold only the per-session arguments (``split``,
    ``max_turns``, ...), the server fixes the rest.
    """
    if episodes < 1 or trials < 1:
        raise ValueError(f"need episodes >= 1 and trials >= 1, got {episodes} and {trials}")
    env_kwargs = dict(env_kwargs or {})
    config = config_key({**env_kwargs, "judge": judge})
    env_args = json.loads(json.dumps({k: v for k, v in env_kwargs.items() if k != "split"}, default=str))
    urls = env_urls(env_url)
    if judge != "verifier" or env_url is not None:
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
    if on_resumed and results:
        on_resumed([results[k] for k in sorted(results)])
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    sink = open(out, "a", encoding="utf-8") if out is not None else None  # noqa: SIM115  (closed below)

    async def worker(index: int) -> None:
        env = make_env(env_id, urls[index % len(urls)], **env_kwargs)
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
            await asyncio.gather(*(worker(i) for i in range(max(1, min(concurrency, todo.qsize())))))
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


__all__ = ["USAGE_KEYS", "EvalRun", "config_key", "episode_key", "evaluate", "load_trajectories", "play_episode"]
