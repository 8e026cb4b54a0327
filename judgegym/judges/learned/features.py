"""The feature vector of a trajectory (`FEATURES`, `trajectory_features`, `features_matrix`) and
which features each task family's head reads (`FAMILY_FEATURES`)."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Hashable, Sequence

import numpy as np

from ...formats.rag import CITATION
from ...formats.summarize import word_limit_of
from ...trajectory import Trajectory
from ..abstention import abstains
from ..base import JudgeScore
from ..facts import (
    ABSTENTION,
    ESCALATION,
    extract_entities,
)
from ..grader_talk import addresses_grader
from .rag import retrieval_features
from .summarize import section_features
from .support import action_features
from .text import (
    CONTENT_WORD,
    SENTENCE_END,
    copied_share,
    entity_context,
    figures_fit_elsewhere,
    figures_misattached,
    grounded_entities,
    listed_share,
    named,
    names_seen_share,
    question_fit,
    said_parts,
)
from .view import View, read_trajectory

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
    "abstained_x_match_unnamed",
    "question_names_seen",
    "abstained_x_unseen",
    "abstained_x_escalation",
    "figures_x_unseen",
    # the other attempts at the same task
    "claims_unshared",
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


_HEDGE = re.compile(
    r"\b(?:i think|i believe|i guess|probably|maybe|perhaps|might be|may be around|as far as i know|if i recall|"
    r"i'm not (?:entirely |completely |100% )?(?:sure|certain)|not (?:entirely )?sure|roughly|around|approximately|typically|usually)\b",
    re.IGNORECASE,
)
"""Words by which a writer marks a statement as uncertain or approximate. A rule, because
English marks doubt with a small closed set of adverbs and verbs of belief; what a rule
cannot tell (whose doubt it is) `hedges` settles against the sources."""


def hedges(answer: str, seen: str) -> bool:
    """Whether `answer` marks something as uncertain that its sources state without doubt.
    A hedge the sources make themselves ("transfers usually take 2 to 4 working days",
    restated as "usually within 2 to 4 working days") reports the sources faithfully and is
    not the answer's doubt: a hedge is its own unless a seen sentence holds the same hedge
    and shares a figure, or two other content words, with the answer's sentence."""
    matches = [(sentence, match.group(0).casefold()) for sentence in SENTENCE_END.split(answer) for match in _HEDGE.finditer(sentence)]
    if not matches:
        return False
    sources = _hedged_sentences(seen)
    for sentence, hedge in matches:
        words = _words(sentence) - set(hedge.split())
        figures = extract_entities(sentence)
        if not any(hedge in text and (figures & said or len(words & used) >= 2) for text, used, said in sources):
            return True
    return False


@functools.lru_cache(maxsize=32)  # the attempts of a group read the same sources
def _hedged_sentences(seen: str) -> tuple[tuple[str, frozenset[str], frozenset[str]], ...]:
    """The seen sentences that hedge: (casefolded text, content words, figures) of each."""
    return tuple(
        (sentence.casefold(), frozenset(_words(sentence)), frozenset(extract_entities(sentence)))
        for sentence in SENTENCE_END.split(seen)
        if _HEDGE.search(sentence)
    )


def _words(text: str) -> set[str]:
    return {w.casefold() for w in CONTENT_WORD.findall(text)}


_STOP_TOKEN = "###STOP###"


Read = tuple[View, str, str]
"""`read_trajectory`'s (view, what was seen, the answer), computed once per trajectory."""


def claims(trajectory: Trajectory, read: Read | None = None) -> set[str]:
    """What the final answer asserts that can be compared across attempts whatever their
    wording: its figures, dates, times, emails and phones in canonical form
    (`extract_entities`: "$1,200" and "1200 dollars" are one claim, "6:30 pm" and "18:30"
    another) and the multi-word names it gives ("Dana Whitfield", "Canalside Works"), less
    those the question itself states."""
    view, _, answer = read or read_trajectory(trajectory)
    said = CITATION.sub(" ", answer)
    asked = extract_entities(view.question) | {f"name:{name}" for name in named(view.question)}
    return (extract_entities(said) | {f"name:{name}" for name in named(said)}) - asked


def claims_unshared(claimed: Sequence[set[str]], tasks: Sequence[Hashable]) -> list[float]:
    """For each attempt, how much of what it claims (`claims`) the other attempts at the same
    task (equal `tasks` key) do not: the mean, over its claims, of the share of those other
    attempts that make claims but not this one. NaN where there is nothing to compare: an
    attempt scored alone, one that claims nothing (an abstention, a bare "yes": it would
    otherwise count as agreeing with everyone), or one with fewer than two peers that claim
    something (one peer's disagreement says that one of the two is wrong, not which: it
    would lower both alike); a head reads NaN at its training mean (`Head`), so it pushes
    neither way.

    Why agreement: attempts that read the same sources and got it right tend to state the same
    figures, while a swapped figure, a sibling's price or an invented detail is each attempt's
    own. This holds for any wording, world or format, because the claims are compared in
    canonical form, and it is the signal a relative judge reads when it looks at a group (the
    RULER article's judge sees the whole group; majority voting over samples is the reward of
    test-time RL). An extra detail only the best attempt gives is also unshared: how much
    agreement weighs against the other features is the learned head's to say. One attempt
    cannot raise its own agreement, since it is counted only against the others."""
    out: list[float] = []
    by_task: dict[Hashable, list[int]] = {}
    for index, key in enumerate(tasks):
        by_task.setdefault(key, []).append(index)
    for index, key in enumerate(tasks):
        peers = [claimed[j] for j in by_task[key] if j != index]
        if not peers:
            out.append(math.nan)
            continue
        talking = [p for p in peers if p]
        own = claimed[index]
        out.append(sum(sum(c not in p for p in talking) / len(talking) for c in own) / len(own) if own and len(talking) >= 2 else math.nan)
    return out


def task_key(trajectory: Trajectory, view: View | None = None) -> tuple[str, str]:
    """Which attempts are at the same task, for `claims_unshared`: the scenario and the
    question asked (`view`: the trajectory's, when already read)."""
    return trajectory.scenario_id, (view or View.of(trajectory)).question


def trajectory_features(
    trajectory: Trajectory, grounding: JudgeScore | None = None, *, unshared: float = math.nan, read: Read | None = None
) -> dict[str, float]:
    """The gold-free features of `trajectory`, by `FEATURES` name, each roughly in [0, 1] or
    a small count. `grounding` is `GroundingJudge`'s score of it (computed when omitted);
    `unshared` is its `claims_unshared` value among the attempts it is scored with (NaN: none,
    and a head reads it as its training mean)."""
    if grounding is None:
        from ..grounding import GroundingJudge

        grounding = GroundingJudge().score_many([trajectory])[0]
    view, seen, answer = read or read_trajectory(trajectory)
    g = grounding.components
    answered = bool(answer.strip(" \n\t.,;:!?-"))
    words = len(view.answer.split())
    published = view.facts.get("word_limit")
    limit = published if isinstance(published, int) and published > 0 else word_limit_of(view.question) or word_limit_of(view.system) or 150
    entities = extract_entities(answer)
    seen_entities = extract_entities(seen)
    context, context_min = entity_context(answer, seen)
    abstained = bool(ABSTENTION.search(answer)) or abstains(answer, view.question)  # by meaning where the phrase list misses
    ok_results = [c.result for c in view.calls if c.ok]
    evidence = "\n".join([*ok_results, view.context])  # not `seen`: it holds the question itself
    match, match_unnamed = question_fit(view.question, evidence) if abstained else (0.0, 0.0)
    names_seen = names_seen_share(view.question, seen)
    features = {
        "answered": float(answered),
        "log_words": math.log1p(words) / math.log(1000),
        "over_limit": min(3.0, max(0.0, words / limit - 1)),
        "copied_instructions": copied_share(view.answer, [view.instructions, view.question]),
        "copied_seen": copied_share(view.answer, [*ok_results, view.context] if view.context else ok_results),
        "listed": listed_share(answer),
        "entities": math.log1p(len(extract_entities(" ".join(said_parts(answer))))) / math.log(30),
        "entity_seen_share": len(grounded_entities(entities, seen_entities)) / len(entities) if entities else 1.0,
        "entity_context": context,
        "entity_context_min": context_min,
        "figures_misattached": figures_misattached(answer, seen),
        "figures_fit_elsewhere": figures_fit_elsewhere(answer, seen),
        "addresses_judge": float(addresses_grader(view.answer)),
        "hedges": float(hedges(answer, seen)),
        "abstained": float(abstained),
        "abstained_x_match": match,
        "abstained_x_match_unnamed": match_unnamed,
        "question_names_seen": names_seen,
        "abstained_x_unseen": float(abstained) * (1.0 - names_seen),
        "abstained_x_escalation": float(abstained and bool(ESCALATION.search(answer))),
        "figures_x_unseen": float(bool(entities) and not abstained) * (1.0 - names_seen),
        "claims_unshared": unshared,
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
    features.update(retrieval_features(view, answer, seen))
    features.update(action_features(view))
    features.update(section_features(view, answer))
    return {name: float(features[name]) for name in FEATURES}


def features_matrix(
    trajectories: Sequence[Trajectory],
    groundings: Sequence[JudgeScore] | None = None,
    tasks: Sequence[Hashable] | None = None,
) -> np.ndarray:
    """`trajectory_features` of each trajectory as rows in `FEATURES` order; `groundings`
    (GroundingJudge's scores of them) are computed in one embedding call when omitted.
    `tasks` says which trajectories are attempts at the same task (`task_key` when omitted),
    for `claims_unshared`."""
    if groundings is None:
        from ..grounding import GroundingJudge

        groundings = GroundingJudge().score_many(trajectories)
    reads = [read_trajectory(t) for t in trajectories]
    keys = list(tasks) if tasks is not None else [task_key(t, r[0]) for t, r in zip(trajectories, reads, strict=True)]
    unshared = claims_unshared([claims(t, r) for t, r in zip(trajectories, reads, strict=True)], keys)
    rows = (trajectory_features(t, g, unshared=u, read=r) for t, g, u, r in zip(trajectories, groundings, unshared, reads, strict=True))
    return np.array([[row[name] for name in FEATURES] for row in rows]).reshape(len(trajectories), len(FEATURES))
