"""`GroupVectorEnv`: G attempts at one scenario, judged together (GRPO groups in Gymnasium).

``gym.make_vec("RagSupport-v0", num_envs=G, judge=...)`` returns one. Its G members all
play the same scenario per `reset`, are parked as they finish, and are judged once, as a
`Group`, when the last one finishes, so relative (RULER-style) judges work. See
docs/group-env.md for the semantics and a rollout loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..judges.base import Judge, record_score
from ..trajectory import Group, TerminationReason, Trajectory
from .base import ChatEnv

JudgeErrorPolicy = Literal["raise", "mark_failed"]
_FINISH_KEYS = ("trajectory", "termination")
"""Keys of a member's last-step info that are held back until the whole group is done."""


class GroupVectorEnv(VectorEnv):
    """G members playing ONE scenario, scored together by one judge call per group.

    Semantics:

    - ``reset(seed=s, options=o)`` resets every member with the same seed and options, so
      they all play the same scenario (without a seed, one is drawn from the vector env's
      generator and shared). Observations are a tuple of G conversations (lists of OpenAI
      message dicts); the infos are Gymnasium's vector convention (below).
    - ``step(actions)`` takes G actions (any sequence). Active members play their action.
      A member that finishes (final answer, or truncated by its own ``max_turns`` /
      ``max_tool_calls``) is *parked*: later actions for it are ignored (pass anything,
      e.g. None) and its observation stays as it was. ``infos["active"]`` (and the
      `active` property) says which members still play.
    - Until every member has finished, rewards are 0 and terminations / truncations are
      all False. On the step where the last member finishes, the judge scores the
      `Group` of G trajectories once (``judge.score_group_sync``), and every member
      reports, on that same step, its reward and its own flag: terminated for a natural
      end, truncated for a limit.
    - Infos follow `VectorEnv`: a dict of arrays of length G, each key ``k`` with a bool
      mask ``_k`` saying which members have it (nested dicts such as ``task`` and
      ``components`` recurse). Wrap with ``gymnasium.wrappers.vector.DictInfoToList`` for
      one dict per member. On the final step each member has ``trajectory`` (scored),
      ``termination``, ``turn``, ``judge_failed`` and, when scored, ``judge_score``,
      ``components`` and ``explanation``; when the judge failed, ``judge_error``. The
      Group itself is `group` (``env.unwrapped.group``).
    - No autoreset (``metadata["autoreset_mode"] = AutoresetMode.DISABLED``): one reset
      per group. Stepping a finished group raises RuntimeError until `reset` is called.
      ``options["reset_mask"]`` is accepted only if it resets every member (a partial
      reset would break the shared scenario).

    Pointwise judges (the default verifier) work too; they score each trajectory at the
    group end, giving the same rewards single envs would. Members are switched to
    ``defer_judging`` so they never judge themselves.

    Judge failure: with ``on_judge_error="raise"`` (default) the judge's exception
    propagates from `step`; with ``"mark_failed"`` the step returns rewards 0.0 and every
    member's info has ``judge_failed=True`` and ``judge_error``. Either way ``group.failed``
    is True, ``group.error`` holds the error text and no trajectory gets a reward:
    trainers should exclude the group, not treat it as zero reward.

    Args:
        env_fns: G callables, each building one member (a `ChatEnv`, possibly wrapped).
        judge: the group's judge (default: the members' `default_judge`); may be relative.
        on_judge_error: "raise" or "mark_failed" (see above).
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.DISABLED}

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        *,
        judge: Judge | None = None,
        on_judge_error: JudgeErrorPolicy = "raise",
    ):
        if len(env_fns) < 1:
            raise ValueError("a group needs at least one member (num_envs >= 1)")
        envs: list[gym.Env] = [fn() for fn in env_fns]
        for env in envs:
            if not isinstance(env.unwrapped, ChatEnv):
                raise TypeError(f"group members must be ChatEnv instances, got {type(env.unwrapped).__name__}")
            env.unwrapped.defer_judging = True
        first: ChatEnv = envs[0].unwrapped  # type: ignore[assignment]
        self._setup(envs, judge if judge is not None else first.default_judge(), on_judge_error)

    def _setup(self, envs: list[gym.Env], judge: Judge | None, on_judge_error: JudgeErrorPolicy) -> None:
        """The vector env's state around its G members (shared with the served group env)."""
        if on_judge_error not in ("raise", "mark_failed"):
            raise ValueError(f"on_judge_error must be 'raise' or 'mark_failed', got {on_judge_error!r}")
        self.envs = envs
        self.judge = judge
        self.on_judge_error = on_judge_error
        self.num_envs = len(self.envs)
        first = self.envs[0]
        self.metadata = {**first.metadata, "autoreset_mode": AutoresetMode.DISABLED}
        self.render_mode = first.render_mode
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        # Custom spaces batch to a Tuple of G independently seeded copies.
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.group: Group | None = None
        """The current group's `Group`: set when the last member finishes (scored, or failed)."""
        self._obs: list[list[dict[str, Any]]] = []
        self._active = np.zeros(self.num_envs, dtype=np.bool_)
        self._finished: list[dict[str, Any] | None] = [None] * self.num_envs
        self._started = False
        self._group_done = False

    @classmethod
    def from_env_id(
        cls,
        env_id: str,
        num_envs: int = 1,
        *,
        judge: Judge | None = None,
        on_judge_error: JudgeErrorPolicy = "raise",
        **env_kwargs: Any,
    ) -> GroupVectorEnv:
        """G members made with ``gym.make(env_id, defer_judging=True, **env_kwargs)``."""
        env_kwargs = {**env_kwargs, "defer_judging": True}
        return cls(
            [lambda: gym.make(env_id, **env_kwargs) for _ in range(num_envs)],
            judge=judge,
            on_judge_error=on_judge_error,
        )

    # -- Gymnasium API ------------------------------------------------------------------

    @property
    def active(self) -> np.ndarray:
        """Which members still play (a copy; all False once the group is done)."""
        return self._active.copy()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[tuple[list[dict[str, Any]], ...], dict[str, Any]]:
        """Reset every member to the same scenario; returns (G conversations, vector infos)."""
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be one int shared by all members (or None), got {type(seed).__name__}")
        super().reset(seed=seed)
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is not None and not np.all(mask):
            raise ValueError("GroupVectorEnv resets all members together; a partial reset_mask is not supported")
        shared_seed = int(seed) if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        self._started = False  # a reset that fails half-way leaves nothing to step
        self._obs, infos = [], {}
        for i, env in enumerate(self.envs):
            obs, info = env.reset(seed=shared_seed, options=dict(options))
            self._obs.append(obs)
            infos = self._add_info(infos, {**info, "active": True}, i)
        self._active[:] = True
        self._finished = [None] * self.num_envs
        self.group = None
        self._started, self._group_done = True, False
        return tuple(self._obs), infos

    def step(self, actions: Sequence[Any]) -> tuple[tuple[list[dict[str, Any]], ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step the active members; parked ones ignore their action (see class docs)."""
        if not self._started:
            raise RuntimeError("call reset() before step()")
        if self._group_done:
            raise RuntimeError("this group has finished (no autoreset); call reset() to start the next group")
        if len(actions) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions (one per member), got {len(actions)}")
        infos: dict[str, Any] = {}
        for i, env in enumerate(self.envs):
            if not self._active[i]:
                continue
            obs, _, terminated, truncated, info = env.step(actions[i])
            self._obs[i] = obs
            if terminated or truncated:
                self._active[i] = False
                self._finished[i] = self._finish_record(env, info, bool(truncated))
                info = {k: v for k, v in info.items() if k not in _FINISH_KEYS}
            infos = self._add_info(infos, info, i)
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=np.bool_)
        truncations = np.zeros(self.num_envs, dtype=np.bool_)
        if not self._active.any():
            self._group_done = True
            infos = {}
            for i, record in enumerate(self._finish_group()):
                rewards[i] = record.pop("reward")
                truncations[i] = record["termination"] in _TRUNCATING
                terminations[i] = not truncations[i]
                infos = self._add_info(infos, record, i)
        for i in range(self.num_envs):
            infos = self._add_info(infos, {"active": bool(self._active[i])}, i)
        return tuple(self._obs), rewards, terminations, truncations, infos

    def render(self) -> tuple[Any, ...] | None:
        """Each member's render (see `ChatEnv.render`)."""
        return tuple(env.render() for env in self.envs)

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()

    # -- internals ----------------------------------------------------------------------

    @staticmethod
    def _finish_record(env: gym.Env, info: dict[str, Any], truncated: bool) -> dict[str, Any]:
        """What a member leaves when it is parked: its unscored trajectory and why it ended."""
        trajectory = info.get("trajectory")
        if trajectory is None:  # ended by an outer wrapper (e.g. TimeLimit), not by the ChatEnv
            reason = TerminationReason.MAX_TURNS if truncated else TerminationReason.FINAL_ANSWER
            trajectory = env.unwrapped.trajectory(reason)
        termination = info.get("termination") or trajectory.termination.value
        return {"trajectory": trajectory, "termination": termination, "turn": info.get("turn")}

    def _finish_group(self) -> list[dict[str, Any]]:
        """Judge the finished group once; one info record (with "reward") per member."""
        records = [dict(r) for r in self._finished if r is not None]
        assert len(records) == self.num_envs
        trajectories: list[Trajectory] = [r["trajectory"] for r in records]
        self.group = Group(scenario_id=trajectories[0].scenario_id, trajectories=trajectories)
        try:
            scores = self.judge.score_group_sync(self.group)
            if len(scores) != len(trajectories):
                raise ValueError(
                    f"{type(self.judge).__name__}.score_group returned {len(scores)} scores for {len(trajectories)} trajectories"
                )
        except Exception as exc:
            self.group.failed, self.group.error = True, f"{type(exc).__name__}: {exc}"
            if self.on_judge_error == "raise":
                raise
            for record in records:
                record.update(reward=0.0, judge_failed=True, judge_error=self.group.error)
            return records
        for record, trajectory, score in zip(records, trajectories, scores, strict=True):
            record_score(trajectory, score)
            record.update(
                reward=float(score.score),
                judge_failed=False,
                judge_score=score,
                components=dict(score.components),
                explanation=score.explanation,
            )
        return records


_TRUNCATING = frozenset(r.value for r in TerminationReason if r.truncated)


class GroupEntryPoint:
    """A judgegym env's ``vector_entry_point``: ``gym.make_vec`` calls it with ``num_envs``
    and the kwargs; ``judge`` and ``on_judge_error`` go to the group env, everything else to
    each member (``gym.make(env_id, **kwargs)``). Registered by its import path (a string)
    so env specs stay JSON-serialisable: one module-level instance per env id, below."""

    def __init__(self, env_id: str):
        self.env_id = env_id

    def __call__(self, num_envs: int = 1, **kwargs: Any) -> GroupVectorEnv:
        return GroupVectorEnv.from_env_id(self.env_id, num_envs, **kwargs)

    def __repr__(self) -> str:
        return f"GroupEntryPoint({self.env_id!r})"


# The envs' ``vector_entry_point`` targets (see ``judgegym.envs.GROUP_ENVIRONMENTS``).
rag_support_group = GroupEntryPoint("RagSupport-v0")
customer_support_group = GroupEntryPoint("CustomerSupport-v0")
summarize_group = GroupEntryPoint("Summarize-v0")

__all__ = ["GroupEntryPoint", "GroupVectorEnv", "customer_support_group", "rag_support_group", "summarize_group"]
