"""Tests for judgegym.integrations.art against the real OpenPipe ART (``openpipe-art``).

ART pins litellm<=1.82, so it lives in its own environment: ``scripts/test_art.sh`` builds
it and runs this file there (without tests/conftest.py). In the main environment only the
test for a missing ART runs; the others skip.
"""

from __future__ import annotations

import asyncio
import json
import logging
import runpy
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai_stub import StubServer
from strategies import examples

import judgegym  # noqa: F401  (registers the envs)
from judgegym import Group, Message, TerminationReason, Trajectory
from judgegym.agents import make_agent
from judgegym.envs.rag import RagVerifier
from judgegym.evaluation import play_episode
from judgegym.integrations.art import from_art_group, from_art_trajectory, score_art_group, to_art_group, to_art_trajectory
from judgegym.judges import Judge, JudgeScore, RulerJudge

ROOT = Path(__file__).resolve().parents[1]
NASTY = 'Grüße 🌍 — 日本語 \u2028\u2029 tab\t nul\x00 "quote" back\\slash \r\n {"json": [1]}'


@pytest.fixture(scope="module")
def art():
    return pytest.importorskip(
        "art", reason="openpipe-art pins an older litellm, so these tests run in an env of their own: bash scripts/test_art.sh"
    )


@pytest.fixture(scope="module")
def rag_group() -> Group:
    """Three scripted agents on one RagSupport scenario, judged by the env's verifier."""
    env = gym.make("RagSupport-v0", split="test", n_products=20, n_worlds=2)

    async def play() -> list[Trajectory]:
        return [await play_episode(env, make_agent(name), seed=1) for name in ("oracle", "search-quote", "unhelpful")]

    try:
        members = asyncio.run(play())
    finally:
        env.close()
    return Group(scenario_id=members[0].scenario_id, trajectories=members)


def test_without_art_the_conversions_say_to_install_openpipe_art(monkeypatch):
    monkeypatch.setitem(sys.modules, "art", None)
    trajectory = Trajectory(scenario_id="s", messages=[Message(role="user", content="hi")])
    for convert, value in ((to_art_trajectory, trajectory), (to_art_group, Group(scenario_id="s", trajectories=[trajectory]))):
        with pytest.raises(ImportError, match="pip install openpipe-art"):
            convert(value)
    with pytest.raises(ImportError, match="pip install openpipe-art"):
        from_art_trajectory(object())  # type: ignore[arg-type]


# -- judgegym -> ART -> judgegym ---------------------------------------------------------------


def test_rag_group_round_trips_and_assistant_turns_are_choices(art, rag_group):
    from openai.types.chat.chat_completion import Choice

    art_group = to_art_group(rag_group)
    assert isinstance(art_group, art.TrajectoryGroup) and art_group.metadata == {"scenario_id": rag_group.scenario_id}
    assert from_art_group(art_group) == rag_group
    for ours, theirs in zip(rag_group, art_group, strict=True):
        assert isinstance(theirs, art.Trajectory)
        assert theirs.reward == ours.reward and theirs.metrics == ours.metrics and theirs.tools == ours.tools
        assert theirs.metadata["judgegym_env_id"] == "RagSupport-v0" and theirs.metadata["judgegym_termination"] == "final_answer"
        kinds = [type(item) for item in theirs.messages_and_choices]
        assert kinds == [Choice if m.role == "assistant" else dict for m in ours.messages]
        # ART's own reader gives back the OpenAI messages (it writes "" for a missing content).
        assert theirs.messages() == [{"content": "", **m.to_openai()} for m in ours.messages]
    calls = [c for t in art_group for c in t.messages_and_choices if isinstance(c, Choice) and c.message.tool_calls]
    assert calls, "the scripted agents use tools"
    for choice in calls:
        assert choice.finish_reason == "tool_calls" and choice.logprobs is None
        assert all(call.type == "function" and json.loads(call.function.arguments) for call in choice.message.tool_calls)
    answers = [c for t in art_group for c in t.messages_and_choices if isinstance(c, Choice) and not c.message.tool_calls]
    assert answers and all(c.finish_reason == "stop" and c.message.content for c in answers)


def test_unscored_failed_and_empty_cases(art):
    unscored = Trajectory(scenario_id="s", messages=[Message(role="assistant", content="a", tool_calls=[])])
    theirs = to_art_trajectory(unscored)
    assert theirs.reward == 0.0 and theirs.metadata["judgegym_unscored"] is True and theirs.tools is None
    assert from_art_trajectory(theirs) == unscored
    scored = unscored.model_copy(update={"reward": 0.0})
    assert "judgegym_unscored" not in to_art_trajectory(scored).metadata and from_art_trajectory(to_art_trajectory(scored)) == scored
    with pytest.raises(ValueError, match=r"group 'g' failed judging \(timeout\); leave it out of training"):
        to_art_group(Group(scenario_id="g", trajectories=[scored], failed=True, error="timeout"))
    empty = to_art_group(Group(scenario_id="e"))
    assert len(empty) == 0 and from_art_group(empty) == Group(scenario_id="e")


text = st.text(max_size=30) | st.just(NASTY)
json_values = st.recursive(
    st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=8,
)
tool_calls = st.lists(
    st.fixed_dictionaries({"id": text, "type": st.just("function"), "function": st.fixed_dictionaries({"name": text, "arguments": text})}),
    max_size=3,
)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    """Messages as OpenAI dicts carry them: no field is set to None (dicts omit unset fields)."""
    role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
    fields: dict = {"role": role}
    if draw(st.booleans()):
        fields["content"] = draw(text)
    if role == "assistant" and draw(st.booleans()):
        fields["tool_calls"] = draw(tool_calls)
    if role == "tool":
        fields.update(tool_call_id=draw(text), name=draw(text))
    extras = st.sampled_from(["reasoning_content", "provider_meta"] + (["trainable"] if role == "assistant" else []))
    fields.update(draw(st.dictionaries(extras, json_values, max_size=2)))
    return Message.model_validate(fields)


trajectories = st.builds(
    Trajectory,
    scenario_id=text,
    env_id=st.none() | text,
    split=st.none() | text,
    seed=st.none() | st.integers(),
    messages=st.lists(messages(), max_size=5),
    tools=st.lists(st.fixed_dictionaries({"type": st.just("function"), "function": st.fixed_dictionaries({"name": text})}), max_size=2),
    termination=st.none() | st.sampled_from(list(TerminationReason)),
    reward=st.none() | st.floats(0, 1),
    metrics=st.dictionaries(text, st.floats(allow_nan=False), max_size=3),
    info=st.dictionaries(text.filter(lambda k: k != "art"), json_values, max_size=3),
)


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(trajectory=trajectories)
def test_any_trajectory_round_trips_through_art(art, trajectory):
    theirs = to_art_trajectory(trajectory)
    assert isinstance(theirs, art.Trajectory)
    assert from_art_trajectory(theirs) == trajectory


# -- ART -> judgegym -> ART ---------------------------------------------------------------


def art_rollout(art, answer: str, *, logprobs: bool = True, **fields):
    """An ART trajectory as an ART rollout records it: a Choice per model turn (with logprobs)."""
    from openai.types.chat.chat_completion import Choice

    token = {"token": "token_id:7", "bytes": [72], "logprob": -0.25, "top_logprobs": []}
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "warranty"}'}}
    return art.Trajectory(
        messages_and_choices=[
            {"role": "system", "content": "You answer questions about Acme products."},
            {"role": "user", "content": [{"type": "text", "text": "Warranty of "}, {"type": "text", "text": f"the Aurora 2? {NASTY}"}]},
            {"role": "assistant", "content": "Example of a good answer, not trained on."},
            Choice(
                index=0,
                finish_reason="tool_calls",
                message={"role": "assistant", "content": None, "tool_calls": [call]},
                logprobs={"content": [token]} if logprobs else None,
            ),
            {"role": "tool", "tool_call_id": "call_1", "content": "Aurora 2: 24 months warranty."},
            Choice(index=0, finish_reason="length", message={"role": "assistant", "content": answer}, logprobs={"content": [token]}),
        ],
        tools=[{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}],
        **fields,
    )


def test_art_trajectory_reads_as_judgegym_and_back(art):
    theirs = art_rollout(
        art,
        "24 months.",
        reward=0.5,
        metrics={"turns": 2, "ok": True, "latency": 1.5},
        metadata={"scenario_id": 17, "difficulty": "hard", "retries": None},
        logs=["rolled out"],
        initial_policy_version=3,
        final_policy_version=4,
    )
    ours = from_art_trajectory(theirs)
    assert ours.scenario_id == "17" and ours.reward == 0.5 and ours.metrics == {"turns": 2.0, "ok": 1.0, "latency": 1.5}
    assert ours.messages[1].content == f"Warranty of the Aurora 2? {NASTY}"
    assert ours.messages[2].model_extra == {"trainable": False}
    assert ours.messages[3].tool_calls[0].function.arguments == '{"q": "warranty"}'
    assert ours.messages[3].model_extra["logprobs"]["content"][0]["logprob"] == -0.25
    assert ours.messages[5].model_extra["finish_reason"] == "length" and "finish_reason" not in ours.messages[3].model_extra
    assert ours.final_answer == "24 months."
    assert ours.info == {
        "art": {
            "metadata": {"difficulty": "hard", "retries": None},
            "logs": ["rolled out"],
            "initial_policy_version": 3,
            "final_policy_version": 4,
        }
    }
    back = to_art_trajectory(ours)
    assert back.messages_and_choices[3:] == theirs.messages_and_choices[3:]  # Choices, logprobs and finish reasons intact
    assert back.messages_and_choices[2] == theirs.messages_and_choices[2]  # still a plain (untrained) dict
    assert back.metadata == {"scenario_id": "17", "difficulty": "hard", "retries": None}
    assert (back.logs, back.initial_policy_version, back.final_policy_version, back.reward) == (["rolled out"], 3, 4, 0.5)


def test_art_inputs_judgegym_cannot_hold_are_named(art):
    image = art_rollout(art, "a")
    image.messages_and_choices[1] = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
    with pytest.raises(ValueError, match="ART message 1 has image_url content parts"):
        from_art_trajectory(image)
    developer = art_rollout(art, "a")
    developer.messages_and_choices[0] = {"role": "developer", "content": "x"}
    with pytest.raises(ValueError, match="ART message 0 is not a judgegym message"):
        from_art_trajectory(developer)
    histories = art_rollout(art, "a", additional_histories=[art.trajectories.History(messages_and_choices=[])])
    with pytest.raises(ValueError, match="additional_histories are not supported"):
        from_art_trajectory(histories)


# -- scoring ART groups with judgegym judges ------------------------------------------------------


def test_score_art_group_with_the_verifier_writes_rewards_metrics_and_logs(art, rag_group):
    original = to_art_group(rag_group)
    for trajectory in original:
        trajectory.reward = 0.5  # what an ART rollout might have set
    original.metadata["step"] = 3
    original.logs.append("gathered")
    scored = asyncio.run(score_art_group(RagVerifier(), original))
    expected = [RagVerifier().verify(t) for t in rag_group]
    assert [t.reward for t in scored] == [s.score for s in expected]
    assert len({t.reward for t in scored}) > 1
    for before, after, score in zip(original, scored, expected, strict=True):
        assert after is not before and before.reward == 0.5 and "independent_reward" not in before.metrics
        assert after.metrics["independent_reward"] == 0.5
        assert {k: after.metrics[k] for k in score.components} == score.components
        assert after.logs[-1] == f"RagVerifier: {score.explanation}"
        assert after.messages_and_choices == before.messages_and_choices
        assert all(a is b for a, b in zip(after.messages_and_choices, before.messages_and_choices, strict=True))
    assert scored.metadata == {"scenario_id": rag_group.scenario_id, "step": 3} and scored.logs == ["gathered"]


class LongestAnswerFirst(Judge):
    """A deterministic relative judge: ranks the group's final answers by length."""

    relative = True

    async def score_group(self, group: Group) -> list[JudgeScore]:
        lengths = [len(t.final_answer) for t in group]
        ranks = [sorted(lengths).index(n) for n in lengths]
        top = max(max(ranks), 1)
        return [JudgeScore(score=r / top, explanation=f"rank {r}", components={"rank": float(r)}) for r in ranks]


def test_score_art_group_with_a_relative_judge_sees_the_whole_group(art):
    group = art.TrajectoryGroup([art_rollout(art, answer) for answer in ("medium answer", "a", "the longest answer of all")])
    scored = asyncio.run(score_art_group(LongestAnswerFirst(), group))
    assert [t.reward for t in scored] == [0.5, 0.0, 1.0]
    assert [t.metrics["rank"] for t in scored] == [1.0, 0.0, 2.0]
    assert [t.logs[-1] for t in scored] == ["LongestAnswerFirst: rank 1", "LongestAnswerFirst: rank 0", "LongestAnswerFirst: rank 2"]


@pytest.fixture
def stub():
    server = StubServer()
    yield server
    server.close()


def test_score_art_group_with_ruler_judge_on_a_local_endpoint(art, stub, tmp_path):
    """RulerJudge through litellm (ART's pinned version) against a scripted local endpoint."""
    stub.script = [
        json.dumps({"scores": [{"id": "1", "explanation": "right", "score": 0.9}, {"id": "2", "explanation": "wrong", "score": 0.1}]})
    ]
    group = art.TrajectoryGroup(
        [art_rollout(art, "24 months [MARK-A]."), art_rollout(art, "12 months [MARK-B].")], metadata={"scenario_id": "aurora"}
    )
    judge = RulerJudge("openai/judge-model", api_base=stub.api_base, api_key="test", cache=False, timeout=5.0, retries=1)
    scored = asyncio.run(score_art_group(judge, group))
    assert [t.reward for t in scored] == [0.9, 0.1]
    assert [t.logs[-1] for t in scored] == ["RulerJudge: right", "RulerJudge: wrong"]
    assert all(t.metrics["independent_reward"] == 0.0 and t.metrics["ruler"] == t.reward for t in scored)
    [request] = stub.requests
    sent = json.dumps(request["messages"], ensure_ascii=False)
    assert "MARK-A" in sent and "MARK-B" in sent and "lookup" in sent and sent.count("You answer questions about Acme") == 1


def test_a_failing_judge_raises_or_the_group_is_dropped_with_a_warning(art, caplog):
    class Broken(Judge):
        async def score_group(self, group: Group) -> list[JudgeScore]:
            raise RuntimeError("judge down")

    group = art.TrajectoryGroup([art_rollout(art, "a")])
    with pytest.raises(RuntimeError, match="judge down"):
        asyncio.run(score_art_group(Broken(), group))
    with caplog.at_level(logging.WARNING, logger="judgegym.judges"):
        assert asyncio.run(score_art_group(Broken(), group, skip_failed=True)) is None
    assert "judge down" in caplog.text


def test_art_example_runs(art, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["art_score_group.py"])
    runpy.run_path(str(ROOT / "examples" / "art_score_group.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "judged by RagVerifier" in out and out.count("reward") == 3 and "RagVerifier: recall" in out
