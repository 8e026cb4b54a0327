"""RagSupport-v0: answer a customer's question from a company knowledge base with tools.

Scenarios come from procedurally generated worlds (train and test worlds are disjoint) or
from a user JSONL file. The agent searches (BM25) and reads articles, then answers in
plain text citing ``[doc-id]``; `RagVerifier` grades the answer.
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from ...formats.rag import article_text, search_hit
from ...judges.base import Judge
from ...tools import Tool, ToolError, ToolSet
from ...trajectory import Message
from ..base import ChatEnv, Episode
from .retrieval import KnowledgeBase
from .scenario import Document, RagScenario, load_scenarios
from .verifier import RagVerifier
from .world import QUESTION_KINDS, World, build_world

SPLITS: dict[str, tuple[int, int]] = {"train": (1_000, 32), "test": (9_000, 8)}
"""split -> (first world seed, number of worlds). The seed ranges do not overlap."""

SNIPPET_CHARS = 220

SYSTEM_PROMPT = (
    "You are the customer-support assistant of {company}. "
    "Answer the customer's question using only the {company} knowledge base.\n\n"
    "- Use the `search` tool to find articles and the `read` tool to read one in full.\n"
    "- Give exact figures (prices, durations, contacts) as the articles state them, "
    "and cite every article you rely on as [doc-id].\n"
    "- If the knowledge base does not answer the question, say so plainly and offer to escalate "
    "to a human support agent. Never guess.\n"
    "- When you are done, reply with your final answer as plain text, without a tool call."
)


@lru_cache(maxsize=16)
def _world(world_seed: int, n_products: int) -> tuple[World, KnowledgeBase]:
    world = build_world(world_seed, n_products)
    return world, KnowledgeBase(world.documents)


class RagSupportEnv(ChatEnv):
    """Grounded question answering over a support knowledge base (Gymnasium env).

    Args:
        split: "train" or "test"; their worlds are disjoint. Recorded on trajectories.
        scenarios: path to a JSONL file of user scenarios (schema in `RagScenario`), or a
            list of `RagScenario`; replaces the generated worlds.
        prefetch_k: put the top-k search results for the question, in full, into the first
            user message (default 0: the agent must search). Prefetched articles count as
            seen for the verifier.
        n_products: products per generated world (about 6 documents each, plus policy,
            shipping, contact and filler articles).
        n_worlds: how many worlds of the split to cycle through (default: all of them).
        kinds: restrict generated questions to these kinds (see `QUESTION_KINDS`).
        system_prompt: override the system prompt ("{company}" is filled in).
        judge: the terminal judge (default `RagVerifier()`).
        max_turns, max_tool_calls, max_tool_output_chars, parser, render_mode: see `ChatEnv`.

    Seeds: seed s plays scenario ``f"{split}-{s}"`` in world ``s % n_worlds``; ``options=
    {"scenario_id": ...}`` replays a scenario by id and ``options={"kind": ...}`` forces a
    question kind.
    """

    def __init__(
        self,
        split: str = "train",
        scenarios: str | Path | Sequence[RagScenario] | None = None,
        *,
        prefetch_k: int = 0,
        n_products: int = 80,
        n_worlds: int | None = None,
        kinds: Sequence[str] | None = None,
        system_prompt: str | None = None,
        judge: Judge | None = None,
        max_turns: int = 8,
        max_tool_calls: int = 12,
        **kwargs: Any,
    ):
        super().__init__(judge=judge, max_turns=max_turns, max_tool_calls=max_tool_calls, **kwargs)
        if scenarios is None and split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; choose one of {sorted(SPLITS)} or pass scenarios=")
        if prefetch_k < 0:
            raise ValueError(f"prefetch_k must be >= 0, got {prefetch_k}")
        unknown = sorted(set(kinds or ()) - set(QUESTION_KINDS))
        if unknown:
            raise ValueError(f"unknown question kinds {unknown}; choose from {list(QUESTION_KINDS)}")
        self.split = split
        self.prefetch_k = prefetch_k
        self.n_products = n_products
        first_seed, total = SPLITS.get(split, (0, 1))
        self.n_worlds = min(n_worlds or total, total) if scenarios is None else 0
        if self.n_worlds < 0 or (scenarios is None and self.n_worlds == 0):
            raise ValueError(f"n_worlds must be between 1 and {total}, got {n_worlds}")
        self._first_world_seed = first_seed
        self.kinds = tuple(kinds) if kinds else None
        self.system_prompt = system_prompt
        self.user_scenarios: list[RagScenario] | None = None
        if scenarios is not None:
            self.user_scenarios = load_scenarios(scenarios) if isinstance(scenarios, (str, Path)) else list(scenarios)
            if not self.user_scenarios:
                raise ValueError("scenarios is empty")
        self._user_index = {s.id: i for i, s in enumerate(self.user_scenarios or [])}
        self._user_kbs: dict[str, KnowledgeBase] = {}
        self._kb: KnowledgeBase | None = None
        self._tools = ToolSet(
            [Tool.from_function(self._search, name="search"), Tool.from_function(self._read, name="read")],
            max_output_chars=self.max_tool_output_chars,
        )

    @classmethod
    def default_judge(cls) -> Judge:
        return RagVerifier()

    # -- tools (bound to the current episode's knowledge base) ---------------------------

    def _search(self, query: Annotated[str, Field(min_length=1, max_length=2000)], k: Annotated[int, Field(ge=1, le=20)] = 5) -> str:
        """Search the knowledge base (BM25 keyword search) and list the best-matching articles.

        Args:
            query: Keywords or a question, e.g. "Aurora 2 Pro warranty".
            k: How many articles to return (1-20).
        """
        assert self._kb is not None
        hits = self._kb.search(query, k)
        if not hits:
            return f"No articles match {query!r}. Try other keywords."
        return "\n\n".join(search_hit(doc.id, doc.title, _snippet(doc.text)) for doc, _ in hits)

    def _read(self, doc_id: Annotated[str, Field(min_length=1, max_length=200)]) -> str:
        """Read one knowledge-base article in full.

        Args:
            doc_id: The article id shown in search results, e.g. "aurora-2-pro-warranty".
        """
        assert self._kb is not None
        doc = self._kb.get(doc_id.strip().strip("[]").strip())
        if doc is None:
            close = difflib.get_close_matches(doc_id, self._kb.ids, n=3, cutoff=0.6) if len(doc_id) <= 200 else []
            hint = f" Did you mean {', '.join(close)}?" if close else " Use search to find article ids."
            raise ToolError(f"no article with id {doc_id!r}.{hint}")
        return _format_doc(doc)

    # -- episodes -----------------------------------------------------------------------

    def _start(self, seed: int, options: dict[str, Any]) -> Episode:
        if self.user_scenarios is not None:
            scenario, kb = self._user_scenario(seed, options)
            company, world_seed = "the company", None
        else:
            scenario, kb, world = self._generated_scenario(seed, options)
            company, world_seed = world.company, world.seed
        self._kb = kb
        question = scenario.question
        if self.prefetch_k:
            docs = [doc for doc, _ in kb.search(question, self.prefetch_k)]
            if docs:
                articles = "\n\n".join(self._tools.truncate(_format_doc(doc)) for doc in docs)
                question = f"{question}\n\nArticles that may help:\n\n{articles}"
        prompt = (scenario.system_prompt or self.system_prompt or SYSTEM_PROMPT).replace("{company}", company)
        task = scenario.model_dump(exclude={"documents", "system_prompt"})
        return Episode(
            scenario_id=scenario.id,
            messages=[Message(role="system", content=prompt), Message(role="user", content=question)],
            tools=self._tools,
            task=task,
            info={"split": self.split, "kind": scenario.kind, "company": company, "world": world_seed},
        )

    def _generated_scenario(self, seed: int, options: dict[str, Any]) -> tuple[RagScenario, KnowledgeBase, World]:
        if "scenario_id" in options:
            seed = self._seed_from_id(str(options["scenario_id"]))
        kind = options.get("kind")
        if kind is not None and kind not in QUESTION_KINDS:
            raise ValueError(f"unknown question kind {kind!r}; choose from {list(QUESTION_KINDS)}")
        rng = random.Random(f"ragsupport/{self.split}/{seed}")
        if kind is None and self.kinds:
            kind = rng.choice(self.kinds)
        world, kb = _world(self._first_world_seed + seed % self.n_worlds, self.n_products)
        return world.sample_scenario(rng, f"{self.split}-{seed}", kind), kb, world

    def _seed_from_id(self, scenario_id: str) -> int:
        split, _, number = scenario_id.rpartition("-")
        if split != self.split or not number.isdigit():
            raise ValueError(f"scenario id {scenario_id!r} is not of this env's split; expected '{self.split}-<seed>'")
        return int(number)

    def _user_scenario(self, seed: int, options: dict[str, Any]) -> tuple[RagScenario, KnowledgeBase]:
        assert self.user_scenarios is not None
        if "scenario_id" in options:
            if options["scenario_id"] not in self._user_index:
                raise ValueError(f"no scenario with id {options['scenario_id']!r} in the loaded scenarios")
            scenario = self.user_scenarios[self._user_index[options["scenario_id"]]]
        else:
            scenario = self.user_scenarios[seed % len(self.user_scenarios)]
        kb = self._user_kbs.get(scenario.id)
        if kb is None:
            kb = self._user_kbs[scenario.id] = KnowledgeBase(scenario.documents)
        return scenario, kb


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS].rsplit(" ", 1)[0] + " ..."


def _format_doc(doc: Document) -> str:
    return article_text(doc.id, doc.title, doc.text)
