"""RULER end to end with the embedded local model through litellm's custom provider.

This asserts the pipeline, not the quality: SmolLM2-135M rarely writes the JSON a judge
must return, so the judge either scores the group or fails loudly after its corrective
retry; either way two real generations ran and were counted.
"""

from __future__ import annotations

import asyncio

import pytest

from judgegym import Group, Trajectory
from judgegym.judges import JudgeError, RulerJudge

pytest.importorskip("transformers")


def attempt(answer):
    return [
        {"role": "system", "content": "Answer from the knowledge base and cite [doc-id]."},
        {"role": "user", "content": "How long is the Aurora 2 warranty?"},
        {"role": "tool", "tool_call_id": "x", "content": "[w] The Aurora 2 has a 24-month warranty."},
        {"role": "assistant", "content": answer},
    ]


@pytest.mark.slow  # loads the embedded model
def test_ruler_with_the_embedded_model_scores_or_fails_loudly(tmp_path):
    group = Group(
        scenario_id="e2e",
        trajectories=[Trajectory(scenario_id="e2e", messages=attempt(a)) for a in ("24 months [w].", "I don't know.")],
    )
    judge = RulerJudge("local/smollm2-135m-instruct", max_tokens=120, cache_dir=tmp_path)
    try:
        scores = asyncio.run(judge.score_group(group))
    except JudgeError as exc:
        assert "local/smollm2-135m-instruct" in str(exc) and "Last reply" in str(exc)
        assert judge.usage.calls == 2  # the first reply and the corrective retry
    else:
        assert len(scores) == 2 and all(0.0 <= s.score <= 1.0 for s in scores)
        assert judge.usage.calls in (1, 2)
    assert judge.usage.prompt_tokens > 100 and judge.usage.completion_tokens > 0
