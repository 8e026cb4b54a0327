"""Tests for judgegym.integrations.export: the Dataset round trip (property-based, Parquet
included), re-judging exported RagSupport episodes, rejection sampling and the SFT JSONL."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import runpy
import sys
from pathlib import Path

import datasets
import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import examples

from judgegym import Group, Message, TerminationReason, Trajectory
from judgegym.agents import make_agent
from judgegym.envs.rag import RagVerifier
from judgegym.evaluation import play_episode
from judgegym.integrations.export import (
    COLUMNS,
    groups_from_dataset,
    select_trajectories,
    to_dataset,
    trajectories_from_dataset,
    write_chat_jsonl,
)

ROOT = Path(__file__).resolve().parents[1]
NASTY = 'Grüße 🌍 — 日本語 \u2028\u2029 tab\t nul\x00 "quote" back\\slash \r\n {"json": [1]} 𝔘𝔫𝔦'

# -- strategies ------------------------------------------------------------------------------

text = st.text(max_size=30) | st.just(NASTY)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=10,
)
tool_calls = st.lists(
    st.fixed_dictionaries(
        {
            "id": text,
            "type": st.just("function"),
            "function": st.fixed_dictionaries({"name": text, "arguments": text | json_values.map(json.dumps)}),
        },
        optional={"index": st.integers(0, 5)},
    ),
    max_size=3,
)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
    fields = {"role": role, "content": draw(st.none() | text)}
    for key, strategy in (("tool_calls", tool_calls), ("tool_call_id", text), ("name", text)):
        if draw(st.booleans()):
            fields[key] = draw(strategy)
    fields.update(draw(st.dictionaries(st.sampled_from(["reasoning_content", "provider_meta", "trainable"]), json_values, max_size=2)))
    return Message.model_validate(fields)


finite = st.floats(allow_nan=False, allow_infinity=False)
trajectories = st.builds(
    Trajectory,
    scenario_id=text,
    env_id=st.none() | text,
    split=st.none() | text,
    seed=st.none() | st.integers(-(2**63), 2**63 - 1),
    messages=st.lists(messages(), max_size=4),
    tools=st.lists(st.dictionaries(text, json_values, max_size=3), max_size=2),
    termination=st.none() | st.sampled_from(list(TerminationReason)),
    reward=st.none() | finite,
    metrics=st.dictionaries(text, finite, max_size=3),
    info=st.dictionaries(text, json_values, max_size=3),
)
groups = st.builds(
    lambda members, failed, error: Group(scenario_id=members[0].scenario_id, trajectories=members, failed=failed, error=error),
    st.lists(trajectories, min_size=1, max_size=3),
    st.booleans(),
    st.none() | text,
)


# -- the Dataset round trip --------------------------------------------------------------------


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(trajectories, max_size=4))
def test_trajectories_round_trip_through_a_dataset(records):
    dataset = to_dataset(records)
    assert dataset.column_names == list(COLUMNS)
    assert trajectories_from_dataset(dataset) == records


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(groups, max_size=3))
def test_groups_round_trip_through_a_dataset(records):
    dataset = to_dataset(records)
    assert dataset["group_id"] == [i for i, g in enumerate(records) for _ in g.trajectories]
    assert groups_from_dataset(dataset) == records
    assert trajectories_from_dataset(dataset) == [t for g in records for t in g.trajectories]


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(trajectories, min_size=1, max_size=3))
def test_dataset_messages_are_openai_chat_format(records):
    dataset = to_dataset(records)
    for row, trajectory in zip(dataset, records, strict=True):
        assert [{k: v for k, v in m.items() if v is not None} for m in row["messages"]] == [openai_core(m) for m in trajectory.messages]
        assert json.loads(row["tools"]) == trajectory.tools
        assert json.loads(row["metrics"]) == trajectory.metrics


def openai_core(message: Message) -> dict:
    """The standard OpenAI fields of a message (what the ``messages`` column holds)."""
    data = {k: v for k, v in message.to_openai().items() if k in ("role", "content", "tool_calls", "tool_call_id", "name")}
    if message.tool_calls is not None:
        data["tool_calls"] = [
            {"id": c.id, "type": c.type, "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in message.tool_calls
        ]
    return data


def test_every_export_has_the_same_schema_so_exports_concatenate():
    plain = Trajectory(scenario_id="a", messages=[Message(role="user", content="hi")])
    rich = Trajectory(
        scenario_id="b",
        seed=3,
        reward=0.5,
        messages=[Message(role="assistant", tool_calls=[{"id": "c", "function": {"name": "f", "arguments": '{"x": [1]}'}}])],
        tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        metrics={"recall": 1.0},
    )
    empty, a, b, group = to_dataset([]), to_dataset([plain]), to_dataset([rich]), to_dataset([Group(scenario_id="b", trajectories=[rich])])
    assert len(empty) == 0
    assert empty.features == a.features == b.features == group.features
    both = datasets.concatenate_datasets([a, b, group])
    assert trajectories_from_dataset(both) == [plain, rich, rich]


def test_empty_and_missing_lists_and_strings_stay_distinct():
    trajectory = Trajectory(
        scenario_id="",
        messages=[
            Message(role="assistant", content="", tool_calls=[]),
            Message(role="assistant", content=None),
            Message(role="tool", content="", tool_call_id="", name=""),
        ],
    )
    [row] = to_dataset([trajectory])
    assert row["messages"][0]["tool_calls"] == [] and row["messages"][1]["tool_calls"] is None
    assert row["messages"][0]["content"] == "" and row["messages"][1]["content"] is None
    assert trajectories_from_dataset([row]) == [trajectory]


def test_non_finite_rewards_and_metrics_and_big_numbers_survive_parquet(tmp_path):
    trajectory = Trajectory(
        scenario_id=NASTY,
        seed=-(2**63),
        reward=float("nan"),
        metrics={"a": float("inf"), "b": float("-inf"), "c": float("nan")},
        info={"task": {"n": 10**40, "f": 1e300, "x": float("-inf")}},
        messages=[Message(role="assistant", content=NASTY, reasoning_content=NASTY)],
    )
    to_dataset([trajectory]).to_parquet(tmp_path / "t.parquet")
    [loaded] = trajectories_from_dataset(datasets.Dataset.from_parquet(str(tmp_path / "t.parquet")))
    assert math.isnan(loaded.reward) and math.isnan(loaded.metrics["c"])
    assert loaded.metrics["a"] == float("inf") and loaded.metrics["b"] == float("-inf")
    assert loaded.info == trajectory.info and loaded.seed == -(2**63)
    assert loaded.messages == trajectory.messages


def test_seed_outside_int64_is_refused_with_the_scenario_named():
    with pytest.raises(ValueError, match=r"'big'.*seed 9223372036854775808.*int64"):
        to_dataset([Trajectory(scenario_id="big", seed=2**63)])


def test_a_bad_row_is_named():
    good = to_dataset([Trajectory(scenario_id="a")])[0]
    with pytest.raises(ValueError, match=r"(?s)row 1: not a valid Trajectory.*termination"):
        trajectories_from_dataset([good, {**good, "termination": "bored"}])
    with pytest.raises(ValueError, match=r"row 0: not a valid Trajectory"):
        trajectories_from_dataset([{**good, "metrics": "{not json"}])


def test_non_records_are_refused():
    with pytest.raises(TypeError, match="expected Trajectory or Group records, got dict"):
        to_dataset([{"scenario_id": "a"}])


def test_rows_without_group_id_are_grouped_by_env_and_scenario():
    loose = [
        Trajectory(scenario_id=s, env_id=e, reward=r) for s, e, r in [("a", "X", 0.1), ("b", "X", 0.2), ("a", "X", 0.3), ("a", "Y", 0.4)]
    ]
    grouped = groups_from_dataset(to_dataset(loose))
    assert [(g.scenario_id, [t.reward for t in g]) for g in grouped] == [("a", [0.1, 0.3]), ("b", [0.2]), ("a", [0.4])]
    assert not any(g.failed for g in grouped)


def test_shuffled_rows_come_back_in_group_order():
    group = Group(scenario_id="s", trajectories=[Trajectory(scenario_id="s", reward=i / 4) for i in range(4)])
    shuffled = to_dataset([group]).select([2, 0, 3, 1])
    assert [t.reward for t in trajectories_from_dataset(shuffled)] == [0.5, 0.0, 0.75, 0.25]
    assert groups_from_dataset(shuffled) == [group]


def test_missing_datasets_package_gives_an_actionable_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ImportError, match=r"`datasets` package: pip install datasets"):
        to_dataset([Trajectory(scenario_id="a")])


# -- re-judging exported RagSupport episodes -----------------------------------------------------


@pytest.fixture(scope="module")
def rag_groups() -> list[Group]:
    """Three scripted agents on six test scenarios, judged by the env's verifier."""
    env = gym.make("RagSupport-v0", split="test", n_products=20, n_worlds=2)

    async def play() -> list[Group]:
        result = []
        for seed in range(6):
            members = [await play_episode(env, make_agent(name), seed) for name in ("oracle", "search-quote", "unhelpful")]
            result.append(Group(scenario_id=members[0].scenario_id, trajectories=members))
        return result

    try:
        return asyncio.run(play())
    finally:
        env.close()


def test_rejudging_an_exported_and_reimported_episode_gives_the_same_score(rag_groups, tmp_path):
    rewards = [t.reward for g in rag_groups for t in g]
    assert len(set(rewards)) >= 2, "the episodes should not all score alike"
    assert any(m.tool_calls for g in rag_groups for t in g for m in t.messages)
    to_dataset(rag_groups).to_parquet(tmp_path / "rag.parquet")
    reloaded = groups_from_dataset(datasets.Dataset.from_parquet(str(tmp_path / "rag.parquet")))
    assert reloaded == rag_groups
    verifier = RagVerifier()
    for group in reloaded:
        for trajectory in group:
            score = verifier.verify(trajectory)
            assert score.score == trajectory.reward
            assert {k: trajectory.metrics[k] for k in score.components} == score.components
            assert score.explanation == trajectory.info["explanation"]


def test_sft_file_from_rag_episodes_keeps_the_best_of_each_group(rag_groups, tmp_path):
    path = tmp_path / "sft.jsonl"
    kept = write_chat_jsonl(path, rag_groups, best_of_group=True, min_reward=0.8)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    best = [max(g.trajectories, key=lambda t: t.reward) for g in rag_groups]
    assert kept == len(lines) == sum(t.reward >= 0.8 for t in best)
    for line in lines:
        assert line["reward"] >= 0.8 and line["messages"][-1]["role"] == "assistant"
        assert {t["function"]["name"] for t in line["tools"]} == {"search", "read"}
    assert any("tool_calls" in m for line in lines for m in line["messages"])
    loaded = datasets.load_dataset("json", data_files=str(path), split="train")
    assert len(loaded) == kept and loaded[0]["messages"][0]["role"] == "system"


def test_export_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["export_dataset.py", str(tmp_path)])
    runpy.run_path(str(ROOT / "examples" / "export_dataset.py"), run_name="__main__")
    assert "every reward matches" in capsys.readouterr().out
    assert (tmp_path / "episodes.parquet").exists() and (tmp_path / "sft.jsonl").read_text(encoding="utf-8").count("\n") >= 1


# -- rejection sampling and the SFT JSONL ------------------------------------------------------------


def scored(scenario_id: str, *rewards: float | None, env_id: str = "E") -> list[Trajectory]:
    return [
        Trajectory(scenario_id=scenario_id, env_id=env_id, reward=r, info={"n": i}, messages=[Message(role="assistant", content=f"{i}")])
        for i, r in enumerate(rewards)
    ]


def picked(trajectories: list[Trajectory]) -> list[tuple[str, int]]:
    return [(t.scenario_id, t.info["n"]) for t in trajectories]


def test_select_without_options_keeps_everything_even_failed_groups():
    records = [Group(scenario_id="g", trajectories=scored("g", 0.1, None), failed=True), *scored("a", None)]
    assert picked(select_trajectories(records)) == [("g", 0), ("g", 1), ("a", 0)]


def test_min_reward_keeps_scored_trajectories_at_or_above_it():
    records = [Group(scenario_id="g", trajectories=scored("g", 0.5, 0.8, None, float("nan"), 0.9))]
    assert picked(select_trajectories(records, min_reward=0.8)) == [("g", 1), ("g", 4)]


def test_best_of_group_takes_the_first_maximum_and_never_an_unscored_one():
    records = [
        Group(scenario_id="g", trajectories=scored("g", None, 0.4, 0.7, 0.7)),
        Group(scenario_id="h", trajectories=scored("h", None, float("nan"))),
    ]
    assert picked(select_trajectories(records, best_of_group=True)) == [("g", 2)]
    assert picked(select_trajectories(records, best_of_group=True, min_reward=0.8)) == []


def test_lone_trajectories_compete_by_env_and_scenario():
    records = [*scored("a", 0.2, 0.6), *scored("b", 0.3), *scored("a", 0.9, env_id="F"), *scored("a", 0.1)]
    assert picked(select_trajectories(records, best_of_group=True)) == [("a", 1), ("b", 0), ("a", 0)]
    assert [t.env_id for t in select_trajectories(records, best_of_group=True)] == ["E", "E", "F"]


def test_failed_groups_are_left_out_and_counted_when_filtering(caplog):
    records = [
        Group(scenario_id="f", trajectories=scored("f", 1.0), failed=True, error="timeout"),
        Group(scenario_id="g", trajectories=scored("g", 0.9)),
    ]
    with caplog.at_level(logging.WARNING, logger="judgegym.integrations"):
        assert picked(select_trajectories(records, min_reward=0.5)) == [("g", 0)]
    assert "left out 1 failed group" in caplog.text


def test_chat_jsonl_lines_are_openai_messages_with_optional_metadata(tmp_path):
    trajectory = Trajectory(
        scenario_id="s",
        env_id="RagSupport-v0",
        seed=4,
        reward=1.0,
        termination=TerminationReason.FINAL_ANSWER,
        metrics={"recall": 1.0},
        info={"task": {"gold_facts": ["secret"]}},
        messages=[
            Message(role="user", content=NASTY),
            Message(role="assistant", tool_calls=[{"id": "c", "function": {"name": "read", "arguments": '{"doc_id": "d"}'}}]),
            Message(role="tool", tool_call_id="c", name="read", content="[d] text"),
            Message(role="assistant", content=f"answer {NASTY}"),
        ],
    )
    no_tools = Trajectory(scenario_id="t", messages=[Message(role="user", content="q"), Message(role="assistant", content="a")])
    path = tmp_path / "out" / "chat.jsonl"
    assert write_chat_jsonl(path, [trajectory, no_tools]) == 2
    first, second = (json.loads(line) for line in path.read_text(encoding="utf-8").split("\n")[:2])
    assert first["messages"] == [m.to_openai() for m in trajectory.messages]
    assert first["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"doc_id": "d"}'
    assert "tools" not in first and "tools" not in second
    assert {k: first[k] for k in ("scenario_id", "env_id", "seed", "termination", "reward", "metrics")} == {
        "scenario_id": "s",
        "env_id": "RagSupport-v0",
        "seed": 4,
        "termination": "final_answer",
        "reward": 1.0,
        "metrics": {"recall": 1.0},
    }
    assert "info" not in first and "secret" not in path.read_text(encoding="utf-8")
    assert write_chat_jsonl(path, [no_tools], metadata=False) == 1
    assert json.loads(path.read_text(encoding="utf-8")) == {"messages": [m.to_openai() for m in no_tools.messages]}
