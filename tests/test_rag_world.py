"""Tests for the RagSupport world generator: determinism, size, and that every generated
scenario is answerable (or provably not) from the knowledge base it comes with."""

from __future__ import annotations

import itertools
import random
import re
import time
from collections import Counter

import pytest

from judgegym.envs.rag.scenario import RagScenario
from judgegym.envs.rag.verifier import RagVerifier
from judgegym.envs.rag.world import QUESTION_KINDS, World, build_world
from judgegym.judges.facts import extract_entities
from judgegym.trajectory import Message, Trajectory

SEEDS = (0, 1, 7, 1234)
N_PER_KIND = 150
_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_AMOUNT = re.compile(r"\$([\d,]+\.\d\d)")
_PERCENT = re.compile(r"(\d+)%")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_WORD = re.compile(r"[a-z][a-z-]+")
_CITE = re.compile(r"\[([a-z0-9-]+)\]")
_PRODUCT_NAME = re.compile(r"\b[A-Z][a-z]+ \d+(?: (?:Pro|Lite|Max|Mini|Plus|SE|Air|Ultra))?\b")


@pytest.fixture(scope="module")
def worlds() -> dict[int, World]:
    return {seed: build_world(seed) for seed in SEEDS}


@pytest.fixture(scope="module")
def scenarios(worlds: dict[int, World]) -> list[tuple[World, RagScenario]]:
    out = []
    for seed, world in worlds.items():
        rng = random.Random(f"test/{seed}")
        for kind in QUESTION_KINDS:
            out += [(world, world.sample_scenario(rng, f"{kind}-{i}", kind)) for i in range(N_PER_KIND)]
    return out


def _support_text(world: World, scenario: RagScenario) -> str:
    return "\n".join(world.doc(d).text for d in scenario.supporting_doc_ids)  # type: ignore[union-attr]


def _value(fact: str) -> float:
    match = _NUMBER.search(fact)
    assert match, f"no number in {fact!r}"
    return float(match.group().replace(",", ""))


def _derivable(fact: str, text: str) -> bool:
    """A computed dollar amount: a restocking fee (price x percent) or a total (price + shipping)."""
    cents = round(_value(fact) * 100)
    amounts = [round(float(a.replace(",", "")) * 100) for a in _AMOUNT.findall(text)]
    percents = [int(p) for p in _PERCENT.findall(text)]
    fees = {(a * p + 50) // 100 for a in amounts for p in percents}
    totals = {a + b for a, b in itertools.combinations(amounts, 2)}
    return fact.startswith("$") and cents in fees | totals


# -- determinism -----------------------------------------------------------------------


def test_same_seed_same_world() -> None:
    a, b = build_world(42), build_world(42)
    assert a.company == b.company
    assert a.documents == b.documents
    assert build_world(42, 30).documents == build_world(42, 30).documents


@pytest.mark.parametrize("kind", [*QUESTION_KINDS, None])
def test_equal_rng_state_gives_equal_scenario(worlds: dict[int, World], kind: str | None) -> None:
    world = worlds[0]
    first = [world.sample_scenario(random.Random(s), f"s-{s}", kind) for s in range(40)]
    rebuilt = build_world(0)
    again = [rebuilt.sample_scenario(random.Random(s), f"s-{s}", kind) for s in range(40)]
    assert first == again
    assert len({s.question for s in first}) > 10  # the rng actually drives the draw


def test_different_seeds_differ(worlds: dict[int, World]) -> None:
    a, b = worlds[0], worlds[1]
    assert a.documents != b.documents
    names = [{d.id for d in w.documents if d.id.endswith("-overview")} for w in (a, b)]
    assert len(names[0] & names[1]) < len(names[0]) / 2
    assert len({build_world(seed, 10).company for seed in range(12)}) >= 6


# -- size and ids ----------------------------------------------------------------------


def test_document_count_at_default_size(worlds: dict[int, World]) -> None:
    for world in worlds.values():
        assert len(world.documents) >= 400


def test_document_count_scales_linearly() -> None:
    small, large = build_world(5, 80), build_world(5, 2000)
    assert len(large.documents) >= 10_000
    assert 15 <= len(large.documents) / len(small.documents) <= 30


def test_ids_unique_and_slugs(worlds: dict[int, World]) -> None:
    for world in worlds.values():
        ids = [d.id for d in world.documents]
        assert len(ids) == len(set(ids))
        assert all(_ID.match(i) for i in ids), [i for i in ids if not _ID.match(i)][:5]
        assert all(world.doc(i) is d for i, d in zip(ids, world.documents, strict=True))
        assert world.doc("no-such-article") is None


def test_too_few_products_and_unknown_kind_raise(worlds: dict[int, World]) -> None:
    with pytest.raises(ValueError, match="n_products"):
        build_world(0, 1)
    with pytest.raises(ValueError, match="kind"):
        worlds[0].sample_scenario(random.Random(0), "x", "trivia")


def test_tiny_world_samples_every_kind() -> None:
    world = build_world(3, 2)
    rng = random.Random(0)
    for kind in QUESTION_KINDS:
        assert world.sample_scenario(rng, "x", kind).kind == kind


# -- scenarios -------------------------------------------------------------------------


def test_every_kind_samplable(scenarios: list[tuple[World, RagScenario]]) -> None:
    kinds = Counter(s.kind for _, s in scenarios)
    assert set(kinds) == set(QUESTION_KINDS)
    for _, s in scenarios:
        assert s.answerable == (s.kind != "unanswerable")
        assert s.documents == [] and s.system_prompt is None


def test_kind_weights_when_unspecified(worlds: dict[int, World]) -> None:
    rng = random.Random(9)
    counts = Counter(worlds[1].sample_scenario(rng, "x").kind for _ in range(4000))
    for kind, weight in zip(QUESTION_KINDS, (0.4, 0.25, 0.2, 0.15), strict=True):
        assert abs(counts[kind] / 4000 - weight) < 0.03, counts


def test_supporting_docs_exist_and_are_cited(scenarios: list[tuple[World, RagScenario]]) -> None:
    for world, s in scenarios:
        if not s.answerable:
            continue
        assert s.supporting_doc_ids and s.gold_facts, s
        for doc_id in s.supporting_doc_ids:
            assert world.doc(doc_id) is not None, doc_id
            assert f"[{doc_id}]" in s.reference_answer, (doc_id, s.reference_answer)
        for fact in s.gold_facts:
            assert fact in s.reference_answer, (fact, s.reference_answer)


def test_each_citation_is_backed_by_the_cited_document(scenarios: list[tuple[World, RagScenario]]) -> None:
    """The clause before each [doc-id] states something the question doesn't (a number or a
    word) that the cited document contains: no document is cited for show."""
    for world, s in scenarios:
        asked, asked_entities = set(_WORD.findall(s.question.lower())), extract_entities(s.question)
        clause_start = 0
        for match in _CITE.finditer(s.reference_answer):
            clause, clause_start = s.reference_answer[clause_start : match.start()], match.end()
            doc = world.doc(match.group(1))
            assert doc is not None
            words = {w for w in _WORD.findall(clause.lower()) if len(w) >= 4} - asked
            entities = extract_entities(clause) - asked_entities
            backed = entities & extract_entities(doc.text) or {w for w in words if w in doc.text.lower()}
            assert backed, (match.group(1), clause, s.reference_answer)


def test_gold_facts_are_in_supporting_docs_or_computed(scenarios: list[tuple[World, RagScenario]]) -> None:
    computed = 0
    for world, s in scenarios:
        text = _support_text(world, s).lower()
        for fact in s.gold_facts:
            if fact.lower() in text:
                continue
            computed += 1
            if s.kind == "comparison":
                a, b = (_value(f) for f in s.gold_facts[:2])
                assert _value(fact) == pytest.approx(abs(a - b)), s
                unit = fact.split()[-1].rstrip("s")  # "1 hour" and "12 hours" share a unit
                assert fact.startswith("$") or unit == s.gold_facts[0].split()[-1].rstrip("s"), s
            else:
                assert s.kind == "multi_hop" and _derivable(fact, text), s
    assert computed > 50  # comparisons and fee/total questions are common


def test_comparisons_state_two_values_and_their_difference(scenarios: list[tuple[World, RagScenario]]) -> None:
    for _, s in scenarios:
        if s.kind != "comparison":
            continue
        a, b = (_value(f) for f in s.gold_facts[:2])
        assert a != b
        assert any(_value(f) == pytest.approx(abs(a - b)) for f in s.gold_facts), s.gold_facts


def test_reference_answers_cite_no_unsupported_numbers(scenarios: list[tuple[World, RagScenario]]) -> None:
    for world, s in scenarios:
        seen = _support_text(world, s) + "\n" + s.question
        allowed = extract_entities(seen).union(*map(extract_entities, s.gold_facts))
        extra = extract_entities(s.reference_answer) - allowed
        assert not extra, (extra, s.reference_answer)


def test_questions_do_not_give_away_the_answer(scenarios: list[tuple[World, RagScenario]]) -> None:
    for _, s in scenarios:
        asked = extract_entities(s.question)
        for fact in s.gold_facts:
            assert fact.lower() not in s.question.lower(), (fact, s.question)
            entities = extract_entities(fact)
            assert not entities or not entities <= asked, (fact, s.question)


def test_distractors_differ_from_gold(scenarios: list[tuple[World, RagScenario]]) -> None:
    with_distractors = 0
    for _, s in scenarios:
        assert not set(s.distractor_facts) & set(s.gold_facts), s
        asked = extract_entities(s.question)
        assert not any(extract_entities(d) and extract_entities(d) <= asked for d in s.distractor_facts), s
        with_distractors += bool(s.distractor_facts and s.answerable)
    assert with_distractors > len(scenarios) * 0.2


def test_unanswerable_scenarios(scenarios: list[tuple[World, RagScenario]]) -> None:
    for _, s in scenarios:
        if s.kind != "unanswerable":
            continue
        assert s.gold_facts == [] and s.supporting_doc_ids == [] and not s.answerable
        assert "escalate" in s.reference_answer and "human support agent" in s.reference_answer
        assert "[" not in s.reference_answer


def test_lookalike_products_do_not_exist(scenarios: list[tuple[World, RagScenario]]) -> None:
    fakes = 0
    for world, s in scenarios:
        if s.kind != "unanswerable":
            continue
        for name in _PRODUCT_NAME.findall(s.question):
            slug = re.sub(r"[^a-z0-9]+", "-", name.lower())
            if world.doc(f"{slug}-overview") is None:
                fakes += 1
                mention = re.compile(re.escape(name) + r"(?![\w.])")
                assert not any(mention.search(d.text) or mention.search(d.title) for d in world.documents), name
    assert fakes > 20


def test_knowledge_base_never_covers_unanswerable_topics(worlds: dict[int, World]) -> None:
    banned = (
        "ip rating",
        "waterproof",
        "water-resist",
        "manufactured",
        "made in ",
        "trade-in",
        "student",
        "spare parts",
    )
    for world in worlds.values():
        for doc in world.documents:
            text = f"{doc.title}\n{doc.text}".lower()
            assert not [b for b in banned if b in text], doc.id


def test_questions_are_varied(scenarios: list[tuple[World, RagScenario]]) -> None:
    for kind in QUESTION_KINDS:
        questions = [s.question for _, s in scenarios if s.kind == kind]
        assert len(set(questions)) > 0.6 * len(questions), kind
        openings = {" ".join(q.split()[:3]) for q in questions}
        assert len(openings) >= 15, (kind, openings)


def test_reference_answers_get_full_marks_from_the_verifier(scenarios: list[tuple[World, RagScenario]]) -> None:
    verifier = RagVerifier()
    for world, s in scenarios[::7]:
        seen = "\n\n".join(f"[{d}] {world.doc(d).title}\n\n{world.doc(d).text}" for d in s.supporting_doc_ids)  # type: ignore[union-attr]
        trajectory = Trajectory(
            scenario_id=s.id,
            messages=[
                Message(role="system", content="support"),
                Message(role="user", content=s.question),
                Message(role="tool", content=seen or "No articles match."),
                Message(role="assistant", content=s.reference_answer),
            ],
            info={"task": s.model_dump(exclude={"documents", "system_prompt"})},
        )
        score = verifier.verify(trajectory)
        assert score.score == pytest.approx(1.0), (s, score.explanation)


# -- speed -----------------------------------------------------------------------------


def test_sampling_is_fast(worlds: dict[int, World]) -> None:
    world, rng = worlds[7], random.Random(0)
    start = time.perf_counter()
    for i in range(2000):
        world.sample_scenario(rng, f"s-{i}")
    assert (time.perf_counter() - start) / 2000 < 0.002
