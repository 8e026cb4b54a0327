"""Abstention told by meaning (`judgegym.judges.abstention`), measured on sentences written
apart from its examples (tests/data/abstention_sentences.json, scored once when the design
was done: the phrase list alone 15/50, by meaning 12/50, either 25/50, one false positive in
50 sentences that are not abstentions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgegym import Trajectory
from judgegym.envs.rag import RagVerifier
from judgegym.judges.abstention import ABSENCE, ABSTAINING, ANSWERING, abstains
from judgegym.judges.facts import ABSTENTION


@pytest.fixture(scope="module", autouse=True)
def embedder():
    """Load MiniLM once for the module (its load is the module's, not the first test's)."""
    from judgegym.judges.grounding import load_embedding_model

    return load_embedding_model()


SENTENCES = json.loads((Path(__file__).parent / "data" / "abstention_sentences.json").read_text())


@pytest.mark.slow
def test_the_held_out_sentences_are_told_apart_at_least_as_well_as_measured():
    either = [bool(ABSTENTION.search(s)) or abstains(s) for s in SENTENCES["abstaining"]]
    false = [abstains(s) for s in SENTENCES["other"]]
    assert len(either) == len(false) == 50
    assert sum(either) >= 25 and sum(false) <= 1


def test_every_example_carries_a_mark_of_absence_and_a_bare_assertion_never_abstains():
    assert sum(bool(ABSENCE.search(s)) for s in ABSTAINING) >= len(ABSTAINING) - 3
    assert not abstains("Yes, that is covered by our standard policy.")
    assert not abstains("According to the FAQ, the noise level is 42 dB.")  # a figure: an answer
    assert abstains("The help articles I read are silent on the Orbit 7's noise level.", question="How loud is the Orbit 7?")
    assert len(set(ABSTAINING) & set(ANSWERING)) == 0


@pytest.mark.parametrize(
    ("answer", "abstained"),
    [
        ("Gift-card returns are not something our support pages address. A colleague can confirm.", True),
        ("Gift cards can be returned within 14 days.", False),
    ],
)
def test_an_unanswerable_question_credits_an_abstention_in_any_wording(answer, abstained):
    """The verifier asks the classifier where the phrase list finds nothing (a wording near
    an example here: how well it carries is the held-out test's business)."""
    task = {"question": "Can I return a gift card?", "gold_facts": [], "answerable": False}
    trajectory = Trajectory.from_messages(
        [{"role": "user", "content": task["question"]}, {"role": "assistant", "content": answer}], task=task
    )
    score = RagVerifier().verify(trajectory)
    assert score.components["abstained"] == float(abstained)
    assert (score.score >= 0.8) == abstained


def test_a_figure_in_the_clause_beside_an_abstention_does_not_hide_it():
    answer = "The Prism 7 isn't in our help centre — the only models we have articles for are the Prism 8 and 9 series."
    assert abstains(answer, question="How much does the Prism 7 cost?")
    assert not abstains("The Prism 7 costs $129 — the Prism 8 costs $149.", question="How much does the Prism 7 cost?")
