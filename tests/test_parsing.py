"""Tests for judgegym.parsing: Hermes <tool_call> text, <think> reasoning, OpenAI dicts, junk."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import examples

from judgegym.parsing import HermesParser, ParsedAction, ParsedCall, parse_action
from judgegym.trajectory import Message, Trajectory

PREFIX = "call_"


def parse(action: Any) -> ParsedAction:
    return parse_action(action, HermesParser(), PREFIX)


def tc(payload: Any) -> str:
    """A closed Hermes block around `payload` (JSON-encoded unless it is already text)."""
    body = payload if isinstance(payload, str) else json.dumps(payload)
    return f"<tool_call>\n{body}\n</tool_call>"


def check_invariants(action: ParsedAction) -> None:
    """What every ParsedAction must satisfy, whatever the input was."""
    assert isinstance(action, ParsedAction)
    ids = [call.id for call in action.calls]
    assert len(ids) == len(set(ids)), f"duplicate call ids: {ids}"
    for call in action.calls:
        assert isinstance(call, ParsedCall)
        assert isinstance(call.id, str) and call.id
        assert isinstance(call.name, str)
        assert isinstance(call.arguments, str)
        assert call.error is None or isinstance(call.error, str)
    if action.error is None:
        assert action.content is None or isinstance(action.content, str)
        assert action.reasoning is None or isinstance(action.reasoning, str)
    else:
        assert isinstance(action.error, str) and action.error
        assert action.content is None and action.calls == []
    message = action.assistant_message()
    assert isinstance(message, Message)
    assert message.role == "assistant"
    assert Message.model_validate(message.model_dump()) == message
    assert [c.id for c in message.tool_calls or []] == ids
    assert [c.function.name for c in message.tool_calls or []] == [c.name for c in action.calls]
    assert [c.function.arguments for c in message.tool_calls or []] == [c.arguments for c in action.calls]


# --------------------------------------------------------------------------- plain text


def test_plain_text_is_final_content():
    action = parse("  The refund takes 5 business days.\n")
    assert action == ParsedAction(content="The refund takes 5 business days.")
    assert action.calls == [] and action.error is None and action.reasoning is None


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_text_gives_no_content(text):
    action = parse(text)
    assert action.content is None
    assert action.calls == [] and action.error is None


def test_text_mentioning_tool_call_tag_without_block_syntax_is_content():
    action = parse("I will not use tool_call tags here.")
    assert action.calls == []
    assert action.content == "I will not use tool_call tags here."


# --------------------------------------------------------------------------- <tool_call> blocks


def test_single_tool_call_with_content_outside():
    text = "Let me look that up.\n" + tc({"name": "search", "arguments": {"query": "refund policy"}})
    action = parse(text)
    assert action.error is None
    assert action.content == "Let me look that up."
    assert len(action.calls) == 1
    call = action.calls[0]
    assert call.id == "call_0"
    assert call.name == "search"
    assert json.loads(call.arguments) == {"query": "refund policy"}
    assert call.error is None


def test_several_tool_calls_keep_order_ids_and_surrounding_text():
    text = (
        "Before. "
        + tc({"name": "search", "arguments": {"query": "a"}})
        + " Between. "
        + tc({"name": "read", "arguments": {"doc_id": "doc-7"}})
        + tc({"name": "search", "arguments": {"query": "b", "k": 3}})
        + " After."
    )
    action = parse(text)
    assert [c.id for c in action.calls] == ["call_0", "call_1", "call_2"]
    assert [c.name for c in action.calls] == ["search", "read", "search"]
    assert [json.loads(c.arguments) for c in action.calls] == [
        {"query": "a"},
        {"doc_id": "doc-7"},
        {"query": "b", "k": 3},
    ]
    assert all(c.error is None for c in action.calls)
    assert "Before." in action.content and "Between." in action.content and "After." in action.content
    assert "tool_call" not in action.content
    assert "search" not in action.content


def test_only_tool_calls_gives_no_content():
    action = parse(tc({"name": "search", "arguments": {}}))
    assert action.content is None
    assert len(action.calls) == 1


def test_call_prefix_used_for_ids():
    action = parse_action(tc({"name": "a"}) + tc({"name": "b"}), HermesParser(), "turn3-")
    assert [c.id for c in action.calls] == ["turn3-0", "turn3-1"]


def test_invalid_json_block_gives_error_call_with_guessed_name():
    body = '{"name": "search", "arguments": {"query": "refund"'
    action = parse("Searching. " + tc(body))
    assert action.error is None  # the action is fine; one call in it is not
    assert action.content == "Searching."
    assert len(action.calls) == 1
    call = action.calls[0]
    assert call.error is not None
    assert "JSON" in call.error
    assert call.name == "search"
    assert call.arguments == body  # the raw text is kept for the agent to see
    assert call.id == "call_0"


def test_invalid_json_block_without_visible_name():
    action = parse(tc("search(query='refund')"))
    call = action.calls[0]
    assert call.error is not None
    assert call.name == ""
    assert call.arguments == "search(query='refund')"


def test_invalid_block_does_not_hide_valid_ones():
    action = parse(tc("{oops") + tc({"name": "read", "arguments": {"doc_id": "d1"}}))
    assert [c.error is None for c in action.calls] == [False, True]
    assert action.calls[1].name == "read"
    assert [c.id for c in action.calls] == ["call_0", "call_1"]


@pytest.mark.parametrize(
    "payload",
    [[1, 2], "search", 42, None, {"arguments": {"q": 1}}, {"name": 7, "arguments": {}}, {"name": None}],
    ids=["list", "string", "number", "null", "no-name", "int-name", "null-name"],
)
def test_non_object_or_nameless_json_is_error_call(payload):
    action = parse(tc(json.dumps(payload)))
    assert len(action.calls) == 1
    call = action.calls[0]
    assert call.error is not None
    assert call.name == ""
    assert call.arguments == json.dumps(payload)


def test_parameters_alias_for_arguments():
    action = parse(tc({"name": "search", "parameters": {"query": "x"}}))
    call = action.calls[0]
    assert call.error is None
    assert json.loads(call.arguments) == {"query": "x"}


def test_arguments_win_over_parameters():
    action = parse(tc({"name": "search", "arguments": {"query": "a"}, "parameters": {"query": "b"}}))
    assert json.loads(action.calls[0].arguments) == {"query": "a"}


def test_arguments_given_as_string_are_kept_verbatim():
    raw = '{"query": "x",  "k": 2}'
    action = parse(tc({"name": "search", "arguments": raw}))
    assert action.calls[0].arguments == raw
    assert action.calls[0].error is None


def test_missing_arguments_default_to_empty_object():
    action = parse(tc({"name": "list_orders"}))
    assert action.calls[0].error is None
    assert json.loads(action.calls[0].arguments) == {}


def test_unicode_arguments_survive():
    action = parse(tc({"name": "search", "arguments": {"query": "Grüße 日本 🙂"}}))
    assert json.loads(action.calls[0].arguments) == {"query": "Grüße 日本 🙂"}


@pytest.mark.parametrize("tail", ["", "\n", "  \n\n"])
def test_unclosed_last_block_counts(tail):
    text = "Checking. <tool_call>" + json.dumps({"name": "search", "arguments": {"query": "x"}}) + tail
    action = parse(text)
    assert len(action.calls) == 1
    assert action.calls[0].name == "search"
    assert action.calls[0].error is None
    assert json.loads(action.calls[0].arguments) == {"query": "x"}
    assert action.content == "Checking."


def test_closed_then_unclosed_block():
    text = tc({"name": "a", "arguments": {}}) + "<tool_call>" + json.dumps({"name": "b", "arguments": {"x": 1}})
    action = parse(text)
    assert [c.name for c in action.calls] == ["a", "b"]
    assert all(c.error is None for c in action.calls)


def test_truncated_unclosed_block_is_error_call():
    action = parse('<tool_call>{"name": "search", "argu')
    assert len(action.calls) == 1
    assert action.calls[0].error is not None
    assert action.calls[0].name == "search"


# --------------------------------------------------------------------------- <think>


def test_think_split_into_reasoning():
    action = parse("<think>\n  The user wants the refund window.  \n</think>\nIt is 30 days.")
    assert action.reasoning == "The user wants the refund window."
    assert action.content == "It is 30 days."
    assert "think" not in action.content


def test_several_think_blocks_joined():
    action = parse("<think>one</think>A<think>two</think>B<think>  </think>")
    assert action.reasoning == "one\ntwo"
    assert action.content == "AB"


def test_unclosed_think_takes_the_rest():
    action = parse("<think>still pondering the question")
    assert action.reasoning == "still pondering the question"
    assert action.content is None
    assert action.calls == []


def test_think_then_tool_call():
    action = parse("<think>I need to search.</think>" + tc({"name": "search", "arguments": {"query": "q"}}))
    assert action.reasoning == "I need to search."
    assert action.content is None
    assert [c.name for c in action.calls] == ["search"]


def test_reasoning_recorded_in_assistant_message():
    message = parse("<think>why</think>because").assistant_message()
    assert message.content == "because"
    assert message.model_extra.get("reasoning_content") == "why"
    assert message.to_openai()["reasoning_content"] == "why"


def test_no_reasoning_means_no_reasoning_field():
    message = parse("plain").assistant_message()
    assert "reasoning_content" not in message.to_openai()


# --------------------------------------------------------------------------- dict actions


def test_dict_without_calls_is_final_answer():
    action = parse({"role": "assistant", "content": "  Done.  "})
    assert action.error is None
    assert action.content == "Done."
    assert action.calls == []


def test_dict_role_defaults_to_assistant():
    assert parse({"content": "hi"}).content == "hi"


def test_dict_native_tool_calls_string_arguments():
    raw_args = '{"query": "refund"}'
    action = parse(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "abc123", "type": "function", "function": {"name": "search", "arguments": raw_args}}],
        }
    )
    assert action.error is None
    assert action.content is None
    assert action.calls == [ParsedCall("abc123", "search", raw_args)]


def test_dict_native_tool_calls_dict_arguments():
    action = parse({"tool_calls": [{"id": "x", "function": {"name": "search", "arguments": {"query": "ü", "k": 2}}}]})
    call = action.calls[0]
    assert call.error is None
    assert json.loads(call.arguments) == {"query": "ü", "k": 2}


def test_dict_native_tool_call_missing_arguments():
    action = parse({"tool_calls": [{"id": "x", "function": {"name": "list_orders"}}]})
    assert json.loads(action.calls[0].arguments) == {}


def test_dict_flat_tool_call_without_function_wrapper():
    action = parse({"tool_calls": [{"id": "x", "name": "search", "arguments": {"query": "q"}}]})
    assert action.calls[0].name == "search"
    assert json.loads(action.calls[0].arguments) == {"query": "q"}


def test_dict_content_kept_beside_native_calls():
    action = parse({"content": " Let me check. ", "tool_calls": [{"id": "x", "function": {"name": "s"}}]})
    assert action.content == "Let me check."
    assert len(action.calls) == 1


@pytest.mark.parametrize("bad_id", [None, "", 17], ids=["none", "empty", "int"])
def test_missing_or_bad_id_gets_fallback(bad_id):
    raw: dict[str, Any] = {"function": {"name": "search", "arguments": "{}"}}
    if bad_id is not None:
        raw["id"] = bad_id
    action = parse({"tool_calls": [{"id": "first", "function": {"name": "a"}}, raw]})
    assert [c.id for c in action.calls] == ["first", "call_1"]


def test_duplicate_ids_made_unique():
    calls = [{"id": "dup", "function": {"name": n, "arguments": "{}"}} for n in ("a", "b", "c")]
    action = parse({"tool_calls": calls})
    ids = [c.id for c in action.calls]
    assert ids[0] == "dup"
    assert len(set(ids)) == 3
    assert [c.name for c in action.calls] == ["a", "b", "c"]


def test_non_dict_tool_call_entries_are_error_calls():
    action = parse({"tool_calls": ["search", 3, {"id": "ok", "function": {"name": "read"}}, None]})
    assert action.error is None
    assert [c.id for c in action.calls] == ["call_0", "call_1", "ok", "call_3"]
    assert [c.error is None for c in action.calls] == [False, False, True, False]
    assert action.calls[0].arguments == json.dumps("search")
    check_invariants(action)


@pytest.mark.parametrize(
    "raw",
    [{"id": "x"}, {"id": "x", "function": "search"}, {"id": "x", "function": {"name": 5}}, {"id": "x", "function": {}}],
    ids=["no-function", "function-str", "name-int", "no-name"],
)
def test_tool_call_without_function_name_is_error_call(raw):
    action = parse({"tool_calls": [raw]})
    assert len(action.calls) == 1
    assert action.calls[0].error is not None
    assert action.calls[0].name == ""
    assert action.calls[0].id == "x"


@pytest.mark.parametrize("role", ["user", "tool", "system", None, 3])
def test_non_assistant_role_is_action_error(role):
    action = parse({"role": role, "content": "hi"})
    assert action.error is not None
    assert "assistant" in action.error
    assert action.content is None and action.calls == []


@pytest.mark.parametrize("content", [42, ["part"], {"type": "text"}, b"bytes"])
def test_non_string_content_is_action_error(content):
    action = parse({"role": "assistant", "content": content})
    assert action.error is not None
    assert "content" in action.error
    assert action.calls == []


@pytest.mark.parametrize("tool_calls", [{"id": "x"}, "search", 5])
def test_tool_calls_not_a_list_is_action_error(tool_calls):
    action = parse({"role": "assistant", "tool_calls": tool_calls})
    assert action.error is not None
    assert "tool_calls" in action.error


def test_empty_tool_calls_list_falls_back_to_text_format():
    action = parse({"content": "Searching " + tc({"name": "search", "arguments": {}}), "tool_calls": []})
    assert action.content == "Searching"
    assert [c.name for c in action.calls] == ["search"]


def test_dict_with_hermes_calls_in_content():
    action = parse({"role": "assistant", "content": "<think>hmm</think>" + tc({"name": "read", "arguments": {}})})
    assert [c.name for c in action.calls] == ["read"]
    assert action.reasoning == "hmm"


def test_dict_reasoning_content_kept():
    action = parse({"content": "4", "reasoning_content": "2+2"})
    assert action.reasoning == "2+2"
    assert action.assistant_message().model_extra["reasoning_content"] == "2+2"


def test_dict_reasoning_content_beats_think_tags():
    action = parse({"content": "<think>tagged</think>ok", "reasoning_content": "native"})
    assert action.reasoning == "native"
    assert action.content == "ok"


def test_message_instance_accepted():
    message = Message(
        role="assistant",
        content="Looking.",
        tool_calls=[{"id": "c9", "function": {"name": "search", "arguments": '{"q": 1}'}}],
    )
    action = parse(message)
    assert action.content == "Looking."
    assert action.calls == [ParsedCall("c9", "search", '{"q": 1}')]


@pytest.mark.parametrize("junk", [None, 42, 3.5, ["hello"], (), b"<tool_call>{}</tool_call>", object()])
def test_non_text_non_dict_actions_are_errors(junk):
    action = parse(junk)
    assert action.error is not None
    assert type(junk).__name__ in action.error
    assert action.content is None and action.calls == [] and action.reasoning is None
    message = action.assistant_message()
    assert message.role == "assistant" and message.content is None and message.tool_calls is None


# --------------------------------------------------------------------------- assistant_message


def test_assistant_message_matches_calls():
    text = "Hi " + tc({"name": "search", "arguments": {"query": "a"}}) + tc("{broken")
    action = parse(text)
    message = action.assistant_message()
    assert message.role == "assistant"
    assert message.content == "Hi"
    assert [c.id for c in message.tool_calls] == ["call_0", "call_1"]
    assert [c.type for c in message.tool_calls] == ["function", "function"]
    assert message.tool_calls[0].function.name == "search"
    assert json.loads(message.tool_calls[0].function.arguments) == {"query": "a"}
    assert message.tool_calls[1].function.arguments == "{broken"
    check_invariants(action)


def test_assistant_message_without_calls_has_no_tool_calls():
    message = parse("final").assistant_message()
    assert message.tool_calls is None
    assert message.to_openai() == {"role": "assistant", "content": "final"}


def test_assistant_message_reparses_to_same_calls():
    action = parse("<think>r</think>x " + tc({"name": "a", "arguments": {"k": [1, 2]}}) + tc({"name": "b"}))
    again = parse(action.assistant_message().to_openai())
    assert again.content == action.content
    assert again.reasoning == action.reasoning
    assert [(c.id, c.name, c.arguments) for c in again.calls] == [(c.id, c.name, c.arguments) for c in action.calls]


# --------------------------------------------------------------------------- properties

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=15,
)

call_objects = st.fixed_dictionaries(
    {"name": st.text(max_size=8) | json_values},
    optional={"arguments": json_values, "parameters": json_values},
).map(json.dumps)

fragments = st.one_of(
    st.sampled_from(
        [
            "<tool_call>",
            "</tool_call>",
            "<think>",
            "</think>",
            "{",
            "}",
            '"name"',
            ":",
            '"arguments"',
            '"parameters"',
            ",",
            '"search"',
            "\n",
            " ",
            "<tool_call",
            "tool_call>",
        ]
    ),
    st.text(max_size=6),
    json_values.map(json.dumps),
    call_objects,
)
fragment_text = st.lists(fragments, max_size=20).map("".join)


@settings(max_examples=examples(300), deadline=None)
@given(text=st.text())
def test_property_arbitrary_text_never_raises(text):
    action = parse(text)
    assert action.error is None  # text is never junk
    check_invariants(action)


@settings(max_examples=examples(300), deadline=None)
@given(text=fragment_text)
def test_property_fragment_text_never_raises(text):
    action = parse(text)
    assert action.error is None
    check_invariants(action)
    # Calls only come from <tool_call> openings; without <think> spans hiding some, at least one
    # opening means at least one call (a nested opening belongs to the enclosing unclosed block).
    openings = text.count("<tool_call>")
    assert len(action.calls) <= openings
    if "<think>" not in text and "</think>" not in text:  # text before a lone </think> is reasoning
        assert (len(action.calls) > 0) == (openings > 0)


call_ids = st.sampled_from(["a", "b", "x-1", "", "call", "call_x"]) | st.integers() | st.none()
raw_tool_calls = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "id": call_ids,
            "type": st.just("function"),
            "function": st.fixed_dictionaries(
                {},
                optional={"name": st.text(max_size=5) | json_values, "arguments": st.text(max_size=10) | json_values},
            )
            | json_values,
        },
    ),
    json_values,
)
message_dicts = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from(["assistant", "user", "tool", "system"]) | json_values,
        "content": st.none() | fragment_text | json_values,
        "tool_calls": st.lists(raw_tool_calls, max_size=5) | json_values,
        "reasoning_content": st.text(max_size=10) | json_values,
        "name": json_values,
    },
)


@settings(max_examples=examples(300), deadline=None)
@given(action=message_dicts)
def test_property_message_dicts_never_raise(action):
    check_invariants(parse(action))


@settings(max_examples=examples(300), deadline=None)
@given(action=json_values | st.dictionaries(st.text(max_size=8) | st.integers(), json_values, max_size=5))
def test_property_arbitrary_values_never_raise(action):
    result = parse(action)
    check_invariants(result)
    if not isinstance(action, (str, dict)):
        assert result.error is not None


# --------------------------------------------------------------------------- bugs


@pytest.mark.parametrize(
    "tool_calls",
    [
        [{"id": "call_1", "function": {"name": "a"}}, {"id": "call_1", "function": {"name": "b"}}],
        [{"id": "call_1", "function": {"name": "a"}}, {"function": {"name": "b"}}],
        [
            {"id": "x", "function": {"name": "a"}},
            {"id": "call_2", "function": {"name": "b"}},
            {"id": "x", "function": {"name": "c"}},
        ],
    ],
    ids=["dup-explicit", "explicit-vs-fallback", "renamed-into-existing"],
)
def test_duplicate_id_rename_never_collides(tool_calls):
    ids = [c.id for c in parse({"tool_calls": tool_calls}).calls]
    assert len(ids) == len(set(ids)), ids


def test_huge_integer_literal_in_tool_call_does_not_raise():
    action = parse('<tool_call>{"name": "search", "arguments": {"k": ' + "9" * 5000 + "}}</tool_call>")
    check_invariants(action)
    assert len(action.calls) == 1


def test_lone_surrogate_escape_gives_serialisable_message():
    text = '<tool_call>{"name": "search", "arguments": {"query": "smile \\ud83d"}}</tool_call>'
    assert text.isascii()
    message = parse(text).assistant_message()
    trajectory = Trajectory(scenario_id="s", messages=[message])
    assert Trajectory.from_json(trajectory.to_json()) == trajectory
