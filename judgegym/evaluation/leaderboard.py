"""Leaderboards: eval runs (trajectory JSONL files) -> a Markdown table and a PNG chart.

Trajectories are grouped into runs by (env, split, agent, env config, judge); each run is
summarised with `summarize`, so the figures are exactly those `judgegym eval` prints. The
summaries are also kept as JSON (`save_summaries`) beside the page, so a later regeneration
can replay some runs and keep the others' rows (`load_summaries`, `merge_summaries`): adding
one agent, or following a change of one env's verifier, does not mean playing every run again.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..trajectory import Trajectory
from .runner import episode_key, load_trajectories
from .stats import SUCCESS_THRESHOLD, EvalSummary, summarize


def summarize_runs(
    paths: Iterable[str | os.PathLike[str]], *, success_threshold: float = SUCCESS_THRESHOLD, rejudge: bool = False
) -> list[EvalSummary]:
    """One summary per run found in the files, sorted by env, then mean reward (best first).

    With `rejudge`, every trajectory its env's verifier judged is graded again by the verifier
    as it is now (the verifiers read only the stored trajectory), so a leaderboard follows a
    change of the verifier without playing the episodes again; runs judged otherwise keep
    their stored reward."""
    runs: dict[tuple[str, ...], list[Trajectory]] = {}
    for path in paths:
        for t in load_trajectories(path):
            if rejudge:
                regrade(t)
            agent, env_id, split, config, _, _ = episode_key(t)
            key = (env_id, split, agent, config, str(t.info.get("judge", "")))
            runs.setdefault(key, []).append(t)
    if not runs:
        raise ValueError("no trajectories in the given files")
    summaries = []
    for trajectories in runs.values():
        summary = summarize(trajectories, success_threshold=success_threshold)
        summary.agent = run_label(trajectories[0])
        summaries.append(summary)
    seen = Counter((s.env_id, s.split, s.agent) for s in summaries)
    for summary, key in zip(summaries, runs, strict=True):
        if seen[(summary.env_id, summary.split, summary.agent)] > 1:  # same agent and options, another env config (a scenarios file)
            summary.agent += f" [config {key[3]}]"
    return sorted(summaries, key=lambda s: (s.env_id, s.split, -s.mean_reward, s.agent))


def regrade(trajectory: Trajectory) -> bool:
    """Grade `trajectory` again, in place, with its env's verifier, where that verifier judged
    it (``info["judge"]`` absent or "verifier") and it ended in a way the env judges; returns
    whether it did."""
    from ..judges.base import record_score
    from ..judges.specs import make_judge

    if trajectory.info.get("judge") not in (None, "", "verifier") or trajectory.reward is None or not trajectory.env_id:
        return False
    record_score(trajectory, make_judge("verifier").verify(trajectory))  # type: ignore[attr-defined]
    return True


def save_summaries(summaries: Sequence[EvalSummary], path: str | os.PathLike[str]) -> Path:
    """Write `summaries` as a JSON list (`EvalSummary.to_dict`) for `load_summaries`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([s.to_dict() for s in summaries], indent=1) + "\n", encoding="utf-8")
    return path


def load_summaries(path: str | os.PathLike[str]) -> list[EvalSummary]:
    """The summaries `save_summaries` wrote (a `ValueError` naming the file if it holds none)."""
    try:
        rows = json.loads(Path(path).read_text(encoding="utf-8"))
        summaries = [EvalSummary(**{**row, "pass_k": {int(k): v for k, v in row.get("pass_k", {}).items()}}) for row in rows]
    except (json.JSONDecodeError, TypeError, AttributeError, ValueError) as exc:
        raise ValueError(f"{path}: not a list of leaderboard summaries ({exc})") from None
    return summaries


def merge_summaries(new: Sequence[EvalSummary], kept: Sequence[EvalSummary]) -> tuple[list[EvalSummary], list[EvalSummary]]:
    """`new` plus the rows of `kept` whose (env, split, agent) no new row has, sorted as
    `summarize_runs` sorts; also returns the rows taken from `kept`."""
    replayed = {(s.env_id, s.split, s.agent) for s in new}
    carried = [s for s in kept if (s.env_id, s.split, s.agent) not in replayed]
    merged = sorted([*new, *carried], key=lambda s: (s.env_id, s.split, -s.mean_reward, s.agent))
    return merged, carried


def run_label(trajectory: Trajectory) -> str:
    """How a run is named in tables: the agent, plus the env options and judge when they are
    not the defaults, e.g. ``hf:smollm2-135m [prefetch_k=2]``."""
    info = trajectory.info
    options = [f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in sorted((info.get("env_args") or {}).items())]
    if info.get("judge") not in (None, "", "verifier"):
        options.append(f"judge={info['judge']}")
    return str(info.get("agent", "?")) + (f" [{', '.join(options)}]" if options else "")


def leaderboard_markdown(summaries: Sequence[EvalSummary], *, title: str = "Leaderboard", preamble: str = "") -> str:
    """An overview (agents x envs: mean reward and 95% interval) and one detailed table per
    env (reward, success, pass^k, turns, tool calls, tool errors, tokens, episodes), with its
    reward-hacking watch (`stats.WATCH`: the share of each agent's episodes showing each sign)."""
    envs = sorted({(s.env_id, s.split) for s in summaries})
    agents = list(dict.fromkeys(s.agent for s in sorted(summaries, key=lambda s: -s.mean_reward)))
    cell = {(s.agent, s.env_id, s.split): s for s in summaries}
    lines = [f"# {title}", ""]
    if preamble:
        lines += [preamble.strip(), ""]
    lines += ["## Overview: mean reward [95% bootstrap interval]", ""]
    lines += ["| agent | " + " | ".join(f"{env} ({split})" for env, split in envs) + " |"]
    lines += ["| --- |" + " ---: |" * len(envs)]
    for agent in agents:
        row = [f"{c.mean_reward:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}]" if (c := cell.get((agent, *e))) else "-" for e in envs]
        lines.append(f"| {_md(agent)} | " + " | ".join(row) + " |")
    for env, split in envs:
        rows = [s for s in summaries if (s.env_id, s.split) == (env, split)]
        k = max(s.trials for s in rows)
        pass_header = f" pass^{k} |" if k > 1 else ""
        threshold = rows[0].success_threshold
        lines += ["", f"## {env} ({split} split)", ""]
        header = f"| agent | reward [95% CI] | success (>= {threshold:g}) |{pass_header}"
        lines.append(f"{header} turns | tool calls | tool errors | tokens | episodes |")
        lines.append("| --- | ---: | ---: |" + (" ---: |" if k > 1 else "") + " ---: | ---: | ---: | ---: | ---: |")
        for s in sorted(rows, key=lambda s: -s.mean_reward):
            pass_cell = (f" {s.pass_k[k]:.2f} |" if k in s.pass_k else " - |") if k > 1 else ""
            tokens = f"{s.mean_tokens:.0f}" if s.mean_tokens is not None else "-"
            episodes = f"{s.scenarios} x {s.trials}" if s.trials > 1 else f"{s.episodes}"
            lines.append(
                f"| {_md(s.agent)} | {s.mean_reward:.3f} [{s.ci_low:.3f}, {s.ci_high:.3f}] | {s.success_rate:.2f} |{pass_cell} "
                f"{s.mean_turns:.1f} | {s.mean_tool_calls:.1f} | {s.tool_error_rate:.2f} | {tokens} | {episodes} |"
            )
        signs = list(dict.fromkeys(sign for s in rows for sign in s.watch))
        if signs:
            lines += ["", f"Reward-hacking watch, {env}: share of episodes showing each sign the verifier logs", ""]
            lines.append("| agent | " + " | ".join(signs) + " |")
            lines.append("| --- |" + " ---: |" * len(signs))
            for s in sorted(rows, key=lambda s: -s.mean_reward):
                lines.append(f"| {_md(s.agent)} | " + " | ".join(f"{s.watch[g]:.2f}" if g in s.watch else "-" for g in signs) + " |")
    return "\n".join(lines) + "\n"


def leaderboard_chart(summaries: Sequence[EvalSummary], path: str | os.PathLike[str], *, title: str = "Leaderboard") -> Path:
    """A grouped bar chart (one group per env, one bar per agent, 95% intervals as error
    bars) written as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.container import BarContainer

    envs = sorted({s.env_id for s in summaries})
    agents = list(dict.fromkeys(s.agent for s in sorted(summaries, key=lambda s: -s.mean_reward)))
    width = 0.8 / max(1, len(agents))
    figure, axes = plt.subplots(figsize=(max(6.0, 2.2 * len(envs) + 0.4 * len(agents)), 4.2), dpi=120)
    for i, agent in enumerate(agents):
        means, low, high = [], [], []
        for env in envs:
            s = next((s for s in summaries if s.agent == agent and s.env_id == env), None)
            means.append(s.mean_reward if s else np.nan)
            low.append(s.mean_reward - s.ci_low if s else 0.0)
            high.append(s.ci_high - s.mean_reward if s else 0.0)
        x = np.arange(len(envs)) + (i - (len(agents) - 1) / 2) * width
        axes.bar(x, means, width, yerr=[low, high], capsize=3, label=agent)
    axes.set_xticks(np.arange(len(envs)), envs)
    bars = [bar.get_height() for container in axes.containers if isinstance(container, BarContainer) for bar in container]
    axes.set_ylim(min(0.0, np.nanmin(bars, initial=0.0)) - 0.05, 1.05)  # a verifier's penalties go below 0
    axes.set_ylabel("mean reward (95% CI)")
    axes.set_title(title)
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return path


def _md(text: str) -> str:
    return text.replace("|", "\\|")


__all__ = [
    "leaderboard_chart",
    "leaderboard_markdown",
    "load_summaries",
    "merge_summaries",
    "run_label",
    "save_summaries",
    "summarize_runs",
]
