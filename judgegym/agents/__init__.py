"""Agents: anything that maps a conversation to the next assistant turn."""

from __future__ import annotations

import importlib

from .base import Action, Agent

BASELINE_MODULES: dict[str, str] = {
    "RagSupport-v0": "judgegym.envs.rag.baselines",
    "CustomerSupport-v0": "judgegym.envs.support.baselines",
    "Summarize-v0": "judgegym.envs.summarize.baselines",
}
"""Env id -> module whose ``BASELINES`` dict maps spec names to scripted agent classes."""


def baselines(env_id: str) -> dict[str, type[Agent]]:
    """The scripted baseline agents of `env_id`, by spec name ({} for an unknown env)."""
    module = BASELINE_MODULES.get(env_id)
    return dict(importlib.import_module(module).BASELINES) if module else {}


def make_agent(spec: str, env_id: str = "RagSupport-v0") -> Agent:
    """Build an agent from a spec string, e.g. ``"search-quote"`` (a scripted baseline of
    `env_id`).

    Raises ValueError listing the known specs when `spec` names none of them.
    """
    known = baselines(env_id)
    factory = known.get(spec.strip())
    if factory is None:
        raise ValueError(f"unknown agent {spec!r} for {env_id}; known agents: {', '.join(sorted(known))}")
    return factory()


__all__ = ["BASELINE_MODULES", "Action", "Agent", "baselines", "make_agent"]
