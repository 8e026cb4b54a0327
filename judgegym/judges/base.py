"""The judge protocol: a finished trajectory (or a group of them) in, scores in [0, 1] out
(a verifier goes below 0 for harm it can prove: `JudgeScore`).

Pointwise judges score one trajectory and inherit group scoring; verifiers are pointwise
judges that are deterministic and synchronous, so envs can call them inside `step`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from abc import ABC, abstractmethod
from collections.abc import Coroutine, Sequence
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, Field

from ..trajectory import Group, Trajectory

T = TypeVar("T")
log = logging.getLogger("judgegym.judges")

SCORE_FLOOR = -1.0
"""The lowest score a judge may give (`JudgeScore`): below 0 only for proven harm."""


class JudgeScore(BaseModel):
    """One trajectory's score, why, and the named components behind it.

    Scores lie in [0, 1], 0 for doing nothing useful. Only a verifier, which knows the gold
    end state, goes below 0 (down to `SCORE_FLOOR`), and only for what it can prove is worse
    than doing nothing: an answer that speaks to its grader, and in CustomerSupport a policy
    broken, a wrong change or an untrue report. A careful grader ranks harm below inaction,
    and the red-team bounds hold inaction at 0, so harm has nowhere else to go; GRPO uses only
    the order inside a group, so the sign costs it nothing."""

    score: float = Field(ge=SCORE_FLOOR, le=1.0)
    explanation: str = ""
    components: dict[str, float] = Field(default_factory=dict)


def record_score(trajectory: Trajectory, score: JudgeScore) -> None:
    """Write a judge's verdict onto a trajectory: ``reward``, the components as metrics and
    ``info["explanation"]`` (what the envs, the group env and the env server all do)."""
    trajectory.reward = score.score
    trajectory.metrics.update(score.components)
    trajectory.info["explanation"] = score.explanation


class Judge(ABC):
    """Scores groups of trajectories of one scenario.

    `relative` judges (RULER-style) need the whole group at once; pointwise ones do not.
    """

    relative: ClassVar[bool] = False

    @abstractmethod
    async def score_group(self, group: Group) -> list[JudgeScore]:
        """One score per trajectory, in the group's order."""

    def score_group_sync(self, group: Group) -> list[JudgeScore]:
        """`score_group` for synchronous callers (works inside a running event loop too)."""
        return run_sync(self.score_group(group))

    def score_one_sync(self, trajectory: Trajectory) -> JudgeScore:
        """Score a lone trajectory (a group of one) from synchronous code, e.g. `env.step`."""
        return self.score_group_sync(Group(scenario_id=trajectory.scenario_id, trajectories=[trajectory]))[0]


class PointwiseJudge(Judge):
    """A judge that scores each trajectory on its own."""

    @abstractmethod
    async def score(self, trajectory: Trajectory) -> JudgeScore:
        """Score one trajectory."""

    async def score_group(self, group: Group) -> list[JudgeScore]:
        return list(await asyncio.gather(*(self.score(t) for t in group.trajectories)))

    def score_sync(self, trajectory: Trajectory) -> JudgeScore:
        """`score` for synchronous callers."""
        return run_sync(self.score(trajectory))


class BatchJudge(PointwiseJudge):
    """A pointwise judge whose work is blocking CPU work best done in batches (embedding
    texts): implement `score_many`. Async scoring runs it in a worker thread, a whole group
    as one batch."""

    @abstractmethod
    def score_many(self, trajectories: Sequence[Trajectory]) -> list[JudgeScore]:
        """Score any trajectories (of one scenario or not) in one batch; blocking."""

    async def score(self, trajectory: Trajectory) -> JudgeScore:
        return (await asyncio.to_thread(self.score_many, [trajectory]))[0]

    async def score_group(self, group: Group) -> list[JudgeScore]:
        return await asyncio.to_thread(self.score_many, group.trajectories)

    def score_sync(self, trajectory: Trajectory) -> JudgeScore:
        return self.score_many([trajectory])[0]

    def score_one_sync(self, trajectory: Trajectory) -> JudgeScore:
        return self.score_many([trajectory])[0]


class Verifier(PointwiseJudge):
    """A deterministic, synchronous judge (no LLM): implement `verify`."""

    @abstractmethod
    def verify(self, trajectory: Trajectory) -> JudgeScore:
        """Score one trajectory from its messages and ``info["task"]``."""

    async def score(self, trajectory: Trajectory) -> JudgeScore:
        return self.verify(trajectory)

    def score_sync(self, trajectory: Trajectory) -> JudgeScore:
        return self.verify(trajectory)

    def score_one_sync(self, trajectory: Trajectory) -> JudgeScore:
        return self.verify(trajectory)


async def score_groups(judge: Judge, groups: Sequence[Group], *, skip_failed: bool = False) -> list[Group]:
    """Score groups concurrently; return copies with rewards, metrics and explanations set.

    A reward a trajectory already had is kept as ``metrics["independent_reward"]``. A judge
    failure raises (default); with ``skip_failed=True`` that group comes back with
    ``failed=True`` and the error text, its rewards untouched, and a warning is logged:
    count them with ``sum(g.failed for g in result)`` and leave them out of training.
    """

    async def one(group: Group) -> Group:
        scored = group.model_copy(deep=True)
        try:
            scores = await judge.score_group(scored)
        except Exception as exc:
            if not skip_failed:
                raise
            log.warning("judge failed on group %s: %s", group.scenario_id, exc)
            scored.failed, scored.error = True, f"{type(exc).__name__}: {exc}"
            return scored
        for trajectory, score in zip(scored.trajectories, scores, strict=True):
            if trajectory.reward is not None:
                trajectory.metrics["independent_reward"] = trajectory.reward
            trajectory.reward = score.score
            trajectory.metrics.update(score.components)
            trajectory.info["judge_explanation"] = score.explanation
        return scored

    return list(await asyncio.gather(*(one(g) for g in groups)))


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, even if an event loop is running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


__all__ = ["BatchJudge", "Judge", "JudgeScore", "PointwiseJudge", "Verifier", "record_score", "run_sync", "score_groups"]
