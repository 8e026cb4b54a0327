"""What every env writes into a conversation besides the agent's turns, and the two shapes of
tool use that judges and scripted agents read: an assistant turn of tool calls
(`tool_call_turn`) and each call paired with its result (`tool_exchanges`).

Both work on OpenAI message dicts (an env's observation) and on `judgegym.trajectory.Message`
objects alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .summarize import word_limit_of

FORMAT_ERROR_PREFIX = "[format error]"
"""How `ChatEnv` opens the user turn it sends back for a turn it could not use."""

TOOL_ERROR_PREFIX = "Error"
"""How a failed tool call's result opens (`judgegym.tools.ToolSet`, `ChatEnv`)."""

NOT_EXECUTED_PREFIX = "Not executed"
"""How the result of a call past the env's tool-call limit opens (`ChatEnv`)."""


def tool_call_turn(
    name: str,
    arguments: Sequence[dict[str, Any]] | dict[str, Any],
    *,
    first_id: int = 0,
    prefix: str = "call",
    call_ids: Sequence[str] | None = None,
) -> dict[str, Any]:
    """One assistant turn calling `name` once per arguments dict, with ids ``{prefix}_{first_id}``,
    ``{prefix}_{first_id + 1}``, ... (pass the number of calls made before to keep ids unique
    over an episode), or the given `call_ids`."""
    batch = [arguments] if isinstance(arguments, dict) else list(arguments)
    ids = list(call_ids) if call_ids is not None else [f"{prefix}_{first_id + i}" for i in range(len(batch))]
    if len(ids) != len(batch):
        raise ValueError(f"{len(ids)} call ids for {len(batch)} calls")
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for call_id, args in zip(ids, batch, strict=True)
        ],
    }


@dataclass
class ToolExchange:
    """One tool call and its result. `arguments` is {} where the call's were not a JSON
    object; `result` is None until the env answered; `after_user` is the last user turn before
    the call (format-error notices aside)."""

    name: str
    arguments: dict[str, Any]
    call_id: str
    result: str | None = None
    after_user: str = ""

    @property
    def ok(self) -> bool:
        """Answered and not an error (a call past the limit counts: see `executed`)."""
        return self.result is not None and not self.result.startswith(TOOL_ERROR_PREFIX)

    @property
    def executed(self) -> bool:
        """Answered and actually run: not an error, not past the env's tool-call limit."""
        return self.ok and not str(self.result).startswith(NOT_EXECUTED_PREFIX)


def tool_exchanges(messages: Iterable[Any]) -> list[ToolExchange]:
    """Every tool call of `messages` in order, each with its result where one came back
    (paired by ``tool_call_id``)."""
    exchanges: list[ToolExchange] = []
    pending: dict[str, ToolExchange] = {}
    last_user = ""
    for message in messages:
        role, content = _field(message, "role"), _field(message, "content") or ""
        if role == "user" and not content.startswith(FORMAT_ERROR_PREFIX):
            last_user = content
        elif role == "assistant":
            for call in _field(message, "tool_calls") or []:
                call_id, name, raw = _call_parts(call)
                try:
                    arguments = json.loads(raw)
                except (ValueError, TypeError, RecursionError):
                    arguments = {}
                pending[call_id] = ToolExchange(name, arguments if isinstance(arguments, dict) else {}, call_id, after_user=last_user)
                exchanges.append(pending[call_id])
        elif role == "tool" and _field(message, "tool_call_id") in pending:
            pending.pop(_field(message, "tool_call_id")).result = content
    return exchanges


def _field(message: Any, key: str) -> Any:
    return message.get(key) if isinstance(message, dict) else getattr(message, key, None)


def _call_parts(call: Any) -> tuple[str, str, Any]:
    if isinstance(call, dict):
        function = call.get("function") or {}
        return str(call.get("id")), str(function.get("name", "")), function.get("arguments")
    return str(call.id), call.function.name, call.function.arguments


def asked_and_given(message: str) -> tuple[str, str]:
    """The paragraphs of a user `message` that ask, and the rest (the material given), for a
    prompt that holds its own context (`judgegym.judges.facts.prompt_is_context`).

    People put the material first and the request last ("<the minutes>\n\nSummarise these in
    70 words.", "<three emails>\n\nWhen is the offsite?") as often as the other way round
    ("What changed?\n\nContext: ..."). So the question is the first or the last paragraph,
    whichever asks: holds a question mark or states a word limit (`word_limit_of`); both
    when both ask; the last when neither does (a request after the material is the commoner
    layout). This reads the message's layout and punctuation, not its wording."""
    paragraphs = [p.strip() for p in message.strip().split("\n\n") if p.strip()]
    if len(paragraphs) < 2:
        return (paragraphs[0] if paragraphs else ""), ""

    def asks(paragraph: str) -> bool:
        return "?" in paragraph or word_limit_of(paragraph) is not None

    first, last = asks(paragraphs[0]), asks(paragraphs[-1])
    if first and last:
        return f"{paragraphs[0]}\n\n{paragraphs[-1]}", "\n\n".join(paragraphs[1:-1])
    if first:
        return paragraphs[0], "\n\n".join(paragraphs[1:])
    return paragraphs[-1], "\n\n".join(paragraphs[:-1])


__all__ = [
    "FORMAT_ERROR_PREFIX",
    "NOT_EXECUTED_PREFIX",
    "TOOL_ERROR_PREFIX",
    "ToolExchange",
    "asked_and_given",
    "tool_call_turn",
    "tool_exchanges",
]
