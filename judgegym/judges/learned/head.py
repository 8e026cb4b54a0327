"""`LearnedJudge`: a linear head per task family over `trajectory_features`, with the shipped
weights (`weights.json`) and explanations in words (`FEATURE_WORDS`)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import ClassVar

import numpy as np

from ...trajectory import Trajectory
from ..base import BatchJudge, JudgeScore
from .features import FEATURES, features_matrix
from .text import prefetch_fit_texts
from .view import family_of

WEIGHTS_PATH = Path(__file__).with_name("weights.json")
"""The shipped weights, written by ``judgegym learned-judge train``."""


@dataclass(frozen=True)
class Head:
    """One family's linear head: ``sigmoid(weights . (x - mean) / scale + bias)``. A feature
    that cannot be measured (NaN: agreement with no peer, or of an answer that claims nothing)
    is read at its training mean, so it pushes neither way."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float

    def impute(self, x: np.ndarray) -> np.ndarray:
        """`x` with each NaN replaced by its feature's training mean."""
        return np.where(np.isnan(x), np.asarray(self.mean), x)

    def logit(self, x: np.ndarray) -> np.ndarray:
        return ((self.impute(x) - np.asarray(self.mean)) / np.asarray(self.scale)) @ np.asarray(self.weights) + self.bias


def load_heads(path: str | Path = WEIGHTS_PATH) -> dict[str, Head]:
    """The heads stored at `path`, by family; raises with the command that builds them."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no learned-judge weights at {path}; build them with: judgegym learned-judge train")
    data = json.loads(path.read_text())
    if tuple(data.get("features", ())) != FEATURES:
        raise ValueError(f"{path} was trained on other features; retrain: judgegym learned-judge train --out {path}")
    return {family: Head(**{k: tuple(v) if isinstance(v, list) else v for k, v in head.items()}) for family, head in data["heads"].items()}


@cache
def _shipped_heads() -> dict[str, Head]:
    return load_heads()


@dataclass(frozen=True)
class LearnedJudge(BatchJudge):
    """A pointwise judge that needs no gold answer and no LLM, in [0, 1].

    It scores a trajectory from what the agent saw and did and what it answered
    (`trajectory_features`: GroundingJudge's embedding support, copied instructions, figures
    and their context, citations of what was read, identification, changes made with and
    without the customer's request or yes, claims no tool backs, the prompt's policy, sections read)
    with a linear head per task family (`family_of`), trained with a pairwise objective within
    groups on verifier-labelled episodes of the envs' train splits. `heads` defaults to the
    shipped weights; pass `load_heads(path)` for retrained ones. Components: the family, the
    head's logit and the features it weighs most, so an explanation says why.

    Attempts at the same task scored in one call (same scenario id and question, e.g. a GRPO
    group or a judge-bench group) are also compared with one another: `claims_unshared` is
    how much of the figures and names an attempt states the others do not. Scored alone, an
    attempt has no peer and that feature is read at its training mean, so it moves nothing.
    """

    heads: dict[str, Head] | None = None

    relative: ClassVar[bool] = False

    def score_many(self, trajectories: Sequence[Trajectory]) -> list[JudgeScore]:
        """Score any trajectories with one embedding call; blocking."""
        from ..grounding import GroundingJudge

        heads = self.heads if self.heads is not None else _shipped_heads()
        groundings = GroundingJudge().score_many(trajectories)
        prefetch_fit_texts(trajectories)
        matrix = features_matrix(trajectories, groundings)
        scores = []
        for trajectory, row in zip(trajectories, matrix, strict=True):
            family = family_of(trajectory)
            head = heads.get(family) or heads["generic"]
            x = head.impute(row)  # a feature that could not be measured pushes neither way
            logit = float(head.logit(x))
            score = 0.0 if not trajectory.final_answer.strip() else 1.0 / (1.0 + math.exp(-logit))
            contributions = (x - np.asarray(head.mean)) / np.asarray(head.scale) * np.asarray(head.weights)
            components = {"logit": logit, **{name: float(x[FEATURES.index(name)]) for name in _LOGGED}}
            why = explain(FEATURES, x, contributions, np.asarray(head.mean))
            scores.append(JudgeScore(score=min(1.0, max(0.0, score)), explanation=f"{family} head: {why}", components=components))
        return scores


def explain(names: Sequence[str], x: np.ndarray, contributions: np.ndarray, mean: np.ndarray, top: int = 3) -> str:
    """The `top` features that moved the logit most, in words: what the answer did or did
    not do (from the feature's value against its training mean) and which way it pushed,
    e.g. "raised by: cites articles it read (+0.91); lowered by: hedges (-0.30)"."""
    order = [int(i) for i in np.argsort(-np.abs(contributions))[:top] if abs(contributions[i]) >= 0.005]
    parts = {"raised by": [], "lowered by": []}
    for i in order:
        more, less = FEATURE_WORDS.get(names[i], (f"high {names[i]}", f"low {names[i]}"))
        said = more if x[i] > mean[i] else less
        parts["raised by" if contributions[i] > 0 else "lowered by"].append(f"{said} ({contributions[i]:+.2f})")
    return "; ".join(f"{way}: {', '.join(items)}" for way, items in parts.items() if items) or "no feature stood out"


FEATURE_WORDS: dict[str, tuple[str, str]] = {
    "answered": ("gives an answer", "gives no answer"),
    "log_words": ("a long answer", "a short answer"),
    "over_limit": ("goes over the word limit", "keeps to the word limit"),
    "copied_instructions": ("copies the instructions back", "does not copy the instructions"),
    "copied_seen": ("copies long runs of the sources", "says things in its own words"),
    "listed": ("strings bare figures together", "says what its figures are"),
    "entities": ("states many figures and names", "states few figures or names"),
    "entity_seen_share": ("its figures and names appear in what it read", "states figures or names it never read"),
    "entity_context": ("its figures sit in the context they were read in", "its figures sit in a different context than read"),
    "entity_context_min": ("every figure keeps its context", "some figure is moved to another context"),
    "figures_misattached": ("attaches figures to the wrong thing", "attaches figures to the right thing"),
    "figures_fit_elsewhere": ("its figures fit another item better", "its figures fit the item it names"),
    "addresses_judge": ("speaks to the grader", "does not speak to the grader"),
    "hedges": ("hedges", "does not hedge"),
    "abstained": ("says the sources do not answer", "does not abstain"),
    "abstained_x_match": ("abstains although what it read matches the question", "no abstention despite matching sources"),
    "abstained_x_match_unnamed": (
        "abstains although what it read speaks to what was asked",
        "no abstention despite sources on what was asked",
    ),
    "question_names_seen": ("the sources name what the question asks about", "the sources never name what the question asks about"),
    "abstained_x_unseen": ("abstains where the sources never name the subject", "no abstention on an unnamed subject"),
    "abstained_x_escalation": ("abstains and offers escalation", "no abstention with escalation"),
    "figures_x_unseen": ("gives figures for a subject the sources never name", "no figures for an unnamed subject"),
    "claims_unshared": (
        "states figures or names the other attempts do not",
        "states nothing the other attempts do not (the figures and names it gives, if any, they give too)",
    ),
    "support": ("its sentences are supported by what it read", "its sentences are weakly supported by what it read"),
    "min_similarity": ("even its least supported sentence has support", "some sentence has no support"),
    "coverage": ("its answer is on the question", "its answer is off the question"),
    "relevance": ("answers the question asked", "strays from the question"),
    "grounding": ("its figures are all in its sources", "states figures its sources do not hold"),
    "unsupported": ("states figures its sources do not hold", "its figures are all in its sources"),
    "question_match": ("the sources match the question", "the sources do not match the question"),
    "tool_calls": ("makes many tool calls", "makes few tool calls"),
    "tool_error_share": ("many tool calls failed", "its tool calls succeeded"),
    "called_tools": ("uses the tools", "never uses the tools"),
    "format_errors": ("malformed tool calls", "well-formed tool calls"),
    "truncated": ("the episode was cut off", "the episode finished"),
    "citations": ("cites sources", "cites no sources"),
    "cited_seen_share": ("cites articles it found", "cites articles it never found"),
    "cited_read_share": ("cites articles it read", "cites articles it did not read"),
    "searched": ("searched", "never searched"),
    "reads": ("read articles", "read no article"),
    "entities_read_share": ("its figures come from articles it read", "its figures do not come from articles it read"),
    "figures_off_subject": ("its figures are about another subject", "its figures are about the subject asked"),
    "cited_off_subject": ("cites articles about another subject", "cites articles about the subject asked"),
    "figures_wrong_product": ("gives another product's figures", "gives the right product's figures"),
    "figures_off_question": ("its figures do not fit the question", "its figures fit the question"),
    "identified": ("identified the customer", "did not identify the customer"),
    "asked_identity": ("asked who the customer is", "did not ask who the customer is"),
    "refused_calls": ("some actions were refused", "no action was refused"),
    "writes_ok": ("made changes that succeeded", "made no change"),
    "writes_failed": ("attempted changes that failed", "no failed change"),
    "write_before_identified": ("changed the account before identifying the customer", "identified the customer before any change"),
    "write_unmentioned_order": ("changed an order the customer never mentioned", "changed only orders the customer mentioned"),
    "unconfirmed_writes": ("made changes the customer never confirmed", "made changes only once confirmed"),
    "false_claims": ("claims actions no tool backs", "claims only what its tools did"),
    "outcome_told": ("tells the customer the outcome", "does not tell the outcome"),
    "outside_window": ("acted outside the policy's window", "kept to the policy's window"),
    "dispute_refunded": ("refunded a dispute over the threshold", "no refund over the dispute threshold"),
    "needless_escalation": ("escalated needlessly", "no needless escalation"),
    "assistant_turns": ("takes many turns", "takes few turns"),
    "read_share": ("read most of the document", "read little of the document"),
    "title_share": ("much of it repeats section titles", "little of it repeats section titles"),
    "sections_covered": ("covers the sections", "covers few sections"),
}
"""Each feature in words: (what a value above its training mean says, what one below says)."""


_LOGGED = ("support", "grounding", "addresses_judge", "false_claims", "write_before_identified", "cited_read_share", "entity_context")
