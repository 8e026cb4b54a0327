"""Environments. Registration with Gymnasium is data: see `ENVIRONMENTS`."""

from __future__ import annotations

from typing import Any

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


REMOTE_ENV = "judgegym/Remote-v0"
"""A judgegym env on a ``judgegym serve`` server: ``gym.make(REMOTE_ENV, url=..., env_id=...)``."""


def register_envs() -> None:
    """Register every judgegym env with Gymnasium (idempotent)."""
    for env_id, entry_point in ENVIRONMENTS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, vector_entry_point=GROUP_ENVIRONMENTS.get(env_id), disable_env_checker=False)
    if REMOTE_ENV not in gym.registry:
        gym.register(
            id=REMOTE_ENV,
            entry_point="judgegym.envs.remote:RemoteEnv",
            vector_entry_point="judgegym.envs.remote:RemoteGroupVectorEnv",
            disable_env_checker=False,
        )


def make_env(env_id: str, env_url: str | None = None, **kwargs: Any) -> gym.Env:
    """``gym.make(env_id, **kwargs)``, or, with `env_url`, the same env on the ``judgegym
    serve`` server there (`RemoteEnv`; `kwargs` may then be the per-session env arguments
    and ``judge``, a local pointwise judge)."""
    if env_url is None:
        return gym.make(env_id, **kwargs)
    return gym.make(REMOTE_ENV, url=env_url, env_id=env_id, **kwargs)


def env_urls(env_url: str | None) -> list[str | None]:
    """``"URL1,URL2"`` -> the URLs (envs are spread over them in turn); None -> [None] (local)."""
    if env_url is None:
        return [None]
    urls = [u.strip() for u in env_url.split(",") if u.strip()]
    if not urls:
        raise ValueError("env_url names no server")
    return list(urls)


__all__ = [
    "ENVIRONMENTS",
    "GROUP_ENVIRONMENTS",
    "REMOTE_ENV",
    "env_urls",
    "make_env",
    "ChatEnv",
    "Episode",
    "GroupVectorEnv",
    "register_envs",
]
