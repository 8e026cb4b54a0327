"""Scripted RagSupport baselines with no LLM: a floor, a lexical baseline and a ceiling.

They exercise the whole loop (tool calls, citations, judging) and bound what a model
should score: `unhelpful` is the floor, `oracle` (which searches and reads like a careful
agent, then gives the gold answer) the ceiling.
"""

from __future__ import annotations

import re
from typing import Any

from ...agents.base import Action, Agent
from ...formats.chat import tool_call_turn, tool_exchanges
from ...formats.rag import CITATION
from ...judges.facts import ABSTENTION, ESCALATION, fact_present, normalize_text

_RESULT_ID = re.compile(r"^\[([^\[\]\s]+)\]", re.MULTILINE)
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an the is are was were of for to in on at by with and or my i me do does how what which who whom long much many "
    "can you your our it its this that if".split()
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


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
            return tool_call_turn("search", [{"query": question, "k": 5}], first_id=0)
        if len(outputs) == 1:
            ids = _RESULT_ID.findall(outputs[0])
            if not ids:
                return "I could not find this in the knowledge base. I can escalate it to a human support agent."
            return tool_call_turn("read", [{"doc_id": ids[0]}], first_id=1)
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
    """A perfect agent that happens to know the gold data in ``info["task"]``: the ceiling.

    Like a careful agent it searches the question, reads the supporting articles (and every
    article the reference answer cites), then gives the reference answer. With no supporting
    ids in the scenario it reads the top `hits` search results, and when those do not state
    every gold fact, searches for the missing facts and reads those hits too. It cites only
    articles it read through tools: the answer's citations of articles it could not read are
    dropped, and the supporting articles it read (or, without supporting ids, the articles
    stating a gold fact) are cited as ``[doc-id]`` when the reference answer does not. On an
    unanswerable question it abstains and offers escalation, adding either when the
    reference answer lacks it. An empty or incomplete reference answer is completed with
    the missing gold facts.
    """

    name = "oracle"

    def __init__(self, hits: int = 3):
        self.hits = hits

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        task = info["task"]
        calls = tool_exchanges(observation)
        searches = [c.result or "" for c in calls if c.name == "search"]
        tried = {c.arguments.get("doc_id") for c in calls if c.name == "read"}
        articles = {c.arguments["doc_id"]: c.result or "" for c in calls if c.name == "read" and c.executed}
        if not searches:
            return tool_call_turn("search", [{"query": _question(observation), "k": 5}], first_id=len(calls))
        supporting: list[str] = list(task.get("supporting_doc_ids", []))
        explore = not supporting and task.get("answerable", True)
        wanted = supporting + CITATION.findall(task["reference_answer"])
        if explore:
            wanted += [doc_id for result in searches for doc_id in _RESULT_ID.findall(result)[: self.hits]]
        unread = [doc_id for doc_id in dict.fromkeys(wanted) if doc_id not in tried]
        if unread:
            return tool_call_turn("read", [{"doc_id": doc_id} for doc_id in unread], first_id=len(calls))
        missing = [fact for fact in task["gold_facts"] if not any(fact_present(fact, text) for text in articles.values())]
        if explore and missing and len(searches) == 1:
            return tool_call_turn("search", [{"query": " ".join([*missing, _question(observation)]), "k": 5}], first_id=len(calls))
        return _answer(task, articles)


def _answer(task: dict[str, Any], articles: dict[str, str]) -> str:
    """The reference answer, citing only articles read, completed where it falls short."""
    text = task["reference_answer"].strip()
    if any(doc_id not in articles for doc_id in CITATION.findall(text)):
        text = CITATION.sub(lambda m: m.group() if m.group(1) in articles else "", text)
        text = " ".join(re.sub(r"\s+([.,;:!?])", r"\1", text).split())
    if not task.get("answerable", True):
        additions = [
            "I could not find this in the knowledge base." * (not ABSTENTION.search(text)),
            "I can escalate your question to a human support agent." * (not ESCALATION.search(text)),
        ]
        return " ".join(part for part in (text, *additions) if part)
    missing = [fact for fact in task["gold_facts"] if not fact_present(fact, text)]
    if missing:
        text = f"{text} {'; '.join(missing)}.".strip()
    sources = [doc_id for doc_id in task.get("supporting_doc_ids", []) if doc_id in articles]
    if not task.get("supporting_doc_ids"):
        stating = (next((d for d, body in articles.items() if fact_present(fact, body)), None) for fact in task["gold_facts"])
        sources = [d for d in dict.fromkeys(stating) if d] or CITATION.findall(text) or list(articles)[:1]
    uncited = "".join(f" [{doc_id}]" for doc_id in dict.fromkeys(sources) if f"[{doc_id}]" not in text)
    body, end = (text[:-1], text[-1]) if text[-1:] in ".!?" else (text, "")
    return f"{body}{uncited}{end}"


BASELINES: dict[str, type[Agent]] = {a.name: a for a in (SearchQuoteAgent, UnhelpfulAgent, OracleAgent)}
"""Scripted baselines of RagSupport-v0, by agent spec name."""

__all__ = ["BASELINES", "OracleAgent", "SearchQuoteAgent", "UnhelpfulAgent"]
