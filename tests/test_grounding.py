"""GroundingJudge: faithful answers beat altered, off-topic and unread ones on RagSupport-v0,
and each component on hand-made context (loads MiniLM once, about 10 s)."""

from __future__ import annotations

import asyncio
import json
import re

import gymnasium as gym
import pytest

import judgegym  # noqa: F401  (registers the envs)
from judgegym.judges.grounding import GroundingJudge, context_chunks, split_sentences
from judgegym.trajectory import Group, Message, Trajectory

JUDGE = GroundingJudge()
KINDS = ("single_fact", "multi_hop", "comparison")
SEEDS = range(30)


def _read(doc_id: str) -> dict:
    arguments = json.dumps({"doc_id": doc_id})
    return {
        "role": "assistant",
        "tool_calls": [{"id": "r", "type": "function", "function": {"name": "read", "arguments": arguments}}],
    }


def _play(env, seed: int, kind: str, answer: str, *, read_docs: bool = True) -> Trajectory:
    _, info = env.reset(seed=seed, options={"kind": kind})
    if read_docs:
        for doc_id in info["task"]["supporting_doc_ids"]:
            env.step(_read(doc_id))
    *_, terminated, _, end = env.step(answer)
    assert terminated
    return end["trajectory"]


def _shift_numbers(answer: str) -> str:
    return re.sub(r"\d+", lambda m: str(int(m.group()) + 7), answer)


@pytest.fixture(scope="module")
def rag_scores() -> dict[str, list]:
    """Scores of four answers per seed: the reference after reading the supporting docs,
    (a) its numbers shifted, (b) another scenario's reference, (c) the reference unread."""
    env = gym.make("RagSupport-v0", split="test", n_products=20, max_turns=10)
    variants: dict[str, list[Trajectory]] = {"faithful": [], "numbers": [], "elsewhere": [], "unread": []}
    has_digits = []
    for seed in SEEDS:
        kind = KINDS[seed % len(KINDS)]
        _, info = env.reset(seed=seed, options={"kind": kind})
        reference = info["task"]["reference_answer"]
        has_digits.append(bool(re.search(r"\d", reference)))
        _, other = env.reset(seed=seed + 500, options={"kind": KINDS[(seed + 1) % len(KINDS)]})
        variants["faithful"].append(_play(env, seed, kind, reference))
        variants["numbers"].append(_play(env, seed, kind, _shift_numbers(reference)))
        variants["elsewhere"].append(_play(env, seed, kind, other["task"]["reference_answer"]))
        variants["unread"].append(_play(env, seed, kind, reference, read_docs=False))
    env.close()
    everything = [t for ts in variants.values() for t in ts]
    scores = iter(s.score for s in JUDGE.score_many(everything))
    return {"has_digits": has_digits} | {name: [next(scores) for _ in ts] for name, ts in variants.items()}


@pytest.mark.parametrize("variant", ["numbers", "elsewhere", "unread"])
def test_faithful_answers_score_clearly_higher(rag_scores, variant):
    pairs = list(zip(rag_scores["faithful"], rag_scores[variant], strict=True))
    if variant == "numbers":  # answers without digits (emails, colours) cannot be altered this way
        pairs = [pair for pair, digits in zip(pairs, rag_scores["has_digits"], strict=True) if digits]
        assert len(pairs) >= 20
    mean_faithful = sum(f for f, _ in pairs) / len(pairs)
    mean_other = sum(o for _, o in pairs) / len(pairs)
    assert mean_faithful >= 0.85 and mean_other <= 0.35, (mean_faithful, mean_other)
    clearly = sum(f >= o + 0.2 for f, o in pairs) / len(pairs)
    assert clearly >= 0.9, pairs


def _trajectory(answer: str, context: str, question: str = "How long is the warranty on the Aurora 2?") -> Trajectory:
    return Trajectory(
        scenario_id="hand-made",
        messages=[
            Message(role="system", content="You are a support assistant. Answer from the knowledge base."),
            Message(role="user", content=question),
            Message(role="tool", content=context, tool_call_id="r"),
            Message(role="assistant", content=answer),
        ],
    )


CONTEXT = (
    "[aurora-2-warranty] Aurora 2 warranty\n\n"
    "The Aurora 2 comes with a 24-month limited warranty that covers manufacturing defects. "
    "Accidental damage and water damage are not covered. "
    "To make a claim, email warranty@example.com with your order number."
)


def test_support_on_hand_made_context():
    claim = "The Aurora 2 has a 24-month warranty against manufacturing defects."
    unsupported = "You can ship it to Canada with any courier of your choice."
    question = "How long is the warranty on the Aurora 2, and how do I ship it to Canada?"
    faithful, unrelated, mixed, polite = JUDGE.score_many(
        [
            _trajectory(claim, CONTEXT, question),
            _trajectory(unsupported, CONTEXT, question),
            _trajectory(f"{claim} {unsupported}", CONTEXT, question),
            _trajectory(f"Thanks for reaching out! {claim} Have a wonderful day!", CONTEXT, question),
        ]
    )
    assert faithful.components["support"] >= 0.9 and faithful.score >= 0.9
    assert unrelated.components["support"] <= 0.1 and unrelated.score <= 0.1
    assert 0.3 <= mixed.components["support"] <= 0.7 and "ship it to Canada" in mixed.explanation
    assert polite.components["support"] >= 0.75  # pleasantries are off the question: they weigh little
    assert faithful.components["unsupported"] == 0 and faithful.components["coverage"] == 1.0


def test_unsupported_entities_halve_the_score_and_worked_arithmetic_counts():
    context = "The Lark 2 costs $759.99. The Lark 2 Ultra costs $1,369.99."
    question = "What's the price difference between the Lark 2 and the Lark 2 Ultra?"
    worked = "The Lark 2 costs $759.99 and the Lark 2 Ultra costs $1,369.99, so the Lark 2 is $610.00 cheaper."
    invented = worked + " Call 555-014-2233 for a 12% discount."
    good, bad = JUDGE.score_many([_trajectory(worked, context, question), _trajectory(invented, context, question)])
    assert good.components["unsupported"] == 0, good.explanation
    assert bad.components["unsupported"] == 2 and bad.components["grounding"] == 0.25
    assert "phone:5550142233" in bad.explanation and bad.score < good.score / 2


def test_a_number_worked_out_from_a_worked_out_one_is_supported():
    from judgegym.judges.grounding import _unsupported

    context = "The Haven 9 costs $1,249.95. Opened returns carry a 20% restocking fee."
    answer = "20% of $1,249.95 is $249.99, so you would get $999.96 back, or $899.96 after a $100 fee."
    assert _unsupported(answer, context) == ["num:100", "num:899.96"]  # an invented fee, and what rests on it


def test_a_date_a_stated_number_of_days_from_a_known_one_is_supported():
    from judgegym.judges.grounding import _unsupported

    context = "Today is 2025-08-20. The order was delivered on 2025-07-10. Refunds within 30 days of delivery."
    assert _unsupported("Delivered on 10 July, so the 30-day window closed on 9 August, 41 days ago.", context) == []
    assert _unsupported("The window closed on 19 August.", context) == ["date:2025-08-19"]


def test_a_date_the_context_writes_without_its_year_supports_the_answers_dated_one():
    from judgegym.judges.grounding import _unsupported

    context = "#5012 - 4 Feb 2025 - delivered 7 Feb\n#5302 - 2 Apr 2025 - dispatched 4 Apr"
    assert _unsupported("It was dispatched on 2025-04-04.", context) == []
    assert _unsupported("It was dispatched on 4 April.", context) == []
    assert _unsupported("It was dispatched on 2025-04-05.", context) == ["date:2025-04-05"]


def test_abstention_scores_mid_and_empty_answers_zero():
    abstain = "I couldn't find the warranty for that product in our knowledge base. Shall I escalate to a human agent?"
    score = JUDGE.score_sync(_trajectory(abstain, "Shipping to Poland takes 5 business days."))
    assert score.components["abstained"] == 1 and score.score == 0.5
    empty = JUDGE.score_sync(_trajectory("", CONTEXT))
    assert empty.score == 0 and empty.explanation == "no final answer"


def test_group_scores_are_the_pointwise_scores():
    trajectories = [
        _trajectory("The Aurora 2 has a 24-month warranty.", CONTEXT),
        _trajectory("The Aurora 2 has a 36-month warranty.", CONTEXT),
        _trajectory("I don't know.", CONTEXT),
    ]
    group = JUDGE.score_group_sync(Group(scenario_id="hand-made", trajectories=trajectories))
    alone = [asyncio.run(JUDGE.score(t)) for t in trajectories]
    assert [s.score for s in group] == pytest.approx([s.score for s in alone])
    assert group[0].score > group[1].score and not JUDGE.relative


def test_single_env_accepts_the_judge():
    env = gym.make("RagSupport-v0", split="test", n_products=20, judge=JUDGE)
    _, info = env.reset(seed=1, options={"kind": "single_fact"})
    for doc_id in info["task"]["supporting_doc_ids"]:
        env.step(_read(doc_id))
    *_, reward, terminated, _, end = env.step(info["task"]["reference_answer"])
    assert terminated and reward >= 0.8 and {"support", "coverage", "unsupported"} <= set(end["components"])
    env.close()


def test_sentence_splitting():
    text = "The price is $1,299.00. It ships in 3 days! Why? Because.\n- Bullet one\n2. Numbered item"
    assert split_sentences(text) == [
        "The price is $1,299.00.",
        "It ships in 3 days!",
        "Why?",
        "Because.",
        "Bullet one",
        "Numbered item",
    ]
    assert context_chunks("The Lark 2 is a vacuum. It costs $5. Shipping is free.") == [
        "The Lark 2 is a vacuum.",
        "It costs $5.",
        "Shipping is free.",
        "The Lark 2 is a vacuum. It costs $5.",
    ]
