"""Judges turn finished trajectories (or groups of them) into rewards in [0, 1]."""

from .base import Judge, JudgeScore, PointwiseJudge, Verifier

__all__ = ["Judge", "JudgeScore", "PointwiseJudge", "Verifier"]
