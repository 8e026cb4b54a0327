"""`RetrievalVerifier`: a dense process reward for search-and-read tasks (spec ``retrieval``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..formats.chat import TOOL_ERROR_PREFIX, tool_exchanges
from ..formats.rag import ARTICLE_HEADER
from ..trajectory import Trajectory
from .base import JudgeScore, Verifier


@dataclass(frozen=True)
class RetrievalVerifier(Verifier):
    """A dense process reward for training on a search-and-read task (RagSupport-v0, or any
    whose tools show articles as ``[doc-id] Title`` and whose ``info["task"]`` names the
    ``supporting_doc_ids``): did the agent read what answers the question? Not a grade of
    the answer; use it beside the verifier, e.g. ``0.8*verifier+0.2*retrieval``.

    Answerable question: the share of the supporting articles (``info["task"]
    ["supporting_doc_ids"]``) the agent read in full, by a successful ``read`` or prefetched
    into the prompt. Unanswerable (no supporting articles): 1 when a search came back,
    since the right answer needs a look before saying the knowledge base lacks it.

    Why it helps GRPO where the verifier alone does not: a small policy's sampled answers
    mostly miss every gold fact, so the verifier gives most groups no spread; reading the
    right article varies far more between samples and comes before any correct answer, so
    it orders a group the way the verifier would if the answers had come out. It needs no
    judgement of the text, so it cannot be gamed by wording; reading everything earns it
    fully but leaves the 0.8 of the verifier unearned."""

    def verify(self, trajectory: Trajectory) -> JudgeScore:
        task: dict[str, Any] = trajectory.info.get("task", {})
        if "supporting_doc_ids" not in task:
            raise ValueError(f"trajectory {trajectory.scenario_id!r} has no info['task'] with supporting_doc_ids (a RagSupport-v0 episode)")
        supporting = set(task["supporting_doc_ids"])
        read: set[str] = set()
        searched = False
        for call in tool_exchanges(trajectory.messages):
            if not call.result or call.result.startswith(TOOL_ERROR_PREFIX):
                continue
            if call.name == "read":
                read.update(ARTICLE_HEADER.findall(call.result))
            elif call.name == "search":
                searched = True
        for message in trajectory.messages:  # prefetched articles
            if message.role == "user" and message.content:
                read.update(ARTICLE_HEADER.findall(message.content))
        if supporting:
            share = len(supporting & read) / len(supporting)
            return JudgeScore(
                score=share,
                explanation=f"read {len(supporting & read)} of {len(supporting)} supporting articles",
                components={"supporting_read": share, "searched": float(searched)},
            )
        return JudgeScore(
            score=float(searched),
            explanation="unanswerable: " + ("searched" if searched else "never searched"),
            components={"supporting_read": 1.0, "searched": float(searched)},
        )


__all__ = ["RetrievalVerifier"]
