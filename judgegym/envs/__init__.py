"""Environments. Registration with Gymnasium is data: see `ENVIRONMENTS`."""

from __future__ import annotations

import gymnasium as gym

from .base import ChatEnv, Episode

ENVIRONMENTS: dict[str, str] = {
    "RagSupport-v0": "judgegym.envs.rag:RagSupportEnv",
}
"""Env id -> entry point, registered on `import judgegym`."""


def register_envs() -> None:
    """Register every judgegym env with Gymnasium (idempotent)."""
    for env_id, entry_point in ENVIRONMENTS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, disable_env_checker=False)


__all__ = ["ENVIRONMENTS", "ChatEnv", "Episode", "register_envs"]
