"""The CustomerSupport-v0 verifier: the final database must equal the gold one, the customer
must have been told what they need to know, and no policy rule may have been broken.

It reads only the trajectory (``info["task"]`` from the scenario, ``info["database"]`` and
``info["policy_violations"]`` recorded by the env), so stored runs can be re-graded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...judges.base import JudgeScore, Verifier
from ...judges.facts import extract_entities, fact_present
from ...trajectory import TerminationReason, Trajectory
from .db import diff_mismatches


@dataclass(frozen=True)
class SupportVerifier(Verifier):
    """Scores a CustomerSupport episode in [0, 1] (tau-bench's criterion, plus information):

    - ``db_match``: 1 if the final database's digest equals the digest of the initial
      database with the scenario's gold actions replayed, else 0 (``db_errors`` counts the
      rows whose change differs from the gold change);
    - ``info``: share of the scenario's ``required_info`` strings stated in the assistant's
      messages (numbers compared in canonical form: "$84.50" = "84.5");
    - ``policy_violations``: how many times the agent touched data of a customer it had not
      identified, or refunded outside the return window.

    ``score = db_match * info * (policy_violations == 0)``. Also logged: ``user_stop`` (the
    customer ended the conversation rather than a limit).
    """

    def verify(self, trajectory: Trajectory) -> JudgeScore:
        task: dict[str, Any] = trajectory.info.get("task", {})
        database: dict[str, Any] | None = trajectory.info.get("database")
        if "expected_hash" not in task or database is None:
            raise ValueError(
                f"trajectory {trajectory.scenario_id!r} lacks info['task']['expected_hash'] or info['database']; "
                "it was not recorded by CustomerSupport-v0"
            )
        db_match = database["hash"] == task["expected_hash"]
        mismatched = diff_mismatches(database["diff"], task["expected_diff"])
        said = "\n".join(m.content or "" for m in trajectory.messages if m.role == "assistant")
        entities = extract_entities(said)
        required: list[str] = task.get("required_info", [])
        missing = [fact for fact in required if not fact_present(fact, said, entities)]
        info = 1.0 - len(missing) / len(required) if required else 1.0
        violations = int(trajectory.info.get("policy_violation_count", len(trajectory.info.get("policy_violations", []))))
        score = float(db_match) * info * (violations == 0)
        notes = ["database matches the gold end state" if db_match else f"database differs from the gold in {', '.join(mismatched[:5])}"]
        notes.append(f"told {len(required) - len(missing)}/{len(required)} required facts" + (f" (missing {missing})" if missing else ""))
        if violations:
            rules = sorted({v["rule"] for v in trajectory.info.get("policy_violations", [])})
            notes.append(f"{violations} policy violation(s): {', '.join(rules)}")
        components = {
            "db_match": float(db_match),
            "db_errors": float(len(mismatched)),
            "info": info,
            "policy_violations": float(violations),
            "user_stop": float(trajectory.termination is TerminationReason.USER_STOP),
        }
        return JudgeScore(score=score, explanation="; ".join(notes), components=components)


__all__ = ["SupportVerifier"]
