"""RubricJudge: a pointwise LLM judge that scores one trajectory in absolute terms (0 to 1)
against a natural-language rubric. Same prompt rendering, validation, retries and cache as
`RulerJudge`."""

from __future__ import annotations

from typing import Any

from ..trajectory import Trajectory
from .base import JudgeScore, PointwiseJudge
from .llm import Usage
from .ruler import RulerJudge


class RubricJudge(PointwiseJudge):
    """Scores each trajectory alone. `rubric` says what a good trajectory is; `llm` options
    are those of `JudgeLLM` (api_base, timeout, retries, cache, ...)."""

    def __init__(self, model: str, *, rubric: str | None = None, max_corrections: int = 1, **llm: Any):
        self._ruler = RulerJudge(model, rubric=rubric, max_corrections=max_corrections, **llm)

    @property
    def usage(self) -> Usage:
        """Totals of this judge's LLM calls."""
        return self._ruler.usage

    async def score(self, trajectory: Trajectory) -> JudgeScore:
        scores, usage = await self._ruler.score_in_order([trajectory])
        score, explanation = scores["1"]
        components = {
            "rubric": score,
            "judge_prompt_tokens": float(usage.prompt_tokens),
            "judge_completion_tokens": float(usage.completion_tokens),
            "judge_cost": usage.cost,
        }
        return JudgeScore(score=score, explanation=explanation, components=components)


__all__ = ["RubricJudge"]
