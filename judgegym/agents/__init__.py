"""Agents: anything that maps a conversation to the next assistant turn."""

from __future__ import annotations

from .base import Action, Agent
from .scripted import SCRIPTED_AGENTS, OracleAgent, SearchQuoteAgent, UnhelpfulAgent


def make_agent(spec: str) -> Agent:
    """Build an agent from a spec string, e.g. ``"search-quote"``.

    Raises ValueError listing the known specs when `spec` names none of them.
    """
    factory = SCRIPTED_AGENTS.get(spec.strip())
    if factory is None:
        raise ValueError(f"unknown agent {spec!r}; known agents: {', '.join(sorted(SCRIPTED_AGENTS))}")
    return factory()


__all__ = ["Action", "Agent", "OracleAgent", "SearchQuoteAgent", "UnhelpfulAgent", "make_agent"]
