"""The data model every stage shares: chat messages, tool calls, trajectories and groups.

Messages are OpenAI chat-format dicts on the wire (`Message.model_dump` gives exactly that),
and `Trajectory` / `Group` round-trip losslessly through JSONL.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Role = Literal["system", "user", "assistant", "tool"]


class FunctionCall(BaseModel):
    """The function part of an OpenAI tool call; `arguments` is the raw JSON text the model wrote."""

    model_config = ConfigDict(extra="allow")

    name: str
    arguments: str = "{}"


class ToolCall(BaseModel):
    """An OpenAI-format tool call: ``{"id", "type": "function", "function": {"name", "arguments"}}``."""

    model_config = ConfigDict(extra="allow")

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(BaseModel):
    """One chat message in OpenAI format. Unknown provider fields are kept, not dropped."""

    model_config = ConfigDict(extra="allow")

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    def to_openai(self) -> dict[str, Any]:
        """The message as a plain dict, without unset optional fields."""
        return self.model_dump(exclude_none=True)


class TerminationReason(StrEnum):
    """Why an episode ended. Only `FINAL_ANSWER` and `USER_STOP` are Gymnasium terminations."""

    FINAL_ANSWER = "final_answer"
    USER_STOP = "user_stop"
    MAX_TURNS = "max_turns"
    MAX_TOOL_CALLS = "max_tool_calls"
    ERROR = "error"

    @property
    def truncated(self) -> bool:
        """True for limits (Gymnasium's `truncated`), False for natural ends."""
        return self in (TerminationReason.MAX_TURNS, TerminationReason.MAX_TOOL_CALLS)


class Trajectory(BaseModel):
    """One finished (or running) episode: the conversation plus what the judge made of it.

    `info` holds what a judge needs to re-grade the episode later without the env (for
    RagSupport-v0: the gold facts under ``info["task"]``); `metrics` holds numeric
    per-component scores and counters.
    """

    model_config = ConfigDict(ser_json_inf_nan="constants", extra="forbid")

    scenario_id: str
    env_id: str | None = None
    split: str | None = None
    seed: int | None = None
    messages: list[Message] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)
    termination: TerminationReason | None = None
    reward: float | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    info: dict[str, Any] = Field(default_factory=dict)

    @property
    def final_answer(self) -> str:
        """Content of the last assistant message without tool calls ("" if there is none)."""
        for message in reversed(self.messages):
            if message.role == "assistant" and not message.tool_calls:
                return message.content or ""
        return ""

    def to_json(self) -> str:
        """One line of JSON."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, line: str) -> Trajectory:
        """Inverse of `to_json`."""
        return cls.model_validate_json(line)

    @classmethod
    def from_messages(
        cls,
        messages: Sequence[dict[str, Any] | Message],
        *,
        tools: Sequence[dict[str, Any]] = (),
        scenario_id: str = "",
        task: dict[str, Any] | None = None,
    ) -> Trajectory:
        """A trajectory from an OpenAI chat conversation, ready for any judge::

            Trajectory.from_messages(messages, tools=tools)

        `messages` are OpenAI chat messages (system, user, assistant with or without
        ``tool_calls``, tool results); content given as a list of parts keeps its text parts,
        and the ``developer`` role counts as ``system``. `tools` are the OpenAI function
        schemas the agent was offered; `task` is gold data for an env's verifier (e.g.
        RagSupport-v0's ``{"gold_facts": [...], ...}``), which gold-free judges ignore. The
        episode counts as finished when the last message is an assistant answer without tool
        calls. Raises ValueError naming the message and field of the first bad message.
        """
        parsed = [message if isinstance(message, Message) else _openai_message(message, i) for i, message in enumerate(messages)]
        last = parsed[-1] if parsed else None
        finished = last is not None and last.role == "assistant" and not last.tool_calls
        return cls(
            scenario_id=scenario_id,
            messages=parsed,
            tools=[dict(tool) for tool in tools],
            termination=TerminationReason.FINAL_ANSWER if finished else None,
            info={"task": task} if task is not None else {},
        )


def _openai_message(raw: Any, index: int) -> Message:
    """One OpenAI chat message as a `Message`: text parts joined, ``developer`` read as system."""
    if not isinstance(raw, dict):
        raise ValueError(f"message {index}: expected an object with 'role' and 'content', got {type(raw).__name__}")
    raw = dict(raw)
    if raw.get("role") == "developer":
        raw["role"] = "system"
    if isinstance(raw.get("content"), list):
        parts = raw["content"]
        texts = [p.get("text", "") if isinstance(p, dict) else p for p in parts]
        if not all(isinstance(t, str) for t in texts):
            raise ValueError(f"message {index}: field 'content': parts must be text or {{'type': 'text', 'text': ...}}")
        raw["content"] = "\n".join(t for t in texts if t)
    try:
        return Message.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "<message>"
        raise ValueError(f"message {index}: field '{field}': {first['msg']}") from None


class Group(BaseModel):
    """The trajectories of one scenario, scored together by relative judges and GRPO.

    `failed` marks a group whose judge failed; downstream code excludes it instead of
    treating it as zero reward.
    """

    model_config = ConfigDict(ser_json_inf_nan="constants", extra="forbid")

    scenario_id: str
    trajectories: list[Trajectory] = Field(default_factory=list)
    failed: bool = False
    error: str | None = None

    def __len__(self) -> int:
        return len(self.trajectories)

    def __iter__(self) -> Iterator[Trajectory]:  # type: ignore[override]
        return iter(self.trajectories)

    def to_json(self) -> str:
        """One line of JSON."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, line: str) -> Group:
        """Inverse of `to_json`."""
        return cls.model_validate_json(line)


Record = TypeVar("Record", Trajectory, Group)


def write_jsonl(path: str | Path, records: Iterable[Trajectory | Group], *, append: bool = False) -> int:
    """Write trajectories or groups one per line; returns how many were written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("a" if append else "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(record.to_json() + "\n")
            count += 1
    return count


def read_jsonl(path: str | Path, kind: type[Record] = Trajectory) -> list[Record]:  # type: ignore[assignment]
    """Read a file written by `write_jsonl`. A bad line raises ValueError naming the line."""
    records: list[Record] = []
    with Path(path).open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                records.append(kind.model_validate_json(line))
            except ValueError as exc:
                raise ValueError(f"{path}, line {lineno}: not a valid {kind.__name__}: {exc}") from None
    return records


__all__ = [
    "FunctionCall",
    "Group",
    "Message",
    "TerminationReason",
    "ToolCall",
    "Trajectory",
    "read_jsonl",
    "write_jsonl",
]
