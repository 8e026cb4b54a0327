"""Telling an abstention by meaning: "the sources do not answer this", in any wording.

A phrase list (`judgegym.judges.facts.ABSTENTION`) recognises the wordings someone wrote
into it; a careful answer that says the same thing in other words ("Nothing in our help
articles touches on that, and I'd rather not guess") slips through and, on a question the
knowledge base cannot answer, scores as if it had invented an answer. Here each sentence of
the answer is embedded with the embedded MiniLM encoder and compared with two sets of
example sentences: ones that say the sources lack the answer, and ones that do something
else (state a fact, including that a product *lacks* a feature; hedge a figure; greet; offer
help). A sentence abstains when its three nearest abstaining examples are, on average,
closer than its three nearest others by `MARGIN` and at least `FLOOR` similar.

Why this holds for wordings nobody wrote yet: sentence embeddings place paraphrases near one
another whatever their words, so a new way of saying "our documentation does not cover it"
lands near the examples that mean that, while "the kettle does not have a keep-warm mode",
which shares words with them, lands near the factual statements. The examples were written
to span the meaning (who lacks what: the knowledge base, the articles, the agent's search;
plain, apologetic, formal, terse), not one generator's templates; `tests/test_abstention.py`
checks the classifier on phrasings written apart from these examples.
"""

from __future__ import annotations

import re
from functools import cache

import numpy as np

from ..formats.rag import CITATION

ABSTAINING = (
    "The knowledge base does not say.",
    "I couldn't find anything about that in our articles.",
    "Our documentation doesn't cover this question.",
    "There is no information about this in the help centre.",
    "None of the articles I found mention it.",
    "I'm afraid I don't have an answer to that.",
    "Nothing I searched turned up details on this.",
    "That isn't something our support pages address.",
    "I wasn't able to locate this in the knowledge base.",
    "The articles available to me are silent on this point.",
    "I can't confirm that from the sources I have.",
    "This is not documented anywhere I can see.",
    "Sorry, I have no record of that information.",
    "I searched but found no article on this topic.",
    "Unfortunately our knowledge base has no entry for that product.",
    "I don't know, and I would rather not guess.",
    "We don't seem to have any documentation on this.",
    "The help articles don't go into that.",
    "I could not find a reliable answer to your question.",
    "There's no mention of this anywhere in our resources.",
    "That detail isn't available in the information I can access.",
    "I'm unable to answer this from our knowledge base.",
    "My search came up empty for this question.",
    "No article lists that figure.",
    "I do not have that information on file.",
    "Our records don't include anything about this.",
    "This falls outside what our help content covers.",
    "I can't find a product by that name in our catalogue.",
    "I'm not able to tell you, since it isn't written down anywhere I can check.",
    "The sources I checked don't answer it.",
    "The manuals are quiet on that point.",
    "I came up empty-handed looking for the delivery charge.",
    "Our catalogue has no listing for a model with that name.",
    "That question is left open by everything I was able to read.",
    "Nothing on file tells me when the shop opens on holidays.",
    "I have no means of checking that from the pages in front of me.",
    "None of the search results speak to the installation cost.",
    "Since it isn't stated anywhere I looked, I'd only be guessing.",
    "The product pages give no figure for the noise level.",
    "Our support material stops short of answering this.",
    "I'm sorry, there's nothing in our records about a loyalty scheme.",
    "I read the relevant articles, but none of them states the weight.",
    "This particular detail isn't published by us.",
    "I couldn't turn up any article on that.",
    "The information you asked for is missing from our documentation.",
)
"""Sentences that say the sources lack the answer."""

ANSWERING = (
    "The warranty is 24 months from the date of purchase.",
    "The kettle does not have a keep-warm mode.",
    "This model doesn't support Bluetooth.",
    "Accidental damage is not covered by the warranty.",
    "The knowledge base says returns are accepted within 30 days.",
    "According to the article, shipping takes 3 to 5 business days.",
    "I found the answer in the setup guide.",
    "It's probably around two kilograms, but please double-check.",
    "I think the price is $49, though I'm not certain.",
    "Let me know if there is anything else I can help with.",
    "I can escalate this to a human agent if you like.",
    "Thanks for reaching out!",
    "Hello, happy to help with your question.",
    "You can reset the device by holding the power button for ten seconds.",
    "The two models have the same battery life.",
    "The Pro costs $120 more than the Lite.",
    "Express delivery is not available to islands.",
    "There is no charge for standard returns.",
    "No adapter is included in the box.",
    "The app is not required to use the speaker.",
    "It comes in black, white and green.",
    "Please contact our support team at the number above.",
    "I have checked the specifications for you.",
    "The firmware update adds Czech as a language.",
    "Neither model is waterproof.",
    "The store does not ship to Canada.",
    "I hope this helps.",
    "Here is a summary of what I found.",
    "The refund will reach your card within five days.",
    "You will need your order number to start a return.",
    "The lamp has no timer function.",
    "We don't deliver on Sundays.",
    "Gift wrapping isn't offered for large items.",
    "The FAQ explains that the filter should be changed every 6 months.",
    "I searched the knowledge base and the weight is listed as 3.2 kg.",
    "The article confirms both models use the same charger.",
    "I can't issue a refund after the 30-day window has passed.",
    "Nothing needs to be installed before first use.",
    "None of the accessories are compatible with the older model.",
    "The Lite has never had a headphone jack.",
    "I'd estimate about 40 minutes, going by the similar model's figure.",
    "Our records show your order was delivered on Tuesday.",
    "The guide walks you through pairing step by step.",
    "Sorry for the wait, I have the details now.",
    "The speaker is not sold in Australia.",
)
"""Sentences that do something else: state a fact (also that a product lacks something),
hedge a figure, greet, offer help."""

MARGIN = 0.03
"""How much nearer (cosine similarity) an abstaining sentence is to the abstaining examples."""
FLOOR = 0.4
"""The least similarity to the abstaining examples for a sentence to count as one."""

ABSENCE = re.compile(
    r"(?<![\w-])(?:no|not|nothing|none|nowhere|never|neither|nor|without|cannot|unable|unavailable|unknown|unclear"
    r"|unanswered|unpublished|undocumented|missing|absent|lacks?|lacking|silent|quiet|empty|blank|short)(?![\w-])|n't\b",
    re.IGNORECASE,
)
"""The marks of absence in English: the negators (a closed class of the language, not any
writer's wording) and the few adjectives that say something is not there. An abstention says
that the sources lack something, so it carries one of them; a sentence without one asserts
("Yes, that is covered by our policy"), however near the examples its words fall, because
MiniLM's embeddings weigh topic far more than negation."""

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+|\s+[—–]\s+|;\s+")
"""Where an answer splits into sentences, and sentences into their clauses (at a dash or a
semicolon): "It isn't in our help centre — the only models we list are the 8 series" is an
abstention beside a statement, and the statement's figures must not hide it."""


@cache
def _examples() -> tuple[np.ndarray, np.ndarray]:
    from .grounding import embed

    return embed(list(ABSTAINING)), embed(list(ANSWERING))


def abstaining_sentences(answer: str, question: str = "") -> list[str]:
    """The sentences (or clauses) of `answer` that say the sources lack the answer (by meaning). A sentence
    that states a figure the `question` does not hold asserts an answer, so it is none of
    them ("According to the FAQ, the noise level is 42 dB" resembles the examples in words),
    and neither is one without a mark of absence (`ABSENCE`)."""
    from .facts import extract_entities
    from .grounding import embed

    asked = extract_entities(question)
    sentences = [s.strip(" -*•\t") for s in _SENTENCE.split(CITATION.sub(" ", answer))]
    sentences = [s for s in sentences if len(s.split()) >= 3 and ABSENCE.search(s) and not extract_entities(s) - asked]
    if not sentences:
        return []
    abstaining, answering = _examples()
    vectors = embed([_without_topic(s, question) for s in sentences])
    near_abstaining = np.sort(vectors @ abstaining.T, axis=1)[:, -3:].mean(axis=1)
    near_answering = np.sort(vectors @ answering.T, axis=1)[:, -3:].mean(axis=1)
    keep = (near_abstaining - near_answering >= MARGIN) & (near_abstaining >= FLOOR)
    return [s for s, k in zip(sentences, keep, strict=True) if k]


_WORD = re.compile(r"[^\W\d_][^\W\d_']*")


def _without_topic(sentence: str, question: str) -> str:
    """`sentence` with the words it shares with `question` (by their first four letters:
    "returns" is "return") replaced by "this". What the question is about says nothing of
    whether the sources answer it, and MiniLM weighs topic far above the rest: "Gift-card
    returns are not something our pages address" sits nearer sentences about returns than
    nearer "That is not something our pages address", which is what it says."""
    topic = {w.casefold()[:4] for w in _WORD.findall(question) if len(w) > 3}
    if not topic:
        return sentence
    return _WORD.sub(lambda m: "this" if len(m.group()) > 3 and m.group().casefold()[:4] in topic else m.group(), sentence)


def abstains(answer: str, question: str = "") -> bool:
    """True when some sentence of `answer` says the sources lack the answer."""
    return bool(abstaining_sentences(answer, question))


__all__ = ["ABSENCE", "ABSTAINING", "ANSWERING", "FLOOR", "MARGIN", "abstaining_sentences", "abstains"]
