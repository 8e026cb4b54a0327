"""Scripted RagSupport baselines with no LLM: a floor, a lexical baseline and a ceiling.

They exercise the whole loop (tool calls, citations, judging) and bound what a model
should score: `unhelpful` is the floor, `oracle` (which reads the gold data) the ceiling.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...agents.base import Action, Agent
from ...judges.facts import normalize_text

_RESULT_ID = re.compile(r"^\[([^\[\]\s]+)\]", re.MULTILINE)
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an the is are was were of for to in on at by with and or my i me do does how what which who whom long much many "
    "can you your our it its this that if".split()
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _tool_call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}],
    }


def _question(observation: list[dict[str, Any]]) -> str:
    user = next(m["content"] for m in observation if m["role"] == "user")
    return user.split("\n\nArticles that may help:", 1)[0]


def _tool_outputs(observation: list[dict[str, Any]]) -> list[str]:
    return [m.get("content") or "" for m in observation if m["role"] == "tool"]


class SearchQuoteAgent(Agent):
    """Searches the question, reads the top article, and answers with the article's sentences
    that share the most words with the question, citing the article."""

    name = "search-quote"

    def __init__(self, sentences: int = 2):
        self.sentences = sentences

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        question = _question(observation)
        outputs = _tool_outputs(observation)
        if not outputs:
            return _tool_call("search", {"query": question, "k": 5}, "call_search")
        if len(outputs) == 1:
            ids = _RESULT_ID.findall(outputs[0])
            if not ids:
                return "I could not find this in the knowledge base. I can escalate it to a human support agent."
            return _tool_call("read", {"doc_id": ids[0]}, "call_read")
        article = outputs[-1]
        doc_id = _RESULT_ID.findall(article)[:1]
        body = article.split("\n\n", 1)[-1]
        keywords = set(_WORD.findall(normalize_text(question))) - _STOP
        sentences = [s for s in _SENTENCE.split(" ".join(body.split())) if s]
        ranked = sorted(sentences, key=lambda s: -len(keywords & set(_WORD.findall(s.lower()))))
        best = [s for s in sentences if s in ranked[: self.sentences]]
        citation = f" [{doc_id[0]}]" if doc_id else ""
        return " ".join(best) + citation


class UnhelpfulAgent(Agent):
    """Answers at once without looking anything up: the floor."""

    name = "unhelpful"

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        return "Thanks for reaching out! Please check our website for more details."


class OracleAgent(Agent):
    """Reads the scenario's supporting articles, then gives its reference answer.

    It reads the gold data in ``info["task"]``, so it is a ceiling for the verifier and a
    check of the env, not a real agent."""

    name = "oracle"

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        task = info["task"]
        read = len(_tool_outputs(observation))
        supporting = task.get("supporting_doc_ids", [])
        if read < len(supporting):
            return _tool_call("read", {"doc_id": supporting[read]}, f"call_read_{read}")
        return task["reference_answer"]


BASELINES: dict[str, type[Agent]] = {a.name: a for a in (SearchQuoteAgent, UnhelpfulAgent, OracleAgent)}
"""Scripted baselines of RagSupport-v0, by agent spec name."""

__all__ = ["BASELINES", "OracleAgent", "SearchQuoteAgent", "UnhelpfulAgent"]
