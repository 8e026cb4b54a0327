"""A knowledge base with BM25 search (bm25s, Snowball-stemmed English) and lookup by id."""

from __future__ import annotations

import re
from collections.abc import Sequence

import bm25s
import numpy as np
import Stemmer
from bm25s.stopwords import STOPWORDS_EN

from .scenario import Document

_STEMMER = Stemmer.Stemmer("english")
# bm25s.tokenize's defaults (lower-case, this pattern, English stopwords), applied directly to one
# query: bm25s.tokenize builds progress-bar objects even when silent, half the cost of a search step.
_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_STOPWORDS = frozenset(STOPWORDS_EN)


def query_tokens(query: str) -> list[str]:
    """The stemmed tokens bm25s.tokenize would give for `query` (tested to agree)."""
    return _STEMMER.stemWords([w for w in _TOKEN.findall(query.lower()) if w not in _STOPWORDS])


class KnowledgeBase:
    """Documents indexed once for BM25 over title and text. Build cost is paid per KB; the
    envs cache KBs per world, so `search` is what a `step` pays."""

    def __init__(self, documents: Sequence[Document]):
        if not documents:
            raise ValueError("a knowledge base needs at least one document")
        self.documents = list(documents)
        self._by_id = {doc.id: doc for doc in self.documents}
        if len(self._by_id) != len(self.documents):
            raise ValueError("document ids must be unique within a knowledge base")
        corpus = [f"{doc.title}\n{doc.text}" for doc in self.documents]
        self._index = bm25s.BM25()
        self._index.index(bm25s.tokenize(corpus, stopwords="en", stemmer=_STEMMER, show_progress=False), show_progress=False)

    def __len__(self) -> int:
        return len(self.documents)

    def get(self, doc_id: str) -> Document | None:
        """The document with this id, or None."""
        return self._by_id.get(doc_id)

    @property
    def ids(self) -> list[str]:
        """All document ids, in index order."""
        return list(self._by_id)

    def search(self, query: str, k: int = 5) -> list[tuple[Document, float]]:
        """The top `k` documents by BM25 score, best first; documents scoring 0 are left out."""
        tokens = query_tokens(query)
        if not tokens or k < 1:
            return []
        scores = self._index.get_scores(tokens)
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((top, -scores[top]))]  # score desc, index asc on ties: deterministic
        return [(self.documents[i], float(scores[i])) for i in top if scores[i] > 0]
