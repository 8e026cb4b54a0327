"""RagSupport-v0: grounded answers from a support knowledge base."""

from ...jsonl import ScenarioFileError
from .env import RagSupportEnv
from .retrieval import KnowledgeBase
from .scenario import Document, RagScenario, load_scenarios
from .verifier import RagVerifier

__all__ = [
    "Document",
    "KnowledgeBase",
    "RagScenario",
    "RagSupportEnv",
    "RagVerifier",
    "ScenarioFileError",
    "load_scenarios",
]
