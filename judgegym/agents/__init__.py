"""Agents: anything that maps a conversation to the next assistant turn.

`make_agent` builds one from a spec string (the CLI's ``--agent``):

- ``NAME``: a scripted baseline of the env (``oracle``, ``unhelpful``, ``search-quote``, ...);
- ``hf:MODEL[+ADAPTER]``: `HFAgent`, a transformers model in-process (``hf:smollm2-135m`` is
  the embedded model; ``+runs/x/best`` loads a LoRA adapter folder on top);
- ``vllm:MODEL[+ADAPTER]``: `VLLMAgent`, an in-process vLLM engine (``gpu`` extra);
- ``litellm:MODEL``: `LiteLLMAgent`, e.g. ``litellm:openai/gpt-4o``,
  ``litellm:hosted_vllm/NAME?api_base=http://localhost:8000/v1``.

Any model spec takes options after ``?``, ``&``-separated, values read as JSON when they
parse: ``hf:smollm2-135m?temperature=0.7&max_tokens=128&max_batch=8``.
"""

from __future__ import annotations

import importlib
import inspect
import json
from typing import Any

from .base import Action, Agent, sampling_seed

BASELINE_MODULES: dict[str, str] = {
    "RagSupport-v0": "judgegym.envs.rag.baselines",
    "CustomerSupport-v0": "judgegym.envs.support.baselines",
    "Summarize-v0": "judgegym.envs.summarize.baselines",
}
"""Env id -> module whose ``BASELINES`` dict maps spec names to scripted agent classes."""

DEFAULT_AGENTS: dict[str, str] = {"RagSupport-v0": "search-quote", "CustomerSupport-v0": "policy", "Summarize-v0": "lead"}
"""Env id -> the scripted baseline `judgegym eval` plays when no agent is named: the honest one of
each env (it reads no gold, unlike ``oracle``)."""

MODEL_AGENTS: dict[str, str] = {
    "hf": "judgegym.agents.hf:HFAgent",
    "vllm": "judgegym.agents.vllm_agent:VLLMAgent",
    "litellm": "judgegym.agents.litellm_agent:LiteLLMAgent",
}
"""Spec prefix -> model agent class (imported on use: torch, vllm and litellm are heavy)."""


def baselines(env_id: str) -> dict[str, type[Agent]]:
    """The scripted baseline agents of `env_id`, by spec name ({} for an unknown env)."""
    module = BASELINE_MODULES.get(env_id)
    return dict(importlib.import_module(module).BASELINES) if module else {}


def parse_spec(spec: str) -> tuple[str, str, str | None, dict[str, Any]]:
    """``"hf:smollm2-135m+ckpt?temperature=0.7"`` -> ``("hf", "smollm2-135m", "ckpt", {"temperature": 0.7})``.
    A spec without a known prefix comes back as ``("", spec, None, {})``."""
    spec = spec.strip()
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in MODEL_AGENTS:
        return "", spec, None, {}
    target, _, query = rest.partition("?")
    model, plus, adapter = target.partition("+") if kind != "litellm" else (target, "", "")
    if not model:
        raise ValueError(f"agent spec {spec!r} names no model, e.g. {kind}:MODEL")
    options: dict[str, Any] = {}
    for item in filter(None, query.split("&")):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ValueError(f"agent spec {spec!r}: option {item!r} is not KEY=VALUE")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return kind, model, (adapter or None) if plus else None, options


def make_agent(spec: str, env_id: str = "RagSupport-v0") -> Agent:
    """Build an agent from a spec string (see the module docs); scripted names resolve
    against `env_id`'s baselines.

    Raises ValueError naming the problem (unknown name with the known ones, unknown option
    with the accepted ones, an adapter where the backend takes none)."""
    kind, model, adapter, options = parse_spec(spec)
    if not kind:
        known = baselines(env_id)
        factory = known.get(model)
        if factory is None:
            prefixes = ", ".join(f"{p}:MODEL" for p in MODEL_AGENTS)
            raise ValueError(f"unknown agent {spec!r} for {env_id}; known agents: {', '.join(sorted(known))}, or {prefixes}")
        return factory()
    module, _, cls_name = MODEL_AGENTS[kind].partition(":")
    cls = getattr(importlib.import_module(module), cls_name)
    accepted = set(inspect.signature(cls).parameters) - {"self", "model", "adapter", "model_obj", "tokenizer_obj"}
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise ValueError(f"agent spec {spec!r}: unknown option(s) {', '.join(unknown)}; {kind} agents take {', '.join(sorted(accepted))}")
    kwargs: dict[str, Any] = {"name": options.pop("name", spec.strip()), **options}
    if adapter is not None:
        kwargs["adapter"] = adapter
    return cls(model, **kwargs)


__all__ = [
    "BASELINE_MODULES",
    "DEFAULT_AGENTS",
    "MODEL_AGENTS",
    "Action",
    "Agent",
    "baselines",
    "make_agent",
    "parse_spec",
    "sampling_seed",
]
