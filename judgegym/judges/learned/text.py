"""Features of an answer's text against what the agent saw, for any task: figures and names and
the context they were read in, copied runs, bare lists, figures tied to the wrong thing."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ...formats.rag import CITATION
from ...trajectory import Trajectory
from ..facts import (
    extract_entities,
    strip_copied,
)
from .view import read_trajectory

CONTENT_WORD = re.compile(r"[^\W\d_]{3,}")


_NAME = re.compile(r"(?<![\w-])[A-Z][\w'-]*")


_PERSON = re.compile(r"(?<![\w-])[A-Z][a-z]+ [A-Z][a-z]+(?:-[A-Z][a-z]+)?(?![\w-])")


_CLAUSE_END = re.compile(r"[;:]\s|,\s|\s[-\u2013\u2014]\s|[()]|\band\b")


SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


PART_END = re.compile(r";\s|,\s|\s[-\u2013\u2014]\s|[()]|\b(?:and|or|but|plus|while|whereas|against|versus|vs)\b")


_LABEL_END = re.compile(r":\s")


_FUNCTION_WORDS = frozenset(
    "the for and with from that this these those are was were has have had its per each you your our will can "
    "all also but not any into than then which who whom there their they them been being about".split()
)


NAME_RUN = re.compile(r"(?<![\w-])(?:[A-Z][\w'-]*|\d+(?:[.,]\d+)*)(?:[ \t]+(?:[A-Z][\w'-]*|\d+(?:[.,]\d+)*)(?![\w-]|:\d))+")
"""Runs of names and numbers: "Zephyr 6 Lite"; not "Saturday 10" of "Saturday 10:00"."""


def names_seen_share(question: str, seen: str) -> float:
    """Share of the question's names (capitalised words that do not open a sentence) that
    occur in what the tools returned; 1 when it names nothing. A product, region or person
    the sources never mention is a sign the sources cannot answer."""
    names = {m.group().casefold() for m in _NAME.finditer(question) if question[: m.start()].rstrip()[-1:] not in ("", ".", "!", "?")}
    names -= {"i", "i'm", "i've", "hi", "hello"}
    if not names:
        return 1.0
    words = {w.casefold() for w in re.findall(r"[\w'-]+", seen)}
    return len(names & words) / len(names)


def grounded_entities(entities: set[str], seen: set[str]) -> set[str]:
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


def copied_share(text: str, sources: Sequence[str]) -> float:
    """Share of `text`'s characters in runs of 8+ words copied from `sources`."""
    if not text.strip() or not any(sources):
        return 0.0
    kept = strip_copied(text, sources)
    return max(0.0, 1.0 - len(kept.strip()) / len(text.strip()))


def entity_context(answer: str, seen: str) -> tuple[float, float]:
    """How well the words around each figure or person of `answer` match the words around
    it where the agent saw it: per figure (or two-word name), the best share of its
    clause's content words (its sentence's, for a clause of under two) that a seen sentence
    holding it also has; a clause, so that a summary packing many facts into one sentence is
    judged fact by fact. (mean, min) over the answer's figures and names that were seen;
    (1, 1) when there are none. A figure or a name moved to the wrong product, section or
    role keeps its value but loses its context."""
    by_entity: dict[str, list[set[str]]] = {}
    for sentence in SENTENCE_END.split(seen):
        words = {w.casefold() for w in CONTENT_WORD.findall(sentence)}
        for entity in sentence_anchors(sentence):
            by_entity.setdefault(entity, []).append(words - set(entity.casefold().split()))
    shares = []
    for sentence in SENTENCE_END.split(CITATION.sub(" ", answer)):
        sentence_words = {w.casefold() for w in CONTENT_WORD.findall(sentence)}
        for clause in _CLAUSE_END.split(sentence):
            clause_words = {w.casefold() for w in CONTENT_WORD.findall(clause)}
            for entity in sentence_anchors(clause):
                own = clause_words - set(entity.casefold().split())
                if len(own) < 2:  # "Next meeting: 2025-03-01": the clause is too short to say what the figure is
                    own = sentence_words - set(entity.casefold().split())
                if entity in by_entity and own:
                    shares.append(max(len(own & other) / len(own) for other in by_entity[entity][:50]))
    return (float(np.mean(shares)), float(min(shares))) if shares else (1.0, 1.0)


def _parts(answer: str) -> list[str]:
    return split_on(CITATION.sub(" ", answer), SENTENCE_END, PART_END)


def _is_bare(part: str) -> bool:
    return len(part.split()) <= 3 and bool(figures_in(part))


def said_parts(answer: str) -> list[str]:
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


def sentence_anchors(sentence: str) -> set[str]:
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
    One seen sentence that ties the figure to a word of its answer sentence clears it (so
    "children $12 and adults $6", whose sentence names adults too, is not caught).
    Figures seen together in one part stay together ("Saturday 10:00-22:00": "open 10:00-22:00
    on Sunday" gives Saturday's hours for Sunday); two of one kind from different parts of the
    sources in one part of the answer are not checked ("Ana Lee with Bo Chan as secretary":
    whose words?). Words compare by their first five letters, so "child" meets "children"."""
    ties: dict[str, list[tuple[set[str], set[str]]]] = {}
    together: list[frozenset[str]] = []
    for sentence in SENTENCE_END.split(seen):
        parts = [(figures_in(part), part) for part in split_on(sentence, PART_END, _LABEL_END)]
        parts = [(anchors, _words(part, anchors)) for anchors, part in parts if anchors]
        together.extend(frozenset(anchors) for anchors, _ in parts if len(anchors) > 1)
        if len({frozenset(anchors) for anchors, _ in parts}) < 2:
            continue
        for entity in set().union(*(anchors for anchors, _ in parts)):
            own = set().union(*(words for anchors, words in parts if entity in anchors))
            other = set().union(*(words for anchors, words in parts if entity not in anchors and _kind(entity) in map(_kind, anchors)))
            if own - other:  # "Arclight Data and Ironleaf Software were shortlisted": Arclight's part says nothing
                ties.setdefault(entity, []).append((own - other, other - own))
    verdicts: dict[str, bool] = {}
    for sentence in SENTENCE_END.split(CITATION.sub(" ", answer)):
        said = _words(sentence, figures_in(sentence))
        for part in split_on(sentence, PART_END):
            anchors = figures_in(part)
            words = _words(part, anchors)
            for entity in anchors & ties.keys():
                kin = {a for a in anchors if _kind(a) == _kind(entity)}
                if len(kin) > 1 and not any(kin <= group for group in together):
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
    from ..grounding import embed

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
    for sentence in SENTENCE_END.split(seen):
        anchors = figures_in(sentence)
        if anchors and 10 < len(sentence.strip()) < 600:
            sources.setdefault(sentence.strip(), set()).update(anchors)
    stated = set().union(*sources.values(), set())
    parts = [
        (part.strip(), anchors)
        for sentence in SENTENCE_END.split(CITATION.sub(" ", answer))
        for part in split_on(sentence, PART_END)
        if (anchors := figures_in(part) & stated) and len(part.split()) >= 3
    ]
    return sources, parts


def prefetch_fit_texts(trajectories: Sequence[Trajectory]) -> None:
    """Embed every trajectory's `figures_fit_elsewhere` texts in one batch (the embedding
    cache then serves each trajectory's call): one large batch costs far less than many
    small ones."""
    from ..grounding import embed

    texts: list[str] = []
    for trajectory in trajectories:
        _, seen, answer = read_trajectory(trajectory)
        sources, parts = _fit_texts(answer, seen)
        if parts:
            texts += [*sources, *(part for part, _ in parts)]
    if texts:
        embed(texts)


def question_fit(question: str, evidence: str) -> tuple[float, float]:
    """How well the best sentence of `evidence` (what the tools returned, or the prompt's context)
    fits `question`, in cosine similarity of the embedded texts: as written, and with the
    question's names taken out of both sides (so that a sentence fits by what it says about
    the asked thing, not by naming it); (0, 0) when nothing was seen.

    Whether the sources hold the answer is a question of meaning that no phrase list can
    settle; a sentence that fits the question closely is evidence they do. An abstention
    after such a sentence is more likely a false one ("I couldn't find the warranty" after
    reading "The Aurora 2 has a 24-month warranty"); how much that weighs against the
    abstention's own credit is the learned head's to say."""
    from ..grounding import context_chunks, embed

    sentences = [s for s in context_chunks(evidence) if len(s.split()) >= 3]
    if not question.strip() or not sentences:
        return 0.0, 0.0
    names = name_runs(question)
    unnamed = re.compile("|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))) if names else None
    plain = [question, *sentences]
    vectors = embed([*plain, *((unnamed.sub(" ", t) for t in plain) if unnamed else ())])
    n = len(plain)
    kept = float((vectors[1:n] @ vectors[0]).max())
    removed = float((vectors[n + 1 :] @ vectors[n]).max()) if unnamed else kept
    return kept, removed


_CALENDAR = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july august "
    "september october november december".split()
)
"""Capitalised words that name days and months, not people: a closed class of the language,
so "On Sunday" or "Open Saturday" is not taken for a person."""


_CALENDAR_ABBREVIATIONS = frozenset({day[:3] for day in _CALENDAR} | {"sept", "tues", "thur", "thurs", "weds"})


def _calendar_word(word: str) -> bool:
    """A day or month ("Sunday"), its plural ("Sundays") or one of its abbreviations ("Tue",
    "Sept"); not a name or word that starts like one ("Marc", "Marchetti", "Maya", "Mayor")."""
    word = word.casefold()
    return word in _CALENDAR or word in _CALENDAR_ABBREVIATIONS or (word.endswith("s") and word[:-1] in _CALENDAR)


def _product_name(run: str) -> bool:
    """Whether a `NAME_RUN` match names a product ("Talon 1 Plus"), not a day's or a price's
    figure ("Tue 12", "CHF 205": a day or a currency code beside a number)."""
    return not any(_calendar_word(token) or re.fullmatch(r"[A-Z]{3}", token) for token in run.split())


def figures_in(text: str) -> set[str]:
    """The figures (not those of a product name: the 1 of "Talon 1 Plus") and people of `text`."""
    people = {p for p in _PERSON.findall(text) if not any(map(_calendar_word, p.split()))}
    return extract_entities(NAME_RUN.sub(lambda m: " " if _product_name(m.group()) else m.group(), text)) | people


def _kind(entity: str) -> str:
    """A figure's kind ("num", "date", "email", "phone") or "person"."""
    return entity.partition(":")[0] if ":" in entity else "person"


def split_on(text: str, *patterns: re.Pattern[str]) -> list[str]:
    parts = [text]
    for pattern in patterns:
        parts = [piece for part in parts for piece in pattern.split(part) if piece and piece.strip()]
    return parts


_UNIT_CODE = re.compile(r"\b[A-Z]{3}\b(?=\s?\d)|(?<=\d)\s?[A-Z]{3}\b")
"""A currency code written against a figure ("CHF 205", "45.00 NZD"): the figure's unit, not a
word the figure is tied to."""


def _words(text: str, anchors: set[str]) -> set[str]:
    """The content words of `text`, stemmed (`_stem`), without those of its names (`anchors`)
    and the currency codes of its figures."""
    names = {w.casefold() for anchor in anchors for w in anchor.split()}
    words = (m.casefold() for m in CONTENT_WORD.findall(_UNIT_CODE.sub(" ", text)))
    return {_stem(w) for w in words if w not in names and w not in _FUNCTION_WORDS}


def _stem(word: str) -> str:
    """A word's first five letters, after a plural "s" of a short word ("days", "fees"):
    "child" and "children", "adult" and "adults", "price" and "prices" meet; "class" keeps its
    "ss"; a day or month, or its abbreviation, its first three ("Tue", "Tues", "Tuesday").
    Enough to match a word's forms within one source and its answer, in any wording."""
    if _calendar_word(word):
        return word[:3]
    if len(word) <= 5 and word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        word = word[:-1]
    return word[:5]


def name_runs(text: str) -> list[str]:
    """The runs of two or more capitalised words or numbers in `text`, such as product,
    team and place names ("Zephyr 6 Lite", "Mobility Support")."""
    return NAME_RUN.findall(text)


def named(text: str) -> set[str]:
    """The `name_key` of each name `text` gives ("Dana Whitfield", "Zephyr 6 Pro"), leaving out
    a currency code with its figure ("USD 1200") and runs of numbers alone."""
    runs = name_runs(_UNIT_CODE.sub(" ", text))
    return {name_key(run) for run in runs if any(c.isalpha() for c in run)}


def name_key(run: str) -> str:
    words = run.casefold().split()
    return " ".join(words[1:] if words[0] in ("the", "a", "an", "our", "your", "this") and len(words) > 2 else words)
