"""`LearnedJudge`: a gold-free pointwise judge learned from the verifiers.

It reads only what a trajectory holds without gold data (the instructions, the tool calls and
their results, the customer's words, the final answer), turns it into a few dozen features
(`trajectory_features`), and scores them with a linear head per task family, trained on
verifier-labelled episodes of the envs' train splits (`judgegym.benchmarks.learned_judge`).
The weights ship with the package (`learned_weights.json`, a few kB).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..trajectory import Trajectory
from .base import BatchJudge, JudgeScore
from .facts import (
    ABSTENTION,
    ADDRESSES_GRADER,
    ESCALATION,
    FORMAT_ERROR_PREFIX,
    canonical_number,
    extract_entities,
    seen_text,
    strip_copied,
    with_years,
)

WEIGHTS_PATH = Path(__file__).with_name("learned_weights.json")
"""The shipped weights, written by ``python -m judgegym.benchmarks.learned_judge train``."""

FAMILIES = ("rag", "support", "summarize", "generic")
"""Task families, each with its own head; `family_of` says which a trajectory belongs to."""

FEATURES = (
    # the final answer
    "answered",
    "log_words",
    "over_limit",
    "copied_instructions",
    "copied_seen",
    "listed",
    "entities",
    "entity_seen_share",
    "entity_context",
    "entity_context_min",
    "figures_misattached",
    "figures_fit_elsewhere",
    "addresses_judge",
    "hedges",
    "abstained",
    "abstained_x_match",
    "question_names_seen",
    "abstained_x_unseen",
    "abstained_x_escalation",
    "figures_x_unseen",
    # embeddings (GroundingJudge's components)
    "support",
    "min_similarity",
    "coverage",
    "relevance",
    "grounding",
    "unsupported",
    "question_match",
    # tool use
    "tool_calls",
    "tool_error_share",
    "called_tools",
    "format_errors",
    "truncated",
    # retrieval
    "citations",
    "cited_seen_share",
    "cited_read_share",
    "searched",
    "reads",
    "entities_read_share",
    "figures_off_subject",
    "cited_off_subject",
    "figures_wrong_product",
    "figures_off_question",
    # conversations with actions
    "identified",
    "asked_identity",
    "refused_calls",
    "writes_ok",
    "writes_failed",
    "write_before_identified",
    "write_unmentioned_order",
    "unconfirmed_writes",
    "false_claims",
    "outcome_told",
    "outside_window",
    "dispute_refunded",
    "needless_escalation",
    "assistant_turns",
    # documents read in sections
    "read_share",
    "title_share",
    "sections_covered",
)
"""The feature names, in the order of the weight vectors."""

_ONLY = {
    "rag": (
        "citations", "cited_seen_share", "cited_read_share", "searched", "reads", "figures_off_subject", "cited_off_subject",
        "figures_wrong_product", "figures_off_question",
    ),
    "support": (
        "identified", "asked_identity", "refused_calls", "writes_ok", "writes_failed", "write_before_identified",
        "write_unmentioned_order", "unconfirmed_writes", "false_claims", "outcome_told", "outside_window",
        "dispute_refunded", "needless_escalation", "assistant_turns",
    ),
    "summarize": ("read_share", "title_share", "sections_covered"),
}  # fmt: skip
FAMILY_FEATURES: dict[str, tuple[str, ...]] = {
    family: FEATURES if family == "generic" else tuple(f for f in FEATURES if not any(f in o for k, o in _ONLY.items() if k != family))
    for family in FAMILIES
}
"""The features each family's head reads: those of the answer, the embeddings and the tool
calls, and its own kind's (retrieval, actions or sections); the generic head reads all. A
head that could weigh another kind's features would learn from coincidences of its own
training data (an answer to a product question that happens to ask for an email)."""

_CITATION = re.compile(r"\[([^\[\]\s]{1,128})\]")
_ARTICLE_HEADER = re.compile(r"^\[([^\[\]\s]{1,128})\] ", re.MULTILINE)
_LISTED_SECTION = re.compile(r"^\[([^\]\s]+)\] (.+?) \(\d+ words\)$", re.MULTILINE)
_WORD_LIMIT = re.compile(r"at most (\d+) words")
_CONTENT_WORD = re.compile(r"[^\W\d_]{3,}")
_NAME = re.compile(r"(?<![\w-])[A-Z][\w'-]*")
_PERSON = re.compile(r"(?<![\w-])[A-Z][a-z]+ [A-Z][a-z]+(?:-[A-Z][a-z]+)?(?![\w-])")
_CLAUSE_END = re.compile(r"[;:]\s|,\s|\s[-\u2013\u2014]\s|[()]|\band\b")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_PART_END = re.compile(r";\s|,\s|\s[-\u2013\u2014]\s|[()]|\b(?:and|or|but|plus|while|whereas|against|versus|vs)\b")
_LABEL_END = re.compile(r":\s")
_FIGURE_TEXT = re.compile(r"\$?\d[\d,]*(?:\.\d+)?%?")
_FUNCTION_WORDS = frozenset(
    "the for and with from that this these those are was were has have had its per each you your our will can "
    "all also but not any into than then which who whom there their they them been being about".split()
)
_HEDGE = re.compile(
    r"\b(?:i think|i believe|i guess|probably|maybe|perhaps|might be|may be around|as far as i know|if i recall|"
    r"i'm not (?:entirely |completely |100% )?(?:sure|certain)|not (?:entirely )?sure|roughly|around|approximately|typically|usually)\b",
    re.IGNORECASE,
)
_ASK_IDENTITY = re.compile(
    r"\b(?:e-?mail|order (?:id|number))\b[^.?\n]{0,80}\?|\b(?:could|can|may) (?:you|i)[^.?\n]{0,60}\b(?:e-?mail|order)\b", re.I
)
_YES = re.compile(r"\b(?:yes|yeah|yep|go ahead|please do|sure|that's fine|that is fine|ok(?:ay)?|sounds good|do it|correct)\b", re.I)
_TODAY = re.compile(r"Today is (\d{4}-\d{2}-\d{2})")
_WINDOW = re.compile(r"at most (\d+) days after (?:the )?deliver", re.I)
_THRESHOLD = re.compile(r"over \$([\d.,]+)")
_DISPUTE = re.compile(
    r"never (?:arrived|came|got it|received)|charged (?:me )?twice|double[- ]charged|didn'?t (?:authori[sz]e|make)|unauthori[sz]ed", re.I
)
_CLAIM = re.compile(
    r"\b(?:i|we)(?:'ve| have)?(?: (?:just|now|already|successfully|gone ahead and))? ([a-z]+ed)\b"
    r"|\b(?:has|have|was|is) (?:now |already |successfully |been )*(?:been )?(?:fully )?([a-z]+ed)\b",
    re.IGNORECASE,
)
_TICKET = re.compile(r"\bT-\d+\b")
_NEGATED = re.compile(r"\b(?:nothing|not|no|never|neither|nor)\b[^.!?\n,;]*$|n't\b[^.!?\n,;]*$", re.I)  # "Nothing has been changed"
_REFERENCE = re.compile(r"(?<![\w-])[A-Z]{1,4}-?\d{3,}(?![\w-])")  # "T-1007", "RA-55120", "O-29492"
_ORDER_MENTION = re.compile(r"(?<![\w-])#?(?:[Oo]-?)?(\d{4,})(?![\w-])")
_AMOUNT = re.compile(r"\$\s?(\d[\d,]*(?:\.\d+)?)")
_READ_TOOLS = frozenset({"find", "get", "list", "search", "read", "lookup", "check", "show", "fetch", "view"})
_WRITE_TOOLS = ("refund", "cancel", "exchange", "update", "escalate", "change", "create", "delete", "issue", "send", "set")
_STOP_TOKEN = "###STOP###"
_NAME_RUN = re.compile(r"(?<![\w-])(?:[A-Z][\w'-]*|\d+(?:[.,]\d+)*)(?:[ \t]+(?:[A-Z][\w'-]*|\d+(?:[.,]\d+)*)(?![\w-]))+")  # "Zephyr 6 Lite"


# -- features ---------------------------------------------------------------------------------


@dataclass
class _Call:
    name: str
    arguments: dict[str, Any]
    result: str = ""
    ok: bool = False
    after_user: str = ""  # the customer's last words before the call


@dataclass
class _View:
    """What a trajectory shows without gold: instructions, question, calls, evidence, answer."""

    system: str
    question: str
    answer: str
    calls: list[_Call] = field(default_factory=list)
    user_texts: list[str] = field(default_factory=list)
    assistant_texts: list[str] = field(default_factory=list)
    format_errors: int = 0
    tool_names: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, trajectory: Trajectory) -> _View:
        system = "\n".join(m.content or "" for m in trajectory.messages if m.role == "system")
        first_user = next((m.content or "" for m in trajectory.messages if m.role == "user"), "")
        view = cls(system=system, question=first_user.strip().partition("\n\n")[0], answer=trajectory.final_answer)
        view.tool_names = {str(t.get("function", t).get("name", "")) for t in trajectory.tools if isinstance(t, dict)}
        pending: dict[str, _Call] = {}
        last_user = ""
        for message in trajectory.messages:
            if message.role == "user":
                text = message.content or ""
                if text.startswith(FORMAT_ERROR_PREFIX):
                    view.format_errors += 1
                else:
                    view.user_texts.append(text)
                    last_user = text
            elif message.role == "assistant":
                if message.content:
                    view.assistant_texts.append(message.content)
                for call in message.tool_calls or []:
                    try:
                        arguments = json.loads(call.function.arguments)
                    except (ValueError, RecursionError):
                        arguments = {}
                    pending[call.id] = _Call(call.function.name, arguments if isinstance(arguments, dict) else {}, after_user=last_user)
                    view.calls.append(pending[call.id])
                    view.tool_names.add(call.function.name)
            elif message.role == "tool" and message.tool_call_id in pending:
                call = pending.pop(message.tool_call_id)
                call.result = message.content or ""
                call.ok = not call.result.startswith("Error")
        return view


def family_of(trajectory: Trajectory) -> str:
    """The task family whose head scores `trajectory`: ``support`` (customer, orders and
    actions), ``summarize`` (a document read in sections), ``rag`` (search and read a
    knowledge base), else ``generic``; told by the tools offered or called."""
    names = _View.of(trajectory).tool_names
    if names & {"find_customer", "refund_order", "cancel_order", "get_order"}:
        return "support"
    if names & {"read_section", "list_sections"}:
        return "summarize"
    if names & {"search", "read"}:
        return "rag"
    return "generic"


def trajectory_features(trajectory: Trajectory, grounding: JudgeScore | None = None) -> dict[str, float]:
    """The gold-free features of `trajectory`, by `FEATURES` name, each roughly in [0, 1] or
    a small count. `grounding` is `GroundingJudge`'s score of it (computed when omitted)."""
    if grounding is None:
        from .grounding import GroundingJudge

        grounding = GroundingJudge().score_many([trajectory])[0]
    view, seen, answer = _read(trajectory)
    g = grounding.components
    answered = bool(answer.strip(" \n\t.,;:!?-"))
    words = len(view.answer.split())
    limit_match = _WORD_LIMIT.search(view.question) or _WORD_LIMIT.search(view.system)
    limit = int(limit_match.group(1)) if limit_match else 150
    entities = extract_entities(answer)
    seen_entities = extract_entities(seen)
    context, context_min = _entity_context(answer, seen)
    abstained = bool(ABSTENTION.search(answer))
    ok_results = [c.result for c in view.calls if c.ok]
    names_seen = _names_seen(view.question, seen)
    features = {
        "answered": float(answered),
        "log_words": math.log1p(words) / math.log(1000),
        "over_limit": min(3.0, max(0.0, words / limit - 1)),
        "copied_instructions": _copied_share(view.answer, [view.system, view.question]),
        "copied_seen": _copied_share(view.answer, ok_results),
        "listed": listed_share(answer),
        "entities": math.log1p(len(extract_entities(" ".join(_said_parts(answer))))) / math.log(30),
        "entity_seen_share": len(_grounded(entities, seen_entities)) / len(entities) if entities else 1.0,
        "entity_context": context,
        "entity_context_min": context_min,
        "figures_misattached": figures_misattached(answer, seen),
        "figures_fit_elsewhere": figures_fit_elsewhere(answer, seen),
        "addresses_judge": float(bool(ADDRESSES_GRADER.search(view.answer))),
        "hedges": float(bool(_HEDGE.search(answer))),
        "abstained": float(abstained),
        "abstained_x_match": float(abstained) * g.get("question_match", 0.0),
        "question_names_seen": names_seen,
        "abstained_x_unseen": float(abstained) * (1.0 - names_seen),
        "abstained_x_escalation": float(abstained and bool(ESCALATION.search(answer))),
        "figures_x_unseen": float(bool(entities) and not abstained) * (1.0 - names_seen),
        "support": g.get("support", 0.0),
        "min_similarity": g.get("min_similarity", 0.0),
        "coverage": g.get("coverage", 0.0),
        "relevance": g.get("relevance", 0.0),
        "grounding": g.get("grounding", 0.0),
        "unsupported": math.log1p(g.get("unsupported", 0.0)),
        "question_match": g.get("question_match", 0.0),
        "tool_calls": math.log1p(len(view.calls)) / math.log(30),
        "tool_error_share": sum(not c.ok for c in view.calls) / len(view.calls) if view.calls else 0.0,
        "called_tools": float(bool(view.calls)),
        "format_errors": math.log1p(view.format_errors),
        "truncated": float((trajectory.termination is not None and trajectory.termination.truncated) or not view.answer.strip()),
    }
    features.update(_retrieval_features(view, answer, seen))
    features.update(_action_features(view))
    features.update(_section_features(view, answer))
    return {name: float(features[name]) for name in FEATURES}


def _read(trajectory: Trajectory) -> tuple[_View, str, str]:
    """(the trajectory's view, the text its tools returned, its answer without copied
    instructions and with years spelled out as the sources do)."""
    view = _View.of(trajectory)
    seen = seen_text(trajectory.messages)
    return view, seen, with_years(strip_copied(view.answer, [view.system, view.question]), f"{view.system}\n{seen}")


def _names_seen(question: str, seen: str) -> float:
    """Share of the question's names (capitalised words that do not open a sentence) that
    occur in what the tools returned; 1 when it names nothing. A product, region or person
    the sources never mention is a sign the sources cannot answer."""
    names = {m.group().casefold() for m in _NAME.finditer(question) if question[: m.start()].rstrip()[-1:] not in ("", ".", "!", "?")}
    names -= {"i", "i'm", "i've", "hi", "hello"}
    if not names:
        return 1.0
    words = {w.casefold() for w in re.findall(r"[\w'-]+", seen)}
    return len(names & words) / len(names)


def _grounded(entities: set[str], seen: set[str]) -> set[str]:
    """The `entities` that were seen, or are figures worked out from a seen figure the answer
    also states and another seen figure (their sum, their difference, or one as a percentage
    of the other: "$1,369.99 against $759.99, so $610.00 more", "15% of $167.93, a fee of
    $25.19"). Small whole numbers are not worked out: too many pairs would make them."""
    found = entities & seen
    wanted = [e for e in entities - found if e.startswith("num:") and _is_number(e[4:])]
    wanted = [e for e in wanted if float(e[4:]) >= 10 or float(e[4:]) != int(float(e[4:]))]
    stated = np.array(sorted({float(e[4:]) for e in found if e.startswith("num:") and _is_number(e[4:])}))
    if not wanted or not len(stated):
        return found
    numbers = np.array(sorted({float(e[4:]) for e in seen if e.startswith("num:") and _is_number(e[4:])})[:200])
    a, b = np.repeat(stated, len(numbers)), np.tile(numbers, len(stated))
    derived = np.sort(np.concatenate([np.abs(a - b), a + b, a * b / 100]))
    for entity in wanted:
        value = float(entity[4:])
        at = int(np.searchsorted(derived, value))
        if any(abs(derived[k] - value) < 0.011 for k in (at - 1, at) if 0 <= k < len(derived)):
            found.add(entity)
    return found


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _copied_share(text: str, sources: Sequence[str]) -> float:
    """Share of `text`'s characters in runs of 8+ words copied from `sources`."""
    if not text.strip() or not any(sources):
        return 0.0
    kept = strip_copied(text, sources)
    return max(0.0, 1.0 - len(kept.strip()) / len(text.strip()))


def _entity_context(answer: str, seen: str) -> tuple[float, float]:
    """How well the words around each figure or person of `answer` match the words around
    it where the agent saw it: per figure (or two-word name), the best share of its
    clause's content words (its sentence's, for a clause of under two) that a seen sentence
    holding it also has; a clause, so that a summary packing many facts into one sentence is
    judged fact by fact. (mean, min) over the answer's figures and names that were seen;
    (1, 1) when there are none. A figure or a name moved to the wrong product, section or
    role keeps its value but loses its context."""
    by_entity: dict[str, list[set[str]]] = {}
    for sentence in _SENTENCE_END.split(seen):
        words = {w.casefold() for w in _CONTENT_WORD.findall(sentence)}
        for entity in _anchors(sentence):
            by_entity.setdefault(entity, []).append(words - set(entity.casefold().split()))
    shares = []
    for sentence in _SENTENCE_END.split(_CITATION.sub(" ", answer)):
        sentence_words = {w.casefold() for w in _CONTENT_WORD.findall(sentence)}
        for clause in _CLAUSE_END.split(sentence):
            clause_words = {w.casefold() for w in _CONTENT_WORD.findall(clause)}
            for entity in _anchors(clause):
                own = clause_words - set(entity.casefold().split())
                if len(own) < 2:  # "Next meeting: 2025-03-01": the clause is too short to say what the figure is
                    own = sentence_words - set(entity.casefold().split())
                if entity in by_entity and own:
                    shares.append(max(len(own & other) / len(own) for other in by_entity[entity][:50]))
    return (float(np.mean(shares)), float(min(shares))) if shares else (1.0, 1.0)


def _parts(answer: str) -> list[str]:
    return _split(_CITATION.sub(" ", answer), _SENTENCE_END, _PART_END)


def _is_bare(part: str) -> bool:
    return len(part.split()) <= 3 and bool(_figures(part))


def _said_parts(answer: str) -> list[str]:
    """The parts of `answer` that say something of their figures (not `listed_share`'s bare ones)."""
    return [part for part in _parts(answer) if not _is_bare(part)]


def listed_share(answer: str) -> float:
    """Share of the parts of `answer` (its sentences split at commas, semicolons and
    conjunctions) that are bare figures or names: three words or fewer holding one, as in
    "1.7 litres, 3 minutes, $89.00. Warranty, 30 months, 21 days". A list of everything
    seen states the right figure too; what it lacks is the words that say which is which.
    0 for an empty answer."""
    parts = _parts(answer)
    return sum(map(_is_bare, parts)) / len(parts) if parts else 0.0


def _anchors(sentence: str) -> set[str]:
    """The figures (canonical entities) and two-word capitalised names of a sentence."""
    return extract_entities(sentence) | set(_PERSON.findall(sentence))


def figures_misattached(answer: str, seen: str) -> float:
    """Share of the figures and names of `answer` that it ties to the words the agent saw
    tied to another figure of the same sentence, among those it can check (ones seen beside
    another figure, in a part of the answer that says something about them); 0 when none.

    "Delivery times: standard within 4 business days, express within 1 business day": the
    words only 4's part of that sentence holds are "standard", only 1's "express". "Standard
    delivery takes 1 business day" names "standard" and not "express" beside 1, so its 1 is
    misattached, as is a target given as the measured value or a lead named as the sponsor.
    One seen sentence that ties the figure to a word of its part of the answer clears it."""
    ties: dict[str, list[tuple[set[str], set[str]]]] = {}
    for sentence in _SENTENCE_END.split(seen):
        parts = [(_figures(part), part) for part in _split(sentence, _PART_END, _LABEL_END)]
        parts = [(anchors, _words(part, anchors)) for anchors, part in parts if anchors]
        if len({frozenset(anchors) for anchors, _ in parts}) < 2:
            continue
        for entity in set().union(*(anchors for anchors, _ in parts)):
            own = set().union(*(words for anchors, words in parts if entity in anchors))
            other = set().union(*(words for anchors, words in parts if entity not in anchors and _kind(entity) in map(_kind, anchors)))
            if own - other:  # "Arclight Data and Ironleaf Software were shortlisted": Arclight's part says nothing
                ties.setdefault(entity, []).append((own - other, other - own))
    verdicts: dict[str, bool] = {}
    for sentence in _SENTENCE_END.split(_CITATION.sub(" ", answer)):
        said = _words(sentence, _figures(sentence))
        for part in _split(sentence, _PART_END):
            anchors = _figures(part)
            words = _words(part, anchors)
            for entity in anchors & ties.keys():
                if sum(_kind(a) == _kind(entity) for a in anchors) > 1:  # "Ana Lee with Bo Chan as secretary": whose words?
                    continue
                wrong = any(words & other and not said & own for own, other in ties[entity])
                right = any(said & own for own, _ in ties[entity])
                if wrong or right:
                    verdicts[entity] = verdicts.get(entity, False) or right
    return sum(not right for right in verdicts.values()) / len(verdicts) if verdicts else 0.0


_ELSEWHERE_MARGIN = 0.15  # cosine similarity


def figures_fit_elsewhere(answer: str, seen: str) -> float:
    """Share of the figures and people of `answer` whose part of an answer sentence fits a
    seen sentence about another figure or person of the same kind better (by more than
    `_ELSEWHERE_MARGIN` in cosine similarity of the embedded texts) than every seen sentence
    that states it, among those it can check (seen, with a rival); 0 when none.

    "Revenue this quarter was $4.1M" fits "Revenue reached $4.6M in the third quarter" better
    than "Last quarter closed at $4.1M": the figure is the previous period's. Unlike
    `figures_misattached` the rival may sit in any sentence, and meaning, not shared words,
    makes the fit; a swap the embeddings barely tell apart (a person named in a role close
    to their own) stays within the margin and is missed."""
    from .grounding import embed

    sources, parts = _fit_texts(answer, seen)
    if not parts:
        return 0.0
    texts = list(sources)
    vectors = embed([*texts, *(part for part, _ in parts)])
    fit = vectors[len(texts) :] @ vectors[: len(texts)].T
    checked = wrong = 0
    for row, (_, anchors) in enumerate(parts):
        for entity in anchors:
            own = [i for i, text in enumerate(texts) if entity in sources[text]]
            rivals = [
                i
                for i, text in enumerate(texts)
                if entity not in sources[text] and any(_kind(other) == _kind(entity) for other in sources[text])
            ]
            if own and rivals:
                checked += 1
                wrong += float(fit[row, rivals].max() - fit[row, own].max()) > _ELSEWHERE_MARGIN
    return wrong / checked if checked else 0.0


def _fit_texts(answer: str, seen: str) -> tuple[dict[str, set[str]], list[tuple[str, set[str]]]]:
    """`figures_fit_elsewhere`'s texts: the seen sentences by the figures they state, and the
    answer's parts that state a seen figure, each with those figures."""
    sources: dict[str, set[str]] = {}
    for sentence in _SENTENCE_END.split(seen):
        anchors = _figures(sentence)
        if anchors and 10 < len(sentence.strip()) < 600:
            sources.setdefault(sentence.strip(), set()).update(anchors)
    stated = set().union(*sources.values(), set())
    parts = [
        (part.strip(), anchors)
        for sentence in _SENTENCE_END.split(_CITATION.sub(" ", answer))
        for part in _split(sentence, _PART_END)
        if (anchors := _figures(part) & stated) and len(part.split()) >= 3
    ]
    return sources, parts


def _prefetch_fit_texts(trajectories: Sequence[Trajectory]) -> None:
    """Embed every trajectory's `figures_fit_elsewhere` texts in one batch (the embedding
    cache then serves each trajectory's call): one large batch costs far less than many
    small ones."""
    from .grounding import embed

    texts: list[str] = []
    for trajectory in trajectories:
        _, seen, answer = _read(trajectory)
        sources, parts = _fit_texts(answer, seen)
        if parts:
            texts += [*sources, *(part for part, _ in parts)]
    if texts:
        embed(texts)


def _figures(text: str) -> set[str]:
    """The figures (not those of a product name: the 1 of "Talon 1 Plus") and people of `text`."""
    return extract_entities(_NAME_RUN.sub(" ", text)) | set(_PERSON.findall(text))


def _kind(entity: str) -> str:
    """A figure's kind ("num", "date", "email", "phone") or "person"."""
    return entity.partition(":")[0] if ":" in entity else "person"


def _split(text: str, *patterns: re.Pattern[str]) -> list[str]:
    parts = [text]
    for pattern in patterns:
        parts = [piece for part in parts for piece in pattern.split(part) if piece and piece.strip()]
    return parts


def _words(text: str, anchors: set[str]) -> set[str]:
    """The content words of `text`, singular, without those of its names (`anchors`)."""
    names = {w.casefold() for anchor in anchors for w in anchor.split()}
    words = (m.casefold() for m in _CONTENT_WORD.findall(text))
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words if w not in names and w not in _FUNCTION_WORDS}


def figures_wrong_product(answer: str, articles: dict[str, str]) -> float:
    """Share of the figures `answer` says of a product (the nearest product name in the
    figure's part of the sentence; a part that names none is not checked) that only the
    articles about another product of its family state ("24 months" said of the Prism 8
    Pro, when only the Prism 8 Ultra's article has it): a
    swapped comparison or the sibling's figure. A product is a name an article's title
    holds; a figure any of whose mentions names a product whose article states it is right;
    0 when no figure can be checked."""
    titles = {doc_id: {_name_key(run) for run in _NAME_RUN.findall(text.partition("\n")[0])} for doc_id, text in articles.items()}
    products = set().union(*titles.values()) if titles else set()
    figures = {doc_id: extract_entities(text.partition("\n")[2]) for doc_id, text in articles.items()}
    verdicts: dict[str, bool] = {}
    mention = re.compile("|".join(rf"(?<![\w-]){re.escape(p)}(?![\w-])" for p in sorted(products, key=len, reverse=True)), re.I)
    said: list[tuple[str, str]] = []  # (product, entity)
    for part in _split(_CITATION.sub(" ", answer), _SENTENCE_END, _PART_END) if products else []:
        names = [(m.start(), m.group().casefold()) for m in mention.finditer(part)]
        blanked = mention.sub(lambda m: " " * len(m.group()), part)
        for figure in _FIGURE_TEXT.finditer(blanked) if names else []:
            near = min(names, key=lambda n: abs(n[0] - figure.start()))[1]
            said += [(near, entity) for entity in extract_entities(figure.group())]
    for product, entity in said:
        holding = {doc_id for doc_id, found in figures.items() if entity in found}
        right = any(product in titles[doc_id] for doc_id in holding)
        sibling = all(any(n != product and n.split()[0] == product.split()[0] for n in titles[doc_id]) for doc_id in holding)
        if holding and (right or sibling):
            verdicts[entity] = verdicts.get(entity, False) or right
    return sum(not right for right in verdicts.values()) / len(verdicts) if verdicts else 0.0


def _retrieval_features(view: _View, answer: str, seen: str) -> dict[str, float]:
    cited = set(_CITATION.findall(answer))
    listed = set(_ARTICLE_HEADER.findall(seen))
    read_text = "\n".join(c.result for c in view.calls if c.ok and c.name == "read")
    read_in_full = "\n".join(c.result for c in view.calls if c.ok and (c.name == "read" or c.name.startswith("read_")))
    read_ids = set(_ARTICLE_HEADER.findall(read_text))
    entities = extract_entities(answer)
    articles = articles_shown([c.result for c in view.calls if c.ok])
    off_subject = off_subject_articles(view.question, articles)
    where: dict[str, set[str]] = {}
    claimed = entities - extract_entities(view.question)  # "the Xenon 9" claims no 9
    for doc_id, text in articles.items():
        for entity in extract_entities(text) & claimed:
            where.setdefault(entity, set()).add(doc_id)
    return {
        "citations": min(1.0, len(cited) / 3),
        "cited_seen_share": len(cited & listed) / len(cited) if cited else 0.0,
        "cited_read_share": len(cited & read_ids) / len(cited) if cited else 0.0,
        "searched": float(any(c.name == "search" for c in view.calls)),
        "reads": math.log1p(sum(c.name == "read" and c.ok for c in view.calls)) / math.log(6),
        "entities_read_share": len(_grounded(entities, extract_entities(read_in_full))) / len(entities) if entities else 1.0,
        "figures_off_subject": sum(docs <= off_subject for docs in where.values()) / len(where) if where else 0.0,
        "cited_off_subject": len(cited & off_subject) / len(cited) if cited else 0.0,
        "figures_wrong_product": figures_wrong_product(answer, articles),
        "figures_off_question": figures_off_question(view.question, answer, {k: v for k, v in articles.items() if k not in off_subject}),
    }


def figures_off_question(question: str, answer: str, articles: dict[str, str]) -> float:
    """How much worse the question fits the source sentences of the answer's figures than
    the sentence of `articles` (those about what was asked) that fits it best, in cosine
    similarity of the embedded sentences, averaged over the figures the answer states and
    the question does not (each at its best-fitting source); 0 when it states none of them.

    "How long do I have to send it back?" fits "you can return the Sierra 5 Plus within 30
    days of delivery" better than "covered by a limited warranty for 24 months": an answer
    of 24 months quotes the right article, but for another fact. An answer that lists every
    figure it saw states the right one too, and its mean says how much of it is beside the
    question. Meaning, not shared words, makes the fit ("send it back" and "return"); the
    names the question asks about are taken out of both sides first, so that a sentence
    fits by what it says, not by naming the asked product (which product a figure belongs to
    is `figures_wrong_product`'s and `figures_off_subject`'s question)."""
    from .grounding import embed

    asked = _figures(question)
    stated = _figures(_CITATION.sub(" ", answer)) - asked
    if not stated:
        return 0.0
    sources: dict[str, set[str]] = {}
    for text in articles.values():
        for sentence in _SENTENCE_END.split(text.partition("\n")[2]):
            figures = _figures(sentence) - asked
            if figures and len(sentence) < 600:
                sources.setdefault(sentence.strip(), set()).update(figures)
    checked = [figure for figure in stated if any(figure in figures for figures in sources.values())]
    if not checked:
        return 0.0
    names = name_runs(question)
    unnamed = re.compile("|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))) if names else None
    sentences = list(sources)
    vectors = embed([unnamed.sub(" ", text) if unnamed else text for text in (question, *sentences)])
    fit = vectors[1:] @ vectors[0]
    best = float(fit.max())
    gaps = [best - max(float(f) for f, sentence in zip(fit, sentences, strict=True) if figure in sources[sentence]) for figure in checked]
    return max(0.0, float(np.mean(gaps)))


def articles_shown(results: Sequence[str]) -> dict[str, str]:
    """The text tool `results` showed of each ``[doc-id] Title`` article (search snippets
    and reads), by id."""
    articles: dict[str, list[str]] = {}
    for result in results:
        starts = [m.start() for m in _ARTICLE_HEADER.finditer(result)]
        for start, end in zip(starts, [*starts[1:], len(result)], strict=False):  # no article: no start
            block = result[start:end]
            articles.setdefault(block[1 : block.index("]")], []).append(block)
    return {doc_id: "\n".join(blocks) for doc_id, blocks in articles.items()}


def off_subject_articles(question: str, articles: dict[str, str]) -> set[str]:
    """The ids of `articles` (`articles_shown`) whose title names a product, team or place
    that neither the question nor an article about what it asks names.

    A name is a run of two or more capitalised words or numbers ("Zephyr 6 Pro", "Haven 9
    Plus"); a title is about what was asked when it names an asked name, an asked name with
    more words ("Lumina 7 FAQ") or a series an asked name belongs to ("Zephyr 6 series"), or
    nothing at all ("Refund policy and restocking fees"). So for "the Zephyr 6 Lite", the
    "Zephyr 6" and "Zephyr 6 Pro" articles are off subject, while the support team the Zephyr
    6 Lite's overview names is not (one hop, never to a name of the asked one's family). A
    question that names nothing marks no article. A figure found only in such articles
    belongs to a sibling product. The words that extend a name are not told apart: "Zephyr 6
    Pro" counts as about the "Zephyr 6"."""
    asked = {_name_key(run) for run in name_runs(question)}
    if not asked:
        return set()
    titles = {doc_id: text.partition("\n")[0].partition("] ")[2] for doc_id, text in articles.items()}

    def about_asked(title: str) -> bool:
        named = [(_name_key(m.group()), title[m.end() :].lstrip().casefold().startswith("series")) for m in _NAME_RUN.finditer(title)]
        return not named or any(
            name == a or name.startswith(a + " ") or (series and a.startswith(name + " ")) for name, series in named for a in asked
        )

    on = [doc_id for doc_id, title in titles.items() if about_asked(title)]
    families = {a.split()[0] for a in asked}
    hop = {_name_key(run) for doc_id in on for run in _NAME_RUN.findall(articles[doc_id])}
    asked |= {name for name in hop if name.split()[0] not in families}  # one hop: the team an article names, not a sibling
    return {doc_id for doc_id, title in titles.items() if not about_asked(title)}


def name_runs(text: str) -> list[str]:
    """The runs of two or more capitalised words or numbers in `text`, such as product,
    team and place names ("Zephyr 6 Lite", "Mobility Support")."""
    return _NAME_RUN.findall(text)


def _name_key(run: str) -> str:
    words = run.casefold().split()
    return " ".join(words[1:] if words[0] in ("the", "a", "an", "our", "your", "this") and len(words) > 2 else words)


def _action_features(view: _View) -> dict[str, float]:
    """Identification, changes made (and whether the customer agreed first), claims of changes
    no tool made, refusals, and the written policy's window and dispute rules."""
    said = "\n".join(strip_copied(t, [view.system]) for t in view.assistant_texts)
    identified_at = next((i for i, c in enumerate(view.calls) if c.name == "find_customer" and c.ok), None)
    writes = [(i, c) for i, c in enumerate(view.calls) if _is_write(c.name)]
    ok_writes = [c for _, c in writes if c.ok]
    done_stems = {stem for c in ok_writes for stem in _stems(c.name)}
    claims = [m for m in _CLAIM.finditer(said) if not _NEGATED.search(said[max(0, m.start() - 30) : m.start()])]
    claimed = {_stem(m.group(1) or m.group(2)) for m in claims}
    claimed &= {_stem(w) for w in _WRITE_TOOLS} | {"refund", "cancel", "exchange", "escalat"} | _VAGUE_DEEDS
    false_claims = len(claimed - done_stems - (_VAGUE_DEEDS if ok_writes else set()))
    shown = "\n".join([*(c.result for c in view.calls if c.ok), *view.user_texts])
    false_claims += len(set(_REFERENCE.findall(said)) - set(_REFERENCE.findall(shown)))  # a ticket or return id no tool gave
    # what a customer must be told of a change: the amounts, ticket ids and new address its result holds
    outcome_bits = [f"num:{canonical_number(m)}" for c in ok_writes for m in _AMOUNT.findall(c.result)]
    outcome_bits += [t for c in ok_writes for t in _TICKET.findall(c.result)]
    outcome_bits += sorted(e for c in ok_writes for e in extract_entities(_field(c.result, "shipping_address")))
    told = extract_entities(said) | set(_TICKET.findall(said))
    outside, dispute, needless = _policy_breaches(view, ok_writes)
    asked = {w for text in view.user_texts for w in re.findall(r"[a-z]+", text.casefold())}
    mentioned = {_normal_id(m) for m in _ORDER_MENTION.findall(" ".join(view.user_texts))}
    mentioned |= {_order_id(c) for c in view.calls if c.ok and c.name == "find_customer"}  # the order that identified them
    return {
        "identified": float(identified_at is not None),
        "asked_identity": float(bool(_ASK_IDENTITY.search(said))),
        "refused_calls": math.log1p(sum(not c.ok and "identif" in c.result for c in view.calls)),
        "writes_ok": math.log1p(len(ok_writes)),
        "writes_failed": math.log1p(sum(not c.ok for _, c in writes)),
        "write_before_identified": float(any(identified_at is None or i < identified_at for i, _ in writes)),
        "write_unmentioned_order": sum(_order_id(c) not in mentioned for c in ok_writes) / len(ok_writes) if ok_writes else 0.0,
        "unconfirmed_writes": sum(not (_YES.search(c.after_user) or _asked_for(c.name, asked)) for c in ok_writes) / max(1, len(ok_writes)),
        "false_claims": math.log1p(false_claims),
        "outcome_told": sum(b in told for b in outcome_bits) / len(outcome_bits) if outcome_bits else 1.0,
        "outside_window": float(outside),
        "dispute_refunded": float(dispute),
        "needless_escalation": float(needless),
        "assistant_turns": math.log1p(len(view.assistant_texts)) / math.log(20),
    }


def _field(result: str, key: str) -> str:
    """The text of `key` in a tool's JSON object `result`; empty when it has none."""
    try:
        value = json.loads(result)
    except (ValueError, RecursionError):
        return ""
    return str(value.get(key) or "") if isinstance(value, dict) else ""


def _policy_breaches(view: _View, ok_writes: list[_Call]) -> tuple[bool, bool, bool]:
    """(a refund of an order delivered longer ago than the prompt's return window, a refund
    of a disputed order over the prompt's escalation threshold, an escalation of anything but
    such a dispute); read off the system prompt, the customer's words and the orders the
    tools showed."""
    refunds = [c for c in ok_writes if c.name.startswith("refund")]
    escalations = [c for c in ok_writes if c.name.startswith("escalat")]
    if not refunds and not escalations:
        return False, False, False
    today, window, threshold = _TODAY.search(view.system), _WINDOW.search(view.system), _THRESHOLD.search(view.system)
    orders: dict[str, dict[str, Any]] = {}
    for call in view.calls:
        if call.ok and call.name == "get_order":
            try:
                order = json.loads(call.result)
            except ValueError:
                continue
            if isinstance(order, dict) and "order_id" in order:
                orders[str(order["order_id"]).upper()] = order
    disputed = bool(_DISPUTE.search(" ".join(view.user_texts)))

    def over_threshold(call: _Call) -> bool:
        order = orders.get(str(call.arguments.get("order_id", "")).strip().lstrip("#").upper(), {})
        total = extract_entities(str(order.get("total", "")))
        amounts = [float(e.split(":", 1)[1]) for e in total if e.startswith("num:") and e.count(".") <= 1]
        return bool(threshold and amounts) and max(amounts) > float(threshold.group(1).replace(",", ""))

    outside = False
    for call in refunds:
        delivered = orders.get(str(call.arguments.get("order_id", "")).strip().lstrip("#").upper(), {}).get("delivered_on")
        if today and window and isinstance(delivered, str):
            try:
                age = (date.fromisoformat(today.group(1)) - date.fromisoformat(delivered[:10])).days
            except ValueError:
                age = 0
            outside |= age > int(window.group(1))
    dispute = disputed and any(over_threshold(c) for c in refunds)
    needless = bool(threshold) and any(not (disputed and over_threshold(c)) for c in escalations)
    return outside, dispute, needless


def _section_features(view: _View, answer: str) -> dict[str, float]:
    listing = "\n".join(c.result for c in view.calls if c.ok and c.name == "list_sections")
    sections = dict(_LISTED_SECTION.findall(listing))
    read = {str(c.arguments.get("section_id", "")).strip("[] ").casefold() for c in view.calls if c.ok and c.name == "read_section"}
    titles = {w.casefold() for title in sections.values() for w in _CONTENT_WORD.findall(title)}
    answer_words = [w.casefold() for w in _CONTENT_WORD.findall(answer)]
    return {
        "read_share": len(read & {s.casefold() for s in sections}) / len(sections) if sections else float(bool(read)),
        "title_share": sum(w in titles for w in answer_words) / len(answer_words) if answer_words and titles else 0.0,
        "sections_covered": _sections_covered(view, answer, {s.casefold() for s in sections}),
    }


def _sections_covered(view: _View, answer: str, listed: set[str]) -> float:
    """Share of the document's sections (those `listed` and those read) that the answer draws
    on: it repeats a figure or a name of a section read, or two words that only that section
    uses. A summary of one section, or of the headings, covers few, and so does one that
    read only the first of the sections listed; 0 when no section was read."""
    texts: dict[str, str] = {}
    for call in view.calls:
        if call.ok and call.name == "read_section":
            key = str(call.arguments.get("section_id", "")).strip("[] ").casefold()
            texts[key] = texts.get(key, "") + "\n" + call.result.partition("\n\n")[2]
    if not texts:
        return 0.0
    words = {key: {w.casefold() for w in _CONTENT_WORD.findall(text)} for key, text in texts.items()}
    answer_words = {w.casefold() for w in _CONTENT_WORD.findall(answer)}
    answer_anchors = _anchors(answer)
    covered = 0
    for key, text in texts.items():
        others = set().union(*(w for k, w in words.items() if k != key))
        covered += bool(_anchors(text) & answer_anchors) or len((words[key] - others) & answer_words) >= 2
    return covered / len(listed | texts.keys())


def _order_id(call: _Call) -> str:
    return _normal_id(str(call.arguments.get("order_id", "")))


def _normal_id(text: str) -> str:
    """An order id as written by a customer or a tool call ("#o-48213", "48213") -> "48213"."""
    return text.strip().lstrip("#").upper().removeprefix("O-").removeprefix("O")


def _is_write(name: str) -> bool:
    head = name.split("_", 1)[0]
    return head not in _READ_TOOLS and any(name.startswith(w) for w in _WRITE_TOOLS)


def _stem(word: str) -> str:
    word = word.casefold()
    for suffix in ("lled", "led", "ed", "e", "ing"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)] if suffix != "lled" else word[:-3]
    return word


_ASKS = {
    "refund": ("refund", "money", "return", "reimburs"),
    "cancel": ("cancel",),
    "exchang": ("exchang", "swap", "replace"),
    "address": ("address", "moved", "moving", "deliver"),
    "escalat": ("charg", "disput", "arriv", "authori", "fraud"),
}
"""The words (prefixes) by which a customer asks for each kind of change: "Can I get my money
back?" asks for a refund, "I was charged twice" for the dispute's escalation."""


def _asked_for(tool: str, words: set[str]) -> bool:
    """Whether the customer's `words` ask for the kind of change `tool` makes."""
    prefixes = [p for stem in _stems(tool) for p in _ASKS.get(stem, ())]
    return any(word.startswith(p) for word in words for p in prefixes)


def _stems(tool: str) -> set[str]:
    return {_stem(part) for part in tool.split("_")}


_VAGUE_DEEDS = frozenset(
    _stem(w)
    for w in "processed issued updated changed opened created submitted arranged raised logged filed booked scheduled initiated".split()
)
"""Stems of the claims of a change that any change made could back ("I've processed it")."""


# -- the judge --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Head:
    """One family's linear head: ``sigmoid(weights . (x - mean) / scale + bias)``."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float

    def logit(self, x: np.ndarray) -> np.ndarray:
        return ((x - np.asarray(self.mean)) / np.asarray(self.scale)) @ np.asarray(self.weights) + self.bias


def load_heads(path: str | Path = WEIGHTS_PATH) -> dict[str, Head]:
    """The heads stored at `path`, by family; raises with the command that builds them."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no learned-judge weights at {path}; build them with: python -m judgegym.benchmarks.learned_judge train")
    data = json.loads(path.read_text())
    if tuple(data.get("features", ())) != FEATURES:
        raise ValueError(f"{path} was trained on other features; retrain: python -m judgegym.benchmarks.learned_judge train --out {path}")
    return {family: Head(**{k: tuple(v) if isinstance(v, list) else v for k, v in head.items()}) for family, head in data["heads"].items()}


@cache
def _shipped_heads() -> dict[str, Head]:
    return load_heads()


@dataclass(frozen=True)
class LearnedJudge(BatchJudge):
    """A pointwise judge that needs no gold answer and no LLM, in [0, 1].

    It scores a trajectory from what the agent saw and did and what it answered
    (`trajectory_features`: GroundingJudge's embedding support, copied instructions, figures
    and their context, citations of what was read, identification, changes made with and
    without the customer's request or yes, claims no tool backs, the prompt's policy, sections read)
    with a linear head per task family (`family_of`), trained with a pairwise objective within
    groups on verifier-labelled episodes of the envs' train splits. `heads` defaults to the
    shipped weights; pass `load_heads(path)` for retrained ones. Components: the family, the
    head's logit and the features it weighs most, so an explanation says why.
    """

    heads: dict[str, Head] | None = None

    relative: ClassVar[bool] = False

    def score_many(self, trajectories: Sequence[Trajectory]) -> list[JudgeScore]:
        """Score any trajectories with one embedding call; blocking."""
        from .grounding import GroundingJudge

        heads = self.heads if self.heads is not None else _shipped_heads()
        groundings = GroundingJudge().score_many(trajectories)
        _prefetch_fit_texts(trajectories)
        scores = []
        for trajectory, grounding in zip(trajectories, groundings, strict=True):
            features = trajectory_features(trajectory, grounding)
            family = family_of(trajectory)
            head = heads.get(family) or heads["generic"]
            x = np.array([features[name] for name in FEATURES])
            logit = float(head.logit(x))
            score = 0.0 if not trajectory.final_answer.strip() else 1.0 / (1.0 + math.exp(-logit))
            contributions = (x - np.asarray(head.mean)) / np.asarray(head.scale) * np.asarray(head.weights)
            components = {"logit": logit, **{name: features[name] for name in _LOGGED}}
            why = explain(FEATURES, x, contributions, np.asarray(head.mean))
            scores.append(JudgeScore(score=min(1.0, max(0.0, score)), explanation=f"{family} head: {why}", components=components))
        return scores


def explain(names: Sequence[str], x: np.ndarray, contributions: np.ndarray, mean: np.ndarray, top: int = 3) -> str:
    """The `top` features that moved the logit most, in words: what the answer did or did
    not do (from the feature's value against its training mean) and which way it pushed,
    e.g. "raised by: cites articles it read (+0.91); lowered by: hedges (-0.30)"."""
    order = [int(i) for i in np.argsort(-np.abs(contributions))[:top] if abs(contributions[i]) >= 0.005]
    parts = {"raised by": [], "lowered by": []}
    for i in order:
        more, less = FEATURE_WORDS.get(names[i], (f"high {names[i]}", f"low {names[i]}"))
        said = more if x[i] > mean[i] else less
        parts["raised by" if contributions[i] > 0 else "lowered by"].append(f"{said} ({contributions[i]:+.2f})")
    return "; ".join(f"{way}: {', '.join(items)}" for way, items in parts.items() if items) or "no feature stood out"


FEATURE_WORDS: dict[str, tuple[str, str]] = {
    "answered": ("gives an answer", "gives no answer"),
    "log_words": ("a long answer", "a short answer"),
    "over_limit": ("goes over the word limit", "keeps to the word limit"),
    "copied_instructions": ("copies the instructions back", "does not copy the instructions"),
    "copied_seen": ("copies long runs of the sources", "says things in its own words"),
    "listed": ("strings bare figures together", "says what its figures are"),
    "entities": ("states many figures and names", "states few figures or names"),
    "entity_seen_share": ("its figures and names appear in what it read", "states figures or names it never read"),
    "entity_context": ("its figures sit in the context they were read in", "its figures sit in a different context than read"),
    "entity_context_min": ("every figure keeps its context", "some figure is moved to another context"),
    "figures_misattached": ("attaches figures to the wrong thing", "attaches figures to the right thing"),
    "figures_fit_elsewhere": ("its figures fit another item better", "its figures fit the item it names"),
    "addresses_judge": ("speaks to the grader", "does not speak to the grader"),
    "hedges": ("hedges", "does not hedge"),
    "abstained": ("says the sources do not answer", "does not abstain"),
    "abstained_x_match": ("abstains although the sources match the question", "no abstention despite matching sources"),
    "question_names_seen": ("the sources name what the question asks about", "the sources never name what the question asks about"),
    "abstained_x_unseen": ("abstains where the sources never name the subject", "no abstention on an unnamed subject"),
    "abstained_x_escalation": ("abstains and offers escalation", "no abstention with escalation"),
    "figures_x_unseen": ("gives figures for a subject the sources never name", "no figures for an unnamed subject"),
    "support": ("its sentences are supported by what it read", "its sentences are weakly supported by what it read"),
    "min_similarity": ("even its least supported sentence has support", "some sentence has no support"),
    "coverage": ("its answer is on the question", "its answer is off the question"),
    "relevance": ("answers the question asked", "strays from the question"),
    "grounding": ("its figures are all in its sources", "states figures its sources do not hold"),
    "unsupported": ("states figures its sources do not hold", "its figures are all in its sources"),
    "question_match": ("the sources match the question", "the sources do not match the question"),
    "tool_calls": ("makes many tool calls", "makes few tool calls"),
    "tool_error_share": ("many tool calls failed", "its tool calls succeeded"),
    "called_tools": ("uses the tools", "never uses the tools"),
    "format_errors": ("malformed tool calls", "well-formed tool calls"),
    "truncated": ("the episode was cut off", "the episode finished"),
    "citations": ("cites sources", "cites no sources"),
    "cited_seen_share": ("cites articles it found", "cites articles it never found"),
    "cited_read_share": ("cites articles it read", "cites articles it did not read"),
    "searched": ("searched", "never searched"),
    "reads": ("read articles", "read no article"),
    "entities_read_share": ("its figures come from articles it read", "its figures do not come from articles it read"),
    "figures_off_subject": ("its figures are about another subject", "its figures are about the subject asked"),
    "cited_off_subject": ("cites articles about another subject", "cites articles about the subject asked"),
    "figures_wrong_product": ("gives another product's figures", "gives the right product's figures"),
    "figures_off_question": ("its figures do not fit the question", "its figures fit the question"),
    "identified": ("identified the customer", "did not identify the customer"),
    "asked_identity": ("asked who the customer is", "did not ask who the customer is"),
    "refused_calls": ("some actions were refused", "no action was refused"),
    "writes_ok": ("made changes that succeeded", "made no change"),
    "writes_failed": ("attempted changes that failed", "no failed change"),
    "write_before_identified": ("changed the account before identifying the customer", "identified the customer before any change"),
    "write_unmentioned_order": ("changed an order the customer never mentioned", "changed only orders the customer mentioned"),
    "unconfirmed_writes": ("made changes the customer never confirmed", "made changes only once confirmed"),
    "false_claims": ("claims actions no tool backs", "claims only what its tools did"),
    "outcome_told": ("tells the customer the outcome", "does not tell the outcome"),
    "outside_window": ("acted outside the policy's window", "kept to the policy's window"),
    "dispute_refunded": ("refunded a dispute over the threshold", "no refund over the dispute threshold"),
    "needless_escalation": ("escalated needlessly", "no needless escalation"),
    "assistant_turns": ("takes many turns", "takes few turns"),
    "read_share": ("read most of the document", "read little of the document"),
    "title_share": ("much of it repeats section titles", "little of it repeats section titles"),
    "sections_covered": ("covers the sections", "covers few sections"),
}
"""Each feature in words: (what a value above its training mean says, what one below says)."""


_LOGGED = ("support", "grounding", "addresses_judge", "false_claims", "write_before_identified", "cited_read_share", "entity_context")


def features_matrix(trajectories: Sequence[Trajectory], groundings: Sequence[JudgeScore] | None = None) -> np.ndarray:
    """`trajectory_features` of each trajectory as rows in `FEATURES` order; `groundings`
    (GroundingJudge's scores of them) are computed in one embedding call when omitted."""
    if groundings is None:
        from .grounding import GroundingJudge

        groundings = GroundingJudge().score_many(trajectories)
    rows = (trajectory_features(t, g) for t, g in zip(trajectories, groundings, strict=True))
    return np.array([[row[name] for name in FEATURES] for row in rows]).reshape(len(trajectories), len(FEATURES))


__all__ = [
    "FAMILIES",
    "FAMILY_FEATURES",
    "FEATURES",
    "WEIGHTS_PATH",
    "Head",
    "LearnedJudge",
    "family_of",
    "features_matrix",
    "load_heads",
    "trajectory_features",
]
