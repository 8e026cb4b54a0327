"""Scripted Summarize baselines with no LLM: a floor, a lexical lead baseline and a ceiling.

They exercise the whole loop (listing, reading, judging) and bound what a model should
score: `unhelpful` is the floor, `oracle` (which reads the whole document like a careful agent,
then gives the gold summary) the ceiling, and `lead` the classic news-summarisation baseline
(the opening sentences of each section).
"""

from __future__ import annotations

import re
from typing import Any

from ...agents.base import Action, Agent
from ...formats.chat import TOOL_ERROR_PREFIX, tool_call_turn
from ...formats.summarize import CONTINUED, PART_HEADER, SECTION_ID, word_limit_of

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _calls(observation: list[dict[str, Any]], name: str, arguments: list[dict[str, Any]]) -> dict[str, Any]:
    """One assistant turn calling `name` once per arguments dict (call ids unique over the episode)."""
    return tool_call_turn(name, arguments, first_id=sum(m["role"] == "tool" for m in observation))


def _results(observation: list[dict[str, Any]], name: str) -> list[str]:
    return [m.get("content") or "" for m in observation if m["role"] == "tool" and m.get("name") == name]


class LeadAgent(Agent):
    """Lists the sections, reads them all in one turn, then writes the lead sentences: the
    first sentence of every section in order, then the second ones, and so on, while they
    fit in the word limit stated in the task."""

    name = "lead"

    def __init__(self, max_reads: int = 30):
        self.max_reads = max_reads

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        listing = _results(observation, "list_sections")
        if not listing:
            return _calls(observation, "list_sections", [{}])
        reads = _results(observation, "read_section")
        if not reads:
            ids = SECTION_ID.findall(listing[-1])[: self.max_reads]
            if not ids:
                return "The document has no readable sections."
            return _calls(observation, "read_section", [{"section_id": i} for i in ids])
        prompt = next((m.get("content") or "" for m in observation if m["role"] == "user"), "")
        limit = info.get("facts", {}).get("word_limit") or word_limit_of(prompt) or 200
        sections = []
        for result in reads:
            if result.startswith(TOOL_ERROR_PREFIX):
                continue
            body = CONTINUED.sub("", result.partition("\n\n")[2])
            sections.append([s for s in _SENTENCE.split(" ".join(body.split())) if s])
        chosen: list[str] = []
        words = 0
        for rank in range(max((len(s) for s in sections), default=0)):
            for sentences in sections:
                if rank < len(sentences) and words + len(sentences[rank].split()) <= limit:
                    chosen.append(sentences[rank])
                    words += len(sentences[rank].split())
        return " ".join(chosen) or "The document could not be read."


class UnhelpfulAgent(Agent):
    """Answers at once with a generic sentence, without reading anything: the floor."""

    name = "unhelpful"

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        return "This document covers several topics that are relevant to its readers. Please read it in full for the details."


class OracleAgent(Agent):
    """A perfect summariser that happens to know the gold data in ``info["task"]``: the ceiling.

    Like a careful agent it lists the sections, reads every section it was not shown in the
    prompt (all in one turn), then the further parts of any section that comes in parts,
    and only then gives the scenario's reference summary. With more than `max_reads`
    reads to make, the sections holding a key fact come first."""

    name = "oracle"

    def __init__(self, max_reads: int = 30):
        self.max_reads = max_reads

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        task = info["task"]
        listing = _results(observation, "list_sections")
        if not listing:
            return _calls(observation, "list_sections", [{}])
        reads = _results(observation, "read_section")
        budget = self.max_reads - len(reads)
        if not reads:
            prompt = next((m.get("content") or "" for m in observation if m["role"] == "user"), "")
            shown = set(SECTION_ID.findall(prompt))
            unread = [i for i in SECTION_ID.findall(listing[-1]) if i not in shown]
            key = {f["section"] for f in task["key_facts"] if f.get("section")}
            if len(unread) > budget:
                unread.sort(key=lambda i: i not in key)  # stable: document order within each group
            if unread:
                return _calls(observation, "read_section", [{"section_id": i} for i in unread[:budget]])
        headers = [PART_HEADER.fullmatch(result.partition("\n")[0]) for result in reads]
        parts = [match for match in headers if match is not None and match["part"] is not None]
        have = {(m["id"], int(m["part"])) for m in parts}
        missing = [(m["id"], k) for m in parts if m["part"] == "1" for k in range(2, int(m["of"]) + 1) if (m["id"], k) not in have]
        if missing and budget > 0:
            return _calls(observation, "read_section", [{"section_id": i, "part": k} for i, k in missing[:budget]])
        return task["reference_summary"]


BASELINES: dict[str, type[Agent]] = {a.name: a for a in (LeadAgent, UnhelpfulAgent, OracleAgent)}
"""Scripted baselines of Summarize-v0, by agent spec name."""

__all__ = ["BASELINES", "LeadAgent", "OracleAgent", "UnhelpfulAgent"]
