"""Environments. Registration with Gymnasium is data: see `ENVIRONMENTS`."""

from __future__ import annotations

from collections.abc import Mapping
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


def env_options(env_id: str) -> list[str]:
    """The keyword arguments ``gym.make(env_id, ...)`` accepts for a registered env: those of its
    class and of each base class it passes ``**kwargs`` on to (a judgegym env's `ChatEnv`
    options), plus Gymnasium's own (``max_episode_steps``, ``disable_env_checker``, ...)."""
    import inspect

    from gymnasium.envs.registration import load_env_creator

    creator = load_env_creator(gym.spec(env_id).entry_point)
    names: list[str] = []
    for cls in getattr(creator, "__mro__", [creator]):
        init = cls.__dict__.get("__init__", creator if not isinstance(creator, type) else None)
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        names += [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"]
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    gym_make = [p.name for p in inspect.signature(gym.make).parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD and p.name != "id"]
    return list(dict.fromkeys(names + gym_make))


def check_env_options(env_id: str, kwargs: Mapping[str, Any]) -> None:
    """Raise ValueError naming each option `env_id` does not take (with the nearest valid name)
    and listing the valid ones, before the env is made."""
    import difflib

    valid = env_options(env_id)
    unknown = [name for name in kwargs if name not in valid]
    if not unknown:
        return
    said = []
    for name in unknown:
        near = difflib.get_close_matches(name, valid, n=1)
        said.append(f"{name!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    raise ValueError(f"{env_id} takes no option {', '.join(said)}; its options: {', '.join(valid)}")


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
    "check_env_options",
    "env_options",
    "env_urls",
    "make_env",
    "ChatEnv",
    "Episode",
    "GroupVectorEnv",
    "register_envs",
]
