"""The RagSupport-v0 verifier: a deterministic score for a grounded support answer.

It reads only the trajectory: the final answer, the text the agent saw (system and user
turns, tool results) and the gold data in ``info["task"]``, so stored runs can be re-graded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...judges.base import JudgeScore, Verifier
from ...judges.facts import ABSTENTION, ESCALATION, extract_entities, fact_present
from ...trajectory import Trajectory

_CITATION = re.compile(r"\[([^\[\]\s]{1,128})\]")


@dataclass(frozen=True)
class RagVerifier(Verifier):
    """Scores a RagSupport answer in [0, 1]. With A = the final answer:

    - ``recall``: share of gold facts A states (numbers compared in canonical form);
    - ``unsupported``: numbers, amounts, dates, emails, phones in A found neither in any
      text the agent saw nor among the gold facts (computed values such as a price
      difference are gold facts); ``grounding = 0.5 ** unsupported``;
    - ``citation``: share of ``[doc-id]`` citations naming a document the agent saw, times
      (0.5 + 0.5 * share of supporting documents cited) when those are known; 0 with no
      citation;
    - ``distractor``: 0.5 when A gives a distractor value (e.g. the sibling product's
      warranty) without all gold facts, else 1;
    - ``abstained`` / ``escalated``: A says the knowledge base lacks the answer / offers a
      human agent;
    - ``length``: 1 up to `max_words` words, falling linearly to 0.8 at twice that.

    Answerable: ``(0.8 * recall + 0.2 * citation) * grounding * distractor * length``,
    halved if A also abstains (a hedge). Unanswerable: ``abstained * (0.8 + 0.2 *
    escalated) * grounding * length``. No final answer (truncated episode): 0.
    """

    max_words: int = 120

    def verify(self, trajectory: Trajectory) -> JudgeScore:
        task: dict[str, Any] = trajectory.info.get("task", {})
        if "gold_facts" not in task:
            raise ValueError(f"trajectory {trajectory.scenario_id!r} has no info['task'] with gold facts to grade against")
        answer = trajectory.final_answer
        if not answer.strip():
            return JudgeScore(score=0.0, explanation="no final answer", components={"recall": 0.0, "answered": 0.0})
        seen_text = "\n".join(m.content or "" for m in trajectory.messages if m.role != "assistant")
        answer_entities = extract_entities(answer)
        gold: list[str] = list(task["gold_facts"])
        supported = extract_entities(seen_text).union(*(extract_entities(f) for f in gold))
        unsupported = sorted(answer_entities - supported)
        grounding = 0.5 ** len(unsupported)
        abstained = bool(ABSTENTION.search(answer))
        escalated = bool(ESCALATION.search(answer))
        words = len(answer.split())
        length = 1.0 if words <= self.max_words else max(0.8, 1.0 - 0.2 * (words - self.max_words) / self.max_words)
        cited = set(_CITATION.findall(answer))
        seen_ids = set(_CITATION.findall(seen_text))
        citation = _citation_score(cited, seen_ids, set(task.get("supporting_doc_ids", [])))
        components = {
            "answered": 1.0,
            "grounding": grounding,
            "unsupported": float(len(unsupported)),
            "citation": citation,
            "abstained": float(abstained),
            "escalated": float(escalated),
            "length": length,
            "words": float(words),
        }
        notes = [f"unsupported {', '.join(unsupported)}"] if unsupported else []
        if task.get("answerable", True):
            found = [f for f in gold if fact_present(f, answer, answer_entities)]
            recall = len(found) / len(gold) if gold else 1.0
            confused = any(fact_present(f, answer, answer_entities) for f in task.get("distractor_facts", [])) and recall < 1
            distractor = 0.5 if confused else 1.0
            hedge = 0.5 if abstained else 1.0
            score = (0.8 * recall + 0.2 * citation) * grounding * distractor * length * hedge
            components.update(recall=recall, distractor=distractor)
            missing = [f for f in gold if f not in found]
            notes[:0] = [f"recall {len(found)}/{len(gold)}" + (f" (missing {missing})" if missing else "")]
            notes += ["gives a distractor value"] * confused + ["hedges with an abstention"] * abstained
        else:
            score = float(abstained) * (0.8 + 0.2 * escalated) * grounding * length
            notes[:0] = ["unanswerable: " + ("abstained" if abstained else "answered instead of abstaining")]
            notes += ["offered escalation"] * escalated
        notes.append(f"citation {citation:.2f}")
        return JudgeScore(score=min(1.0, max(0.0, score)), explanation="; ".join(notes), components=components)


def _citation_score(cited: set[str], seen_ids: set[str], supporting: set[str]) -> float:
    if not cited:
        return 0.0
    validity = len(cited & seen_ids) / len(cited)
    if not supporting:
        return validity
    return validity * (0.5 + 0.5 * len(cited & supporting) / len(supporting))
