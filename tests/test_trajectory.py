"""Tests for judgegym.trajectory: the shared data model and its lossless JSONL round trip."""

from __future__ import annotations

import json
import math
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from strategies import examples

from judgegym.trajectory import (
    FunctionCall,
    Group,
    Message,
    TerminationReason,
    ToolCall,
    Trajectory,
    read_jsonl,
    write_jsonl,
)

UNICODE = 'Grüße 🌍 — 日本語, \u2028line\u2029sep, tab\t, nul\x00, quote" back\\slash\nnewline\r'


def make_trajectory(scenario_id: str = "rag-test-0001", **overrides) -> Trajectory:
    messages = [
        Message(role="system", content="You are a support agent."),
        Message(role="user", content=f"Where is my order? {UNICODE}"),
        Message(
            role="assistant",
            content=None,
            tool_calls=[
                ToolCall(id="call_0", function=FunctionCall(name="search", arguments='{"query": "order status"}')),
                ToolCall(id="call_1", function=FunctionCall(name="read", arguments='{"doc_id": "doc-12"}')),
            ],
            reasoning_content="I should search first.",
        ),
        Message(role="tool", content="[doc-12] Orders ship in 2 days.", tool_call_id="call_0", name="search"),
        Message(role="tool", content="Error: unknown document", tool_call_id="call_1", name="read"),
        Message(role="assistant", content=f"It ships in 2 days [doc-12]. {UNICODE}", provider_meta={"latency_ms": 12.5}),
    ]
    fields = dict(
        scenario_id=scenario_id,
        env_id="RagSupport-v0",
        split="test",
        seed=7,
        messages=messages,
        tools=[{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}],
        termination=TerminationReason.FINAL_ANSWER,
        reward=0.75,
        metrics={"facts": 1.0, "citations": 0.5, "tool_calls": 2.0},
        info={"task": {"facts": ["2 days"], "nested": [1, 2.5, None, True, "ü"]}},
    )
    fields.update(overrides)
    return Trajectory(**fields)


# --------------------------------------------------------------------------- Message


def test_message_to_openai_drops_unset_fields():
    assert Message(role="user", content="hi").to_openai() == {"role": "user", "content": "hi"}


def test_message_from_openai_dict_keeps_unknown_fields():
    raw = {
        "role": "assistant",
        "content": None,
        "reasoning_content": "thinking...",
        "tool_calls": [{"id": "c1", "type": "function", "index": 0, "function": {"name": "search", "arguments": "{}", "extra": 1}}],
    }
    message = Message.model_validate(raw)
    assert message.model_extra == {"reasoning_content": "thinking..."}
    assert message.tool_calls[0].model_extra == {"index": 0}
    assert message.to_openai() == {k: v for k, v in raw.items() if v is not None}


def test_function_call_arguments_default():
    assert ToolCall(id="x", function={"name": "f"}).function.arguments == "{}"
    assert ToolCall(id="x", function={"name": "f"}).type == "function"


@pytest.mark.parametrize(
    "raw",
    [
        {"role": "robot"},
        {"content": "no role"},
        {"role": "assistant", "tool_calls": [{"id": "x", "type": "other", "function": {"name": "f"}}]},
    ],
)
def test_message_validation_rejects_bad_input(raw):
    with pytest.raises(ValidationError):
        Message.model_validate(raw)


# --------------------------------------------------------------------------- to_json / from_json


def test_trajectory_round_trip():
    trajectory = make_trajectory()
    line = trajectory.to_json()
    assert "\n" not in line  # one JSONL line
    loaded = Trajectory.from_json(line)
    assert loaded == trajectory
    assert loaded.to_json() == line


def test_round_trip_preserves_extra_message_fields():
    loaded = Trajectory.from_json(make_trajectory().to_json())
    assert loaded.messages[2].model_extra["reasoning_content"] == "I should search first."
    assert loaded.messages[5].model_extra["provider_meta"] == {"latency_ms": 12.5}
    assert loaded.messages[2].to_openai()["reasoning_content"] == "I should search first."


def test_round_trip_preserves_tool_calls_and_tool_messages():
    loaded = Trajectory.from_json(make_trajectory().to_json())
    calls = loaded.messages[2].tool_calls
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("call_0", "search", '{"query": "order status"}'),
        ("call_1", "read", '{"doc_id": "doc-12"}'),
    ]
    assert loaded.messages[3].tool_call_id == "call_0"
    assert loaded.messages[3].name == "search"


def test_round_trip_preserves_unicode_exactly():
    loaded = Trajectory.from_json(make_trajectory().to_json())
    assert loaded.messages[1].content == f"Where is my order? {UNICODE}"


def test_round_trip_termination_is_enum():
    for reason in TerminationReason:
        loaded = Trajectory.from_json(make_trajectory(termination=reason).to_json())
        assert loaded.termination is reason
        assert json.loads(make_trajectory(termination=reason).to_json())["termination"] == reason.value


def test_round_trip_minimal_trajectory():
    trajectory = Trajectory(scenario_id="s")
    assert Trajectory.from_json(trajectory.to_json()) == trajectory


def test_round_trip_empty_vs_missing_tool_calls():
    trajectory = Trajectory(
        scenario_id="s",
        messages=[Message(role="assistant", content="a", tool_calls=[]), Message(role="assistant", content="b")],
    )
    loaded = Trajectory.from_json(trajectory.to_json())
    assert loaded.messages[0].tool_calls == []
    assert loaded.messages[1].tool_calls is None


def test_round_trip_non_finite_metrics():
    trajectory = Trajectory(scenario_id="s", reward=float("-inf"), metrics={"a": float("inf"), "b": float("nan")})
    loaded = Trajectory.from_json(trajectory.to_json())
    assert loaded.reward == float("-inf")
    assert loaded.metrics["a"] == float("inf")
    assert math.isnan(loaded.metrics["b"])


def test_round_trip_big_integers_in_seed_and_info():
    trajectory = Trajectory(scenario_id="s", seed=2**70, info={"n": -(10**40), "f": 1e300})
    assert Trajectory.from_json(trajectory.to_json()) == trajectory


def test_to_json_is_plain_json():
    data = json.loads(make_trajectory().to_json())
    assert data["scenario_id"] == "rag-test-0001"
    assert data["messages"][2]["tool_calls"][0]["function"]["name"] == "search"
    assert data["messages"][2]["reasoning_content"] == "I should search first."


def test_group_round_trip():
    group = Group(
        scenario_id="rag-test-0001",
        trajectories=[make_trajectory(), make_trajectory(reward=0.0, termination=TerminationReason.MAX_TURNS)],
    )
    line = group.to_json()
    assert "\n" not in line
    loaded = Group.from_json(line)
    assert loaded == group
    assert len(loaded) == 2
    assert list(loaded) == group.trajectories
    assert loaded.trajectories[1].termination is TerminationReason.MAX_TURNS


def test_failed_group_round_trip():
    group = Group(scenario_id="s", failed=True, error="judge timed out: ⏱")
    loaded = Group.from_json(group.to_json())
    assert loaded == group
    assert loaded.failed is True and loaded.error == "judge timed out: ⏱"
    assert len(loaded) == 0


# --------------------------------------------------------------------------- JSONL files


def test_write_and_read_jsonl(tmp_path):
    records = [make_trajectory(f"s{i}", reward=i / 4) for i in range(4)]
    path = tmp_path / "nested" / "dir" / "trajectories.jsonl"
    assert write_jsonl(path, records) == 4
    assert path.read_bytes().count(b"\n") == 4
    assert read_jsonl(path) == records


def test_write_jsonl_accepts_str_path_and_generator(tmp_path):
    path = str(tmp_path / "t.jsonl")
    assert write_jsonl(path, (make_trajectory(f"g{i}") for i in range(3))) == 3
    assert [t.scenario_id for t in read_jsonl(path)] == ["g0", "g1", "g2"]


def test_write_jsonl_overwrites_or_appends(tmp_path):
    path = tmp_path / "t.jsonl"
    write_jsonl(path, [make_trajectory("a")])
    write_jsonl(path, [make_trajectory("b")])
    assert [t.scenario_id for t in read_jsonl(path)] == ["b"]
    assert write_jsonl(path, [make_trajectory("c"), make_trajectory("d")], append=True) == 2
    assert [t.scenario_id for t in read_jsonl(path)] == ["b", "c", "d"]


def test_write_jsonl_empty(tmp_path):
    path = tmp_path / "empty.jsonl"
    assert write_jsonl(path, []) == 0
    assert read_jsonl(path) == []


def test_groups_jsonl(tmp_path):
    groups = [
        Group(scenario_id="a", trajectories=[make_trajectory("a"), make_trajectory("a", reward=0.1)]),
        Group(scenario_id="b", failed=True, error="boom"),
    ]
    path = tmp_path / "groups.jsonl"
    assert write_jsonl(path, groups) == 2
    assert read_jsonl(path, Group) == groups


def test_read_jsonl_skips_blank_lines(tmp_path):
    path = tmp_path / "t.jsonl"
    lines = [make_trajectory("a").to_json(), "", "   ", make_trajectory("b").to_json(), ""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert [t.scenario_id for t in read_jsonl(path)] == ["a", "b"]


def _names_line(message: str, lineno: int) -> bool:
    """Whether an error message points at line `lineno` ("file:3:" or "file, line 3")."""
    return re.search(rf"(?::|\bline\s*){lineno}\b", message) is not None


@pytest.mark.parametrize("bad", ["not json at all", '{"messages": []}', '{"scenario_id": "x", "termination": "bored"}', "[1, 2]"])
def test_read_jsonl_names_bad_line_number(tmp_path, bad):
    path = tmp_path / "bad.jsonl"
    good = make_trajectory().to_json()
    path.write_text(f"{good}\n\n{bad}\n{good}\n", encoding="utf-8")
    with pytest.raises(ValueError) as info:
        read_jsonl(path)
    message = str(info.value)
    assert str(path) in message
    # The location comes before pydantic's own detail (which may mention "line 1 column 1").
    location = message.split("not a valid")[0] if "not a valid" in message else message[: len(str(path)) + 12]
    assert _names_line(location, 3)
    assert not _names_line(location, 1) and not _names_line(location, 4)
    assert "Trajectory" in message


def test_read_jsonl_bad_group_line_names_group(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text('{"scenario_id": "a", "trajectories": 5}\n', encoding="utf-8")
    with pytest.raises(ValueError) as info:
        read_jsonl(path, Group)
    assert _names_line(str(info.value), 1)
    assert "Group" in str(info.value)


# --------------------------------------------------------------------------- final_answer / termination


def test_final_answer_is_last_assistant_message_without_tool_calls():
    assert make_trajectory().final_answer.startswith("It ships in 2 days [doc-12].")


def test_final_answer_skips_trailing_tool_call_message():
    trajectory = Trajectory(
        scenario_id="s",
        messages=[
            Message(role="assistant", content="first answer"),
            Message(role="user", content="more?"),
            Message(role="assistant", content="second answer"),
            Message(role="assistant", content="calling", tool_calls=[ToolCall(id="c", function=FunctionCall(name="f"))]),
            Message(role="tool", content="result", tool_call_id="c"),
        ],
    )
    assert trajectory.final_answer == "second answer"


def test_final_answer_ignores_other_roles():
    trajectory = Trajectory(
        scenario_id="s",
        messages=[
            Message(role="assistant", content="answer"),
            Message(role="user", content="thanks"),
            Message(role="tool", content="x"),
        ],
    )
    assert trajectory.final_answer == "answer"


def test_final_answer_empty_cases():
    assert Trajectory(scenario_id="s").final_answer == ""
    assert Trajectory(scenario_id="s", messages=[Message(role="user", content="q")]).final_answer == ""
    only_calls = Message(role="assistant", content="x", tool_calls=[ToolCall(id="c", function=FunctionCall(name="f"))])
    assert Trajectory(scenario_id="s", messages=[only_calls]).final_answer == ""
    assert Trajectory(scenario_id="s", messages=[Message(role="assistant", content=None)]).final_answer == ""


def test_final_answer_treats_empty_tool_call_list_as_no_calls():
    trajectory = Trajectory(scenario_id="s", messages=[Message(role="assistant", content="done", tool_calls=[])])
    assert trajectory.final_answer == "done"


@pytest.mark.parametrize(
    ("reason", "truncated"),
    [
        (TerminationReason.FINAL_ANSWER, False),
        (TerminationReason.USER_STOP, False),
        (TerminationReason.MAX_TURNS, True),
        (TerminationReason.MAX_TOOL_CALLS, True),
        (TerminationReason.ERROR, False),
    ],
)
def test_termination_truncated(reason, truncated):
    assert reason.truncated is truncated


def test_termination_reasons_cover_every_member():
    assert {r for r in TerminationReason if r.truncated} == {
        TerminationReason.MAX_TURNS,
        TerminationReason.MAX_TOOL_CALLS,
    }
    assert TerminationReason("max_turns") is TerminationReason.MAX_TURNS


# --------------------------------------------------------------------------- properties

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
finite = st.floats(allow_nan=False, allow_infinity=False)

tool_calls = st.lists(
    st.builds(
        ToolCall,
        id=st.text(max_size=8),
        function=st.builds(FunctionCall, name=st.text(max_size=8), arguments=st.text(max_size=20)),
    ),
    max_size=3,
)


@st.composite
def messages(draw):
    fields = {
        "role": draw(st.sampled_from(["system", "user", "assistant", "tool"])),
        "content": draw(st.none() | st.text(max_size=40)),
        "tool_calls": draw(st.none() | tool_calls),
        "tool_call_id": draw(st.none() | st.text(max_size=8)),
        "name": draw(st.none() | st.text(max_size=8)),
    }
    extras = draw(st.dictionaries(st.sampled_from(["reasoning_content", "refusal", "audio", "provider_meta"]), json_values, max_size=2))
    return Message(**fields, **extras)


trajectories = st.builds(
    Trajectory,
    scenario_id=st.text(max_size=12),
    env_id=st.none() | st.text(max_size=12),
    split=st.none() | st.sampled_from(["train", "test"]),
    seed=st.none() | st.integers(),
    messages=st.lists(messages(), max_size=5),
    tools=st.lists(st.dictionaries(st.text(max_size=6), json_values, max_size=3), max_size=2),
    termination=st.none() | st.sampled_from(list(TerminationReason)),
    reward=st.none() | finite,
    metrics=st.dictionaries(st.text(max_size=8), finite, max_size=4),
    info=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
)
groups = st.builds(
    Group,
    scenario_id=st.text(max_size=12),
    trajectories=st.lists(trajectories, max_size=3),
    failed=st.booleans(),
    error=st.none() | st.text(max_size=20),
)


@settings(max_examples=examples(150), deadline=None)
@given(trajectory=trajectories)
def test_property_trajectory_json_round_trip(trajectory):
    line = trajectory.to_json()
    assert "\n" not in line
    assert Trajectory.from_json(line) == trajectory


@settings(max_examples=examples(50), deadline=None)
@given(group=groups)
def test_property_group_json_round_trip(group):
    assert Group.from_json(group.to_json()) == group


@settings(max_examples=examples(60), deadline=None)
@given(records=st.lists(trajectories, max_size=3))
def test_property_trajectory_jsonl_file_round_trip(records):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.jsonl"
        assert write_jsonl(path, records) == len(records)
        assert read_jsonl(path) == records


@settings(max_examples=examples(25), deadline=None)
@given(records=st.lists(groups, max_size=2))
def test_property_group_jsonl_file_round_trip(records):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "g.jsonl"
        write_jsonl(path, records)
        assert read_jsonl(path, Group) == records
