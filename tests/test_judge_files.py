"""Judging your own trajectories: `Trajectory.from_messages`, the JSONL reader, `judge_inputs`
and the `judgegym judge` command."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import examples
from typer.testing import CliRunner

import judgegym  # noqa: F401
from judgegym.cli import app
from judgegym.judges.base import BatchJudge, Judge, JudgeScore
from judgegym.judges.files import BATCH, judge_inputs, read_trajectory_file
from judgegym.trajectory import Group, TerminationReason, Trajectory

runner = CliRunner()

SEARCH_CALL = {
    "role": "assistant",
    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"query": "hours"}'}}],
}
CONVERSATION = [
    {"role": "system", "content": "Answer from the knowledge base."},
    {"role": "user", "content": "When does the observatory open on Sundays?"},
    SEARCH_CALL,
    {"role": "tool", "tool_call_id": "c1", "name": "search", "content": "[obs-hours] Sunday: 14:00-22:00."},
    {"role": "assistant", "content": "On Sundays it opens at 14:00 [obs-hours]."},
]


class LengthJudge(BatchJudge):
    """Scores by answer length; remembers the batch sizes it was called with; fails on a poison word."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def score_many(self, trajectories: Sequence[Trajectory]) -> list[JudgeScore]:
        self.batches.append(len(trajectories))
        if any("POISON" in t.final_answer for t in trajectories):
            raise RuntimeError("cannot score POISON")
        return [JudgeScore(score=min(1.0, len(t.final_answer) / 100), explanation="length") for t in trajectories]


class RankJudge(Judge):
    """A relative judge: ranks each group by answer length and records the groups it saw."""

    relative = True

    def __init__(self) -> None:
        self.groups: list[list[str]] = []

    async def score_group(self, group: Group) -> list[JudgeScore]:
        self.groups.append([t.final_answer for t in group.trajectories])
        order = sorted(range(len(group)), key=lambda i: len(group.trajectories[i].final_answer))
        return [JudgeScore(score=(order.index(i) + 1) / len(group)) for i in range(len(group))]


def write_lines(path: Path, lines: list[object]) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


# -- Trajectory.from_messages --------------------------------------------------------------------


def test_from_messages_builds_a_finished_trajectory_from_openai_messages():
    trajectory = Trajectory.from_messages(CONVERSATION, tools=[{"type": "function", "function": {"name": "search"}}])
    assert trajectory.final_answer == "On Sundays it opens at 14:00 [obs-hours]."
    assert trajectory.termination is TerminationReason.FINAL_ANSWER
    assert trajectory.messages[2].tool_calls[0].function.name == "search"
    assert trajectory.tools[0]["function"]["name"] == "search" and trajectory.info == {}
    unfinished = Trajectory.from_messages(CONVERSATION[:3])
    assert unfinished.termination is None and unfinished.final_answer == ""


def test_from_messages_reads_content_parts_and_the_developer_role():
    trajectory = Trajectory.from_messages(
        [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "image_url", "image_url": {"url": "x"}}]},
            {"role": "assistant", "content": "Hello."},
        ],
        task={"gold_facts": ["x"]},
    )
    assert [m.role for m in trajectory.messages] == ["system", "user", "assistant"]
    assert trajectory.messages[1].content == "Hi" and trajectory.info == {"task": {"gold_facts": ["x"]}}


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([{"role": "user", "content": "hi"}, {"role": "bot", "content": "x"}], "message 1: field 'role'"),
        (["just text"], "message 0: expected an object"),
        ([{"role": "user", "content": [{"type": "text", "text": 3}]}], "message 0: field 'content'"),
        ([{"role": "assistant", "tool_calls": [{"id": "c"}]}], "message 0: field 'tool_calls.0.function'"),
    ],
)
def test_from_messages_names_the_bad_message_and_field(messages, expected):
    with pytest.raises(ValueError, match=expected.replace(".", r"\.")):
        Trajectory.from_messages(messages)


# -- reading files -------------------------------------------------------------------------------


def test_the_reader_takes_chat_records_trajectories_groups_and_bare_message_lists(tmp_path):
    trajectory = Trajectory.from_messages(CONVERSATION, scenario_id="s-7")
    path = write_lines(
        tmp_path / "mixed.jsonl",
        [
            {"messages": CONVERSATION, "id": "a", "group": 3, "tools": [], "extra": "ignored"},
            "",
            trajectory.to_json(),
            Group(scenario_id="g", trajectories=[trajectory, trajectory]).to_json(),
            CONVERSATION,
        ],
    )
    found = read_trajectory_file(path)
    assert found.errors == []
    assert [(i.line, i.id, i.group) for i in found.inputs] == [
        (1, "a", "3"),
        (3, "line-3", "s-7"),
        (4, "line-4.0", "g"),
        (4, "line-4.1", "g"),
        (5, "line-5", None),
    ]
    assert all(i.trajectory.final_answer.startswith("On Sundays") for i in found.inputs)


def test_bad_lines_are_reported_by_number_and_field_and_the_rest_is_kept(tmp_path):
    path = write_lines(
        tmp_path / "bad.jsonl",
        [
            {"messages": CONVERSATION},
            "{not json",
            "42",
            {"messages": []},
            {"id": "no messages"},
            {"messages": [{"role": "user"}, {"role": "wizard", "content": "x"}]},
            {"scenario_id": "s", "messages": "nope"},
            {"scenario_id": "g", "trajectories": []},
            {"messages": CONVERSATION, "group": ["a list"]},
        ],
    )
    found = read_trajectory_file(path)
    assert [i.line for i in found.inputs] == [1]
    errors = {e.line: e.error for e in found.errors}
    assert "not valid JSON" in errors[2]
    assert "expected a JSON object with 'messages', got int" in errors[3]
    assert "field 'messages'" in errors[4] and "field 'messages'" in errors[5]
    assert "message 1: field 'role'" in errors[6]
    assert "field 'messages'" in errors[7]
    assert "the group is empty" in errors[8]
    assert "field 'group" in errors[9]


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.one_of(st.text(max_size=80), st.binary(max_size=40).map(lambda b: b.decode("latin-1"))), max_size=6))
def test_any_text_file_reads_without_raising(tmp_path_factory, lines):
    """Whatever the file holds, every non-blank line is either read or reported."""
    path = tmp_path_factory.mktemp("fuzz") / "any.jsonl"
    path.write_text("\n".join(line.replace("\n", " ").replace("\r", " ") for line in lines) + "\n", encoding="utf-8")
    found = read_trajectory_file(path)
    reported = {i.line for i in found.inputs} | {e.line for e in found.errors}
    content = [n for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1) if line.strip()]
    assert reported == set(content)


# -- judging -------------------------------------------------------------------------------------


def _inputs(tmp_path: Path, answers: list[str], groups: list[str | None]):
    lines = []
    for k, (answer, group) in enumerate(zip(answers, groups, strict=True)):
        record: dict[str, object] = {"messages": [*CONVERSATION[:-1], {"role": "assistant", "content": answer}], "id": f"t{k}"}
        if group is not None:
            record["group"] = group
        lines.append(record)
    return read_trajectory_file(write_lines(tmp_path / "in.jsonl", lines)).inputs


def test_a_batch_judge_scores_many_per_call_and_a_bad_trajectory_costs_only_itself(tmp_path):
    answers = [f"answer {'x' * k}" for k in range(BATCH + 10)]
    answers[5] = "POISON"
    judge = LengthJudge()
    done: list[int] = []
    judged = asyncio.run(judge_inputs(judge, _inputs(tmp_path, answers, [None] * len(answers)), on_scored=done.append))
    assert [j.id for j in judged] == [f"t{k}" for k in range(len(answers))]
    assert judge.batches[:2] == [BATCH, 10] and sum(done) == len(answers)
    assert judged[5].score is None and "cannot score POISON" in (judged[5].error or "")
    assert all(j.score is not None for k, j in enumerate(judged) if k != 5)
    assert judged[7].record()["score"] == pytest.approx(len(answers[7]) / 100)


def test_a_batch_judge_gets_each_group_whole_and_its_lines_as_attempts_at_one_scenario(tmp_path):
    groups = [None] * (BATCH - 3) + ["g"] * 5 + [None]
    inputs = _inputs(tmp_path, [f"answer {k}" for k in range(len(groups))], groups)
    judge = LengthJudge()
    asyncio.run(judge_inputs(judge, inputs))
    assert judge.batches == [BATCH - 3, 6], "the group of 5 is not split across two calls"
    assert {i.trajectory.scenario_id for i in inputs if i.group == "g"} == {"g"}
    assert inputs[0].trajectory.scenario_id == "t0"  # an ungrouped line is its own scenario


def test_a_relative_judge_ranks_each_group_together_and_ungrouped_lines_alone(tmp_path):
    judge = RankJudge()
    judged = asyncio.run(judge_inputs(judge, _inputs(tmp_path, ["a", "bbb", "cc", "dddd", "e"], ["g1", "g2", "g1", "g2", None])))
    assert sorted(map(sorted, judge.groups)) == [["a", "cc"], ["bbb", "dddd"], ["e"]]
    assert [j.score.score if j.score else None for j in judged] == [0.5, 0.5, 1.0, 1.0, 1.0]


# -- the command ---------------------------------------------------------------------------------


def test_judge_command_writes_one_line_per_input_and_reports_bad_lines(tmp_path):
    env = gym.make("RagSupport-v0", split="test")
    _, info = env.reset(seed=4)
    *_, step_info = env.step("I could not find this in the knowledge base; I can escalate to a human agent.")
    env.close()
    played: Trajectory = step_info["trajectory"]
    path = write_lines(
        tmp_path / "mine.jsonl",
        [played.to_json(), "oops", {"messages": [m.to_openai() for m in played.messages], "id": "own", "task": info["task"]}],
    )
    out = tmp_path / "scores.jsonl"
    result = runner.invoke(app, ["judge", str(path), "--judge", "verifier", "--out", str(out)])
    assert result.exit_code == 1, result.output  # a bad line: the others are still scored and written
    assert "line 2: not valid JSON" in result.output and "2 trajectories scored" in result.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3]
    assert records[0]["score"] == pytest.approx(played.reward) and records[2]["score"] == pytest.approx(played.reward)
    assert records[1]["error"].startswith("not valid JSON") and records[2]["id"] == "own"


def test_judge_command_refuses_what_it_cannot_do(tmp_path):
    missing = runner.invoke(app, ["judge", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    path = write_lines(tmp_path / "chat.jsonl", [{"messages": CONVERSATION}])
    no_gold = runner.invoke(app, ["judge", str(path), "--judge", "verifier", "--env", "RagSupport-v0"])
    assert no_gold.exit_code == 2 and "has no 'task'" in no_gold.output and "learned" in no_gold.output
    unknown = runner.invoke(app, ["judge", str(path), "--judge", "oracle"])
    assert unknown.exit_code == 2 and "unknown judge 'oracle'" in unknown.output
    base = runner.invoke(app, ["judge", str(path), "--judge", "learned", "--api-base", "http://x"])
    assert base.exit_code == 2 and "--api-base goes with an LLM judge" in base.output
    empty = write_lines(tmp_path / "empty.jsonl", ["", "{bad"])
    nothing = runner.invoke(app, ["judge", str(empty)])
    assert nothing.exit_code == 2 and "no trajectory to judge (1 bad line)" in nothing.output


def test_judge_command_takes_your_own_judge_and_notes_ungrouped_lines_for_a_relative_one(tmp_path):
    judge_file = tmp_path / "my_judge.py"
    judge_file.write_text(
        "from judgegym.judges.base import Judge, JudgeScore\n\n"
        "class Half(Judge):\n    relative = True\n\n"
        "    async def score_group(self, group):\n        return [JudgeScore(score=0.5) for _ in group.trajectories]\n\n"
        "judge = Half()\n"
    )
    path = write_lines(tmp_path / "chat.jsonl", [{"messages": CONVERSATION, "group": "g"}, {"messages": CONVERSATION}])
    result = runner.invoke(app, ["judge", str(path), "--judge", f"{judge_file}:judge"])
    assert result.exit_code == 0, result.output
    assert "1 line without a 'group'" in result.output and "2 trajectories scored" in result.output


# -- explanations and mixed-env verifiers --------------------------------------------------------


def test_explanations_say_what_the_answer_did_and_which_way_it_pushed():
    import numpy as np

    from judgegym.judges.learned import FEATURE_WORDS, FEATURES, explain

    assert set(FEATURE_WORDS) == set(FEATURES)
    names = ("addresses_judge", "hedges", "cited_read_share")
    mean = np.array([0.05, 0.2, 0.5])
    clean = explain(names, np.array([0.0, 0.0, 1.0]), np.array([0.3, 0.1, 0.9]), mean)
    assert clean == "raised by: cites articles it read (+0.90), does not speak to the grader (+0.30), does not hedge (+0.10)"
    injected = explain(names, np.array([1.0, 1.0, 0.0]), np.array([-4.4, -0.9, -0.8]), mean, top=2)
    assert injected == "lowered by: speaks to the grader (-4.40), hedges (-0.90)"


def test_the_verifier_without_an_env_grades_each_trajectory_by_its_own_env():
    from judgegym.judges.specs import EachEnvVerifier, make_judge

    judge = make_judge("verifier")
    assert isinstance(judge, EachEnvVerifier)
    played = []
    for env_id, answer in (("RagSupport-v0", "I do not know."), ("Summarize-v0", "A summary.")):
        env = gym.make(env_id, split="test")
        env.reset(seed=2)
        *_, info = env.step(answer)
        env.close()
        played.append(info["trajectory"])
    for trajectory in played:
        assert judge.verify(trajectory).score == pytest.approx(trajectory.reward)
        by_tools = trajectory.model_copy(update={"env_id": None})  # told by the tools it was offered
        assert judge.verify(by_tools).score == pytest.approx(trajectory.reward)
        with pytest.raises(ValueError, match="no env verifier applies"):
            judge.verify(by_tools.model_copy(update={"tools": []}))
