"""Tools: Python functions exposed to agents with OpenAI function schemas.

A `Tool` derives its JSON schema from the function's signature and docstring (through
pydantic) and validates arguments before calling. A `ToolSet` executes calls and turns
every failure into text the agent can read, so an episode never dies on a bad call.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from .formats.chat import TOOL_ERROR_PREFIX

DEFAULT_MAX_OUTPUT_CHARS = 4000


@dataclass(frozen=True)
class Tool:
    """A callable with an OpenAI function schema. Build one with `Tool.from_function`."""

    name: str
    description: str
    fn: Callable[..., Any]
    arguments: type[BaseModel]

    @classmethod
    def from_function(cls, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None) -> Tool:
        """Wrap `fn`; parameter types come from annotations, descriptions from the docstring.

        Parameters may use ``Annotated[int, Field(ge=1, le=20)]`` for constraints. Extra
        arguments are rejected; values are coerced the way pydantic does in lax mode
        (``"5"`` is accepted for an ``int``).
        """
        doc = docstring_parser.parse(inspect.getdoc(fn) or "")
        param_docs = {p.arg_name: p.description for p in doc.params}
        fields: dict[str, Any] = {}
        for param in inspect.signature(fn, eval_str=True).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"tool {fn.__name__!r}: *args / **kwargs cannot be described by a schema")
            annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[param.name] = (annotation, Field(default, description=param_docs.get(param.name)))
        tool_name = name or fn.__name__
        model = create_model(f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
        text = description or "\n\n".join(part for part in (doc.short_description, doc.long_description) if part)
        return cls(name=tool_name, description=text, fn=fn, arguments=model)

    @cached_property
    def schema(self) -> dict[str, Any]:
        """The OpenAI ``{"type": "function", "function": {...}}`` schema."""
        parameters = _strip_titles(self.arguments.model_json_schema())
        parameters["additionalProperties"] = False
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": parameters},
        }


def _strip_titles(schema: Any) -> Any:
    """Drop pydantic's auto-generated "title" keys, which only add prompt tokens."""
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


class ToolError(Exception):
    """Raise from a tool to report a problem the agent caused; the message reaches it verbatim."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool call produced: the text for the tool message, and whether it failed.

    `error` is None on success, else one of "unknown_tool", "invalid_json",
    "invalid_arguments", "tool_error", "not_executed".
    """

    content: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class ToolSet:
    """Named tools plus the policy for running them: validation, error text, output limits."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]], *, max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS):
        self.tools: dict[str, Tool] = {}
        for item in tools:
            tool = item if isinstance(item, Tool) else Tool.from_function(item)
            if tool.name in self.tools:
                raise ValueError(f"two tools are named {tool.name!r}")
            self.tools[tool.name] = tool
        self.max_output_chars = max_output_chars
        self.schemas: list[dict[str, Any]] = [tool.schema for tool in self.tools.values()]

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def execute(self, name: str, arguments: str | dict[str, Any]) -> ToolResult:
        """Run one call. Never raises for bad input: failures come back as `ToolResult.error`."""
        tool = self.tools.get(name)
        if tool is None:
            available = ", ".join(self.tools) or "none"
            return ToolResult(clean_text(f"{TOOL_ERROR_PREFIX}: unknown tool {name!r}. Available tools: {available}."), "unknown_tool")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except (ValueError, RecursionError) as exc:  # ValueError: also over-long integer literals
                detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc) or "nested too deeply"
                return ToolResult(
                    f"{TOOL_ERROR_PREFIX}: arguments for {name!r} are not valid JSON ({detail}). {_usage(tool)}", "invalid_json"
                )
        if not isinstance(arguments, dict):
            return ToolResult(
                f"{TOOL_ERROR_PREFIX}: arguments for {name!r} must be a JSON object, got {type(arguments).__name__}. {_usage(tool)}",
                "invalid_json",
            )
        try:
            validated = tool.arguments.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult(
                clean_text(f"{TOOL_ERROR_PREFIX}: invalid arguments for {name!r}: {_describe(exc)}. {_usage(tool)}"),
                "invalid_arguments",
            )
        try:
            output = tool.fn(**{field: getattr(validated, field) for field in type(validated).model_fields})
            text = output if isinstance(output, str) else json.dumps(output, default=str)
        except ToolError as exc:
            return ToolResult(clean_text(f"{TOOL_ERROR_PREFIX}: {exc}"), "tool_error")
        except Exception as exc:  # a tool bug must not end the episode; the agent reads it
            return ToolResult(clean_text(f"{TOOL_ERROR_PREFIX}: tool {name!r} failed: {type(exc).__name__}: {exc}"), "tool_error")
        return ToolResult(self.truncate(clean_text(text)))

    def truncate(self, text: str) -> str:
        """Cut `text` to the output limit with a visible marker saying how much was dropped."""
        if len(text) <= self.max_output_chars:
            return text
        dropped = len(text) - self.max_output_chars
        return f"{text[: self.max_output_chars]}\n...[truncated {dropped} characters]"


def clean_text(text: str) -> str:
    """`text` with lone surrogates (e.g. from a "\\ud83d" JSON escape) replaced by "?", so it
    can be encoded as UTF-8 and stored."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="replace").decode("utf-8")


def _usage(tool: Tool) -> str:
    parameters = tool.schema["function"]["parameters"]
    props, required = parameters.get("properties", {}), set(parameters.get("required", []))
    parts = [f"{p}{'' if p in required else '?'}: {spec.get('type', 'any')}" for p, spec in props.items()]
    return f"Expected {tool.name}({', '.join(parts)})."


def _describe(exc: ValidationError) -> str:
    messages = []
    for error in exc.errors()[:5]:
        field = ".".join(str(p) for p in error["loc"]) or "arguments"
        if error["type"] == "missing":
            messages.append(f"missing required argument {field!r}")
        elif error["type"] == "extra_forbidden":
            messages.append(f"unexpected argument {field!r}")
        else:
            messages.append(f"{field!r}: {error['msg']}")
    return "; ".join(messages)


__all__ = ["DEFAULT_MAX_OUTPUT_CHARS", "Tool", "clean_text", "ToolError", "ToolResult", "ToolSet"]
