"""Scripted Summarize baselines with no LLM: a floor, a lexical lead baseline and a ceiling.

They exercise the whole loop (listing, reading, judging) and bound what a model should
score: `unhelpful` is the floor, `oracle` (which reads the gold data) the ceiling, and `lead`
the classic news-summarisation baseline (the opening sentences of each section).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...agents.base import Action, Agent

_LISTED_ID = re.compile(r"^\[([^\]\s]+)\] ", re.MULTILINE)
_WORD_LIMIT = re.compile(r"at most (\d+) words")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_CONTINUED = re.compile(r"\n\n\[Part \d+ of \d+ follows[^\n]*\]$")


def _calls(name: str, arguments: list[dict[str, Any]]) -> dict[str, Any]:
    """One assistant turn calling `name` once per arguments dict."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"call_{name}_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i, args in enumerate(arguments)
        ],
    }


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
            return _calls("list_sections", [{}])
        reads = _results(observation, "read_section")
        if not reads:
            ids = _LISTED_ID.findall(listing[-1])[: self.max_reads]
            return _calls("read_section", [{"section_id": i} for i in ids]) if ids else "The document has no readable sections."
        prompt = next((m.get("content") or "" for m in observation if m["role"] == "user"), "")
        limit = int(match.group(1)) if (match := _WORD_LIMIT.search(prompt)) else 200
        sections = []
        for result in reads:
            if result.startswith("Error"):
                continue
            body = _CONTINUED.sub("", result.partition("\n\n")[2])
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
    """Reads the sections that hold the key facts (all in one turn), then gives the scenario's
    reference summary.

    It reads the gold data in ``info["task"]``, so it is a ceiling for the verifier and a
    check of the env, not a real agent."""

    name = "oracle"

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        task = info["task"]
        sections = list(dict.fromkeys(f["section"] for f in task["key_facts"] if f.get("section")))
        if sections and not _results(observation, "read_section"):
            return _calls("read_section", [{"section_id": s} for s in sections])
        return task["reference_summary"]


BASELINES: dict[str, type[Agent]] = {a.name: a for a in (LeadAgent, UnhelpfulAgent, OracleAgent)}
"""Scripted baselines of Summarize-v0, by agent spec name."""

__all__ = ["BASELINES", "LeadAgent", "OracleAgent", "UnhelpfulAgent"]
