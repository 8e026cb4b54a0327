"""Paired comparison of eval runs on the same scenarios (``judgegym compare``).

Two policies evaluated on the same held-out scenarios differ by a paired change: per
scenario, the second run's figure minus the first's, averaged, with a 95% bootstrap interval
over scenarios. Pairing removes the scenarios' own difficulty from the interval, so it is far
narrower than the two runs' separate intervals. Runs come from ``judgegym eval --out`` files
(one run per agent and env options) or a training run's held-out evals
(``output_dir/eval/step-N.jsonl``), and are paired on (scenario, seed, trial).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..trajectory import Trajectory, read_jsonl
from .leaderboard import run_label
from .stats import bootstrap_ci


@dataclass
class Change:
    """A paired change of one metric between two runs, over the same scenarios."""

    metric: str
    before: float
    after: float
    difference: float
    ci_low: float
    ci_high: float


def per_episode(trajectories: Sequence[Trajectory], metric: str) -> list[float]:
    """Each episode's value of `metric` (NaN where it has none): ``reward`` (0 when unjudged),
    ``tool_call_rate`` (1 if the episode called a tool), ``NAME_rate`` (1 if metric NAME is
    above 0), else the episode's metric itself."""
    if metric == "reward":
        return [t.reward if t.reward is not None else 0.0 for t in trajectories]
    if metric == "tool_call_rate":
        return [float(t.metrics.get("tool_calls", 0.0) > 0) for t in trajectories]
    if metric.endswith("_rate") and metric != "tool_error_rate":
        name = metric.removesuffix("_rate")
        return [float(t.metrics[name] > 0) if name in t.metrics else math.nan for t in trajectories]
    return [float(t.metrics[metric]) if metric in t.metrics else math.nan for t in trajectories]


def paired_changes(before: Sequence[Trajectory], after: Sequence[Trajectory], metrics: Sequence[str] = ("reward",)) -> list[Change]:
    """Per metric, the mean change from `before` to `after` over the scenarios where both have
    it, with its 95% paired bootstrap interval. The two lists must hold the same scenarios in
    the same order (`align_runs`)."""
    if [_key(t) for t in before] != [_key(t) for t in after]:
        raise RuntimeError("the two stages played different held-out scenarios; compare evals of the same seeds")
    changes = []
    for metric in metrics:
        values = zip(per_episode(before, metric), per_episode(after, metric), strict=True)
        pairs = [(b, a) for b, a in values if not (math.isnan(b) or math.isnan(a))]
        if not pairs:
            continue
        deltas = [a - b for b, a in pairs]
        low, high = bootstrap_ci(deltas)
        first, second = float(np.mean([b for b, _ in pairs])), float(np.mean([a for _, a in pairs]))
        changes.append(Change(metric, first, second, float(np.mean(deltas)), low, high))
    return changes


def _key(trajectory: Trajectory) -> tuple[str, str, int]:
    return (trajectory.scenario_id, str(trajectory.seed), int(trajectory.info.get("trial", 0)))


def read_runs(specs: Sequence[str]) -> dict[str, list[Trajectory]]:
    """The runs in eval files, each spec ``[NAME=]FILE.jsonl``. A file holding one run is named
    NAME, else by its agent (``judgegym eval``'s label) or, for a training run's eval file that
    names no agent, by its path; a file holding several runs gives one per agent and env
    options, named by its label (prefixed ``NAME:`` if given)."""
    runs: dict[str, list[Trajectory]] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or Path(spec).exists():
            name, path = "", spec
        if not Path(path).is_file():
            raise FileNotFoundError(f"{path}: no such file")
        by_label: dict[str, list[Trajectory]] = defaultdict(list)
        for trajectory in read_jsonl(path):
            by_label[run_label(trajectory)].append(trajectory)
        if not by_label:
            raise ValueError(f"{path}: no trajectories")
        for label, trajectories in by_label.items():
            if len(by_label) > 1:
                run = f"{name}: {label}" if name else label
            else:
                run = name or (label if not label.startswith("?") else path)
            if run in runs:
                raise ValueError(f"two runs are named {run!r}; name them with NAME=FILE")
            runs[run] = trajectories
    return runs


def align_runs(runs: dict[str, list[Trajectory]]) -> dict[str, list[Trajectory]]:
    """The runs cut to the episodes every one of them played, keyed (scenario, seed, trial),
    in the first run's order. Raises ValueError when a run repeats an episode or the runs
    share none."""
    keyed = {}
    for name, trajectories in runs.items():
        by_key = {_key(t): t for t in trajectories}
        if len(by_key) < len(trajectories):
            raise ValueError(f"run {name!r} plays some scenario twice with the same seed and trial; pairing needs one episode each")
        keyed[name] = by_key
    first = next(iter(runs.values()))
    shared = [_key(t) for t in first if all(_key(t) in by_key for by_key in keyed.values())]
    if not shared:
        raise ValueError("the runs share no scenario (scenario id, seed and trial): evaluate them on the same split and seeds")
    return {name: [by_key[k] for k in shared] for name, by_key in keyed.items()}


def shared_metrics(runs: dict[str, list[Trajectory]]) -> list[str]:
    """``reward``, then each numeric metric that every run reports on some episode (a figure
    such as recall is absent where it does not apply), in the order they first appear."""
    names: dict[str, None] = {}
    for trajectories in runs.values():
        for trajectory in trajectories:
            names.update((m, None) for m, v in trajectory.metrics.items() if isinstance(v, int | float) and not isinstance(v, bool))
    reported = [{m for t in trajectories for m in t.metrics} for trajectories in runs.values()]
    return ["reward", *(m for m in names if m != "reward" and all(m in r for r in reported))]


def reward_by_kind(runs: dict[str, list[Trajectory]]) -> dict[str, dict[str, tuple[int, float]]]:
    """Scenario kind (the task's ``kind``; ``-`` where it has none) -> run -> (episodes, mean reward)."""
    table: dict[str, dict[str, tuple[int, float]]] = defaultdict(dict)
    for name, trajectories in runs.items():
        kinds: dict[str, list[float]] = defaultdict(list)
        for trajectory, reward in zip(trajectories, per_episode(trajectories, "reward"), strict=True):
            kinds[str((trajectory.info.get("task") or {}).get("kind") or "-")].append(reward)
        for kind, rewards in kinds.items():
            table[kind][name] = (len(rewards), float(np.mean(rewards)))
    return dict(sorted(table.items()))


def describe_episode(trajectory: Trajectory, width: int = 160) -> str:
    """One line per assistant turn: its tool calls, or its answer (shortened); in a
    conversation, the user's turns after the first too."""
    lines = []
    users = 0
    for message in trajectory.messages:
        if message.role == "user":
            users += 1
            if users > 1:
                lines.append(f"user: {' '.join((message.content or '').split())[:width]!r}")
        if message.role != "assistant":
            continue
        if message.tool_calls:
            calls = ", ".join(f"{c.function.name}({_short_args(c.function.arguments)})" for c in message.tool_calls)
            lines.append(f"calls {calls}")
        else:
            text = " ".join((message.content or "").split())
            lines.append(f"answers {text[:width]!r}" + ("..." if len(text) > width else ""))
    return "\n".join(lines) or "(no assistant turn)"


def episodes_page(episodes: dict[str, list[Trajectory]], *, count: int = 6, title: str = "Held-out episodes by stage") -> str:
    """A Markdown page of real held-out episodes, stage beside stage: for the `count` test
    scenarios whose reward differs most between the stages (ties: the lowest seed first),
    the question, the gold facts, and each stage's turns (`describe_episode`), reward and
    verifier note. Every stage must have played the same scenarios (`align_runs`)."""
    names = list(episodes)
    first = episodes[names[0]]
    for name in names[1:]:
        if [(t.scenario_id, t.seed) for t in episodes[name]] != [(t.scenario_id, t.seed) for t in first]:
            raise RuntimeError(f"stage {name!r} played other held-out scenarios than {names[0]!r}")
    rewards = [[t.reward or 0.0 for t in episodes[name]] for name in names]
    spread = [max(column) - min(column) for column in zip(*rewards, strict=True)]
    chosen = sorted(range(len(first)), key=lambda i: (-spread[i], first[i].seed or 0))[:count]
    intro = f"{len(chosen)} of {len(first)} held-out scenarios (those where the rewards differ most), greedy."
    lines = [f"# {title}", "", intro, ""]
    for i in chosen:
        task = first[i].info.get("task", {})
        lines += [f"## Test scenario {first[i].seed}: {task.get('question') or task.get('goal') or first[i].scenario_id}", ""]
        if "gold_facts" in task:  # RagSupport
            gold = task["gold_facts"]
            answerable = gold and task.get("answerable", True)
            lines += [f"Gold facts: {', '.join(map(str, gold))}" if answerable else "Unanswerable: the right answer says so.", ""]
        elif "gold_actions" in task:  # CustomerSupport
            actions = ", ".join(f"{a.get('name')}({_short_args(json.dumps(a.get('arguments', {})))})" for a in task["gold_actions"])
            told = ", ".join(map(str, task.get("required_info", [])))
            lines += [f"Gold actions: {actions or 'none'}; the customer must be told: {told or 'nothing'}", ""]
        for name in names:
            trajectory = episodes[name][i]
            note = str(trajectory.info.get("explanation", "")).split("; ")[:3]
            lines += [f"**{name}**: reward {trajectory.reward or 0.0:.2f} ({'; '.join(note)})", "", "```text"]
            lines += [describe_episode(trajectory, width=400), "```", ""]
    return "\n".join(lines)


def _short_args(arguments: str, width: int = 60) -> str:
    text = " ".join(str(arguments).split())
    return text if len(text) <= width else text[:width] + "..."


__all__ = [
    "Change",
    "align_runs",
    "describe_episode",
    "episodes_page",
    "paired_changes",
    "per_episode",
    "read_runs",
    "reward_by_kind",
    "shared_metrics",
]
