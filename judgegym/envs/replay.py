"""Playing a recorded trajectory again in its env, to recover what only the env records.

A verifier that grades the env's end state (CustomerSupport-v0's database, its policy
violations) cannot grade a stored conversation that lacks them. When the conversation names
its env and seed, `replay` plays its assistant turns again in a fresh env and returns the
env's own judged trajectory, checking on the way that every tool result and customer reply
comes back as recorded.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from ..judges.base import record_score
from ..trajectory import Message, TerminationReason, Trajectory


class ReplayError(ValueError):
    """The env answered differently than recorded (another seed, split or version of the env),
    or the trajectory does not say which env and seed it was played in."""


def replay(trajectory: Trajectory, **env_kwargs: Any) -> Trajectory:
    """Play `trajectory`'s assistant turns in a fresh ``trajectory.env_id`` env reset at
    ``trajectory.seed`` (split ``trajectory.split``, default "test"; `env_kwargs` go to
    `gym.make`), and return the env's trajectory, judged by the env's default judge when the
    conversation ends in an answer. Raises `ReplayError` naming the first message that differs."""
    if not trajectory.env_id or trajectory.seed is None:
        raise ReplayError(f"trajectory {trajectory.scenario_id!r} names no env_id and seed to replay in")
    env = gym.make(trajectory.env_id.removeprefix("judgegym:"), **{"split": trajectory.split or "test", **env_kwargs})
    try:
        observation, _ = env.reset(seed=trajectory.seed)
        recorded = trajectory.messages
        _expect(recorded, observation, 0)
        position, info = len(observation), None
        while position < len(recorded):
            message = recorded[position]
            if message.role != "assistant":
                raise ReplayError(f"message {position}: a {message.role} message where the env awaited the agent's turn")
            action = message.to_openai() if message.tool_calls else (message.content or "")
            observation, _, terminated, truncated, info = env.step(action)
            _expect(recorded, observation[: len(recorded)], position + 1)
            position = len(observation)
            if terminated or truncated:
                break
        if position < len(recorded):
            raise ReplayError(f"the episode ended at message {position} of {len(recorded)}")
        if info is not None and "trajectory" in info and len(info["trajectory"].messages) == len(recorded):
            return info["trajectory"]
        # the recording stops before the env does (a customer would have replied to the last answer): judge it there
        unwrapped = env.unwrapped
        last = recorded[-1]
        reason = TerminationReason.FINAL_ANSWER if last.role == "assistant" and not last.tool_calls else trajectory.termination
        replayed: Trajectory = unwrapped.trajectory(reason)  # type: ignore[attr-defined]
        replayed.messages = replayed.messages[: len(recorded)]
        record_score(replayed, unwrapped.judge.score_one_sync(replayed))  # type: ignore[attr-defined]
        return replayed
    finally:
        env.close()


def _expect(recorded: list[Message], observed: list[dict[str, Any]], start: int) -> None:
    """The env's messages from `start` on (as far as the recording goes) must say what the recording says."""
    for index in range(start, len(observed)):
        got, want = observed[index], recorded[index]
        if want.role != "assistant" and (got.get("role") != want.role or (got.get("content") or "") != (want.content or "")):
            raise ReplayError(f"message {index} ({want.role}) differs from what the env returns: {str(got.get('content'))[:120]!r}")


__all__ = ["ReplayError", "replay"]
