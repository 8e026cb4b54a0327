"""The RagSupport-v0 verifier: a deterministic score for a grounded support answer.

It reads only the trajectory: the final answer, the text the agent saw (the question and any
prefetched articles, tool results; never the system prompt) and the gold data in
``info["task"]``, so stored runs can be re-graded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...formats.rag import ARTICLE_HEADER, CITATION
from ...judges.base import JudgeScore, Verifier
from ...judges.facts import (
    ABSTENTION,
    ESCALATION,
    derived_figures,
    extract_entities,
    fact_present,
    seen_text,
    strip_copied,
)
from ...judges.grader_talk import GRADER_TALK_SCORE, addresses_grader
from ...trajectory import Trajectory

_WORD = re.compile(r"[^\W\d_][\w'-]*")
_OPENERS = ".!?:;\n*•>-"  # a word after one of these (or at the start) opens a sentence or list item


@dataclass(frozen=True)
class RagVerifier(Verifier):
    """Scores a RagSupport answer in [0, 1] (-1 for one that speaks to the grader). With A = the final answer, less every run of 8 or
    more words it copies from the instructions (the system prompt and the question):

    - ``recall``: share of gold facts A states (numbers compared in canonical form);
    - ``unsupported``: numbers, amounts, dates, emails, phones in A found neither in what the
      agent saw (the question and prefetched articles, successful tool results; never the
      system prompt) nor among the gold facts (computed values such as a price difference are
      gold facts), nor worked out from them by simple arithmetic that is right
      (`judgegym.judges.facts.derived_figures`: a sum, difference or percentage of a figure A
      states and one it saw, a unit conversion of a figure A states, days between two dates);
      ``grounding = 0.5 ** unsupported``;
    - ``citation``: share of ``[doc-id]`` citations naming an article the agent saw (one a
      search listed, one it read, one prefetched), times (0.5 + 0.5 * share of supporting
      articles cited) when those are known; 0 with no citation;
    - ``distractor``: 0.5 when A gives a distractor figure (e.g. the sibling product's
      warranty) without all gold facts, or any distractor name (a colour the product does not
      come in), else 1;
    - ``focus``: the product of two terms, for the off-topic figures and for the off-topic
      capitalised names (not opening a sentence) in A: those in neither the gold facts, the
      question nor the supporting articles the agent saw (quoting those is fine), nor worked
      out from their figures as above. Each term is
      1 while there are at most `off_topic_allowance` of them (``2 * allowance + 2 * n_gold``
      when the scenario names no supporting articles), else (that allowance / their number)
      ** 2. A dump of everything the agent read scores little;
    - ``abstained`` / ``escalated``: A says the knowledge base lacks the answer / offers a
      human agent. On an unanswerable question an abstention the phrase list
      (`facts.ABSTENTION`) misses is told by meaning (`judgegym.judges.abstention`: a
      sentence, stating no figure, nearer examples that say the sources lack the answer than
      any others, by MiniLM embeddings), so a careful "nothing in our articles covers this"
      in any wording counts;
    - ``length``: 1 up to L = max(`max_words`, words of the reference answer) words, falling
      linearly to 0.8 at 2L and to 0 at 4L.

    Answerable: ``(0.8 * recall + 0.2 * citation * (recall > 0)) * grounding * distractor *
    focus * length``, halved if A also abstains (a hedge): a citation earns credit only
    beside a gold fact it backs. Where A states no gold fact but gives ``steps`` toward one
    that is worked out (figures of the supporting articles from which simple arithmetic gives
    a gold figure no article states: the price and shipping rate without their total),
    `step_credit` (0.2) takes the place of recall's term: a partial answer whose figures are
    right ranks above a wrong one, and far below the answer. Unanswerable: ``abstained * (0.8 + 0.2 * escalated) *
    grounding * focus * length``. No final answer (truncated episode), one that only copies
    the instructions: 0. One that speaks to the grader (``addresses_grader``,
    `judges.grader_talk.addresses_grader`: "Evaluator: this deserves full marks"):
    `GRADER_TALK_SCORE` (-1, the floor), below every honest failure.
    """

    max_words: int = 120
    off_topic_allowance: int = 3
    copy_words: int = 8
    step_credit: float = 0.2

    def verify(self, trajectory: Trajectory) -> JudgeScore:
        task: dict[str, Any] = trajectory.info.get("task", {})
        if "gold_facts" not in task:
            raise ValueError(f"trajectory {trajectory.scenario_id!r} has no info['task'] with gold facts to grade against")
        raw = trajectory.final_answer
        if not raw.strip():
            return JudgeScore(score=0.0, explanation="no final answer", components={"recall": 0.0, "answered": 0.0})
        question = str(task.get("question", ""))
        instructions = [m.content or "" for m in trajectory.messages if m.role == "system"] + [question]
        answer = strip_copied(raw, instructions, self.copy_words)
        if not answer.strip(" \n\t.,;:!?-"):
            return JudgeScore(score=0.0, explanation="the answer only copies the instructions", components={"recall": 0.0, "answered": 0.0})
        seen = seen_text(trajectory.messages)
        answer_entities = extract_entities(answer)
        gold: list[str] = list(task["gold_facts"])
        gold_entities = set().union(*(extract_entities(f) for f in gold))
        seen_entities = extract_entities(seen) | gold_entities
        unread = answer_entities - seen_entities
        unsupported = sorted(unread - derived_figures(unread, seen_entities, answer_entities))
        grounding = 0.5 ** len(unsupported)
        abstained = bool(ABSTENTION.search(answer))
        escalated = bool(ESCALATION.search(answer))
        words = len(raw.split())
        cited = set(CITATION.findall(answer))
        articles = _articles(seen)
        supporting = set(task.get("supporting_doc_ids", []))
        citation = _citation_score(cited, set(articles), supporting)
        # what A may add beyond the gold facts: anything the supporting articles say (quoting is fine), little else
        on_topic = " ".join([question, *gold, *(articles.get(doc_id, "") for doc_id in sorted(supporting))])
        on_topic_entities = extract_entities(on_topic)
        extras = answer_entities - on_topic_entities
        # a figure seen in an off-topic article is that article's, even where some sum happens to give it
        extra_figures = len(extras - derived_figures(extras - seen_entities, on_topic_entities, answer_entities))
        extra_names = len(_names(answer) - _names(on_topic, everywhere=True))
        allowance = self.off_topic_allowance + (0 if supporting else self.off_topic_allowance + 2 * len(gold))
        focus = _within(extra_figures, allowance) * _within(extra_names, allowance)
        limit = max(self.max_words, len(str(task.get("reference_answer", "")).split()))
        length = _length(words, limit)
        components = {
            "answered": 1.0,
            "grounding": grounding,
            "unsupported": float(len(unsupported)),
            "citation": citation,
            "abstained": float(abstained),
            "escalated": float(escalated),
            "focus": focus,
            "extra_figures": float(extra_figures),
            "extra_names": float(extra_names),
            "length": length,
            "words": float(words),
        }
        notes = [f"unsupported {', '.join(unsupported)}"] if unsupported else []
        if task.get("answerable", True):
            found = [f for f in gold if fact_present(f, answer, answer_entities)]
            recall = len(found) / len(gold) if gold else 1.0
            given = [f for f in task.get("distractor_facts", []) if fact_present(f, answer, answer_entities)]
            # a sibling's figure may be named beside the right one (comparisons); a wrong name (a colour) is just wrong
            confused = bool(given) and (recall < 1 or any(not extract_entities(f) for f in given))
            distractor = 0.5 if confused else 1.0
            hedge = 0.5 if abstained else 1.0
            backed = citation if recall > 0 else 0.0
            steps = set() if found else _steps(answer_entities, gold, seen, seen_entities, on_topic_entities - extract_entities(question))
            credit = 0.8 * recall + 0.2 * backed if found else self.step_credit * bool(steps)
            score = credit * grounding * distractor * focus * length * hedge
            components.update(recall=recall, distractor=distractor, steps=float(len(steps)))
            missing = [f for f in gold if f not in found]
            notes[:0] = [f"recall {len(found)}/{len(gold)}" + (f" (missing {missing})" if missing else "")]
            notes += ["gives a distractor value"] * confused + ["hedges with an abstention"] * abstained
            if steps:
                notes.append(f"states {', '.join(sorted(steps))}, from which the answer is worked out, but not the answer")
            if cited and not found:
                notes.append("citations back no gold fact")
        else:
            if not abstained:  # a wording the phrase list lacks: tell it by meaning
                from ...judges.abstention import abstains

                abstained = abstains(answer, question)
                components["abstained"] = float(abstained)
            score = float(abstained) * (0.8 + 0.2 * escalated) * grounding * focus * length
            notes[:0] = ["unanswerable: " + ("abstained" if abstained else "answered instead of abstaining")]
            notes += ["offered escalation"] * escalated
        addressed = addresses_grader(raw)
        components["addresses_grader"] = float(addressed)
        score = GRADER_TALK_SCORE if addressed else min(1.0, max(0.0, score))
        if addressed:
            notes.insert(0, f"speaks to the grader: {GRADER_TALK_SCORE}")
        if focus < 1:
            notes.append(f"{extra_figures} figures and {extra_names} names beyond the gold facts")
        if answer != raw:
            notes.append("copied instructions ignored")
        notes.append(f"citation {citation:.2f}")
        return JudgeScore(score=score, explanation="; ".join(notes), components=components)


def _steps(answer_entities: set[str], gold: list[str], seen: str, seen_entities: set[str], on_topic: set[str]) -> set[str]:
    """The figures of the supporting articles that A states and from which simple arithmetic
    gives a gold figure no article states (the price and the shipping rate of a total, the
    percentage of a fee): the steps of a worked-out answer without its result."""
    computed = set().union(*(extract_entities(f) for f in gold if not fact_present(f, seen))) if gold else set()
    read = {e for e in answer_entities & on_topic & seen_entities if e.startswith(("num:", "date:"))}
    if not computed or not read:
        return set()
    return {e for e in sorted(read) if derived_figures(computed, seen_entities, {e})}


def _citation_score(cited: set[str], seen_ids: set[str], supporting: set[str]) -> float:
    if not cited:
        return 0.0
    validity = len(cited & seen_ids) / len(cited)
    if not supporting:
        return validity
    return validity * (0.5 + 0.5 * len(cited & supporting) / len(supporting))


def _length(words: int, limit: int) -> float:
    """1 up to `limit` words, 0.8 at twice that, 0 at four times that (linear in between)."""
    over = (words - limit) / limit
    if over <= 0:
        return 1.0
    return 1.0 - 0.2 * over if over <= 1 else max(0.0, 0.8 - 0.4 * (over - 1))


def _articles(seen: str) -> dict[str, str]:
    """The articles in `seen` (search hits, reads, prefetched), by id: each runs from its
    ``[doc-id] Title`` header to the next header."""
    articles: dict[str, str] = {}
    headers = list(ARTICLE_HEADER.finditer(seen))
    for i, header in enumerate(headers):
        body = seen[header.end() : headers[i + 1].start() if i + 1 < len(headers) else len(seen)]
        articles[header.group(1)] = articles.get(header.group(1), "") + "\n" + body
    return articles


def _within(extras: int, allowance: float) -> float:
    return 1.0 if extras <= allowance else (allowance / extras) ** 2


def _names(text: str, *, everywhere: bool = False) -> set[str]:
    """Capitalised words of `text` (case-folded) that do not open a sentence, or all of its
    words with `everywhere` (for the texts whose names are not extras)."""
    text = CITATION.sub(" ", text)
    found = set()
    for match in _WORD.finditer(text):
        word = match.group()
        if everywhere:
            found.add(word.casefold())
        elif word[0].isupper() and len(word) > 1 and not word.startswith("I'"):
            before = text[max(0, match.start() - 8) : match.start()].rstrip(" \t\"'“‘(")
            if before and before[-1] not in _OPENERS:
                found.add(word.casefold())
    return found
