"""Judges turn finished trajectories (or groups of them) into rewards in [0, 1] (a verifier
goes below 0 for harm it can prove: `JudgeScore`).

- `Verifier`: deterministic, per trajectory (each env ships one).
- `RulerJudge`: relative LLM judge, one call per group (`ruler`, `ruler_score_group`).
- `RubricJudge`: pointwise LLM judge with a natural-language rubric.
- `GroundingJudge`: offline, embedding-based check of an answer against what the agent saw.
- `LearnedJudge`: offline and gold-free, learned from the verifiers (features + linear heads).
- `RetrievalVerifier`: a dense training reward for search-and-read tasks (supporting articles read).
- `WeightedSum`, `Gate`, `Product`, `Fallback`: combinations.
"""

from .base import BatchJudge, Judge, JudgeScore, PointwiseJudge, Verifier, score_groups
from .combine import Fallback, Gate, Product, WeightedSum
from .learned import LearnedJudge
from .llm import JudgeError, JudgeLLM
from .retrieval import RetrievalVerifier
from .rubric import RubricJudge
from .ruler import RulerJudge, ruler, ruler_score_group
from .specs import make_judge


def __getattr__(name: str):  # GroundingJudge pulls in torch: import it only when asked for
    if name == "GroundingJudge":
        from .grounding import GroundingJudge

        return GroundingJudge
    raise AttributeError(f"module 'judgegym.judges' has no attribute {name!r}")


__all__ = [
    "BatchJudge",
    "Fallback",
    "Gate",
    "GroundingJudge",
    "Judge",
    "JudgeError",
    "JudgeLLM",
    "JudgeScore",
    "LearnedJudge",
    "PointwiseJudge",
    "Product",
    "RetrievalVerifier",
    "RubricJudge",
    "RulerJudge",
    "Verifier",
    "WeightedSum",
    "make_judge",
    "ruler",
    "ruler_score_group",
    "score_groups",
]
