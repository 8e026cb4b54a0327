"""Summarize-v0: summarise a long document, read section by section, within a word limit."""

from .documents import KINDS, generate_scenario
from .env import SummarizeEnv
from .scenario import KeyFact, ScenarioError, ScenarioFileError, Section, SummaryScenario, check_scenario, load_scenarios
from .verifier import SummaryVerifier

__all__ = [
    "KINDS",
    "KeyFact",
    "ScenarioError",
    "ScenarioFileError",
    "Section",
    "SummarizeEnv",
    "SummaryScenario",
    "SummaryVerifier",
    "check_scenario",
    "generate_scenario",
    "load_scenarios",
]
