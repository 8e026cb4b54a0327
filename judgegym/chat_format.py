"""OpenAI-style conversations as text for chat templates without native tool support.

Models served as plain text (the embedded SmolLM2, most base and small instruct models) see
tools the Hermes way: the tool schemas in the system message, calls as ``<tool_call>{json}
</tool_call>`` in assistant turns (what `judgegym.parsing.HermesParser` reads back), and
results as ``<tool_response>`` blocks in a user turn. Templates that take ``tools=`` (Qwen,
Llama 3.1+, Hermes) get the structured messages instead; `render_prompt` picks.
"""

from __future__ import annotations

import json
from typing import Any

TOOL_INSTRUCTIONS = (
    "You can call tools. Their JSON schemas are inside <tools></tools>:\n<tools>\n{tools}\n</tools>\n\n"
    "To call a tool, write one block per call:\n"
    '<tool_call>{{"name": "TOOL_NAME", "arguments": {{...}}}}</tool_call>\n'
    "Results come back inside <tool_response></tool_response>. "
    "When you have your answer, reply in plain text without a tool call."
)
"""The system-message addendum describing tools to a text-only model (``{tools}``: one schema per line)."""


def text_messages(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> list[dict[str, str]]:
    """`messages` as ``{"role", "content": str}`` dicts any chat template accepts.

    Content parts are joined; assistant ``tool_calls`` become ``<tool_call>`` text; runs of
    ``tool`` messages become one user turn of ``<tool_response>`` blocks; with `tools`, the
    tool instructions are appended to the system message (one is added if there is none).
    """
    chat: list[dict[str, str]] = []
    for message in messages:
        message = dict(message) if isinstance(message, dict) else message.model_dump(exclude_none=True)
        role = str(message.get("role", "user"))
        content = _content_text(message.get("content"))
        if role == "tool":
            block = f"<tool_response>\n{content}\n</tool_response>"
            if chat and chat[-1]["role"] == "user" and chat[-1]["content"].endswith("</tool_response>"):
                chat[-1] = {"role": "user", "content": f"{chat[-1]['content']}\n{block}"}
            else:
                chat.append({"role": "user", "content": block})
            continue
        for call in message.get("tool_calls") or []:
            function = call.get("function", {}) if isinstance(call, dict) else {}
            call = {"name": function.get("name", ""), "arguments": _arguments(function.get("arguments"))}
            call_json = json.dumps(call, ensure_ascii=False)
            content = f"{content}\n<tool_call>{call_json}</tool_call>".strip()
        chat.append({"role": role, "content": content.strip()})
    if tools:
        addendum = TOOL_INSTRUCTIONS.format(tools="\n".join(json.dumps(t, ensure_ascii=False) for t in tools))
        if chat and chat[0]["role"] == "system":
            chat[0] = {"role": "system", "content": f"{chat[0]['content']}\n\n{addendum}".strip()}
        else:
            chat.insert(0, {"role": "system", "content": addendum})
    return chat


def supports_native_tools(tokenizer: Any) -> bool:
    """Whether the tokenizer's chat template renders a ``tools`` argument itself."""
    template = getattr(tokenizer, "chat_template", None) or ""
    if isinstance(template, dict):
        template = " ".join(template.values())
    return "tools" in template


def render_prompt(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *, generation_prompt: bool = True
) -> str:
    """The prompt text for `messages` through the tokenizer's chat template: native
    ``tools=`` when the template supports it, the Hermes text convention otherwise; ending
    with the assistant's generation prompt unless `generation_prompt` is False."""
    if tools and supports_native_tools(tokenizer):
        structured = [_structured(m) for m in messages]
        return tokenizer.apply_chat_template(structured, tools=tools, add_generation_prompt=generation_prompt, tokenize=False)
    return tokenizer.apply_chat_template(text_messages(messages, tools), add_generation_prompt=generation_prompt, tokenize=False)


def _structured(message: dict[str, Any]) -> dict[str, Any]:
    """A message for a tool-aware template: text content, arguments as dicts (what HF templates expect)."""
    out = {k: v for k, v in message.items() if k in ("role", "content", "tool_calls", "tool_call_id", "name")}
    out["content"] = _content_text(message.get("content"))
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {**call, "function": {**call["function"], "arguments": _arguments(call["function"].get("arguments"))}}
            for call in message["tool_calls"]
            if isinstance(call, dict) and isinstance(call.get("function"), dict)
        ]
    return out


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def _arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments or "{}")
        except json.JSONDecodeError:
            return arguments
    return arguments or {}


__all__ = ["TOOL_INSTRUCTIONS", "render_prompt", "supports_native_tools", "text_messages"]
