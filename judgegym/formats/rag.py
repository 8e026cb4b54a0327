"""RagSupport-v0's text formats: citations (``[doc-id]``) and the article headers its tools write."""

from __future__ import annotations

import re

_ID = r"[^\[\]\s]{1,128}"
CITATION = re.compile(rf"\[({_ID})\]")
"""A citation, ``[doc-id]``: the article id in square brackets (no spaces, at most 128
characters); group 1 is the id. Agents are told to cite this way; the verifier, the judges and
the baselines read citations with this one pattern."""

_CITATION_RUN = re.compile(rf"(\[{_ID}\])")

ARTICLE_HEADER = re.compile(rf"^\[({_ID})\] ", re.MULTILINE)
"""The start of an article as ``search`` and ``read`` show it: ``[doc-id] Title`` at the start
of a line; group 1 is the id."""


def cite(doc_id: str) -> str:
    """The citation of `doc_id`: ``[doc_id]``."""
    return f"[{doc_id}]"


def cited_ids(text: str) -> list[str]:
    """The ids `text` cites, in order of appearance (repeats kept)."""
    return CITATION.findall(text)


def strip_citations(text: str, replacement: str = " ") -> str:
    """`text` with each citation replaced by `replacement`."""
    return CITATION.sub(replacement, text)


def split_citations(text: str) -> list[str]:
    """`text` cut around its citations: text, citation, text, ... (citations at odd indices)."""
    return _CITATION_RUN.split(text)


def article_text(doc_id: str, title: str, body: str) -> str:
    """An article as ``read`` returns it: its header line, a blank line, its text."""
    return f"[{doc_id}] {title}\n\n{body}"


def search_hit(doc_id: str, title: str, snippet: str) -> str:
    """One ``search`` hit: its header line, then a snippet of the article."""
    return f"[{doc_id}] {title}\n{snippet}"


__all__ = ["ARTICLE_HEADER", "CITATION", "article_text", "cite", "cited_ids", "search_hit", "split_citations", "strip_citations"]
