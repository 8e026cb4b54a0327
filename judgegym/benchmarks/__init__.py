"""Evaluation runs, summaries and throughput benchmarks."""

from .eval import EvalSummary, bootstrap_ci, evaluate, play_episode, summarize

__all__ = ["EvalSummary", "bootstrap_ci", "evaluate", "play_episode", "summarize"]
