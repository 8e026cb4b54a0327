"""Summarize-v0: read a long document section by section with tools, then summarise it within a
word limit.

Documents are generated per seed (train and test use disjoint seed streams and name pools) or
come from a user JSONL file. The agent lists and reads sections; its final plain-text answer
is the summary, graded by `SummaryVerifier`.
"""

from __future__ import annotations

import copy
import difflib
import random
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from ...formats.summarize import continued, part_header, request, section_line, shown_section
from ...judges.base import Judge
from ...tools import Tool, ToolError, ToolSet
from ...trajectory import Message
from ..base import ChatEnv, Episode
from .documents import KIND_LABELS, KINDS, generate_scenario, natural_kind
from .scenario import ScenarioError, Section, SummaryScenario, check_scenario, load_scenarios
from .verifier import SummaryVerifier

SPLITS: tuple[str, ...] = ("train", "test")
"""Generated splits. Their documents come from disjoint random streams and name pools."""

SYSTEM_PROMPT = (
    "You write faithful, concise summaries of long documents.\n\n"
    "- The document is not in the conversation: use `list_sections` to see its sections and "
    "`read_section` to read them.\n"
    "- Give the key facts (figures, dates, decisions and who owns them) exactly as the document states them.\n"
    "- Do not add figures, names or claims the document does not contain, and keep within the word limit.\n"
    "- When you are done, reply with the summary alone as plain text, without a tool call."
)

_PAGE_RESERVE = 100  # characters kept free in a result for " (part k of n)" and the "[Part k of n follows: ...]" note
_TOKENS = re.compile(r"\S+|\s+")
_ID_CHARS = re.compile(r"^[\s\"'\[\]]+|[\s\"'\[\]]+$")


@lru_cache(maxsize=256)
def _generated(split: str, seed: int, kind: str) -> tuple[SummaryScenario, dict[str, Any]]:
    scenario = generate_scenario(split, seed, kind)
    return scenario, scenario.task()


class SummarizeEnv(ChatEnv):
    """Summarise a long document read through tools (Gymnasium env).

    Args:
        split: "train" or "test"; their documents never share organisations, people, places
            or vendors. Recorded on trajectories.
        scenarios: path to a JSONL file of user scenarios (schema: `SummaryScenario`, see
            docs/summarize.md), or a list of `SummaryScenario`; replaces generated documents.
        prefetch: put the document in the first user message: True for all of it, an int k
            for its first k sections (default False: the agent must read). Prefetched
            sections count as read for the coverage component.
        kinds: restrict generated documents to these kinds (see `documents.KINDS`).
        system_prompt: override the system prompt.
        judge: the terminal judge (default `SummaryVerifier()`).
        max_turns, max_tool_calls, max_tool_output_chars, parser, render_mode: see `ChatEnv`.
            A section longer than ``max_tool_output_chars`` is read in parts.

    Seeds: seed s plays document ``f"{split}-{kind}-{s}"`` where kind is the seed's own
    (uniform over the kinds) unless forced; ``options={"scenario_id": ...}`` replays a
    document by id and ``options={"kind": ...}`` forces a kind. User scenarios: seed s plays
    line ``s % len(scenarios)`` (of that kind, when ``options["kind"]`` is given).
    """

    def __init__(
        self,
        split: str = "train",
        scenarios: str | Path | Sequence[SummaryScenario] | None = None,
        *,
        prefetch: bool | int = False,
        kinds: Sequence[str] | None = None,
        system_prompt: str | None = None,
        judge: Judge | None = None,
        max_turns: int = 20,
        max_tool_calls: int = 40,
        **kwargs: Any,
    ):
        super().__init__(judge=judge, max_turns=max_turns, max_tool_calls=max_tool_calls, **kwargs)
        if scenarios is None and split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; choose one of {list(SPLITS)} or pass scenarios=")
        if not isinstance(prefetch, (bool, int)) or prefetch < 0:
            raise ValueError(f"prefetch must be True, False or a number of sections >= 0, got {prefetch!r}")
        unknown = sorted(set(kinds or ()) - set(KINDS))
        if unknown:
            raise ValueError(f"unknown document kinds {unknown}; choose from {list(KINDS)}")
        self.split = split
        self.prefetch = prefetch
        self.kinds = tuple(kinds) if kinds else None
        self.system_prompt = system_prompt
        self.user_scenarios: list[SummaryScenario] | None = None
        if scenarios is not None:
            if isinstance(scenarios, (str, Path)):
                self.user_scenarios = load_scenarios(scenarios)
            else:
                self.user_scenarios = list(scenarios)
                for scenario in self.user_scenarios:
                    try:
                        check_scenario(scenario)
                    except ScenarioError as exc:
                        raise ValueError(f"scenario {scenario.id!r}: {exc}") from None
                duplicates = sorted(i for i, n in Counter(s.id for s in self.user_scenarios).items() if n > 1)
                if duplicates:
                    raise ValueError(f"scenario ids must be unique; repeated: {duplicates}")
            if not self.user_scenarios:
                raise ValueError("scenarios is empty")
        self._user_index = {s.id: i for i, s in enumerate(self.user_scenarios or [])}
        self._user_tasks: dict[str, dict[str, Any]] = {}
        self._scenario: SummaryScenario | None = None
        self._sections: dict[str, Section] = {}
        self._prefetched: list[str] = []
        self._tools = ToolSet(
            [Tool.from_function(self._list_sections, name="list_sections"), Tool.from_function(self._read_section, name="read_section")],
            max_output_chars=self.max_tool_output_chars,
        )

    @classmethod
    def default_judge(cls) -> Judge:
        return SummaryVerifier()

    # -- tools (bound to the current episode's document) ---------------------------------------

    def _list_sections(self) -> str:
        """List the document's sections with their ids, titles and lengths in words."""
        assert self._scenario is not None
        doc = self._scenario
        lines = [f'"{doc.title}": {len(doc.sections)} sections, {doc.words:,} words.']
        lines += [section_line(s.id, _one_line(s.title), s.words) for s in doc.sections]
        lines.append("Read a section with read_section(section_id).")
        return "\n".join(lines)

    def _read_section(
        self,
        section_id: Annotated[str, Field(min_length=1, max_length=200)],
        part: Annotated[int, Field(ge=1, le=10_000)] = 1,
    ) -> str:
        """Read one section of the document. A section longer than one tool result comes in
        parts; the result says when another part follows.

        Args:
            section_id: The section id shown by list_sections, e.g. "s3".
            part: Which part of a long section to read, from 1.
        """
        section = self._find_section(section_id)
        title = _one_line(section.title)
        header = part_header(section.id, title, 1, 1)
        pages = _pages(section.text, max(200, self._tools.max_output_chars - len(header) - len(section.id) - _PAGE_RESERVE))
        if part > len(pages):
            raise ToolError(
                f"section {section.id!r} has {len(pages)} part{'s' * (len(pages) > 1)}; part must be between 1 and {len(pages)}"
            )
        text = f"{part_header(section.id, title, part, len(pages))}\n\n{pages[part - 1]}"
        return text + continued(section.id, part, len(pages)) if part < len(pages) else text

    def _find_section(self, section_id: str) -> Section:
        key = _ID_CHARS.sub("", section_id)
        section = self._sections.get(key)
        if section is None:
            folded = {sid.casefold(): s for sid, s in self._sections.items()}
            section = folded.get(key.casefold()) or (folded.get(f"s{key}") if key.isdigit() else None)
        if section is None:
            ids = list(self._sections)
            shown = ", ".join(ids[:60]) + (f", ... ({len(ids)} in all)" if len(ids) > 60 else "")
            close = difflib.get_close_matches(key, ids, n=1, cutoff=0.6) if len(key) <= 200 else []
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ToolError(f"no section with id {section_id!r}.{hint} Valid ids: {shown}.")
        return section

    # -- episodes -----------------------------------------------------------------------------

    def _start(self, seed: int, options: dict[str, Any]) -> Episode:
        if self.user_scenarios is not None:
            scenario = self._user_scenario(seed, options)
            task = self._user_tasks.get(scenario.id)
            if task is None:
                task = self._user_tasks[scenario.id] = scenario.task()
        else:
            scenario, task = _generated(self.split, *self._generated_key(seed, options))
        self._scenario = scenario
        self._sections = {s.id: s for s in scenario.sections}
        count = len(scenario.sections) if self.prefetch is True else int(self.prefetch)
        shown = scenario.sections[:count]
        self._prefetched = [s.id for s in shown]
        label = KIND_LABELS.get(scenario.kind, "document")
        ask = request(label, _one_line(scenario.title), scenario.word_limit)
        n, words = len(scenario.sections), scenario.words
        if len(shown) == n:
            where = f"The whole document ({n} sections, {words:,} words) follows."
        elif shown:
            where = (
                f"The document has {n} sections ({words:,} words); the first {len(shown)} follow. "
                "Use read_section to read the others (list_sections lists them)."
            )
        else:
            where = f"The document has {n} sections ({words:,} words) and is not shown here: use list_sections and read_section to read it."
        instructions = (
            "Cover its key facts (figures, dates, decisions and who owns them), stated exactly as the document gives them, "
            "and add nothing the document does not say. Reply with the summary alone, as plain text without a tool call."
        )
        parts = [ask, f"{where} {instructions}", *(shown_section(s.id, _one_line(s.title), s.text) for s in shown)]
        prompt = scenario.system_prompt or self.system_prompt or SYSTEM_PROMPT
        return Episode(
            scenario_id=scenario.id,
            messages=[Message(role="system", content=prompt), Message(role="user", content="\n\n".join(parts))],
            tools=self._tools,
            task=copy.deepcopy(task),
            info={"split": self.split, "kind": scenario.kind, "title": scenario.title, "sections": n, "words": words},
            facts={"word_limit": scenario.word_limit},
        )

    def _trajectory_info(self) -> dict[str, Any]:
        return {"prefetched_sections": list(self._prefetched)} if self._prefetched else {}

    def _generated_key(self, seed: int, options: dict[str, Any]) -> tuple[int, str]:
        if "scenario_id" in options:
            return self._parse_id(str(options["scenario_id"]))
        kind = options.get("kind")
        if kind is not None and kind not in KINDS:
            raise ValueError(f"unknown document kind {kind!r}; choose from {list(KINDS)}")
        if kind is None:
            kind = natural_kind(self.split, seed)
            if self.kinds and kind not in self.kinds:
                kind = random.Random(f"summarize/{self.split}/kinds/{seed}").choice(self.kinds)
        return seed, kind

    def _parse_id(self, scenario_id: str) -> tuple[int, str]:
        split, _, rest = scenario_id.partition("-")
        kind, _, number = rest.rpartition("-")
        if split != self.split or kind not in KINDS or not number.isdigit():
            raise ValueError(f"scenario id {scenario_id!r} is not of this env's split; expected '{self.split}-<kind>-<seed>'")
        return int(number), kind

    def _user_scenario(self, seed: int, options: dict[str, Any]) -> SummaryScenario:
        assert self.user_scenarios is not None
        if "scenario_id" in options:
            if options["scenario_id"] not in self._user_index:
                raise ValueError(f"no scenario with id {options['scenario_id']!r} in the loaded scenarios")
            return self.user_scenarios[self._user_index[options["scenario_id"]]]
        pool = self.user_scenarios
        if options.get("kind") is not None:
            pool = [s for s in pool if s.kind == options["kind"]]
            if not pool:
                raise ValueError(f"no loaded scenario has kind {options['kind']!r}")
        return pool[seed % len(pool)]


def _one_line(text: str) -> str:
    return " ".join(text.split())


@lru_cache(maxsize=4096)
def _pages(text: str, size: int) -> tuple[str, ...]:
    """`text` cut into pages of at most `size` characters between words (a word longer than a
    page is cut); whitespace, paragraph breaks included, is kept inside a page. Cached: the
    G members of a group read the same sections."""
    if len(text.strip()) <= size:
        return (text.strip(),)
    pages, page = [], ""
    for token in _TOKENS.findall(text):
        if len(page) + len(token) > size:
            if page.strip():
                pages.append(page.strip())
            page = ""
            if token.isspace():
                continue
            while len(token) > size:
                pages.append(token[:size])
                token = token[size:]
        page += token
    if page.strip() or not pages:
        pages.append(page.strip())
    return tuple(pages)


__all__ = ["SPLITS", "SYSTEM_PROMPT", "SummarizeEnv"]
