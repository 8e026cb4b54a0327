"""Retrieval features (RagSupport-v0 and any search-and-read task): citations of what was read,
figures from articles about another product or another question."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from ...formats.rag import ARTICLE_HEADER, CITATION
from ..facts import (
    extract_entities,
)
from .text import NAME_RUN, PART_END, SENTENCE_END, figures_in, grounded_entities, name_key, name_runs, split_on
from .view import View

_FIGURE_TEXT = re.compile(r"\$?\d[\d,]*(?:\.\d+)?%?")


def figures_wrong_product(answer: str, articles: dict[str, str]) -> float:
    """Share of the figures `answer` says of a product (the nearest product name in the
    figure's part of the sentence; a part that names none is not checked) that only the
    articles about another product of its family state ("24 months" said of the Prism 8
    Pro, when only the Prism 8 Ultra's article has it): a
    swapped comparison or the sibling's figure. A product is a name an article's title
    holds; a figure any of whose mentions names a product whose article states it is right;
    0 when no figure can be checked."""
    titles = {doc_id: {name_key(run) for run in NAME_RUN.findall(text.partition("\n")[0])} for doc_id, text in articles.items()}
    products = set().union(*titles.values()) if titles else set()
    figures = {doc_id: extract_entities(text.partition("\n")[2]) for doc_id, text in articles.items()}
    verdicts: dict[str, bool] = {}
    mention = re.compile("|".join(rf"(?<![\w-]){re.escape(p)}(?![\w-])" for p in sorted(products, key=len, reverse=True)), re.I)
    said: list[tuple[str, str]] = []  # (product, entity)
    for part in split_on(CITATION.sub(" ", answer), SENTENCE_END, PART_END) if products else []:
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


def retrieval_features(view: View, answer: str, seen: str) -> dict[str, float]:
    cited = set(CITATION.findall(answer))
    listed = set(ARTICLE_HEADER.findall(seen))
    read_text = "\n".join(c.result for c in view.calls if c.ok and c.name == "read")
    read_in_full = "\n".join(c.result for c in view.calls if c.ok and (c.name == "read" or c.name.startswith("read_")))
    read_ids = set(ARTICLE_HEADER.findall(read_text))
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
        "entities_read_share": len(grounded_entities(entities, extract_entities(read_in_full))) / len(entities) if entities else 1.0,
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
    from ..grounding import embed

    asked = figures_in(question)
    stated = figures_in(CITATION.sub(" ", answer)) - asked
    if not stated:
        return 0.0
    sources: dict[str, set[str]] = {}
    for text in articles.values():
        for sentence in SENTENCE_END.split(text.partition("\n")[2]):
            figures = figures_in(sentence) - asked
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
        starts = [m.start() for m in ARTICLE_HEADER.finditer(result)]
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
    asked = {name_key(run) for run in name_runs(question)}
    if not asked:
        return set()
    titles = {doc_id: text.partition("\n")[0].partition("] ")[2] for doc_id, text in articles.items()}

    def about_asked(title: str) -> bool:
        named = [(name_key(m.group()), title[m.end() :].lstrip().casefold().startswith("series")) for m in NAME_RUN.finditer(title)]
        return not named or any(
            name == a or name.startswith(a + " ") or (series and a.startswith(name + " ")) for name, series in named for a in asked
        )

    on = [doc_id for doc_id, title in titles.items() if about_asked(title)]
    families = {a.split()[0] for a in asked}
    hop = {name_key(run) for doc_id in on for run in NAME_RUN.findall(articles[doc_id])}
    asked |= {name for name in hop if name.split()[0] not in families}  # one hop: the team an article names, not a sibling
    return {doc_id for doc_id, title in titles.items() if not about_asked(title)}
