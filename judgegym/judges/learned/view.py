"""What a trajectory shows without gold data, read once: the instructions, the question, each tool
call with its result, the customer's turns and the answer (`View`); and which task family it
belongs to (`family_of`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ...trajectory import Trajectory
from ..facts import (
    FORMAT_ERROR_PREFIX,
    seen_text,
    strip_copied,
    with_years,
)


@dataclass
class Call:
    name: str
    arguments: dict[str, Any]
    result: str = ""
    ok: bool = False
    after_user: str = ""  # the customer's last words before the call


@dataclass
class View:
    """What a trajectory shows without gold: instructions, question, calls, evidence, answer."""

    system: str
    question: str
    answer: str
    calls: list[Call] = field(default_factory=list)
    user_texts: list[str] = field(default_factory=list)
    assistant_texts: list[str] = field(default_factory=list)
    format_errors: int = 0
    tool_names: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, trajectory: Trajectory) -> View:
        system = "\n".join(m.content or "" for m in trajectory.messages if m.role == "system")
        first_user = next((m.content or "" for m in trajectory.messages if m.role == "user"), "")
        view = cls(system=system, question=first_user.strip().partition("\n\n")[0], answer=trajectory.final_answer)
        view.tool_names = {str(t.get("function", t).get("name", "")) for t in trajectory.tools if isinstance(t, dict)}
        pending: dict[str, Call] = {}
        last_user = ""
        for message in trajectory.messages:
            if message.role == "user":
                text = message.content or ""
                if text.startswith(FORMAT_ERROR_PREFIX):
                    view.format_errors += 1
                else:
                    view.user_texts.append(text)
                    last_user = text
            elif message.role == "assistant":
                if message.content:
                    view.assistant_texts.append(message.content)
                for call in message.tool_calls or []:
                    try:
                        arguments = json.loads(call.function.arguments)
                    except (ValueError, RecursionError):
                        arguments = {}
                    pending[call.id] = Call(call.function.name, arguments if isinstance(arguments, dict) else {}, after_user=last_user)
                    view.calls.append(pending[call.id])
                    view.tool_names.add(call.function.name)
            elif message.role == "tool" and message.tool_call_id in pending:
                call = pending.pop(message.tool_call_id)
                call.result = message.content or ""
                call.ok = not call.result.startswith("Error")
        return view


def family_of(trajectory: Trajectory) -> str:
    """The task family whose head scores `trajectory`: ``support`` (customer, orders and
    actions), ``summarize`` (a document read in sections), ``rag`` (search and read a
    knowledge base), else ``generic``; told by the tools offered or called."""
    names = View.of(trajectory).tool_names
    if names & {"find_customer", "refund_order", "cancel_order", "get_order"}:
        return "support"
    if names & {"read_section", "list_sections"}:
        return "summarize"
    if names & {"search", "read"}:
        return "rag"
    return "generic"


def read_trajectory(trajectory: Trajectory) -> tuple[View, str, str]:
    """(the trajectory's view, the text its tools returned, its answer without copied
    instructions and with years spelled out as the sources do)."""
    view = View.of(trajectory)
    seen = seen_text(trajectory.messages)
    return view, seen, with_years(strip_copied(view.answer, [view.system, view.question]), f"{view.system}\n{seen}")
