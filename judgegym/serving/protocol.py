"""The wire protocol of ``judgegym serve``: OpenEnv's messages and judgegym's additions, as
pydantic models, and the helpers both ends use to encode and decode them.

One module, imported by the server (`judgegym.serving.server`), `RemoteEnv`
(`judgegym.envs.remote`) and the OpenEnv client (`judgegym.integrations.openenv`), as
OpenEnv keeps its types in one module shared by server and client. It imports only pydantic,
the standard library and judgegym's lowest layer (no FastAPI, no envs, no judges).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..trajectory import Message, Trajectory

CLIENT_ENV_ARGS = frozenset({"split", "max_turns", "max_tool_calls", "max_tool_output_chars", "defer_judging"})
"""The env arguments a client may set per session; the rest are fixed by the server
(``judgegym serve --env-arg``), so a client cannot point the server's env at its files or
at an LLM of the client's choosing."""

TOKEN_HEADER = "Authorization"
"""Where a client puts the server's token: ``Authorization: Bearer TOKEN`` (or ``?token=``)."""

TOKEN_ENV = "JUDGEGYM_SERVE_TOKEN"
"""The environment variable the server reads its token from, and a `RemoteEnv` without a
``token`` argument sends (so ``judgegym train --env-url`` reaches a guarded server)."""


# -- the wire format --------------------------------------------------------------------
# OpenEnv's protocol: WebSocket messages {"type": "reset" | "step" | "state" | "close",
# "data": ...} answered by {"type": "observation" | "state" | "error", "data": ...}, and HTTP
# POST /reset, POST /step, GET /state. An observation's data is {"observation": {...},
# "reward": float | None, "done": bool}. judgegym adds sessions to HTTP (``session_id``)
# and groups to reset (``group_id``, ``group_size``).


class ResetData(BaseModel):
    """What a reset may carry (the WebSocket message's ``data``, or the HTTP body)."""

    model_config = ConfigDict(extra="forbid")

    seed: int | None = Field(None, ge=0, le=2**63 - 1, description="Scenario seed; the same seed gives the same scenario.")
    options: dict[str, Any] | None = Field(None, description="The env's reset options (e.g. {'scenario_id': ...}).")
    episode_id: str | None = Field(None, max_length=255, description="OpenEnv's episode label, echoed in the state.")
    session_id: str | None = Field(None, max_length=64, description="HTTP only: the session to reset (none: open one).")
    env_args: dict[str, Any] = Field(default_factory=dict, description=f"Per-session env arguments, among {sorted(CLIENT_ENV_ARGS)}.")
    group_id: str | None = Field(None, min_length=1, max_length=128, description="Join (or open) the group of this id.")
    group_size: int | None = Field(None, ge=1, le=1024, description="G, the group's number of members (with group_id).")
    group_wait: bool = Field(False, description="A member's last step waits for the group's judgement (members stepped concurrently).")


class ActionData(BaseModel):
    """An action: an assistant turn. With only ``content`` it is a text turn, exactly as the
    local env's ``step(text)`` (tool calls inline as ``<tool_call>`` blocks); with
    ``tool_calls`` it is an OpenAI assistant message."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["assistant"] = "assistant"
    content: str | None = None
    tool_calls: list[Any] | None = None
    reasoning_content: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict, description="OpenEnv's action metadata; not used by the env.")

    def env_action(self) -> str | dict[str, Any]:
        """What the env's `step` gets: the text, or the assistant message dict."""
        if self.tool_calls is None and self.reasoning_content is None and self.content is not None:
            return self.content
        return self.model_dump(exclude={"metadata"}, exclude_none=True)


class StepBody(BaseModel):
    """HTTP POST /step: OpenEnv's StepRequest plus the session it is for."""

    model_config = ConfigDict(extra="forbid")

    session_id: str = Field(max_length=64)
    action: ActionData
    timeout_s: float | None = Field(None, gt=0, description="OpenEnv's field; judgegym envs step without a deadline.")
    request_id: str | None = Field(None, max_length=255)


class ChatObservation(BaseModel):
    """The ``observation`` of a reply: the conversation so far, the env's info, how it ended.

    ``info`` is the local env's info, JSON-encoded: at reset ``scenario_id``, ``seed``,
    ``tools``, ``task``; on the last step ``trajectory``, ``judge_score``, ``components``,
    ``termination``, ``turn``."""

    messages: list[dict[str, Any]]
    info: dict[str, Any] = Field(default_factory=dict)
    terminated: bool = False
    truncated: bool = False
    session_id: str


class SessionState(BaseModel):
    """A session's state (``state`` message, ``GET /state``): OpenEnv's State fields
    (``episode_id``, ``step_count``) and judgegym's."""

    model_config = ConfigDict(extra="forbid")

    episode_id: str | None = None
    step_count: int = Field(0, ge=0, description="Assistant turns played in this episode.")
    session_id: str
    transport: Literal["ws", "http"]
    started: bool = False
    done: bool = False
    seed: int | None = None
    scenario_id: str | None = None
    group_id: str | None = None
    group_member: int | None = None
    reward: float | None = Field(None, description="The judge's score once known (None before, and when the judge failed).")
    components: dict[str, float] = Field(default_factory=dict)
    judge_failed: bool = False
    judge_pending: bool = Field(False, description="The episode ended and its group is not judged yet.")


def observation_reply(
    messages: list[dict[str, Any]],
    info: dict[str, Any],
    *,
    session_id: str,
    reward: float | None = 0.0,
    terminated: bool = False,
    truncated: bool = False,
) -> dict[str, Any]:
    """An OpenEnv observation payload (``{"observation", "reward", "done"}``) for the wire."""
    observation = {
        "messages": messages,
        "info": encode_info(info),
        "terminated": terminated,
        "truncated": truncated,
        "session_id": session_id,
    }
    return {"observation": observation, "reward": reward, "done": terminated or truncated}


def encode_info(info: dict[str, Any]) -> dict[str, Any]:
    """An env info dict as JSON values (trajectories and judge scores as their dicts)."""
    return {key: _jsonable(value) for key, value in info.items()}


INFO_TYPES: Mapping[str, type[BaseModel]] = MappingProxyType({"trajectory": Trajectory})
"""The info keys `decode_info` turns back into models by default (`RemoteEnv` adds
``judge_score``, a `judgegym.judges.JudgeScore`, a layer above this module)."""


def decode_info(info: dict[str, Any], types: Mapping[str, type[BaseModel]] = INFO_TYPES) -> dict[str, Any]:
    """Inverse of `encode_info` for the keys that carry types: each key of `types` whose
    value is a dict becomes that model (by default ``trajectory``, a `Trajectory`)."""
    info = dict(info)
    for key, model in types.items():
        if isinstance(info.get(key), dict):
            info[key] = model.model_validate(info[key])
    return info


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    return value


# -- addressing a server and its actions ----------------------------------------------


def wire_action(action: Any) -> dict[str, Any]:
    """A local env action (text, an assistant message dict, or a `Message`) as wire data."""
    if isinstance(action, Message):
        action = action.model_dump(exclude_none=True)
    if isinstance(action, str):
        return {"content": action}
    if isinstance(action, dict):
        return action
    raise TypeError(f"an action must be text or an assistant message dict, got {type(action).__name__}")


def http_url(url: str) -> str:
    """``ws://`` / ``wss://`` -> ``http://`` / ``https://``; no trailing slash."""
    url = url.strip().rstrip("/")
    for ws, http in (("ws://", "http://"), ("wss://", "https://")):
        if url.startswith(ws):
            return http + url[len(ws) :]
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"a server URL starts with http://, https://, ws:// or wss://, got {url!r}")
    return url


def ws_url(url: str) -> str:
    """``http://`` / ``https://`` -> ``ws://`` / ``wss://``."""
    url = http_url(url)
    return "ws://" + url[len("http://") :] if url.startswith("http://") else "wss://" + url[len("https://") :]


__all__ = [
    "CLIENT_ENV_ARGS",
    "INFO_TYPES",
    "TOKEN_ENV",
    "TOKEN_HEADER",
    "ActionData",
    "ChatObservation",
    "ResetData",
    "SessionState",
    "StepBody",
    "decode_info",
    "encode_info",
    "http_url",
    "observation_reply",
    "wire_action",
    "ws_url",
]
