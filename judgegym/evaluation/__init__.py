"""Evaluation: play agents on envs with resumable records (`runner`), summarise runs with
bootstrap intervals and pass^k (`stats`), and turn runs into leaderboards (`leaderboard`)."""

from .leaderboard import leaderboard_chart, leaderboard_markdown, summarize_runs
from .runner import EvalRun, evaluate, load_trajectories, play_episode
from .selection import select_trajectories
from .stats import SUCCESS_THRESHOLD, EvalSummary, bootstrap_ci, pass_hat_k, summarize

__all__ = [
    "SUCCESS_THRESHOLD",
    "EvalRun",
    "EvalSummary",
    "bootstrap_ci",
    "evaluate",
    "leaderboard_chart",
    "leaderboard_markdown",
    "load_trajectories",
    "pass_hat_k",
    "play_episode",
    "select_trajectories",
    "summarize",
    "summarize_runs",
]
