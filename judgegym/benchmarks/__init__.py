"""Benchmarks: the eval runner, leaderboards, the judge-agreement benchmark, throughput."""

from .eval import SUCCESS_THRESHOLD, EvalRun, EvalSummary, bootstrap_ci, evaluate, load_trajectories, pass_hat_k, play_episode, summarize

__all__ = [
    "SUCCESS_THRESHOLD",
    "EvalRun",
    "EvalSummary",
    "bootstrap_ci",
    "evaluate",
    "load_trajectories",
    "pass_hat_k",
    "play_episode",
    "summarize",
]
