"""Summarize-v0 data: a document in sections, its key facts, and the JSONL schema users load
their own scenarios from.

Generated and user scenarios are both `SummaryScenario` objects; `SummaryScenario.task` is the
compact grading data stored in ``Trajectory.info["task"]``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from ...jsonl import ScenarioError, ScenarioFileError, read_scenarios
from ...judges.facts import extract_entities, fact_present
from .names import person_names


class Section(BaseModel):
    """One section of the document; the agent reads it by `id` (default ``s1``, ``s2``, ...)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default="", pattern=r"^[^\s\[\]]*$")
    title: str = Field(min_length=1)
    text: str = Field(min_length=1)

    @property
    def words(self) -> int:
        return len(self.text.split())


class KeyFact(BaseModel):
    """A fact a good summary states.

    `value` is the checkable part: a figure ("$4.2 million", "2025-03-14", "14.5%"), compared
    in canonical form, or a name or phrase ("Priya Raman", "Leeds"), matched as a
    case-insensitive substring; `aliases` are other accepted forms ("$4.2M", "Raman").
    `subject` lists words that name what the fact is about ("revenue"): a value written next to
    another fact's subject counts as misattributed. `distractors` are values a confused
    summary would give instead (last quarter's revenue, the rejected vendor). `statement` is a
    sentence stating the fact (default "description: value.").
    """

    model_config = ConfigDict(extra="forbid")

    id: str = ""
    description: str = Field(min_length=1)
    value: str = Field(min_length=1)
    aliases: list[str] = Field(default_factory=list)
    subject: list[str] = Field(default_factory=list)
    distractors: list[str] = Field(default_factory=list)
    section: str | None = None
    statement: str = ""


class SummaryScenario(BaseModel):
    """One document to summarise, with everything needed to grade a summary of it.

    Missing ids are filled in (sections ``s1``.., key facts ``k1``..), a missing statement
    is "description: value." and a missing `reference_summary` joins the statements. Check
    cross-field consistency with `check_scenario` (`load_scenarios` does).
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    title: str = Field(min_length=1)
    sections: list[Section] = Field(min_length=1)
    key_facts: list[KeyFact] = Field(min_length=1)
    word_limit: int = Field(default=250, ge=10)
    kind: str = "custom"
    people: list[str] = Field(default_factory=list)
    reference_summary: str = ""
    system_prompt: str | None = None

    _figures: frozenset[str] | None = PrivateAttr(default=None)
    """The document's entities when its writer already knows them (generated documents), sparing
    `task` a scan of the whole text."""

    @model_validator(mode="after")
    def _fill_defaults(self) -> SummaryScenario:
        for i, section in enumerate(self.sections, start=1):
            section.id = section.id.strip() or f"s{i}"
        for i, fact in enumerate(self.key_facts, start=1):
            fact.id = fact.id.strip() or f"k{i}"
            fact.statement = fact.statement.strip() or f"{fact.description}: {fact.value}."
        if not self.reference_summary.strip():
            self.reference_summary = " ".join(dict.fromkeys(f.statement for f in self.key_facts))
        return self

    @property
    def words(self) -> int:
        """Words in the document (all sections)."""
        return sum(s.words for s in self.sections)

    def text(self) -> str:
        """The whole document as plain text: the title, then each section's title and text."""
        return "\n\n".join([self.title, *(f"{s.title}\n\n{s.text}" for s in self.sections)])

    def task(self) -> dict[str, Any]:
        """The JSON-able grading data stored in ``Trajectory.info["task"]``: the key facts, the
        word limit, the sections' ids, titles and word counts, and the document's inventory of
        figures (canonical entities) and people's names, for hallucination checks."""
        text = self.text()
        names = person_names(text, self.people) | set(self.people)
        figures = self._figures if self._figures is not None else extract_entities(text)
        return {
            "kind": self.kind,
            "title": self.title,
            "word_limit": self.word_limit,
            "key_facts": [fact.model_dump() for fact in self.key_facts],
            "sections": [{"id": s.id, "title": s.title, "words": s.words} for s in self.sections],
            "document_entities": sorted(figures),
            "names": sorted(names),
            "reference_summary": self.reference_summary,
        }


def check_scenario(scenario: SummaryScenario) -> None:
    """Raise `ScenarioError` if the scenario is inconsistent: duplicate section or key-fact
    ids, a key fact pointing at an unknown section or whose value is not in the document, a
    distractor that states a key fact's value, or a reference summary that is over the word
    limit or misses a key fact."""
    for name, ids in (("sections", [s.id for s in scenario.sections]), ("key_facts", [f.id for f in scenario.key_facts])):
        duplicates = sorted(i for i, n in Counter(ids).items() if n > 1)
        if duplicates:
            raise ScenarioError(name, f"duplicate ids {duplicates}")
    section_ids = {s.id for s in scenario.sections}
    text = scenario.text()
    entities = extract_entities(text)
    for i, fact in enumerate(scenario.key_facts):
        if fact.section is not None and fact.section not in section_ids:
            raise ScenarioError(f"key_facts.{i}.section", f"unknown section id {fact.section!r}; sections are {sorted(section_ids)}")
        if not fact_present(fact.value, text, entities):
            raise ScenarioError(f"key_facts.{i}.value", f"{fact.value!r} does not occur in the document")
        for j, distractor in enumerate(fact.distractors):
            stated = [other for other in scenario.key_facts if fact_present(other.value, distractor)]
            if stated:
                whose = "the fact's own value" if stated[0] is fact else f"the value of key fact {stated[0].id!r}"
                raise ScenarioError(f"key_facts.{i}.distractors.{j}", f"{distractor!r} states {whose} {stated[0].value!r}")
    words = len(scenario.reference_summary.split())
    if words > scenario.word_limit:
        raise ScenarioError("reference_summary", f"{words} words, over the word limit of {scenario.word_limit}")
    summary_entities = extract_entities(scenario.reference_summary)
    for fact in scenario.key_facts:
        if not any(fact_present(v, scenario.reference_summary, summary_entities) for v in (fact.value, *fact.aliases)):
            raise ScenarioError("reference_summary", f"does not state key fact {fact.id!r} ({fact.value!r})")


def load_scenarios(path: str | Path) -> list[SummaryScenario]:
    """Read user scenarios from JSONL, one `SummaryScenario` per non-blank line.

    Raises `ScenarioFileError` naming the file, the line number and the offending field, and
    `FileNotFoundError` if the file does not exist.
    """
    return read_scenarios(path, SummaryScenario, check_scenario)


__all__ = [
    "KeyFact",
    "ScenarioError",
    "ScenarioFileError",
    "Section",
    "SummaryScenario",
    "check_scenario",
    "load_scenarios",
]
