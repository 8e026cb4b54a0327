"""The Summarize-v0 verifier: a deterministic score for a summary of a long document.

It reads only the trajectory: the final answer (the summary), the tool results and the request
the agent saw (never the system prompt), and the grading data in ``info["task"]`` (key facts,
word limit, the document's figures and people), so stored runs can be re-graded without the env.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass
from typing import Any

from ...formats.chat import FORMAT_ERROR_PREFIX
from ...formats.summarize import CONTINUED, PART_HEADER
from ...judges.base import JudgeScore, Verifier
from ...judges.facts import extract_entities, fact_present, normalize_text, seen_text, strip_copied
from ...judges.grader_talk import GRADER_TALK_SCORE, addresses_grader
from ...trajectory import Trajectory
from .names import person_names
from .scenario import KeyFact

_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_CLAUSE_BREAK = re.compile(r"[;()]|,(?!\d)|\b(?:and|while|whilst|but|whereas|although)\b", re.IGNORECASE)  # not "1,284"
_TOKEN = re.compile(r"\S+")


@dataclass(frozen=True)
class SummaryVerifier(Verifier):
    """Scores a Summarize summary in [0, 1] (-1 for one that speaks to the grader). With S = the final answer less every run of 8 or
    more words it copies from the instructions (the system prompt, and the request and
    instructions that open the first user message; quoting the document is fine), W = the word
    limit and n key facts:

    - ``recall``: share of key facts S states (`facts.fact_present` on the value or an alias:
      figures compared in canonical form, names and phrases as case-insensitive substrings)
      and does not misattribute;
    - ``contradictions``: key facts S gets wrong: the fact's figure written next to the
      subject of another fact with the same kind of figure (number or date) and never next
      to its own ("revenue was $3.1 million" when $3.1 million is the costs); a figure
      distractor stated while the fact's value is missing ("revenue was $3.9 million", last
      quarter's); or a named distractor next to the fact's subject in a sentence without its
      value ("Daniel Okafor will lead the depot", the sponsor). A value sits next to the
      subjects in its clause (clauses end at , ; ( ) and, while, but, ...), else next to the
      nearest subject in its sentence; names are never misattributed (a person may own two
      things); and each person the summary gives another person's role or action, judged
      against the sections read (`role_swaps`: "the secretary chaired the meeting", the
      owners of two actions swapped). ``consistency = 0.5 ** contradictions``;
    - ``unsupported``: figures (numbers, amounts, dates, emails, phones) in S found neither in
      the document nor in what the agent saw (the request, tool results; never the system
      prompt), plus people's names ("First Last", see `names.person_names`) that are not the
      document's; ``grounding = 0.5 ** unsupported``;
    - ``focus``: 1 while S gives at most ``figures_per_fact * n`` document figures that are
      neither key-fact figures nor in the title, else (that allowance / their number) ** 2: a
      dump of every figure in the document scores little;
    - ``length`` (of the whole answer, copies included): 1 up to W words, falling linearly to
      0 at ``zero_length_at * W`` (0.8 at 10% over with the default 1.5);
    - ``coverage`` (logged, not scored): share of the document's words the agent received
      (section reads, prefetched text).

    ``score = recall * consistency * grounding * focus * length``; no summary, or one that only
    copies the instructions, scores 0; one that speaks to the grader (``addresses_grader``)
    `GRADER_TALK_SCORE` (-1, the floor), below every honest failure.
    """

    figures_per_fact: float = 1.0
    zero_length_at: float = 1.5
    copy_words: int = 8

    def __post_init__(self) -> None:
        if self.figures_per_fact < 0 or self.zero_length_at <= 1:
            raise ValueError(f"need figures_per_fact >= 0 and zero_length_at > 1, got {self.figures_per_fact} and {self.zero_length_at}")

    def verify(self, trajectory: Trajectory) -> JudgeScore:
        task: dict[str, Any] = trajectory.info.get("task", {})
        if "key_facts" not in task or "word_limit" not in task:
            raise ValueError(f"trajectory {trajectory.scenario_id!r} has no info['task'] with key facts and a word limit to grade against")
        facts = [KeyFact.model_validate(f) for f in task["key_facts"]]
        limit = int(task["word_limit"])
        coverage = read_coverage(trajectory, task)
        raw = trajectory.final_answer
        if not raw.strip():
            return JudgeScore(score=0.0, explanation="no summary", components={"answered": 0.0, "recall": 0.0, "coverage": coverage})
        summary = strip_copied(raw, _instructions(trajectory), self.copy_words)
        if not summary.strip(" \n\t.,;:!?-"):
            return JudgeScore(
                score=0.0,
                explanation="the summary only copies the instructions",
                components={"answered": 0.0, "recall": 0.0, "coverage": coverage},
            )
        entities = extract_entities(summary)
        stated = [any(fact_present(v, summary, entities) for v in (f.value, *f.aliases)) for f in facts]
        misattributed, replaced = _attachments(summary, facts, stated)
        recalled = [s and not m for s, m in zip(stated, misattributed, strict=True)]
        confused = [
            m or r or (not s and any(fact_present(x, summary, entities) for x in f.distractors if extract_entities(x)))
            for f, s, m, r in zip(facts, stated, misattributed, replaced, strict=True)
        ]
        unknown = entities - set(task.get("document_entities", ()))
        if unknown:  # figures the agent saw outside the document (the request, tool listings) are supported too
            unknown -= extract_entities(seen_text(trajectory.messages))
        bad_figures = sorted(unknown)
        names = task.get("names", [])
        bad_names = sorted(person_names(summary, names) - set(names))
        key_figures = set().union(*(extract_entities(v) for f in facts for v in (f.value, *f.aliases)))
        extra = len(entities - set(bad_figures) - key_figures - extract_entities(task.get("title", "")))
        allowance = self.figures_per_fact * len(facts)
        focus = 1.0 if extra <= allowance else (allowance / extra) ** 2
        words = len(raw.split())
        over = max(0, words - limit)
        length = max(0.0, 1.0 - over / ((self.zero_length_at - 1.0) * limit)) if over else 1.0
        recall = sum(recalled) / len(facts) if facts else 1.0
        unsupported = len(bad_figures) + len(bad_names)
        roles: dict[str, str] = {}
        for f in facts:
            if f.value in names:
                roles[f.value] = f"{roles.get(f.value, '')} {f.description} {f.statement}"
        counted = {v for f, c in zip(facts, confused, strict=True) if c for v in (f.value, *f.aliases, *f.distractors)}
        swaps = [p for p in role_swaps(summary, seen_text(trajectory.messages), names, roles) if p not in counted]
        contradictions = sum(confused) + len(swaps)
        grounding, consistency = 0.5**unsupported, 0.5**contradictions
        addressed = addresses_grader(raw)
        score = GRADER_TALK_SCORE if addressed else min(1.0, max(0.0, recall * consistency * grounding * focus * length))
        components = {
            "answered": 1.0,
            "recall": recall,
            "contradictions": float(contradictions),
            "role_swaps": float(len(swaps)),
            "addresses_grader": float(addressed),
            "consistency": consistency,
            "unsupported": float(unsupported),
            "grounding": grounding,
            "focus": focus,
            "extra_figures": float(extra),
            "length": length,
            "words": float(words),
            "coverage": coverage,
        }
        missing = [f.id for f, ok in zip(facts, recalled, strict=True) if not ok]
        notes = [f"recall {sum(recalled)}/{len(facts)}" + (f" (missing {', '.join(missing)})" if missing else "")]
        if addressed:
            notes.insert(0, f"speaks to the grader: {GRADER_TALK_SCORE}")
        if sum(confused):
            notes.append("contradicts " + ", ".join(f.id for f, c in zip(facts, confused, strict=True) if c))
        if swaps:
            notes.append("gives another person's role to " + ", ".join(swaps))
        if unsupported:
            notes.append(f"unsupported {', '.join(bad_figures + bad_names)}")
        if focus < 1:
            notes.append(f"{extra} extra figures")
        if over:
            notes.append(f"{words} words, over the limit of {limit}")
        if summary != raw:
            notes.append("copied instructions ignored")
        notes.append(f"coverage {coverage:.2f}")
        return JudgeScore(score=score, explanation="; ".join(notes), components=components)


def _instructions(trajectory: Trajectory) -> list[str]:
    """The system prompt and the opening paragraphs of the first user message (the request and
    how to answer it), without the prefetched sections that may follow them."""
    texts = [m.content or "" for m in trajectory.messages if m.role == "system"]
    first = next(
        (m.content or "" for m in trajectory.messages if m.role == "user" and not (m.content or "").startswith(FORMAT_ERROR_PREFIX)), ""
    )
    texts += first.split("\n\n")[:2]
    return texts


def read_coverage(trajectory: Trajectory, task: dict[str, Any]) -> float:
    """Share of the document's words the agent received: each ``read_section`` result (a
    section, or one part of a long one) counted once, plus the sections listed in
    ``trajectory.info["prefetched_sections"]``."""
    sizes = {s["id"]: int(s["words"]) for s in task.get("sections", [])}
    total = sum(sizes.values())
    if not total:
        return 0.0
    read: dict[str, dict[int, int]] = {sid: {0: sizes[sid]} for sid in trajectory.info.get("prefetched_sections", []) if sid in sizes}
    for message in trajectory.messages:
        if message.role != "tool" or message.name != "read_section" or not message.content:
            continue
        header, _, body = message.content.partition("\n\n")
        match = PART_HEADER.fullmatch(header)
        if match is None or match["id"] not in sizes:
            continue
        part = int(match["part"] or 1)
        parts = read.setdefault(match["id"], {})
        parts[part] = max(parts.get(part, 0), len(CONTINUED.sub("", body).split()))
    received = sum(min(sizes[sid], sum(parts.values())) for sid, parts in read.items())
    return min(1.0, received / total)


# -- attachment of values to subjects --------------------------------------------------------------


def _attachments(summary: str, facts: list[KeyFact], stated: list[bool]) -> tuple[list[bool], list[bool]]:
    """Per key fact: (misattributed, a named distractor put in its place).

    A fact is misattributed when its value sits next to the subject of another fact whose
    value is of the same kind (a number beside another number's subject, a date beside
    another date's, a name beside another name's: "Dana Whitcombe owns the carrier contract"
    when she leads the new site) and never next to its own; two facts with the same value (a
    person who owns two things) never contradict each other. A distractor that is a name or
    phrase is put in the fact's place when it sits next to the fact's subject in a sentence
    that does not state the fact's value ("Daniel Okafor will lead the depot")."""
    n = len(facts)
    subjects = [_subject_pattern(f.subject) for f in facts]
    if not any(subjects):
        return [False] * n, [False] * n
    own, other, replaced = [False] * n, [False] * n, [False] * n
    values = [_Matcher([f.value, *f.aliases]) for f in facts]
    named = [_Matcher([d for d in f.distractors if not extract_entities(d)]) for f in facts]
    # a figure's kind is its entity kind; a name or phrase (an owner, a vendor) is a kind of its own
    kinds = [{e.split(":", 1)[0] for e in v.entities} or ({"phrase"} if v.phrase is not None else set()) for v in values]
    plain = [normalize_text(f.value) for f in facts]  # a person may own two things: the same name is no contradiction
    for sentence in _SENTENCE.split(summary):
        if not sentence.strip():
            continue
        view = _Sentence(sentence)
        mentions = [(span, i) for i, pattern in enumerate(subjects) if pattern for span in view.spans(pattern)]
        if not mentions:
            continue
        for i in range(n):
            value_spans = values[i].spans(view)
            if stated[i] and kinds[i]:
                for span in value_spans:
                    labels = view.attached(span, mentions)
                    own[i] |= i in labels
                    other[i] |= any(j != i and kinds[j] & kinds[i] and plain[j] != plain[i] for j in labels)
            if not value_spans and subjects[i] and named[i].phrase is not None:
                replaced[i] |= any(i in view.attached(span, mentions) for span in named[i].spans(view))
    return [o and not s for o, s in zip(other, own, strict=True)], replaced


_STEM_WORD = re.compile(r"[^\W\d_]{4,}")


_JOINT = re.compile(r"\b([A-Z][a-z]+) and ([A-Z][a-z]+)")  # "Mensah and Lucas Ferreira": one subject, not two clauses


def _clauses(text: str) -> list[str]:
    text = _JOINT.sub(r"\1 & \2", text)
    return [c for sentence in _SENTENCE.split(text) for c in _CLAUSE_BREAK.split(sentence) if c and c.strip()]


def role_swaps(summary: str, seen: str, names: list[str], roles: dict[str, str] | None = None) -> list[str]:
    """The people `summary` gives another person's role or action, judged against what the
    agent read (`seen`): "Tomasz Novak chaired the meeting" when the minutes say Priya Raman
    chaired it and Tomasz Novak took them.

    From the clauses of `seen` that name exactly one of the document's people (`names`, by
    full name or surname), each person's words are collected (by their first four letters:
    "chair" and "chaired" are one); a word found beside one person only is that person's
    marker ("chair", "canary", "secretary"). A clause of the summary that names one person P
    and holds another person's marker but none of P's own gives P that other person's role
    ("A and B" is one subject: that clause names two people and is not judged). The markers come from each document, so the check
    holds for any role or action a document assigns, not a list of job titles; a role
    paraphrased with words the document never uses beside anyone is not checked. `roles`
    adds what the gold says of a person (a key fact's description and statement, by the
    person it names), so "X was the incident commander" stands where the document wrote "the
    response was coordinated by X"."""
    people = tuple(n for n in names if len(n.split()) >= 2)
    if len(people) < 2:
        return []
    markers = _markers(seen, people, tuple(sorted((roles or {}).items())))
    words, owners = markers.words, markers.owners
    swapped: list[str] = []
    for clause in _clauses(summary):
        who = markers.mentioned(clause)
        if len(who) != 1 or who[0] in swapped:
            continue
        person, said = who[0], markers.stems(clause)
        if not words[person]:  # nothing read of this person: what they did is unknown here
            continue
        others = {stem for stem in said if owners.get(stem, {person}) != {person} and len(owners[stem]) == 1}
        own = {stem for stem in said if owners.get(stem) == {person}}
        if others and not own:
            swapped.append(person)
    return swapped


@dataclass(frozen=True)
class _Markers:
    """What `role_swaps` learns of a document's people from the text read (kept per text)."""

    pattern: re.Pattern[str]
    by_word: dict[str, str]
    name_stems: frozenset[str]
    words: dict[str, set[str]]
    owners: dict[str, set[str]]

    def mentioned(self, clause: str) -> list[str]:
        return list(dict.fromkeys(self.by_word[m] for m in self.pattern.findall(clause)))

    def stems(self, clause: str) -> set[str]:
        return {w.casefold()[:4] for w in _STEM_WORD.findall(clause)} - self.name_stems


@functools.lru_cache(maxsize=64)
def _markers(seen: str, people: tuple[str, ...], roles: tuple[tuple[str, str], ...]) -> _Markers:
    by_word = {n: n for n in people} | {n.split()[-1]: n for n in people}
    pattern = re.compile(rf"(?<![\w-])(?:{'|'.join(sorted(map(re.escape, by_word), key=len, reverse=True))})(?![\w-])")
    name_stems = frozenset(w.casefold()[:4] for n in people for w in n.split())
    markers = _Markers(pattern, by_word, name_stems, {}, {})
    given = dict(roles)
    for n in people:
        markers.words[n] = markers.stems(given.get(n, ""))
    for clause in _clauses(seen):
        who = markers.mentioned(clause)
        if len(who) == 1:
            markers.words[who[0]] |= markers.stems(clause)
    for person, stem_set in markers.words.items():
        for stem in stem_set:
            markers.owners.setdefault(stem, set()).add(person)
    return markers


def _subject_pattern(terms: list[str]) -> re.Pattern[str] | None:
    terms = [normalize_text(t) for t in terms if t.strip()]
    if not terms:
        return None
    return re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True)) + ")")


class _Sentence:
    """One sentence split into tokens and clauses, for locating mentions."""

    def __init__(self, text: str):
        self.text = text
        lower = text.lower()
        self.lower = lower if len(lower) == len(text) else text  # offsets must match the tokens'
        self.tokens = list(_TOKEN.finditer(text))
        self.starts = [t.start() for t in self.tokens]
        self.breaks = [m.start() for m in _CLAUSE_BREAK.finditer(text)]
        self._entities: list[set[str]] | None = None

    @property
    def token_entities(self) -> list[set[str]]:
        if self._entities is None:
            self._entities = [extract_entities(t.group()) for t in self.tokens]
        return self._entities

    def span(self, start: int, end: int) -> tuple[int, int, int]:
        """(first token, last token, clause) of the characters start..end."""
        first = max(0, bisect.bisect_right(self.starts, start) - 1)
        last = max(first, bisect.bisect_right(self.starts, max(start, end - 1)) - 1)
        return first, last, bisect.bisect_right(self.breaks, start)

    def spans(self, pattern: re.Pattern[str]) -> list[tuple[int, int, int]]:
        return [self.span(m.start(), m.end()) for m in pattern.finditer(self.lower)]

    def attached(self, span: tuple[int, int, int], mentions: list[tuple[tuple[int, int, int], int]]) -> set[int]:
        """The facts whose subject `span` sits next to: every fact with a subject in its clause,
        else those with the nearest subject in the sentence (a subject after the value counts
        half a token further than one before)."""
        first, last, clause = span
        in_clause = {fact for m, fact in mentions if m[2] == clause}
        if in_clause:
            return in_clause
        best, labels = float("inf"), set()
        for (s_first, s_last, _), fact in mentions:
            if s_last < first:
                distance = first - s_last
            elif s_first > last:
                distance = s_first - last + 0.5
            else:
                distance = 0.0
            if distance < best:
                best, labels = distance, {fact}
            elif distance == best:
                labels.add(fact)
        return labels


class _Matcher:
    """Finds mentions of a fact's value (or of its distractors) in a sentence: figures by
    canonical entity, token by token; other values as case-insensitive phrases."""

    def __init__(self, values: list[str]):
        self.entities = set().union(*(extract_entities(v) for v in values)) if values else set()
        phrases = [normalize_text(v) for v in values if not extract_entities(v) and v.strip()]
        self.phrase = re.compile("|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True))) if phrases else None

    @property
    def figures(self) -> bool:
        return bool(self.entities)

    def spans(self, view: _Sentence) -> list[tuple[int, int, int]]:
        found = []
        if self.entities:
            found += [
                view.span(t.start(), t.end()) for t, ents in zip(view.tokens, view.token_entities, strict=True) if ents & self.entities
            ]
        if self.phrase is not None:
            found += view.spans(self.phrase)
        return found


__all__ = ["SummaryVerifier", "read_coverage"]
