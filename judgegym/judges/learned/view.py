"""What a trajectory shows without gold data, read once: the instructions, the question, each tool
call with its result, the customer's turns and the answer (`View`); and which task family it
belongs to (`family_of`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...formats.chat import FORMAT_ERROR_PREFIX, ToolExchange, asked_and_given, tool_exchanges
from ...trajectory import Trajectory
from ..facts import prompt_is_context, seen_text, strip_copied, with_years


@dataclass
class View:
    """What a trajectory shows without gold: instructions, question, calls, evidence, answer,
    and the facts the env published (``Trajectory.info["facts"]``; {} for stored conversations
    without them)."""

    system: str
    question: str
    answer: str
    instructions: str = ""
    """The system prompt where it instructs (a conversation with tools); "" where it is
    context (`prompt_is_context`)."""
    context: str = ""
    """What the prompt gives as evidence where `prompt_is_context`: the system prompt and the
    first user message's paragraphs other than the question's (`asked_and_given`); ""
    otherwise."""
    calls: list[ToolExchange] = field(default_factory=list)
    user_texts: list[str] = field(default_factory=list)
    assistant_texts: list[str] = field(default_factory=list)
    format_errors: int = 0
    tool_names: set[str] = field(default_factory=set)
    facts: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, trajectory: Trajectory) -> View:
        system = "\n".join(m.content or "" for m in trajectory.messages if m.role == "system")
        first_user = next((m.content or "" for m in trajectory.messages if m.role == "user"), "")
        facts = trajectory.info.get("facts")
        in_prompt = prompt_is_context(trajectory)
        question, rest = asked_and_given(first_user) if in_prompt else first_user.strip().partition("\n\n")[::2]
        view = cls(
            system=system,
            question=question,
            answer=trajectory.final_answer,
            instructions="" if in_prompt else system,
            context=f"{system}\n{rest}".strip() if in_prompt else "",
            calls=tool_exchanges(trajectory.messages),
            facts=facts if isinstance(facts, dict) else {},
        )
        view.tool_names = {str(t.get("function", t).get("name", "")) for t in trajectory.tools if isinstance(t, dict)}
        view.tool_names |= {call.name for call in view.calls}
        for message in trajectory.messages:
            if message.role == "user":
                text = message.content or ""
                if text.startswith(FORMAT_ERROR_PREFIX):
                    view.format_errors += 1
                else:
                    view.user_texts.append(text)
            elif message.role == "assistant" and message.content:
                view.assistant_texts.append(message.content)
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
    instructions), each date written without its year in the answer and in what was seen
    given the year the sources place it in (`facts.with_years`), so that "dispatched 4 Apr"
    in an order history dated 2025 and an answer's "2025-04-04" are one date."""
    view = View.of(trajectory)
    seen = seen_text(trajectory.messages)
    if view.context:
        seen = f"{view.system}\n{seen}"
    dated = f"{view.system}\n{seen}"
    return view, with_years(seen, dated), with_years(strip_copied(view.answer, [view.instructions, view.question]), dated)
