"""The eval runner: trials, resuming from the output file, failed episodes, pass^k."""

from __future__ import annotations

import asyncio
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import judgegym  # noqa: F401
from judgegym.agents import Agent, make_agent
from judgegym.evaluation import evaluate, load_trajectories, pass_hat_k, summarize

ENV = {"n_products": 20, "n_worlds": 1, "split": "test"}


class CountingAgent(Agent):
    """The oracle, counting episodes it starts; fails on the seeds in `fail_on`."""

    name = "counting"

    def __init__(self, fail_on=()):
        self.oracle = make_agent("oracle")
        self.started: list[tuple[int, int]] = []
        self.fail_on = set(fail_on)

    async def act(self, observation, info):
        if len(observation) == 2:
            self.started.append((info["seed"], info["trial"]))
        if info["seed"] in self.fail_on:
            raise ConnectionError("model endpoint unreachable")
        return await self.oracle.act(observation, info)


def run(agent, **kwargs):
    return asyncio.run(evaluate("RagSupport-v0", agent, env_kwargs=ENV, **kwargs))


def test_trials_play_every_scenario_k_times_in_order():
    agent = CountingAgent()
    result = run(agent, episodes=3, trials=2, seed=10)
    assert sorted(agent.started) == [(s, t) for s in (10, 11, 12) for t in (0, 1)]
    assert [(t.seed, t.info["trial"]) for t in result.trajectories] == sorted(agent.started)
    summary = summarize(result.trajectories)
    assert summary.scenarios == 3 and summary.trials == 2 and summary.pass_k == {1: 1.0, 2: 1.0}


def test_resume_skips_finished_episodes(tmp_path):
    out = tmp_path / "runs" / "eval.jsonl"
    first = CountingAgent()
    run(first, episodes=3, out=out)
    second = CountingAgent()
    result = run(second, episodes=5, out=out)
    assert sorted(second.started) == [(3, 0), (4, 0)]
    assert result.resumed == 3 and [t.seed for t in result.trajectories] == [0, 1, 2, 3, 4]
    assert len(load_trajectories(out)) == 5
    third = CountingAgent()
    run(third, episodes=5, out=out)
    assert third.started == []  # everything is there


def test_another_env_config_is_another_run(tmp_path):
    out = tmp_path / "eval.jsonl"
    run(CountingAgent(), episodes=2, out=out)
    agent = CountingAgent()
    asyncio.run(evaluate("RagSupport-v0", agent, episodes=2, env_kwargs={**ENV, "prefetch_k": 2}, out=out))
    assert len(agent.started) == 2 and len(load_trajectories(out)) == 4


def test_a_partial_last_line_from_a_killed_run_is_repaired(tmp_path):
    out = tmp_path / "eval.jsonl"
    run(CountingAgent(), episodes=2, out=out)
    whole = out.read_text()
    out.write_text(whole + whole.splitlines()[0][:57])  # killed mid-write
    agent = CountingAgent()
    result = run(agent, episodes=3, out=out)
    assert agent.started == [(2, 0)] and len(result.trajectories) == 3
    assert [json.loads(line)["seed"] for line in out.read_text().splitlines()] == [0, 1, 2]


def test_a_corrupt_line_elsewhere_is_an_error_naming_it(tmp_path):
    out = tmp_path / "eval.jsonl"
    out.write_text('{"not": "a trajectory"}\n')
    with pytest.raises(ValueError, match="line 1"):
        run(CountingAgent(), episodes=1, out=out)


def test_failed_episodes_are_reported_not_written_and_retried_on_resume(tmp_path):
    out = tmp_path / "eval.jsonl"
    result = run(CountingAgent(fail_on={1}), episodes=3, out=out)
    assert [t.seed for t in result.trajectories] == [0, 2]
    assert result.failed == [(1, 0, "ConnectionError: model endpoint unreachable")]
    agent = CountingAgent()
    run(agent, episodes=3, out=out)
    assert agent.started == [(1, 0)]


def test_pass_hat_k_by_hand():
    # tau-bench's definition: per task C(c, k) / C(n, k), averaged over tasks
    tasks = [(4, 4), (4, 2), (4, 0)]
    assert pass_hat_k(tasks, 1) == pytest.approx((1 + 0.5 + 0) / 3)
    assert pass_hat_k(tasks, 2) == pytest.approx((1 + 1 / 6 + 0) / 3)
    assert pass_hat_k(tasks, 4) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="at least 5 trials"):
        pass_hat_k(tasks, 5)


@given(st.lists(st.integers(1, 8).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))), min_size=1, max_size=10))
def test_pass_hat_k_is_monotone_and_starts_at_the_success_rate(tasks):
    k_max = min(n for n, _ in tasks)
    values = [pass_hat_k(tasks, k) for k in range(1, k_max + 1)]
    assert values[0] == pytest.approx(sum(c / n for n, c in tasks) / len(tasks))
    assert all(b <= a + 1e-12 for a, b in zip(values, values[1:], strict=False))
    assert all(0 <= v <= 1 and math.isfinite(v) for v in values)


def test_summary_counts_success_tools_and_failures():
    result = run(make_agent("search-quote"), episodes=6)
    summary = summarize(result.trajectories, success_threshold=0.0, failed=2)
    assert summary.success_rate == 1.0 and summary.failed == 2
    assert summary.mean_tool_calls == pytest.approx(2.0) and summary.mean_turns == pytest.approx(3.0)
    assert summary.mean_tokens is None  # scripted agents report no tokens
    strict = summarize(result.trajectories, success_threshold=1.0)
    assert strict.success_rate == pytest.approx(sum(t.reward >= 1.0 for t in result.trajectories) / 6)
