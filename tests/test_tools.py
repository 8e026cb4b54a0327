"""Tests for judgegym.tools: schemas from signatures, execution that never raises, truncation.

No ``from __future__ import annotations`` here on purpose: string annotations are covered by
test_string_annotations_resolve_in_the_function_module, everything else uses real objects.
"""

import datetime
import json
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field
from strategies import examples

from judgegym.tools import DEFAULT_MAX_OUTPUT_CHARS, Tool, ToolError, ToolResult, ToolSet

ERROR_KINDS = {"unknown_tool", "invalid_json", "invalid_arguments", "tool_error"}

# --------------------------------------------------------------------------- sample tools


def search(query: str, limit: Annotated[int, Field(ge=1, le=20)] = 5, exact: bool = False) -> list[str]:
    """Search the knowledge base.

    Returns the titles of the best matching documents.

    Args:
        query: What to look for.
        limit: How many results to return.
        exact: Match the phrase exactly.
    """
    return [f"{query}-{i}" for i in range(limit)]


def echo(value: Any = None) -> Any:
    """Return the value unchanged."""
    return value


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: First operand.
        b: Second operand.
    """
    return a + b


def explode(reason: str) -> str:
    """Always fails with a ValueError."""
    raise ValueError(f"cannot handle {reason}")


def refuse(order_id: str) -> str:
    """Always fails with a ToolError."""
    raise ToolError(f"Order {order_id} does not exist; check the id and try again.")


def _walk_keys(value: Any) -> list[str]:
    """Every dict key anywhere inside `value` (used to look for "title" keys)."""
    if isinstance(value, dict):
        keys = list(value)
        for item in value.values():
            keys.extend(_walk_keys(item))
        return keys
    if isinstance(value, list):
        return [k for item in value for k in _walk_keys(item)]
    return []


@pytest.fixture
def toolset() -> ToolSet:
    return ToolSet([search, echo, add, explode, refuse])


# --------------------------------------------------------------------------- schema


def test_schema_top_level_shape():
    schema = Tool.from_function(search).schema
    assert schema["type"] == "function"
    function = schema["function"]
    assert function["name"] == "search"
    assert function["description"].startswith("Search the knowledge base.")
    assert "Returns the titles of the best matching documents." in function["description"]
    # Argument docs belong to the parameters, not to the tool description.
    assert "Args:" not in function["description"]
    assert "How many results" not in function["description"]


def test_schema_parameters_types_descriptions_defaults():
    parameters = Tool.from_function(search).schema["function"]["parameters"]
    assert parameters["type"] == "object"
    props = parameters["properties"]
    assert set(props) == {"query", "limit", "exact"}
    assert props["query"]["type"] == "string"
    assert props["query"]["description"] == "What to look for."
    assert "default" not in props["query"]
    assert props["limit"]["type"] == "integer"
    assert props["limit"]["description"] == "How many results to return."
    assert props["limit"]["default"] == 5
    assert props["exact"]["type"] == "boolean"
    assert props["exact"]["default"] is False
    assert props["exact"]["description"] == "Match the phrase exactly."


def test_schema_annotated_field_constraints():
    props = Tool.from_function(search).schema["function"]["parameters"]["properties"]
    assert props["limit"]["minimum"] == 1
    assert props["limit"]["maximum"] == 20


def test_schema_required_lists_only_parameters_without_default():
    assert Tool.from_function(search).schema["function"]["parameters"]["required"] == ["query"]
    assert sorted(Tool.from_function(add).schema["function"]["parameters"]["required"]) == ["a", "b"]
    # A tool whose parameters all have defaults requires nothing.
    assert not Tool.from_function(echo).schema["function"]["parameters"].get("required")


def test_schema_forbids_additional_properties():
    for fn in (search, echo, add):
        assert Tool.from_function(fn).schema["function"]["parameters"]["additionalProperties"] is False


def test_schema_has_no_title_keys():
    def nested(filters: dict[str, list[int]] | None = None, mode: str = "a") -> str:
        """Nested types produce anyOf / items sub-schemas."""
        return ""

    for fn in (search, echo, add, nested):
        assert "title" not in _walk_keys(Tool.from_function(fn).schema)


def test_parameter_named_title_is_kept():
    def create_ticket(title: str, body: str = "") -> str:
        """Open a ticket.

        Args:
            title: Short summary.
            body: Details.
        """
        return title

    parameters = Tool.from_function(create_ticket).schema["function"]["parameters"]
    assert "title" in parameters["properties"]
    assert parameters["properties"]["title"]["type"] == "string"
    assert parameters["properties"]["title"]["description"] == "Short summary."
    assert parameters["required"] == ["title"]


def test_schema_name_and_description_overrides():
    tool = Tool.from_function(search, name="kb_search", description="Find documents.")
    assert tool.name == "kb_search"
    assert tool.schema["function"]["name"] == "kb_search"
    assert tool.schema["function"]["description"] == "Find documents."
    ts = ToolSet([tool])
    assert "kb_search" in ts and "search" not in ts
    assert ts.execute("kb_search", {"query": "x", "limit": 1}).content == json.dumps(["x-0"])


def test_schema_without_docstring_or_annotations():
    def bare(x, y=3):
        return x

    tool = Tool.from_function(bare)
    assert tool.description == ""
    parameters = tool.schema["function"]["parameters"]
    assert set(parameters["properties"]) == {"x", "y"}
    assert parameters["required"] == ["x"]
    assert parameters["properties"]["y"]["default"] == 3


def test_toolset_schemas_in_order_and_membership(toolset):
    assert [s["function"]["name"] for s in toolset.schemas] == ["search", "echo", "add", "explode", "refuse"]
    assert "search" in toolset
    assert "nope" not in toolset


def test_toolset_accepts_tool_objects_and_functions():
    ts = ToolSet([Tool.from_function(add), search])
    assert set(ts.tools) == {"add", "search"}


# String annotations (PEP 563) must resolve in the tool function's own module.


def _postponed_limit(n: "Annotated[int, Field(ge=1, le=20)]" = 5) -> int:
    """String annotations, as every function in a module with `from __future__ import annotations` has."""
    return n


def _postponed_date(day: "datetime.date") -> str:
    return day.isoformat()


@pytest.mark.parametrize("fn", [_postponed_limit, _postponed_date])
def test_string_annotations_resolve_in_the_function_module(fn):
    ts = ToolSet([fn])
    props = ts.schemas[0]["function"]["parameters"]["properties"]
    if fn is _postponed_limit:
        assert props["n"]["type"] == "integer" and props["n"]["maximum"] == 20
        assert ts.execute(fn.__name__, {"n": 3}).content == "3"
        assert ts.execute(fn.__name__, {"n": 30}).error == "invalid_arguments"
    else:
        assert ts.execute(fn.__name__, {"day": "2024-01-15"}).content == "2024-01-15"


# --------------------------------------------------------------------------- construction errors


def test_duplicate_tool_names_rejected():
    with pytest.raises(ValueError, match="search"):
        ToolSet([search, search])
    with pytest.raises(ValueError, match="add"):
        ToolSet([add, Tool.from_function(search, name="add")])


def test_var_positional_rejected():
    def many(*values: int) -> int:
        return sum(values)

    with pytest.raises(TypeError, match="many"):
        Tool.from_function(many)
    with pytest.raises(TypeError):
        ToolSet([many])


def test_var_keyword_rejected():
    def opts(**options: str) -> str:
        return ""

    with pytest.raises(TypeError, match="opts"):
        Tool.from_function(opts)


# --------------------------------------------------------------------------- execution: success


def test_execute_success_with_json_string(toolset):
    result = toolset.execute("add", '{"a": 2, "b": 40}')
    assert isinstance(result, ToolResult)
    assert result.ok and result.error is None
    assert result.content == "42"


def test_execute_success_with_dict(toolset):
    result = toolset.execute("search", {"query": "refund", "limit": 2})
    assert result.ok
    assert json.loads(result.content) == ["refund-0", "refund-1"]


def test_execute_applies_defaults(toolset):
    result = toolset.execute("search", {"query": "q"})
    assert json.loads(result.content) == [f"q-{i}" for i in range(5)]


def test_execute_empty_argument_string_means_no_arguments(toolset):
    for arguments in ("", "   ", "\n"):
        assert toolset.execute("echo", arguments) == ToolResult("null")
        missing = toolset.execute("add", arguments)
        assert missing.error == "invalid_arguments"


def test_string_output_is_returned_unchanged():
    def greet(name: str) -> str:
        return f'Hello, "{name}"!'

    assert ToolSet([greet]).execute("greet", {"name": "Zoë"}).content == 'Hello, "Zoë"!'


def test_non_string_output_is_json(toolset):
    result = toolset.execute("echo", {"value": {"a": [1, 2.5, None, True], "b": "ü"}})
    assert result.ok
    assert json.loads(result.content) == {"a": [1, 2.5, None, True], "b": "ü"}


def test_lax_coercion_of_numeric_strings():
    received: list[Any] = []

    def take(n: int, ratio: float = 1.0) -> str:
        received.append((n, ratio))
        return "ok"

    ts = ToolSet([take])
    result = ts.execute("take", '{"n": "3", "ratio": "0.5"}')
    assert result.ok, result.content
    assert received == [(3, 0.5)]
    assert type(received[0][0]) is int


# --------------------------------------------------------------------------- execution: errors


def test_unknown_tool(toolset):
    result = toolset.execute("serch", {"query": "x"})
    assert result.error == "unknown_tool"
    assert not result.ok
    assert "serch" in result.content
    # The agent learns what it could have called.
    for name in ("search", "echo", "add"):
        assert name in result.content


def test_unknown_tool_with_empty_toolset():
    result = ToolSet([]).execute("anything", "{}")
    assert result.error == "unknown_tool"
    assert "anything" in result.content


def test_invalid_json(toolset):
    result = toolset.execute("search", '{"query": "x", ')
    assert result.error == "invalid_json"
    assert "search" in result.content
    assert "JSON" in result.content
    # The usage hint shows the expected call.
    assert "query" in result.content and "limit" in result.content


def test_non_object_json_is_invalid_json(toolset):
    for arguments in ("[1, 2]", '"text"', "42", "null", "true"):
        result = toolset.execute("search", arguments)
        assert result.error == "invalid_json", arguments
        assert "search" in result.content
        assert "object" in result.content


def test_non_dict_python_arguments_is_invalid_json(toolset):
    result = toolset.execute("search", ["query", "x"])  # type: ignore[arg-type]
    assert result.error == "invalid_json"
    assert "list" in result.content


def test_deeply_nested_json_is_reported_not_raised(toolset):
    result = toolset.execute("echo", "[" * 100_000 + "]" * 100_000)
    assert result.error == "invalid_json"
    assert isinstance(result.content, str)


def test_missing_required_argument_named(toolset):
    result = toolset.execute("add", {"a": 1})
    assert result.error == "invalid_arguments"
    assert "add" in result.content
    assert "'b'" in result.content
    assert "missing" in result.content.lower()


def test_unexpected_argument_named(toolset):
    result = toolset.execute("search", {"query": "x", "colour": "red"})
    assert result.error == "invalid_arguments"
    assert "colour" in result.content
    assert "unexpected" in result.content.lower()


def test_constraint_violation_named(toolset):
    result = toolset.execute("search", {"query": "x", "limit": 50})
    assert result.error == "invalid_arguments"
    assert "'limit'" in result.content
    assert "20" in result.content
    low = toolset.execute("search", {"query": "x", "limit": 0})
    assert low.error == "invalid_arguments"
    assert "'limit'" in low.content


def test_wrong_type_named(toolset):
    result = toolset.execute("add", '{"a": "three", "b": 1}')
    assert result.error == "invalid_arguments"
    assert "'a'" in result.content
    assert "'b'" not in result.content.split("Expected")[0]


def test_tool_raising_exception_becomes_tool_error(toolset):
    result = toolset.execute("explode", {"reason": "tuesdays"})
    assert result.error == "tool_error"
    assert "explode" in result.content
    assert "ValueError" in result.content
    assert "cannot handle tuesdays" in result.content


def test_tool_error_message_passed_verbatim(toolset):
    result = toolset.execute("refuse", {"order_id": "A-17"})
    assert result.error == "tool_error"
    message = "Order A-17 does not exist; check the id and try again."
    assert message in result.content
    assert result.content.endswith(message)
    # No exception class name or traceback noise for deliberate tool errors.
    assert "ToolError" not in result.content
    assert "Traceback" not in result.content


def test_tool_result_ok_property():
    assert ToolResult("x").ok
    assert not ToolResult("x", "tool_error").ok


# --------------------------------------------------------------------------- truncation


def test_default_output_limit():
    assert ToolSet([]).max_output_chars == DEFAULT_MAX_OUTPUT_CHARS


def test_truncation_marker_and_exact_dropped_count():
    def long(n: int) -> str:
        return "x" * n

    ts = ToolSet([long], max_output_chars=10)
    result = ts.execute("long", {"n": 25})
    assert result.ok
    assert result.content.startswith("x" * 10)
    assert result.content.count("x") == 10
    assert "[truncated 15 characters]" in result.content


def test_truncation_boundary():
    ts = ToolSet([], max_output_chars=10)
    assert ts.truncate("b" * 10) == "b" * 10
    assert ts.truncate("") == ""
    cut = ts.truncate("b" * 11)
    assert cut.startswith("b" * 10)
    assert "[truncated 1 characters]" in cut


def test_truncation_applies_to_json_output():
    ts = ToolSet([echo], max_output_chars=5)
    result = ts.execute("echo", {"value": [1, 2, 3, 4, 5]})  # "[1, 2, 3, 4, 5]" is 15 characters
    assert result.content.startswith("[1, 2")
    assert "[truncated 10 characters]" in result.content


@given(text=st.text(max_size=300), limit=st.integers(min_value=0, max_value=100))
def test_truncate_property(text, limit):
    out = ToolSet([], max_output_chars=limit).truncate(text)
    if len(text) <= limit:
        assert out == text
    else:
        assert out.startswith(text[:limit])
        assert f"[truncated {len(text) - limit} characters]" in out


# --------------------------------------------------------------------------- properties: execute never raises

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=25,
)

_TOOLS = ToolSet([search, echo, add, explode, refuse], max_output_chars=200)
_NAMES = st.sampled_from(["search", "echo", "add", "explode", "refuse"]) | st.text(max_size=10)


def _check(result: ToolResult) -> None:
    assert isinstance(result, ToolResult)
    assert isinstance(result.content, str)
    assert result.error is None or result.error in ERROR_KINDS
    assert result.ok == (result.error is None)


@settings(max_examples=examples(200), deadline=None)
@given(name=_NAMES, arguments=st.text())
def test_execute_never_raises_on_arbitrary_text(name, arguments):
    _check(_TOOLS.execute(name, arguments))


@settings(max_examples=examples(200), deadline=None)
@given(name=_NAMES, value=json_values)
def test_execute_never_raises_on_arbitrary_json_text(name, value):
    _check(_TOOLS.execute(name, json.dumps(value)))


@settings(max_examples=examples(200), deadline=None)
@given(name=_NAMES, value=json_values)
def test_execute_never_raises_on_arbitrary_python_values(name, value):
    _check(_TOOLS.execute(name, value))


@settings(max_examples=examples(200), deadline=None)
@given(
    name=_NAMES,
    arguments=st.dictionaries(
        st.sampled_from(["query", "limit", "exact", "value", "a", "b", "reason", "order_id"]) | st.text(max_size=8),
        json_values,
        max_size=4,
    ),
)
def test_execute_never_raises_on_arbitrary_argument_objects(name, arguments):
    result = _TOOLS.execute(name, arguments)
    _check(result)
    # The same arguments as JSON text give the same kind of outcome.
    assert _TOOLS.execute(name, json.dumps(arguments)).error == result.error


# --------------------------------------------------------------------------- bugs


def test_execute_huge_integer_literal_does_not_raise(toolset):
    result = toolset.execute("add", '{"a": ' + "1" * 5000 + ', "b": 1}')
    assert isinstance(result.content, str)
    assert result.error in ERROR_KINDS


@pytest.mark.parametrize("kind", ["tuple_keys", "circular"])
def test_execute_unserialisable_tool_output_does_not_raise(kind):
    def bad_output() -> Any:
        """Returns something json.dumps(default=str) cannot encode."""
        if kind == "tuple_keys":
            return {(1, 2): "pair"}
        loop: dict[str, Any] = {}
        loop["self"] = loop
        return loop

    result = ToolSet([bad_output]).execute("bad_output", "{}")
    assert isinstance(result.content, str)
    assert result.error == "tool_error"
