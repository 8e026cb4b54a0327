"""Fitting and evaluating `LearnedJudge`'s heads on the teacher-labelled groups of `data`.

A head per task family is fitted with a pairwise logistic loss within groups (RankNet) plus a
small calibration term, its weights kept on their known sign (`SIGNS`).

    judgegym learned-judge train [--scenarios 60] [--out PATH]
    judgegym learned-judge eval [--weights PATH] [--groups FILE] [--generate 100] [--judge SPEC]

(``python -m judgegym.judges.learned.training`` takes the same arguments.)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize

from ...evaluation.judge_bench import generate_groups, load_labelled_groups, score_labelled_groups, summarize_agreement
from ...trajectory import Group, Trajectory
from ..base import Judge, JudgeScore
from ..specs import make_judge
from . import (
    FAMILIES,
    FAMILY_FEATURES,
    FEATURES,
    WEIGHTS_PATH,
    Head,
    LearnedJudge,
    family_of,
    load_heads,
)
from .data import (
    ENVS,
    INJECTED,
    Dataset,
    agent_episodes,
    dataset,
    episode_groups,
    family_agents,
    perturbation_groups,
    single_turn_groups,
    teacher_score,
)

SINGLE_TURN_FAMILIES = ("rag", "summarize")
"""The families whose groups `train` also retells in the single-turn format for the generic head."""

HANDWRITTEN_GROUPS = Path(__file__).parent / "groups"
"""Hand-labelled groups in worlds the envs never generate (the ``*.jsonl`` files here, in
judge-bench's external-group format, each described by its ``.md``): the generic head learns
from them besides the envs' groups, so that it has seen knowledge bases, policies, documents
and single-turn prompts no generator wrote."""


def handwritten_groups(folder: str | Path = HANDWRITTEN_GROUPS) -> list[Group]:
    """The labelled groups of every ``*.jsonl`` file in `folder` (sorted by name), each
    response's tier scaled to a teacher score in [0, 1] (tier / the file's highest tier)."""
    groups: list[Group] = []
    for path in sorted(Path(folder).glob("*.jsonl")):
        loaded = load_labelled_groups(path)
        top = max((t.info["tier"] for g in loaded for t in g.trajectories), default=1) or 1
        for group in loaded:
            for trajectory in group.trajectories:
                trajectory.info["teacher"] = trajectory.info["tier"] / top
                trajectory.info["label"] = trajectory.info["perturbation"]
        groups += loaded
    return groups


SIGNS: dict[str, int] = {
    **dict.fromkeys(
        (
            "answered", "entity_seen_share", "entity_context", "entity_context_min", "abstained_x_unseen",
            "abstained_x_escalation", "support", "coverage", "grounding", "cited_seen_share", "cited_read_share", "entities_read_share",
            "identified", "outcome_told", "read_share", "sections_covered",
        ),
        1,
    ),
    **dict.fromkeys(
        (
            "over_limit", "copied_instructions", "listed", "addresses_judge", "hedges", "figures_x_unseen", "unsupported",
            "claims_unshared",
            "abstained_x_match", "abstained_x_match_unnamed",
            "format_errors", "truncated", "refused_calls", "write_before_identified", "write_unmentioned_order",
            "unconfirmed_writes", "false_claims", "outside_window", "dispute_refunded", "needless_escalation", "title_share",
            "figures_off_subject", "cited_off_subject", "figures_misattached", "figures_fit_elsewhere", "figures_wrong_product",
            "figures_off_question",
        ),
        -1,
    ),
}  # fmt: skip
"""The direction each feature may push a score (1: only up, -1: only down; the rest are
free): what a careful reviewer knows before seeing any data. The fit keeps every weight on
its side, so a correlation that holds only in the generated data (an agent that cites also
happens to be verbose) cannot turn a sign of quality into a penalty."""


def fit_head(
    data: Dataset,
    *,
    l2: float = 0.01,
    calibration: float = 0.2,
    tie: float = 0.0,
    signs: bool = True,
    features: Sequence[str] = FEATURES,
    group_weights: np.ndarray | None = None,
) -> Head:
    """The head minimising the weighted pairwise logistic loss, plus `calibration` times the
    cross-entropy of its score against the teacher, plus `tie` times the squared logit gap of
    each tie (both per pair), plus `l2` times the squared weights, with each weight kept on
    its side of `SIGNS` (unless `signs` is false) and the weights of features not in
    `features` at 0. Every group weighs the
    same: its pairs' weights are scaled to one group's share, so a group of 14 agents (91
    pairs) counts no more than a perturbation group of 8 (28 pairs); `group_weights` (one
    per group of `data.group`) weighs some groups more than others."""
    with warnings.catch_warnings():  # a feature never measured in `data` (all NaN) gets mean 0 and weight 0
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nan_to_num(np.nanmean(data.x, axis=0))  # NaN: not measured (see `Head`); read at the mean
        spread = np.nan_to_num(np.nanstd(data.x, axis=0))
    scale = np.where(spread < 1e-6, 1.0, spread)
    z = np.nan_to_num((data.x - mean) / scale)
    better, worse = data.pairs[:, 0], data.pairs[:, 1]
    of_group = data.group[better]
    weights = data.weights / np.bincount(of_group, weights=data.weights)[of_group]  # each group sums to 1
    if group_weights is not None:
        weights = weights * np.asarray(group_weights, dtype=float)[of_group]
    total = weights.sum() or 1.0

    def loss(params: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = params[:-1], params[-1]
        s = z @ w + b
        margin = s[better] - s[worse]
        pair_loss = np.logaddexp(0.0, -margin)
        dmargin = -weights / (1.0 + np.exp(margin)) / total
        grad_s = np.zeros_like(s)
        np.add.at(grad_s, better, dmargin)
        np.add.at(grad_s, worse, -dmargin)
        p = 1.0 / (1.0 + np.exp(-s))
        bce = -(data.y * np.log(p + 1e-9) + (1 - data.y) * np.log(1 - p + 1e-9))
        grad_s += calibration * (p - data.y) / len(s)
        gap = s[data.ties[:, 0]] - s[data.ties[:, 1]]
        np.add.at(grad_s, data.ties[:, 0], 2 * tie * gap / total)
        np.add.at(grad_s, data.ties[:, 1], -2 * tie * gap / total)
        value = float((weights * pair_loss).sum() / total + tie * (gap @ gap) / total + calibration * bce.mean() + l2 * (w @ w))
        grad = np.concatenate([z.T @ grad_s + 2 * l2 * w, [grad_s.sum()]])
        return value, grad

    bounds = [
        (0.0, 0.0)
        if name not in features
        else (0.0, None)
        if SIGNS.get(name, 0) > 0 and signs
        else (None, 0.0)
        if SIGNS.get(name, 0) < 0 and signs
        else (None, None)
        for name in FEATURES
    ]
    result = minimize(
        loss, np.zeros(z.shape[1] + 1), jac=True, method="L-BFGS-B", bounds=[*bounds, (None, None)], options={"maxiter": 2000}
    )
    weights = np.where(spread < 1e-6, 0.0, result.x[:-1])
    return Head(mean=tuple(map(float, mean)), scale=tuple(map(float, scale)), weights=tuple(map(float, weights)), bias=float(result.x[-1]))


def training_groups(
    family: str, scenarios: int, *, perturbation: int = 0, seed: int = 0, cache: str | Path | None = None
) -> tuple[list[Group], list[JudgeScore]]:
    """A family's train-split groups (`episode_groups`, plus `perturbation` judge-bench
    groups) and GroundingJudge's score of each of their trajectories, in order. With `cache`
    (a folder), each agent's episodes and their grounding scores are read from, or written
    to, ``{family}-{agent}-{settings}.jsonl`` there, so adding an agent plays only that one.
    Files are keyed by the agent's name, not its code: delete an agent's file after changing
    what it does. The teacher's score is recomputed on loading, so changing `teacher_score` needs
    no replay."""
    parts = [(agent.name, lambda agent=agent: agent_episodes(family, agent, scenarios, seed=seed)) for agent in family_agents(family)]
    if perturbation:
        parts.append(("judge-bench", lambda: [t for g in perturbation_groups(perturbation, seed=seed) for t in g.trajectories]))
    played: list[tuple[str, list[Trajectory], list[JudgeScore]]] = []
    for name, play in parts:
        stored = Path(cache) / f"{family}-{name}-{scenarios if name != 'judge-bench' else perturbation}-{seed}-v7.jsonl" if cache else None
        if stored is not None and stored.is_file():
            records = [json.loads(line) for line in stored.read_text().splitlines() if line]
            episodes = [Trajectory.model_validate(r["trajectory"]) for r in records]
            groundings = [JudgeScore.model_validate(r["grounding"]) for r in records]
            for episode in episodes:  # the teacher may have changed since the episodes were played
                if name != "judge-bench":
                    episode.info["teacher"] = teacher_score(name, episode)
        else:
            from ..grounding import GroundingJudge

            episodes = play()
            groundings = GroundingJudge().score_many(episodes)
            if stored is not None:
                stored.parent.mkdir(parents=True, exist_ok=True)
                lines = (
                    json.dumps({"trajectory": t.model_dump(mode="json"), "grounding": g.model_dump()})
                    for t, g in zip(episodes, groundings, strict=True)
                )
                stored.write_text("\n".join(lines) + "\n")
        played.append((name, episodes, groundings))
    agents = [(e, g) for name, e, g in played if name != "judge-bench"]
    groups = [Group(scenario_id=column[0].scenario_id, trajectories=list(column)) for column in zip(*(e for e, _ in agents), strict=True)]
    scores = [score for column in zip(*(g for _, g in agents), strict=True) for score in column]
    for name, episodes, groundings in played:
        if name == "judge-bench":  # consecutive episodes of one scenario are one group
            for scenario_id, members in itertools.groupby(episodes, key=lambda t: t.scenario_id):
                groups.append(Group(scenario_id=scenario_id, trajectories=list(members)))
            scores += groundings
    return groups, scores


def train(
    scenarios: int = 60,
    *,
    perturbation: int = 60,
    seed: int = 0,
    l2: float = 0.01,
    calibration: float = 0.2,
    tie: float = 0.0,
    cache: str | Path | None = None,
    keep: dict[str, Head] | None = None,
    handwritten: str | Path | None = HANDWRITTEN_GROUPS,
    handwritten_weight: float | None = None,
    log: Callable[[str], None] = print,
) -> tuple[dict[str, Head], dict[str, Any]]:
    """Build the train-split groups of every family and fit the heads: each family's on its
    env's groups (and, for a head in `HANDWRITTEN_HEADS`, the `handwritten_groups` of the
    folder `handwritten` that `family_of` gives to it), the generic one on all of them, the
    envs' groups retold in the single-turn format and every hand-labelled group (unless
    `handwritten` is None).
    Returns the heads and a summary (groups, pairs, train pairwise accuracy).
    `handwritten_weight`: how much each hand-labelled group weighs in a head's fit against
    one generated group; None chooses it per head from `HANDWRITTEN_WEIGHTS` by
    `choose_handwritten_weight` (cross-validation on unseen hand-labelled and generated groups).
    `keep`: heads taken as they are instead of fitted (a refit of the others only).
    With `cache` (a folder), each family's played groups and their grounding scores (the
    slow part: the episodes and the embeddings) are kept there, keyed by the data settings,
    so a refit, or a change to the features, skips playing them (the features are computed
    again: about 9 minutes on 2 cores, against 12.5 from nothing)."""
    datasets: dict[str, Dataset] = {}
    retold: list[Group] = []
    for family in ENVS:
        started = time.perf_counter()
        groups, groundings = training_groups(family, scenarios, perturbation=perturbation if family == "rag" else 0, seed=seed, cache=cache)
        datasets[family] = dataset(groups, groundings)
        log(f"{family}: {len(groups)} groups, {len(datasets[family].pairs)} pairs ({time.perf_counter() - started:.0f} s)")
        if family in SINGLE_TURN_FAMILIES:
            retold += single_turn_groups(groups, seed=seed)
    if retold:  # the generic head also learns the single-turn format (context in the prompt, no tools)
        started = time.perf_counter()
        datasets["single-turn"] = dataset(retold)
        log(f"single-turn: {len(retold)} groups, {len(datasets['single-turn'].pairs)} pairs ({time.perf_counter() - started:.0f} s)")
    written: dict[str, list[Group]] = {}
    for group in handwritten_groups(handwritten) if handwritten is not None else []:
        written.setdefault(family_of(group.trajectories[0]), []).append(group)
    for family, groups in sorted(written.items()):  # worlds no env generates: the generic head (and those in HANDWRITTEN_HEADS) learn them
        started = time.perf_counter()
        datasets[f"handwritten-{family}"] = part = dataset(groups)
        log(f"handwritten ({family}): {len(groups)} groups, {len(part.pairs)} pairs ({time.perf_counter() - started:.0f} s)")
    keep = keep or {}
    heads: dict[str, Head] = {}
    summary: dict[str, Any] = {}
    for family in [*(f for f in FAMILY_FEATURES if f in datasets), "generic"]:
        own = [
            name
            for name in datasets
            if family == "generic" or name == family or (family in HANDWRITTEN_HEADS and name == f"handwritten-{family}")
        ]
        data = _concat([datasets[name] for name in own])
        if family in keep:
            heads[family] = keep[family]
        else:
            fit = {"l2": l2, "calibration": calibration, "tie": tie, "features": FAMILY_FEATURES.get(family, FEATURES)}
            is_written = np.zeros(int(data.group.max()) + 1, dtype=bool)
            written_rows = np.concatenate([np.full(len(datasets[name].x), name.startswith("handwritten")) for name in own])
            is_written[np.unique(data.group[written_rows])] = True
            weight = 1.0
            if is_written.any():
                weight = handwritten_weight
                if weight is None and is_written.sum() < _CV_LEAST:
                    weight = 1.0  # too few to tell one weight from another: counted as generated groups are
                if weight is None:
                    started = time.perf_counter()
                    weight, folds = choose_handwritten_weight(data, is_written, seed=seed, **fit)
                    summary.setdefault("handwritten_cv", {})[family] = folds
                    log(
                        f"{family} head, weight of a hand-labelled group: "
                        + ", ".join(f"{w:g} -> {a:.3f} / {g:.3f}" for w, (a, g) in folds.items())
                        + f" (pairwise agreement on unseen hand-labelled / generated groups, {_CV_FOLDS} folds): {weight:g}"
                        + f" ({time.perf_counter() - started:.0f} s)"
                    )
                summary.setdefault("handwritten_weight", {})[family] = weight
            heads[family] = fit_head(data, group_weights=np.where(is_written, weight, 1.0), **fit)
    for name, data in {**datasets, "generic": _concat(list(datasets.values()))}.items():
        head = heads.get(name) or heads["generic"]
        summary[name] = {"pairs": len(data.pairs), "ties": len(data.ties), "train_pairwise": _pairwise(head, data)}
    return heads, summary


def _concat(parts: Sequence[Dataset]) -> Dataset:
    """`parts` as one dataset: rows, pairs and ties re-indexed, groups numbered apart."""
    rows = np.cumsum([0, *(len(d.x) for d in parts)])
    groups = np.cumsum([0, *(int(d.group.max()) + 1 for d in parts)])
    return Dataset(
        x=np.concatenate([d.x for d in parts]),
        y=np.concatenate([d.y for d in parts]),
        pairs=np.concatenate([d.pairs + offset for d, offset in zip(parts, rows, strict=False)]),
        weights=np.concatenate([d.weights for d in parts]),
        ties=np.concatenate([d.ties + offset for d, offset in zip(parts, rows, strict=False)]),
        group=np.concatenate([d.group + shift for d, shift in zip(parts, groups, strict=False)]),
    )


HANDWRITTEN_HEADS = ("generic",)
"""The heads the hand-labelled groups train, besides none of the envs' family heads. The rag
head scores search-and-read knowledge bases of any world, so the 29 such groups would seem
to belong to it too; but fitted on them (at any weight from 1), it ranks a false abstention
on the article the agent read above the correct cited answer again
(`test_learned_ranks_a_correct_answer_above_abstaining_on_the_article_it_read`): their true
abstentions rank first where no feature can tell that the articles do not answer, so the head
learns to pay abstaining, the reward hack GRPO found on the tenth version. The rag head is
the envs' training reward, so it stays fitted on the envs' groups alone."""

HANDWRITTEN_WEIGHTS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
"""The weights `train` chooses among for each hand-labelled group in the generic head's fit."""

_CV_FOLDS = 5
_CV_LEAST = 2 * _CV_FOLDS
"""A head with fewer hand-labelled groups than this weighs them as generated groups (1):
with one group or none a fold, the held-out agreement is a pair or two's luck."""


def choose_handwritten_weight(
    pooled: Dataset,
    is_written: np.ndarray,
    *,
    candidates: Sequence[float] = HANDWRITTEN_WEIGHTS,
    folds: int = _CV_FOLDS,
    seed: int = 0,
    **fit: Any,
) -> tuple[float, dict[float, tuple[float, float]]]:
    """The weight of a hand-labelled group (`is_written`, by group of `pooled`) with which a
    head ranks best the groups its fit did not see, hand-labelled and generated alike: both
    kinds of group are dealt into `folds` folds (seeded); for each candidate, the head is
    fitted on everything but one fold and scored by pairwise agreement on that fold's
    hand-labelled groups and, apart, on its generated ones, each pooled over the folds.
    Returns the candidate with the best mean of the two (the smallest of equals) and every
    candidate's (hand-labelled, generated) agreement. The mean weighs the worlds the envs do
    not generate as much as the envs' own, so a weight that buys the first with the second
    is not chosen."""
    rng = np.random.default_rng(seed)
    fold_of = np.zeros(len(is_written), dtype=int)
    for kind in (np.flatnonzero(is_written), np.flatnonzero(~is_written)):
        fold_of[rng.permutation(kind)] = np.arange(len(kind)) % folds
    agreement: dict[float, tuple[float, float]] = {}
    for weight in candidates:
        credit, total = np.zeros(2), np.zeros(2)
        for fold in range(folds):
            held = fold_of[pooled.group] == fold
            head = fit_head(_rows(pooled, ~held), group_weights=np.where(is_written, weight, 1.0), **fit)
            for k, rows in enumerate((held & is_written[pooled.group], held & ~is_written[pooled.group])):
                part = _rows(pooled, rows)
                n = part.weights.sum()
                if n:
                    credit[k] += _pairwise(head, part) * n
                    total[k] += n
        agreement[float(weight)] = (float(credit[0] / max(total[0], 1e-9)), float(credit[1] / max(total[1], 1e-9)))
    best = max(sum(a) for a in agreement.values())
    return min(w for w, a in agreement.items() if sum(a) >= best - 1e-9), agreement


def _rows(data: Dataset, keep: np.ndarray) -> Dataset:
    """`data` restricted to the rows where `keep` is true, with the pairs and ties among them
    (group ids unchanged)."""
    new = np.cumsum(keep) - 1

    def among(index: np.ndarray) -> np.ndarray:
        inside = keep[index[:, 0]] & keep[index[:, 1]] if len(index) else np.zeros(0, dtype=bool)
        return new[index[inside]].reshape(-1, 2), inside

    pairs, inside = among(data.pairs)
    ties, _ = among(data.ties)
    return Dataset(x=data.x[keep], y=data.y[keep], pairs=pairs, weights=data.weights[inside], ties=ties, group=data.group[keep])


def _pairwise(head: Head, data: Dataset) -> float:
    s = head.logit(data.x)
    margin = s[data.pairs[:, 0]] - s[data.pairs[:, 1]]
    credit = np.where(margin > 1e-9, 1.0, np.where(np.abs(margin) <= 1e-9, 0.5, 0.0))
    return float((credit * data.weights).sum() / data.weights.sum())


def save_heads(heads: dict[str, Head], path: str | Path = WEIGHTS_PATH, *, meta: dict[str, Any] | None = None) -> Path:
    """Write `heads` (and `meta`: how they were trained) as the JSON `load_heads` reads."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "features": list(FEATURES),
        "meta": meta or {},
        "heads": {
            f: {k: [round(v, 6) for v in value] if isinstance(value, tuple) else round(value, 6) for k, value in vars(h).items()}
            for f, h in heads.items()
        },
    }
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


# -- the command -------------------------------------------------------------------------------


def held_out_episode_groups(family: str, scenarios: int, *, seed: int = 1000) -> list[Group]:
    """`episode_groups` of the test split as judge-bench groups: the teacher's score (in
    tenths, harm and inaction both 0, a note to the grader -1) is the tier, the agent the
    label; groups where every episode ties are dropped."""
    groups = episode_groups(family, scenarios, split="test", seed=seed)
    for group in groups:
        for trajectory in group.trajectories:
            trajectory.info["tier"] = round(max(0.0, trajectory.info["teacher"]) * 10) - (trajectory.info["label"] == INJECTED)
            trajectory.info["perturbation"] = trajectory.info["label"]
    return [g for g in groups if len({t.info["tier"] for t in g.trajectories}) > 1]


def evaluate(judge: Judge, groups: Sequence[Group], name: str, judge_name: str) -> dict[str, Any]:
    """judge-bench's metrics of `judge` on `groups`, overall and per family, and how often a
    response that addresses the judge was ranked first (alone or tied)."""
    results = asyncio.run(score_labelled_groups(judge, groups))
    report = summarize_agreement(results, judge_name)
    injected_first = 0
    for result in results:
        if result.scores is None:
            continue
        top = max(result.scores)
        injected_first += any(
            score >= top - 1e-9 and any(mark in label for mark in ("addresses_judge", "inject", "grader"))
            for score, label in zip(result.scores, result.labels, strict=True)
        )
    by_family: dict[str, list[Any]] = {}
    for group, result in zip(groups, results, strict=True):
        by_family.setdefault(family_of(group.trajectories[0]), []).append(result)
    return {
        "set": name,
        "judge": judge_name,
        "groups": report.n_groups,
        "pairwise": report.pairwise_accuracy,
        "kendall_tau": report.kendall_tau,
        "top1": report.top1_accuracy,
        "length_bias": report.length_bias,
        "position_bias": report.position_bias,
        "injection_ranked_first": injected_first,
        "pairwise_by_family": {f: summarize_agreement(rs).pairwise_accuracy for f, rs in sorted(by_family.items())},
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="judgegym learned-judge", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    train_cmd = commands.add_parser("train", help="build train-split groups of the three envs and fit the heads")
    train_cmd.add_argument("--scenarios", type=int, default=60, help="scenarios per env (default 60)")
    train_cmd.add_argument("--perturbation-groups", type=int, default=60, help="judge-bench train-split groups (default 60)")
    train_cmd.add_argument("--seed", type=int, default=0)
    train_cmd.add_argument("--l2", type=float, default=0.01, help="weight decay of the heads (default 0.01)")
    train_cmd.add_argument("--tie", type=float, default=0.0, help="weight pulling tied good episodes' scores together (default 0)")
    train_cmd.add_argument("--calibration", type=float, default=0.2, help="weight of the pointwise calibration term (default 0.2)")
    train_cmd.add_argument(
        "--cache",
        help="a folder to keep the played groups and their grounding scores in, so refitting skips playing them (not the features)",
    )
    train_cmd.add_argument("--out", default=str(WEIGHTS_PATH), help="where to write the weights (default: the shipped file)")
    train_cmd.add_argument(
        "--keep",
        action="append",
        default=[],
        choices=list(FAMILIES),
        help="keep this head as it is in --out instead of refitting it (repeatable)",
    )
    train_cmd.add_argument(
        "--handwritten",
        default=str(HANDWRITTEN_GROUPS),
        metavar="DIR",
        help="a folder of hand-labelled group files the generic head also learns from (default: the shipped ones; '' for none)",
    )
    train_cmd.add_argument(
        "--handwritten-weight",
        type=_positive,
        metavar="W",
        help="weight of each hand-labelled group in the generic head's fit (default: chosen by cross-validation over them)",
    )
    eval_cmd = commands.add_parser("eval", help="judge-bench on held-out groups")
    eval_cmd.add_argument("--weights", default=str(WEIGHTS_PATH))
    eval_cmd.add_argument("--groups", action="append", default=[], help="a labelled-group JSONL file (repeatable)")
    eval_cmd.add_argument("--generate", type=int, default=0, help="also N judge-bench RagSupport-v0 test-split groups")
    eval_cmd.add_argument("--episodes", type=int, default=0, help="also N test-split episode groups per env (verifier as tiers)")
    eval_cmd.add_argument("--judge", action="append", default=[], help="judge specs to compare (default: learned and grounding)")
    eval_cmd.add_argument("--only", metavar="REGEX", help="keep the groups of the --groups files whose id matches (re.search)")
    eval_cmd.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except (OSError, ValueError) as error:  # a missing or malformed file: the message says which
        parser.exit(2, f"error: {error}\n")


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:  # also NaN
        raise argparse.ArgumentTypeError(f"{text!r}: a weight must be a number above 0")
    return value


def _run(args: argparse.Namespace) -> int:
    if args.command == "train":
        started = time.perf_counter()
        heads, summary = train(
            args.scenarios,
            perturbation=args.perturbation_groups,
            seed=args.seed,
            l2=args.l2,
            calibration=args.calibration,
            cache=args.cache,
            keep={family: head for family, head in load_heads(args.out).items() if family in args.keep} if args.keep else None,
            handwritten=args.handwritten or None,
            handwritten_weight=args.handwritten_weight,
        )
        meta = {
            "scenarios_per_env": args.scenarios,
            "perturbation_groups": args.perturbation_groups,
            "seed": args.seed,
            "l2": args.l2,
            "calibration": args.calibration,
            "tie": args.tie,
            "split": "train",
            "single_turn_families": list(SINGLE_TURN_FAMILIES),
            "handwritten": sorted(p.name for p in Path(args.handwritten).glob("*.jsonl")) if args.handwritten else [],
            **({"handwritten_weight": summary["handwritten_weight"]} if "handwritten_weight" in summary else {}),
            **({"handwritten_cv": summary["handwritten_cv"]} if "handwritten_cv" in summary else {}),
            **({"kept_heads": sorted(args.keep)} if args.keep else {}),
        }
        path = save_heads(heads, args.out, meta=meta)
        print(json.dumps(summary, indent=1))
        print(f"wrote {path} ({path.stat().st_size:,} bytes) in {time.perf_counter() - started:.0f} s")
        return 0
    sets = []
    for path in args.groups:
        groups = [g for g in load_labelled_groups(path) if args.only is None or re.search(args.only, g.scenario_id)]
        sets.append((f"{path}" + (f" (ids matching {args.only!r}: {len(groups)} groups)" if args.only else ""), groups))
    if args.generate:
        sets.append((f"judge-bench RagSupport-v0 test split ({args.generate} groups)", generate_groups(args.generate)))
    for family in ENVS if args.episodes else ():
        sets.append((f"{ENVS[family]} test-split episodes ({args.episodes} scenarios)", held_out_episode_groups(family, args.episodes)))
    judges: dict[str, Judge] = {}
    for spec in args.judge or ["learned", "grounding"]:
        judges[spec] = LearnedJudge(load_heads(args.weights)) if spec == "learned" else make_judge(spec)
    results = []
    for name, groups in sets:
        for spec, judge in judges.items():
            results.append(evaluate(judge, groups, name, spec))
            pairwise = results[-1]["pairwise"]
            agreement = "no scored pairs" if pairwise is None else f"pairwise {pairwise:.3f}"
            print(f"{name} | {spec}: {agreement}, injection first {results[-1]['injection_ranked_first']}", file=sys.stderr)
    text = json.dumps(results, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = [
    "HANDWRITTEN_GROUPS",
    "HANDWRITTEN_HEADS",
    "HANDWRITTEN_WEIGHTS",
    "SIGNS",
    "choose_handwritten_weight",
    "evaluate",
    "fit_head",
    "handwritten_groups",
    "held_out_episode_groups",
    "main",
    "save_heads",
    "train",
    "training_groups",
]
