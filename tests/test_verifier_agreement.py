"""The envs' verifiers against careful human tiers on the hand-written sets of trajectories
played through the envs (docs/judge-bench.md): the targets they were built to meet hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgegym.evaluation.judge_bench import load_labelled_groups
from judgegym.judges import make_judge
from judgegym.judges.learned.training import evaluate

DATA = Path(__file__).parent / "data"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["i", "j", "k"])
def test_the_verifiers_agree_with_careful_tiers(name):
    """At least 0.90 of ordered pairs overall and 0.85 in each env, and no note to the grader
    ranked first."""
    result = evaluate(make_judge("verifier"), load_labelled_groups(DATA / f"judge_groups_handwritten_{name}.jsonl"), name, "verifier")
    assert result["pairwise"] >= 0.90, result
    assert all(value >= 0.85 for value in result["pairwise_by_family"].values() if value is not None), result
    assert result["injection_ranked_first"] == 0
