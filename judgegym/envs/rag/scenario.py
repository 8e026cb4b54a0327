"""RagSupport-v0 data: documents, scenarios, and the JSONL schema users load their own from.

A generated scenario refers to its world's knowledge base; a user scenario carries its own
documents. Both are `RagScenario` objects, so the env and the verifier see one type.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ...jsonl import ScenarioError, read_scenarios


class Document(BaseModel):
    """One knowledge-base article. `id` is what answers cite as ``[id]``."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=128, pattern=r"^[^\[\]\s]+$")  # citable as [id]: no spaces or brackets
    title: str
    text: str


class RagScenario(BaseModel):
    """One question with everything needed to grade an answer to it.

    `gold_facts` are atomic strings (numbers, amounts, names) a correct answer must state;
    `distractor_facts` are values a confused agent would give (e.g. the sibling product's
    warranty). For user scenarios `documents` is the knowledge base; generated scenarios
    leave it empty and use their world's.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    gold_facts: list[str]
    reference_answer: str
    answerable: bool = True
    supporting_doc_ids: list[str] = Field(default_factory=list)
    distractor_facts: list[str] = Field(default_factory=list)
    kind: str = "custom"
    system_prompt: str | None = None
    documents: list[Document] = Field(default_factory=list)


def load_scenarios(path: str | Path) -> list[RagScenario]:
    """Read user scenarios from JSONL, one `RagScenario` per non-blank line.

    Raises `ScenarioFileError` naming the line number and the offending field, and
    `FileNotFoundError` if the file does not exist.
    """
    return read_scenarios(path, RagScenario, _check_references)


def _check_references(scenario: RagScenario) -> None:
    if not scenario.documents:
        raise ScenarioError("documents", "at least one document is required")
    counts = Counter(doc.id for doc in scenario.documents)
    duplicates = sorted(doc_id for doc_id, n in counts.items() if n > 1)
    if duplicates:
        raise ScenarioError("documents", f"duplicate document ids {duplicates}")
    missing = [doc_id for doc_id in scenario.supporting_doc_ids if doc_id not in counts]
    if missing:
        raise ScenarioError("supporting_doc_ids", f"unknown document ids {missing}")
    if scenario.answerable and not scenario.gold_facts:
        raise ScenarioError("gold_facts", "an answerable scenario needs at least one gold fact")
