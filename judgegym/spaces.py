"""Gymnasium spaces for chat text.

`gymnasium.spaces.Text` admits only a fixed charset, so chat envs use these: any unicode
string, an assistant action (text or message dict), and a conversation (list of OpenAI
message dicts). `sample()` returns benign text, never random noise.
"""

from __future__ import annotations

from typing import Any

from gymnasium.spaces import Space

ROLES = frozenset({"system", "user", "assistant", "tool"})
_BENIGN_TEXT = (
    "I could not find that in the knowledge base; I can escalate this to a human support agent.",
    "Hello, how can I help you today?",
    "Thanks, that answers my question.",
)


class ChatText(Space[str]):
    """Any unicode string up to `max_length` characters (no limit by default)."""

    def __init__(self, max_length: int | None = None, seed: int | None = None):
        super().__init__(shape=None, dtype=None, seed=seed)
        self.max_length = max_length

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        return _BENIGN_TEXT[int(self.np_random.integers(len(_BENIGN_TEXT)))]

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and (self.max_length is None or len(x) <= self.max_length)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChatText) and other.max_length == self.max_length

    def __repr__(self) -> str:
        return f"ChatText(max_length={self.max_length})"


class ChatAction(Space[Any]):
    """An agent's turn: text (tool calls inline) or an OpenAI assistant message dict.

    `contains` checks the shape an env accepts without complaint; envs still handle
    anything else gracefully (a format error the agent can read).
    """

    def __init__(self, seed: int | None = None):
        super().__init__(shape=None, dtype=None, seed=seed)
        self._text = ChatText()

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def seed(self, seed: int | None = None) -> int | list[int] | dict[str, int]:
        self._text.seed(seed)
        return super().seed(seed)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        return _BENIGN_TEXT[int(self.np_random.integers(len(_BENIGN_TEXT)))]

    def contains(self, x: Any) -> bool:
        if isinstance(x, str):
            return True
        return (
            isinstance(x, dict)
            and x.get("role", "assistant") == "assistant"
            and (x.get("content") is None or isinstance(x.get("content"), str))
            and isinstance(x.get("tool_calls") or [], list)
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChatAction)

    def __repr__(self) -> str:
        return "ChatAction()"


class Conversation(Space[list[dict[str, Any]]]):
    """A list of OpenAI chat messages: dicts with a known `role` and str-or-None `content`."""

    def __init__(self, seed: int | None = None):
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> list[dict[str, Any]]:
        text = _BENIGN_TEXT[int(self.np_random.integers(len(_BENIGN_TEXT)))]
        return [{"role": "user", "content": text}]

    def contains(self, x: Any) -> bool:
        return isinstance(x, list) and all(
            isinstance(m, dict) and m.get("role") in ROLES and (m.get("content") is None or isinstance(m["content"], str)) for m in x
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Conversation)

    def __repr__(self) -> str:
        return "Conversation()"


__all__ = ["ChatAction", "ChatText", "Conversation"]
