"""Judge combinations, group scoring with failures, the rubric judge and judge specs."""

from __future__ import annotations

import asyncio
import json

import pytest
from openai_stub import StubServer

from judgegym import Group, Trajectory
from judgegym.envs.rag import RagVerifier
from judgegym.judges import (
    Gate,
    Judge,
    JudgeError,
    JudgeScore,
    PointwiseJudge,
    Product,
    RubricJudge,
    WeightedSum,
    make_judge,
    score_groups,
)


class Fixed(PointwiseJudge):
    """Scores each trajectory with a number written in its final answer."""

    def __init__(self, key: str = "a"):
        self.key = key

    async def score(self, trajectory):
        value = json.loads(trajectory.final_answer)[self.key]
        return JudgeScore(score=value, explanation=f"{self.key}={value}", components={"raw": value})


class Relative(Judge):
    relative = True

    def __init__(self):
        self.groups = []

    async def score_group(self, group):
        self.groups.append(len(group))
        n = len(group)
        return [JudgeScore(score=(i + 1) / n, explanation="rank") for i in range(n)]


class Broken(Judge):
    async def score_group(self, group):
        raise JudgeError("the judge is down")


def make_group(*values):
    return Group(
        scenario_id="s",
        trajectories=[Trajectory(scenario_id="s", messages=[{"role": "assistant", "content": json.dumps(v)}]) for v in values],
    )


def run(coro):
    return asyncio.run(coro)


def test_weighted_sum_keeps_components():
    judge = WeightedSum({"x": (Fixed("a"), 3.0), "y": (Fixed("b"), 1.0)})
    [score] = run(judge.score_group(make_group({"a": 1.0, "b": 0.0})))
    assert score.score == pytest.approx(0.75)
    assert score.components == {"x/score": 1.0, "x/raw": 1.0, "y/score": 0.0, "y/raw": 0.0}
    with pytest.raises(ValueError, match="weights"):
        WeightedSum({"x": (Fixed(), -1.0)})


def test_product():
    [score] = run(Product({"x": Fixed("a"), "y": Fixed("b")}).score_group(make_group({"a": 0.5, "b": 0.4})))
    assert score.score == pytest.approx(0.2)


def test_gate_scores_only_survivors_and_relative_judges_see_only_them():
    relative = Relative()
    judge = Gate(gate=Fixed("a"), judge=relative, threshold=0.5)
    assert judge.relative
    scores = run(judge.score_group(make_group({"a": 1.0}, {"a": 0.0}, {"a": 0.9})))
    assert relative.groups == [2]
    assert [s.score for s in scores] == [0.5, 0.0, 1.0]
    assert [s.components["gate/passed"] for s in scores] == [1.0, 0.0, 1.0]
    none_pass = Relative()
    assert [s.score for s in run(Gate(Fixed("a"), none_pass).score_group(make_group({"a": 0.1})))] == [0.0]
    assert none_pass.groups == []


def test_a_penalty_survives_every_combination():
    """A verifier's score below 0 (proven harm) stays below 0 through a sum, a product and a gate."""
    harmed = make_group({"a": -0.5, "b": 0.8})
    [summed] = run(WeightedSum({"x": (Fixed("a"), 1.0), "y": (Fixed("b"), 1.0)}).score_group(harmed))
    assert summed.score == pytest.approx(0.15)
    [worse] = run(WeightedSum({"x": (Fixed("a"), 3.0), "y": (Fixed("b"), 1.0)}).score_group(make_group({"a": -0.5, "b": 0.2})))
    assert worse.score == pytest.approx(-0.325)
    [product] = run(Product({"x": Fixed("a"), "y": Fixed("b")}).score_group(make_group({"a": -0.5, "b": -0.25})))
    assert product.score == -0.5  # the lowest part, not a positive product of two penalties
    [gated] = run(Gate(gate=Fixed("a"), judge=Relative()).score_group(harmed))
    assert gated.score == -0.5 and gated.components["gate/passed"] == 0.0


def test_score_groups_sets_rewards_and_keeps_earlier_ones():
    group = make_group({"a": 0.3}, {"a": 0.6})
    group.trajectories[0].reward = 0.9
    [scored] = run(score_groups(Fixed(), [group]))
    assert [t.reward for t in scored.trajectories] == [0.3, 0.6]
    assert scored.trajectories[0].metrics["independent_reward"] == 0.9
    assert scored.trajectories[1].info["judge_explanation"] == "a=0.6"


def test_score_groups_is_loud_by_default_and_counts_skipped_groups_when_asked():
    groups = [make_group({"a": 0.3}), make_group({"a": 0.4})]
    with pytest.raises(JudgeError, match="down"):
        run(score_groups(Broken(), groups))
    scored = run(score_groups(Broken(), groups, skip_failed=True))
    assert sum(g.failed for g in scored) == 2 and "down" in scored[0].error
    assert all(t.reward is None for g in scored for t in g.trajectories)  # never silent zeros


def test_rubric_judge_scores_each_trajectory_alone(tmp_path):
    stub = StubServer()
    try:
        stub.default = json.dumps({"scores": [{"id": "1", "explanation": "fine", "score": 0.6}]})
        judge = RubricJudge("openai/m", rubric="Be polite.", api_base=stub.api_base, api_key="k", cache_dir=tmp_path)
        scores = run(judge.score_group(make_group({"a": 1}, {"a": 2})))
        assert [s.score for s in scores] == [0.6, 0.6] and len(stub.requests) == 2
        assert "Be polite." in stub.requests[0]["messages"][0]["content"]
        assert "in absolute terms" in stub.requests[0]["messages"][0]["content"]
    finally:
        stub.close()


def test_make_judge_specs():
    assert isinstance(make_judge("verifier", env_id="RagSupport-v0"), RagVerifier)
    assert make_judge("ruler:openai/gpt-4o-mini", api_base="http://127.0.0.1:1/v1").llm.api_base == "http://127.0.0.1:1/v1"
    with pytest.raises(ValueError, match="needs a model"):
        make_judge("ruler")
    with pytest.raises(ValueError, match="known judges"):
        make_judge("oracle")
    assert type(make_judge("verifier")).__name__ == "EachEnvVerifier"  # no env named: each trajectory's own env's


def test_weighted_sum_specs():
    judge = make_judge("0.7*verifier + 0.3*ruler:openai/gpt-4o-mini", env_id="RagSupport-v0")
    assert isinstance(judge, WeightedSum) and judge.weights == {"verifier": 0.7, "ruler:openai/gpt-4o-mini": 0.3}
    assert isinstance(judge.parts["verifier"], RagVerifier) and judge.relative  # a relative part makes the sum relative
    assert make_judge("verifier+grounding", env_id="RagSupport-v0").weights == {"verifier": 1.0, "grounding": 1.0}
    for bad, message in [("x*verifier+grounding", "bad weight"), ("verifier+verifier", "repeated"), ("0.5*+grounding", "bad or")]:
        with pytest.raises(ValueError, match=message):
            make_judge(bad, env_id="RagSupport-v0")
    with pytest.raises(ValueError, match="weights must be >= 0"):
        make_judge("-1*verifier+grounding", env_id="RagSupport-v0")


def test_make_judge_imports_a_judge_of_your_own(tmp_path):
    """``pkg.module:NAME`` and ``file.py:NAME`` name a Judge, or a class or function making one;
    anything else is a clear error naming the known specs."""
    from judgegym.judges import make_judge
    from judgegym.judges.grounding import GroundingJudge

    assert isinstance(make_judge("judgegym.judges.grounding:GroundingJudge"), GroundingJudge)
    source = tmp_path / "my_judge.py"
    source.write_text(
        "from judgegym.judges.base import JudgeScore, PointwiseJudge\n"
        "class Constant(PointwiseJudge):\n"
        "    async def score(self, trajectory):\n"
        "        return JudgeScore(score=0.25)\n"
        "JUDGE = Constant()\n"
        "NOT_A_JUDGE = 3\n"
    )
    judge = make_judge(f"{source}:JUDGE")
    assert judge.score_one_sync(Trajectory(scenario_id="s")).score == 0.25
    with pytest.raises(ValueError, match="not a judgegym Judge"):
        make_judge(f"{source}:NOT_A_JUDGE")
    with pytest.raises(ValueError, match="has no 'missing'"):
        make_judge(f"{source}:missing")
    with pytest.raises(ValueError, match="nor an importable MODULE:NAME"):
        make_judge("no_such_package_xyz:Judge")
    with pytest.raises(ValueError, match="needs a model"):
        make_judge("ruler")
