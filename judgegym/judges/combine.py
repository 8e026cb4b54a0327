"""Combinations of judges: weighted sum, gate, product, fallback. Component scores stay
visible, prefixed by each part's name (``verifier/recall``, ``ruler/score``). A part's
penalty (a verifier's score below 0 for proven harm, `JudgeScore`) survives the combination."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Mapping

from ..trajectory import Group
from .base import SCORE_FLOOR, Judge, JudgeScore, Verifier

log = logging.getLogger("judgegym.judges")


class _Combination(Judge):
    """Scores a group with every part (concurrently) and merges the results."""

    def __init__(self, parts: Mapping[str, Judge]):
        if not parts:
            raise ValueError("a combination needs at least one judge")
        self.parts = dict(parts)

    @property
    def relative(self) -> bool:  # type: ignore[override]
        return any(part.relative for part in self.parts.values())

    async def _all(self, group: Group) -> dict[str, list[JudgeScore]]:
        results = await asyncio.gather(*(part.score_group(group) for part in self.parts.values()))
        return dict(zip(self.parts, results, strict=True))

    def _merge(self, scores: dict[str, JudgeScore], total: float, how: str) -> JudgeScore:
        components: dict[str, float] = {}
        for name, score in scores.items():
            components[f"{name}/score"] = score.score
            components.update({f"{name}/{key}": value for key, value in score.components.items()})
        explanation = f"{how} = {total:.3f}; " + "; ".join(f"{name}: {s.score:.3f} ({s.explanation})" for name, s in scores.items())
        return JudgeScore(score=min(1.0, max(SCORE_FLOOR, total)), explanation=explanation, components=components)


class WeightedSum(_Combination):
    """``sum(w_i * s_i) / sum(w_i)`` over named (judge, weight) parts."""

    def __init__(self, parts: Mapping[str, tuple[Judge, float]]):
        super().__init__({name: judge for name, (judge, _) in parts.items()})
        self.weights = {name: float(weight) for name, (_, weight) in parts.items()}
        if any(w < 0 for w in self.weights.values()) or sum(self.weights.values()) <= 0:
            raise ValueError(f"weights must be >= 0 with a positive sum, got {self.weights}")

    async def score_group(self, group: Group) -> list[JudgeScore]:
        results = await self._all(group)
        total_weight = sum(self.weights.values())
        merged = []
        for i in range(len(group)):
            scores = {name: results[name][i] for name in self.parts}
            total = sum(self.weights[n] * s.score for n, s in scores.items()) / total_weight
            merged.append(self._merge(scores, total, "weighted sum"))
        return merged


class Product(_Combination):
    """``prod(s_i)``: every part must be satisfied (tau-bench style). Where a part is below 0
    (a penalty), the lowest part instead: a product of two penalties is no reward."""

    async def score_group(self, group: Group) -> list[JudgeScore]:
        results = await self._all(group)
        merged = []
        for i in range(len(group)):
            scores = {name: results[name][i] for name in self.parts}
            values = [s.score for s in scores.values()]
            merged.append(self._merge(scores, min(values) if min(values) < 0 else math.prod(values), "product"))
        return merged


class Gate(_Combination):
    """`judge`'s score counts only where `gate` scores at least `threshold`; else `floor`, or the
    gate's own score where it is a penalty (below 0).

    E.g. ``Gate(gate=RagVerifier(), judge=RulerJudge(...), threshold=0.5)``: RULER ranks
    only the answers that got the facts right. The gate runs first; the judge then scores
    the passing trajectories as a group of their own (skipped when none passes).
    """

    def __init__(self, gate: Judge, judge: Judge, threshold: float = 0.5, floor: float = 0.0, names: tuple[str, str] = ("gate", "judge")):
        super().__init__({names[0]: gate, names[1]: judge})
        self.threshold, self.floor, self.names = threshold, floor, names

    async def score_group(self, group: Group) -> list[JudgeScore]:
        gate_name, judge_name = self.names
        gate_scores = await self.parts[gate_name].score_group(group)
        passed = [s.score >= self.threshold for s in gate_scores]
        judged: list[JudgeScore | None] = [None] * len(group)
        survivors = [i for i, ok in enumerate(passed) if ok]
        if survivors:  # a relative judge compares the survivors only
            sub = Group(scenario_id=group.scenario_id, trajectories=[group.trajectories[i] for i in survivors])
            for i, score in zip(survivors, await self.parts[judge_name].score_group(sub), strict=True):
                judged[i] = score
        merged = []
        for i, gate_score in enumerate(gate_scores):
            scores = {gate_name: gate_score}
            if judged[i] is not None:
                scores[judge_name] = judged[i]
            penalty = min(0.0, gate_score.score)
            total = judged[i].score if passed[i] and judged[i] is not None else penalty if penalty < 0 else self.floor
            result = self._merge(scores, total, "gated")
            result.components[f"{gate_name}/passed"] = float(passed[i])
            merged.append(result)
        return merged


class Fallback(Judge):
    """`primary` (a verifier) where it can grade every trajectory of a group, else `fallback`.

    A verifier that lacks the gold data it grades against raises ValueError; then the whole
    group goes to `fallback`, so one group is never scored on two scales. Each score says
    which judge it came from: the explanation opens with ``"<name> picked: "`` and the
    component ``picked/<name>`` is 1. The first pick of each kind is logged.
    """

    def __init__(self, primary: Verifier, fallback: Judge, names: tuple[str, str] = ("verifier", "learned")):
        self.primary, self.fallback, self.names = primary, fallback, names
        self._logged: set[str] = set()

    @property
    def relative(self) -> bool:  # type: ignore[override]
        return self.fallback.relative

    async def score_group(self, group: Group) -> list[JudgeScore]:
        try:
            scores, name = [self.primary.verify(t) for t in group.trajectories], self.names[0]
        except ValueError as exc:
            scores, name = await self.fallback.score_group(group), self.names[1]
            reason = f"no gold data ({exc})"
        else:
            reason = "gold data present"
        if name not in self._logged:
            self._logged.add(name)
            log.info("auto judge picked %s for group %s: %s", name, group.scenario_id, reason)
        return [
            score.model_copy(
                update={"explanation": f"{name} picked: {score.explanation}", "components": {**score.components, f"picked/{name}": 1.0}}
            )
            for score in scores
        ]


__all__ = ["Fallback", "Gate", "Product", "WeightedSum"]
