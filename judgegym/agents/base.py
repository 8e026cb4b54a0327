"""The agent interface: an observation (the conversation) in, an assistant turn out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

Action = str | dict[str, Any]
"""Text (a final answer, or ``<tool_call>`` blocks) or an OpenAI assistant message dict."""


class Agent(ABC):
    """Plays a `ChatEnv`. Agents are stateless across calls: everything an agent needs is in
    the observation and the episode's reset info (``info["tools"]`` holds the tool schemas),
    so one agent can play many episodes concurrently."""

    name: str = "agent"

    @abstractmethod
    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        """Return the next assistant turn for `observation`; `info` is the reset info."""


__all__ = ["Action", "Agent"]
