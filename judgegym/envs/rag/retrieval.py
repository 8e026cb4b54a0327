"""A knowledge base with BM25 search (bm25s, Snowball-stemmed English) and lookup by id."""

from __future__ import annotations

from collections.abc import Sequence

import bm25s
import numpy as np
import Stemmer

from .scenario import Document

_STEMMER = Stemmer.Stemmer("english")


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
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=_STEMMER, show_progress=False, return_ids=False)[0]
        if not tokens or k < 1:
            return []
        scores = self._index.get_scores(tokens)
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((top, -scores[top]))]  # score desc, index asc on ties: deterministic
        return [(self.documents[i], float(scores[i])) for i in top if scores[i] > 0]
