"""The agent interface: an observation (the conversation) in, an assistant turn out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

Action = str | dict[str, Any]
"""Text (a final answer, or ``<tool_call>`` blocks) or an OpenAI assistant message dict.

A model agent may add ``"usage": {"prompt_tokens": int, "completion_tokens": int}`` to the
dict; the eval runner adds it up per episode and the env ignores it."""


class Agent(ABC):
    """Plays a `ChatEnv`. Agents are stateless across calls: everything an agent needs is in
    the observation and the episode's reset info (``info["tools"]`` holds the tool schemas,
    ``info["seed"]`` the scenario seed, ``info["trial"]`` the trial index when the runner
    plays a scenario several times), so one agent can play many episodes concurrently."""

    name: str = "agent"

    @abstractmethod
    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        """Return the next assistant turn for `observation`; `info` is the reset info."""

    def close(self) -> None:  # noqa: B027  (optional hook, nothing to release by default)
        """Release what the agent holds (engines, threads). Default: nothing."""


def sampling_seed(base: int, observation: list[dict[str, Any]], info: dict[str, Any]) -> int:
    """A per-call sampling seed: the same for the same (base seed, scenario seed, trial, turn),
    different across trials, so k trials of one scenario are k independent samples and a
    rerun reproduces them."""
    turn = sum(1 for m in observation if m.get("role") == "assistant")
    return (base * 1_000_003 + int(info.get("seed") or 0) * 10_007 + int(info.get("trial") or 0) * 101 + turn) % (2**31 - 1)


__all__ = ["Action", "Agent", "sampling_seed"]
