"""Environments. Registration with Gymnasium is data: see `ENVIRONMENTS`."""

from __future__ import annotations

import gymnasium as gym

from .base import ChatEnv, Episode
from .group import GroupVectorEnv

ENVIRONMENTS: dict[str, str] = {
    "RagSupport-v0": "judgegym.envs.rag:RagSupportEnv",
    "CustomerSupport-v0": "judgegym.envs.support:CustomerSupportEnv",
    "Summarize-v0": "judgegym.envs.summarize:SummarizeEnv",
}
"""Env id -> entry point, registered on `import judgegym`."""

GROUP_ENVIRONMENTS: dict[str, str] = {
    "RagSupport-v0": "judgegym.envs.group:rag_support_group",
    "CustomerSupport-v0": "judgegym.envs.group:customer_support_group",
    "Summarize-v0": "judgegym.envs.group:summarize_group",
}
"""Env id -> ``vector_entry_point``: a `GroupEntryPoint` building a `GroupVectorEnv` (G members,
one scenario, one judge call per group). A string, so the spec stays JSON-serialisable. It is
`gym.make_vec`'s default mode for these ids; ``vectorization_mode="sync"`` still gives
independent, self-judging envs."""


def register_envs() -> None:
    """Register every judgegym env with Gymnasium (idempotent)."""
    for env_id, entry_point in ENVIRONMENTS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, vector_entry_point=GROUP_ENVIRONMENTS.get(env_id), disable_env_checker=False)


__all__ = ["ENVIRONMENTS", "GROUP_ENVIRONMENTS", "ChatEnv", "Episode", "GroupVectorEnv", "register_envs"]
