"""OpenEnv's typed client for a ``judgegym serve`` server: `JudgegymEnv`, `ChatTurn`,
`ChatObservation`, as an OpenEnv environment package would ship them.

Any OpenEnv client works against the server (``GenericEnvClient`` with plain dicts too);
these types add fields with names, the token, and `trajectory` / `judge_score` decoding.
Needs ``pip install 'judgegym[openenv]'`` (openenv-core). See docs/plugins/openenv.md.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import quote

try:
    from openenv.core.client_types import StepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server.types import Action, Observation, State
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("judgegym.integrations.openenv needs openenv-core: pip install 'judgegym[openenv]'") from exc
from pydantic import Field

from ..serving.protocol import decode_info
from ..trajectory import Trajectory


class ChatTurn(Action):
    """An assistant turn: ``content`` alone is a text turn (``<tool_call>`` blocks inline),
    as ``env.step(text)``; with ``tool_calls`` an OpenAI assistant message."""

    role: Literal["assistant"] = "assistant"
    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    reasoning_content: str | None = None


class ChatObservation(Observation):
    """The conversation so far and the env's info (see `judgegym.serving.protocol.ChatObservation`);
    ``reward`` and ``done`` are OpenEnv's."""

    messages: list[dict[str, Any]] = Field(default_factory=list)
    info: dict[str, Any] = Field(default_factory=dict)
    terminated: bool = False
    truncated: bool = False
    session_id: str = ""

    @property
    def trajectory(self) -> Trajectory | None:
        """The judged trajectory, on the last step (None before)."""
        return decode_info(self.info).get("trajectory")

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The episode's tool schemas (OpenAI format), from the reset's info."""
        return list(self.info.get("tools") or [])


class JudgegymEnv(EnvClient[ChatTurn, ChatObservation, State]):
    """OpenEnv client of a judgegym env server: one WebSocket, one server session.

    ``async with JudgegymEnv(base_url="http://127.0.0.1:8000") as env: result = await
    env.reset(seed=0)``; ``.sync()`` for synchronous code. `reset` takes judgegym's reset
    fields (``seed``, ``options``, ``env_args``, ``group_id``, ``group_size``,
    ``group_wait``). `token`: the server's ``--token`` (sent as ``?token=``; OpenEnv's
    client sets no headers)."""

    def __init__(self, base_url: str, *, token: str | None = None, **kwargs: Any):
        super().__init__(base_url, **kwargs)
        if token:
            self._ws_url = f"{self._ws_url}?token={quote(token, safe='')}"

    def _step_payload(self, action: ChatTurn | str | dict[str, Any]) -> dict[str, Any]:
        if isinstance(action, str):
            return {"content": action}
        if isinstance(action, dict):
            return action
        return action.model_dump(exclude={"metadata"}, exclude_none=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ChatObservation]:
        observation = ChatObservation(**payload.get("observation", {}), reward=payload.get("reward"), done=payload.get("done", False))
        return StepResult(observation=observation, reward=payload.get("reward"), done=bool(payload.get("done", False)))

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)


__all__ = ["ChatObservation", "ChatTurn", "JudgegymEnv"]
