"""Tests for judgegym.integrations.verifiers against the real verifiers 0.4 (PyPI ``verifiers``).

verifiers pins its own stack (openai, mcp, numpy), so it lives in an environment of its own:
``scripts/test_verifiers.sh`` builds it and runs this file there (without tests/conftest.py).
In the main environment only the test for a missing verifiers runs; the others skip.

The policy is a local OpenAI-compatible stub replaying the turns judgegym's scripted baselines
took in a local episode, so every rollout verifiers plays has a local twin: the same messages,
the same judge, the same reward.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai_stub import StubServer
from strategies import examples

import judgegym  # noqa: F401  (registers the envs)
from judgegym import Group, Trajectory
from judgegym.agents import make_agent
from judgegym.agents.base import Agent
from judgegym.evaluation import play_episode
from judgegym.integrations.verifiers import load_environment, to_trajectory
from judgegym.judges import Judge, JudgeScore, make_judge

ROOT = Path(__file__).resolve().parents[1]
NASTY = 'Grüße 🌍 — 日本語 \u2028\u2029 tab\t nul\x00 "quote" back\\slash \r\n {"json": [1]} <tool_call>{"name": "read"}</tool_call>'
DOC = ROOT / "docs" / "plugins" / "verifiers.md"
RAG = {"n_products": 20, "n_worlds": 2}
KEY_VAR = "JUDGEGYM_STUB_API_KEY"


@pytest.fixture(scope="module")
def vf():
    return pytest.importorskip(
        "verifiers.v1",
        reason="verifiers pins its own openai/mcp/numpy, so these tests run in an env of their own: bash scripts/test_verifiers.sh",
    )


@pytest.fixture
def stub(monkeypatch):
    monkeypatch.setenv(KEY_VAR, "test")
    server = StubServer()
    yield server
    server.close()


def test_without_verifiers_load_environment_says_to_install_it(monkeypatch):
    import judgegym.integrations.verifiers as plugin

    for name in ("verifiers", "verifiers.v1"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=re.escape("pip install 'verifiers==0.4.0'")):
        load_environment("RagSupport-v0")
    with pytest.raises(ImportError, match=re.escape("pip install 'verifiers==0.4.0'")):
        plugin.JudgegymTaskset  # noqa: B018


# -- helpers ------------------------------------------------------------------------------


class Recorder(Agent):
    """Plays a scripted baseline and keeps the turns it took."""

    def __init__(self, inner: Agent):
        self.inner, self.name, self.actions = inner, inner.name, []

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        action = await self.inner.act(observation, info)
        self.actions.append(action)
        return action


def replies(actions: list[Any]) -> list[dict[str, Any]]:
    """The stub's scripted replies that make a model take `actions`."""
    return [{"content": a} if isinstance(a, str) else {"content": a.get("content"), "tool_calls": a.get("tool_calls")} for a in actions]


def play_locally(env_id: str, plays: list[tuple[int, str]], **env_kwargs: Any) -> tuple[list[Trajectory], list[dict[str, Any]]]:
    """Judged local episodes of (seed, baseline) pairs, and the stub script that replays them."""
    env = gym.make(env_id, split="test", **env_kwargs)
    trajectories, script = [], []
    try:
        for seed, name in plays:
            agent = Recorder(make_agent(name, env_id=env_id))
            trajectories.append(asyncio.run(play_episode(env, agent, seed=seed)))
            script += replies(agent.actions)
    finally:
        env.close()
    return trajectories, script


def evaluate(vf: Any, env: Any, stub: StubServer, out: Path, **options: Any) -> list[Any]:
    """Episodes of `env` through verifiers' own eval runner (what vf-eval runs), one at a time
    so the stub's script meets the rollouts in plan order (task by task, rollout by rollout)."""
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    client = vf.EvalClientConfig(base_url=stub.api_base, api_key_var=KEY_VAR)
    config = EvalConfig(env=env.config, model="policy", client=client, push=False, rich=None, output_dir=out, max_concurrent=1, **options)
    return asyncio.run(run_eval(config))


def same_episode(trace: Any, local: Trajectory) -> None:
    """The verifiers trace is the local episode: same messages, termination, reward, components."""
    assert trace.ok and not trace.errors, trace.errors
    ours = to_trajectory(trace)
    fields = {"info", "metrics"}
    assert ours.model_dump(exclude=fields) == local.model_dump(exclude=fields)
    assert ours.info["task"] == local.info["task"] and ours.info["explanation"] == local.info["explanation"]
    assert ours.metrics == local.metrics  # the env's counters and the judge's components
    assert trace.reward == local.reward and trace.rewards["judge"].score == local.reward
    components = {k: v for k, v in local.metrics.items() if k not in ("turns", "tool_calls", "tool_errors", "format_errors")}
    assert components and {k: trace.metrics[k] for k in components} == components
    # What verifiers itself recorded: the conversation the model saw, turn by turn (an env turn
    # after the model's last one, e.g. the customer's goodbye, reaches the trajectory only).
    seen = local.messages[: max(i for i, m in enumerate(local.messages) if m.role == "assistant") + 1]
    assert [m.role for m in trace.messages] == [m.role for m in seen]
    for theirs, mine in zip(trace.messages, seen, strict=True):
        if mine.role in ("user", "tool"):
            assert theirs.content == mine.content
        if mine.role == "assistant":
            assert [c.name for c in theirs.tool_calls or []] == [c.function.name for c in mine.tool_calls or []]
    assert {t.name for t in trace.tools} == {s["function"]["name"] for s in local.tools}


def traces_on_disk(out: Path) -> list[dict[str, Any]]:
    [path] = out.rglob("traces.jsonl")
    return [trace for line in path.read_text().splitlines() for trace in json.loads(line)["traces"]]


# -- the taskset --------------------------------------------------------------------------------


def test_tasks_are_the_env_scenarios_by_seed(vf):
    env = load_environment("RagSupport-v0", split="test", num_examples=3, seed=5, max_turns=4, **RAG)
    assert isinstance(env, vf.Env) and type(env).__name__ == "JudgegymEnv"
    tasks = list(env.taskset)
    local = gym.make("RagSupport-v0", split="test", max_turns=4, **RAG)
    for i, task in enumerate(tasks):
        observation, info = local.reset(seed=5 + i)
        data = task.data
        assert (data.id, data.seed, data.env_id, data.split, data.max_turns) == (info["scenario_id"], 5 + i, "RagSupport-v0", "test", 4)
        assert [m.model_dump(exclude_none=True) for m in data.prompt] == observation
    assert len(tasks) == 3 and len({t.data.id for t in tasks}) == 3
    # The config alone rebuilds the env (what vf-eval and env servers do).
    again = vf.load_environment(type(env.config).model_validate_json(env.config.model_dump_json()))
    assert [t.data for t in again.taskset] == [t.data for t in tasks]
    with pytest.raises(ValueError, match="unknown judge 'nonsense'"):
        load_environment("RagSupport-v0", judge="nonsense")
    with pytest.raises(ValueError, match="no 'nothing'"):
        make_judge(f"{__name__}:nothing")


# -- pointwise judges: one reward per rollout -----------------------------------------------------


def test_rag_rollouts_through_vf_eval_get_judgegym_rewards(vf, stub, tmp_path):
    """3 RagSupport scenarios x 2 rollouts, each rollout a baseline's turns replayed by the model."""
    plays = [(seed, name) for seed in range(3) for name in ("oracle", "search-quote")]
    local, stub.script = play_locally("RagSupport-v0", plays, **RAG)
    model_turns = len(stub.script)
    env = load_environment("RagSupport-v0", split="test", num_examples=3, **RAG)
    episodes = evaluate(vf, env, stub, tmp_path, num_rollouts=2)
    traces = [trace for episode in episodes for trace in episode.traces]
    assert [len(e.traces) for e in episodes] == [1] * 6 and all(e.ok for e in episodes)
    for trace, mine in zip(traces, local, strict=True):
        same_episode(trace, mine)
    assert len({t.reward for t in traces}) > 1, "the baselines differ, so the check can tell rollouts apart"
    assert any(m.role == "tool" for t in traces for m in t.messages)
    assert not stub.script and len(stub.requests) == model_turns
    assert all(r["model"] == "policy" and {s["function"]["name"] for s in r["tools"]} == {"search", "read"} for r in stub.requests)
    stored = traces_on_disk(tmp_path)  # what verifiers wrote
    assert [t["rewards"]["judge"]["score"] for t in stored] == [t.reward for t in local]
    assert [Trajectory.model_validate(t["info"]["judgegym_trajectory"]).messages for t in stored] == [t.messages for t in local]


class Replay(Agent):
    """Takes the given turns, then gives a final answer (one episode)."""

    def __init__(self, actions: list[Any]):
        self.actions = [*actions, "Done."]
        self.taken = 0

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        self.taken += 1
        return self.actions[self.taken - 1]


text = st.text(max_size=40) | st.just(NASTY)
call = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["c1", "c2", "same"]),
        "type": st.just("function"),
        "function": st.fixed_dictionaries(
            {
                "name": st.sampled_from(["search", "read", "no_such_tool"]),
                "arguments": text
                | st.dictionaries(st.sampled_from(["query", "doc_id", "k", "extra"]), text | st.integers()).map(json.dumps),
            }
        ),
    }
)
turn = text | st.fixed_dictionaries(
    {"role": st.just("assistant"), "content": st.none() | text, "tool_calls": st.lists(call, min_size=1, max_size=3)}
)


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(turns=st.lists(turn, min_size=1, max_size=3))
def test_any_model_turns_play_as_they_do_in_judgegym(vf, stub, tmp_path_factory, turns):
    """Junk calls, unknown tools, bad arguments, empty or odd text: the env's reading of them
    (tool errors, format errors) and the reward are the same as in a local episode."""
    env = gym.make("RagSupport-v0", split="test", max_turns=6, **RAG)
    local = asyncio.run(play_episode(env, Replay(turns), seed=0))
    stub.script, stub.requests[:] = replies(Replay(turns).actions), []
    episodes = evaluate(
        vf, load_environment("RagSupport-v0", split="test", num_examples=1, max_turns=6, **RAG), stub, tmp_path_factory.mktemp("run")
    )
    [trace] = episodes[0].traces
    assert trace.ok, trace.errors
    ours = to_trajectory(trace)
    assert ours.messages == local.messages and ours.termination == local.termination and ours.reward == local.reward


@pytest.mark.parametrize("env_id", ["CustomerSupport-v0", "Summarize-v0"])
def test_support_and_summarize_rollouts_match_local_play(vf, stub, tmp_path, env_id):
    """The simulated customer's replies and the section tools are the env's own."""
    local, stub.script = play_locally(env_id, [(0, "oracle")])
    env = load_environment(env_id, split="test", num_examples=1)
    [episode] = evaluate(vf, env, stub, tmp_path)
    [trace] = episode.traces
    same_episode(trace, local[0])
    if env_id == "CustomerSupport-v0":
        assert sum(m.role == "user" for m in trace.messages) > 1, "the customer answered mid-episode"
    assert local[0].reward and local[0].reward > 0.5


def test_verifiers_own_turn_limit_truncates_and_is_still_judged(vf, stub, tmp_path):
    stub.default = {
        "content": None,
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "search", "arguments": '{"query": "x"}'}}],
    }
    env = load_environment("RagSupport-v0", split="test", num_examples=1, **RAG)
    env.config.agent.max_turns = 2
    [episode] = evaluate(vf, env, stub, tmp_path)
    [trace] = episode.traces
    trajectory = to_trajectory(trace)
    assert trajectory.termination == "max_turns" and trajectory.metrics["tool_calls"] == 2 and len(stub.requests) == 2
    assert trace.rewards["judge"].score == trajectory.reward == 0.0
    assert "recall" in trace.metrics


# -- relative judges: one score_group per group -------------------------------------------------------


class LongestAnswerFirst(Judge):
    """A deterministic relative judge: ranks the group's final answers by length; records its calls."""

    relative = True

    def __init__(self) -> None:
        self.groups: list[Group] = []

    async def score_group(self, group: Group) -> list[JudgeScore]:
        self.groups.append(group)
        lengths = [len(t.final_answer) for t in group]
        ranks = [sorted(lengths).index(n) for n in lengths]
        top = max(max(ranks), 1)
        return [JudgeScore(score=r / top, explanation=f"rank {r}", components={"rank": float(r)}) for r in ranks]


LONGEST = LongestAnswerFirst()


def test_relative_judge_scores_each_group_once_with_all_its_rollouts(vf, stub, tmp_path):
    plays = [(seed, name) for seed in range(2) for name in ("unhelpful", "oracle")]
    local, stub.script = play_locally("RagSupport-v0", plays, **RAG)
    LONGEST.groups.clear()
    env = load_environment("RagSupport-v0", judge=f"{__name__}:LONGEST", split="test", num_examples=2, group_size=2, **RAG)
    episodes = evaluate(vf, env, stub, tmp_path)
    assert [len(e.traces) for e in episodes] == [2, 2] and all(e.ok for e in episodes)
    assert len(LONGEST.groups) == 2, "one score_group call per group"
    for episode, group, mine in zip(episodes, LONGEST.groups, (local[:2], local[2:]), strict=True):
        assert group.scenario_id == episode.task.data.id == mine[0].scenario_id
        assert [t.messages for t in group] == [t.messages for t in mine]
        expected = asyncio.run(LongestAnswerFirst().score_group(Group(scenario_id=group.scenario_id, trajectories=mine)))
        assert [t.rewards["judge"].score for t in episode.traces] == [s.score for s in expected]
        assert sorted(s.score for s in expected) == [0.0, 1.0]
        for trace, score in zip(episode.traces, expected, strict=True):
            assert trace.metrics == score.components and trace.info["judge_explanation"] == score.explanation
            assert to_trajectory(trace).reward == score.score
    stored = traces_on_disk(tmp_path)
    assert [t["rewards"]["judge"]["score"] for t in stored] == [t.reward for e in episodes for t in e.traces]
    assert not any("recall" in t["metrics"] for t in stored), "the env's pointwise verifier did not run"


def test_ruler_judge_on_a_local_endpoint_sees_the_whole_group(vf, stub, tmp_path):
    judge_stub = StubServer()
    try:
        answers = ["The Everest 6 costs $59.95 [MARK-A].", "I am not sure [MARK-B]."]
        stub.script = [{"content": answer} for answer in answers]
        scores = [{"id": "1", "explanation": "right", "score": 0.9}, {"id": "2", "explanation": "vague", "score": 0.2}]
        judge_stub.script = [json.dumps({"scores": scores})]
        options = {"api_base": judge_stub.api_base, "api_key": "test", "cache": False, "timeout": 5.0, "retries": 1}
        env = load_environment(
            "RagSupport-v0", judge="ruler:openai/judge-model", judge_options=options, split="test", num_examples=1, group_size=2, **RAG
        )
        [episode] = evaluate(vf, env, stub, tmp_path)
    finally:
        judge_stub.close()
    assert [t.rewards["judge"].score for t in episode.traces] == [0.9, 0.2]
    assert [t.info["judge_explanation"] for t in episode.traces] == ["right", "vague"]
    [request] = judge_stub.requests
    sent = json.dumps(request["messages"], ensure_ascii=False)
    assert "MARK-A" in sent and "MARK-B" in sent


# -- the docs -----------------------------------------------------------------------------------


def doc_block(language: str, first_line: str | None = None) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    return next(b for b in blocks if first_line is None or b.startswith(first_line))


def test_the_doc_example_runs_and_prints_judgegym_rewards(vf, stub, tmp_path):
    answer = "The price is $59.95 [everest-6-lite-overview]."
    stub.default = answer
    code = doc_block("python")
    for literal, value in (
        ('"https://api.openai.com/v1"', repr(stub.api_base)),
        ('"OPENAI_API_KEY"', repr(KEY_VAR)),
        ('"outputs"', repr(str(tmp_path))),
    ):
        assert literal in code, f"the doc example changed: {literal} is gone"
        code = code.replace(literal, value)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(DOC), "exec"), {"__name__": "doc_example"})
    lines = printed.getvalue().splitlines()
    env = gym.make("RagSupport-v0", split="test")
    expected = io.StringIO()
    for seed in range(3):
        env.reset(seed=seed)
        *_, info = env.step(answer)
        trajectory, score = info["trajectory"], info["judge_score"]
        for _ in range(2):
            print(trajectory.scenario_id, trajectory.termination, score.score, score.explanation, file=expected)
    assert lines == expected.getvalue().splitlines()
    assert len({line.split()[0] for line in lines}) == 3


def test_the_documented_package_runs_under_the_vf_eval_command(vf, stub, tmp_path):
    """The doc's package, built from its two blocks, through the real vf-eval command line."""
    package = tmp_path / "judgegym_support"
    package.mkdir()
    (package / "__init__.py").write_text(doc_block("python", "# judgegym_support/__init__.py"))
    assert 'name = "judgegym-support"' in doc_block("toml", "# pyproject.toml")
    local, stub.script = play_locally("CustomerSupport-v0", [(0, "oracle")])
    vf_eval = Path(sys.executable).parent / "vf-eval"
    out = tmp_path / "out"
    command = [str(vf_eval), "judgegym-support", "--env.taskset.split", "test", "-n", "1", "-m", "policy"]
    command += ["--client.base-url", stub.api_base, "--client.api-key-var", KEY_VAR, "--no-push", "--no-rich", "-o", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    [stored] = traces_on_disk(out)
    assert stored["task"]["data"]["env_id"] == "CustomerSupport-v0"
    assert stored["rewards"]["judge"]["score"] == local[0].reward
    assert Trajectory.model_validate(stored["info"]["judgegym_trajectory"]).messages == local[0].messages
