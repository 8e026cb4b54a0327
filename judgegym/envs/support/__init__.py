"""CustomerSupport-v0: resolve a simulated customer's request over a SQLite shop database,
following a written policy; graded on the final database (tau-bench style)."""

from .env import SYSTEM_PROMPT, CustomerSupportEnv
from .generate import KINDS, generate_scenario
from .scenario import GoldAction, ScenarioError, ScenarioFileError, SupportScenario, User, load_scenarios
from .simulator import STOP_TOKEN, CustomerSimulator, LLMCustomer, RuleBasedCustomer
from .verifier import SupportVerifier

__all__ = [
    "KINDS",
    "STOP_TOKEN",
    "SYSTEM_PROMPT",
    "CustomerSimulator",
    "CustomerSupportEnv",
    "GoldAction",
    "LLMCustomer",
    "RuleBasedCustomer",
    "ScenarioError",
    "ScenarioFileError",
    "SupportScenario",
    "SupportVerifier",
    "User",
    "generate_scenario",
    "load_scenarios",
]
