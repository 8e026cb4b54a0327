"""Turning an agent's action into an assistant message and the tool calls it asks for.

Accepted actions: an OpenAI assistant message dict (with or without ``tool_calls``), or raw
text in which ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks are calls
(the Hermes / Qwen convention; `ActionParser` makes the text format pluggable). Text without
calls is a final answer. ``<think>...</think>`` spans are kept apart as reasoning.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from .tools import clean_text
from .trajectory import Message


@dataclass(frozen=True)
class ParsedCall:
    """One requested tool call. `error` is set when the request itself was unusable."""

    id: str
    name: str
    arguments: str
    error: str | None = None


@dataclass(frozen=True)
class ParsedAction:
    """An action in normal form. `error` is set (and nothing else) when the action was junk."""

    content: str | None = None
    reasoning: str | None = None
    calls: list[ParsedCall] = field(default_factory=list)
    error: str | None = None

    def assistant_message(self) -> Message:
        """The assistant message to record in the conversation."""
        tool_calls = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in self.calls]
        extra = {"reasoning_content": self.reasoning} if self.reasoning else {}
        return Message(role="assistant", content=self.content, tool_calls=tool_calls or None, **extra)


class ActionParser(Protocol):
    """Splits model text into (content, calls). Plug in another text tool-call format here."""

    def parse(self, text: str, call_prefix: str) -> tuple[str | None, str | None, list[ParsedCall]]:
        """Return (content without calls, reasoning, calls); ids are ``f"{call_prefix}{i}"``."""
        ...


_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL)
_OPEN_THINK_IN_PROMPT = re.compile(r"^(?:(?!<think>).)*?</think>", re.DOTALL)  # "<think>" was in the prompt
_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)


class HermesParser:
    """``<tool_call>{json}</tool_call>`` blocks, several per turn; an unclosed last block counts."""

    def parse(self, text: str, call_prefix: str) -> tuple[str | None, str | None, list[ParsedCall]]:
        thoughts = []
        leading = _OPEN_THINK_IN_PROMPT.match(text)
        if leading:  # chat templates that open <think> in the prompt leave only "</think>" here
            thoughts.append(leading.group()[: -len("</think>")].strip())
            text = text[leading.end() :]
        thoughts += [m.strip() for m in _THINK.findall(text)]
        text = _THINK.sub("", text)
        calls = [_call_from_json_text(body, f"{call_prefix}{i}") for i, body in enumerate(_TOOL_CALL.findall(text))]
        content = _TOOL_CALL.sub("", text).strip() if calls else text.strip()
        return content or None, "\n".join(t for t in thoughts if t) or None, calls


def _call_from_json_text(body: str, call_id: str) -> ParsedCall:
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError) as exc:  # ValueError: also over-long integer literals
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc) or "nested too deeply"
        return ParsedCall(call_id, _guess_name(body), body.strip(), f"the <tool_call> block is not valid JSON ({detail})")
    if not isinstance(payload, dict) or not isinstance(payload.get("name"), str):
        return ParsedCall(call_id, "", body.strip(), 'a <tool_call> block must be a JSON object {"name": str, "arguments": {...}}')
    arguments = payload.get("arguments", payload.get("parameters", {}))
    return ParsedCall(call_id, payload["name"], arguments if isinstance(arguments, str) else _dumps(arguments))


def _guess_name(body: str) -> str:
    match = re.search(r'"name"\s*:\s*"([^"]{1,64})"', body)
    return match.group(1) if match else ""


def _dumps(value: Any) -> str:
    try:
        return clean_text(json.dumps(value, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        return clean_text(str(value))


def parse_action(action: Any, parser: ActionParser, call_prefix: str) -> ParsedAction:
    """Normalise any action. Never raises: junk comes back with `ParsedAction.error` set."""
    if isinstance(action, Message):
        action = action.model_dump(exclude_none=True)
    if isinstance(action, str):
        content, reasoning, calls = parser.parse(clean_text(action), call_prefix)
        return ParsedAction(content, reasoning, calls)
    if isinstance(action, dict):
        return _from_message_dict(action, parser, call_prefix)
    return ParsedAction(error=f"an action must be text or an assistant message dict, got {type(action).__name__}")


def _from_message_dict(message: dict[Any, Any], parser: ActionParser, call_prefix: str) -> ParsedAction:
    role = message.get("role", "assistant")
    if role != "assistant":
        return ParsedAction(error=f"an action message must have role 'assistant', got {role!r}")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        return ParsedAction(error=f"'content' must be a string or null, got {type(content).__name__}")
    content = clean_text(content) if content else content
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        return ParsedAction(error=f"'tool_calls' must be a list, got {type(raw_calls).__name__}")
    reasoning = message.get("reasoning_content")
    reasoning = clean_text(reasoning) if isinstance(reasoning, str) and reasoning else None
    if not raw_calls:
        # A dict without native calls may still carry text-format calls in its content.
        text_content, text_reasoning, calls = parser.parse(content or "", call_prefix)
        return ParsedAction(text_content, reasoning or text_reasoning, calls)
    calls = [_call_from_dict(raw, f"{call_prefix}{i}") for i, raw in enumerate(raw_calls)]
    seen: set[str] = set()
    for i, call in enumerate(calls):  # tool results are matched by id, so ids must be unique
        if call.id in seen:
            n = i
            while f"{call_prefix}{n}" in seen or any(c.id == f"{call_prefix}{n}" for c in calls[i + 1 :]):
                n += 1
            calls[i] = ParsedCall(f"{call_prefix}{n}", call.name, call.arguments, call.error)
        seen.add(calls[i].id)
    return ParsedAction(content.strip() or None if content else None, reasoning, calls)


def _call_from_dict(raw: Any, fallback_id: str) -> ParsedCall:
    if not isinstance(raw, dict):
        return ParsedCall(fallback_id, "", _dumps(raw), f"a tool call must be an object, got {type(raw).__name__}")
    call_id = raw.get("id") if isinstance(raw.get("id"), str) and raw.get("id") else fallback_id
    function = raw.get("function", raw)
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        return ParsedCall(call_id, "", _dumps(raw), "a tool call needs function.name (a string)")
    arguments = function.get("arguments", {})
    return ParsedCall(call_id, function["name"], arguments if isinstance(arguments, str) else _dumps(arguments))


__all__ = ["ActionParser", "HermesParser", "ParsedAction", "ParsedCall", "parse_action"]
