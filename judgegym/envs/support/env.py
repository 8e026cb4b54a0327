"""CustomerSupport-v0: resolve a simulated customer's request over a shop's SQLite database
with tools, following a written policy (tau-bench style).

Each episode gets its own in-memory copy of the scenario's database. The customer (rule-based
by default, or an LLM) answers every assistant text turn and ends the episode with
`STOP_TOKEN`; `SupportVerifier` compares the final database with the gold one.
"""

from __future__ import annotations

import copy
import functools
import random
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...formats.support import SYSTEM_PROMPT, SupportPolicy
from ...judges.base import Judge
from ...judges.llm import JudgeLLM
from ...trajectory import Message, TerminationReason
from ..base import ChatEnv, Episode
from . import db
from .desk import SupportDesk
from .generate import KINDS, POOLS, generate_scenario
from .scenario import PreparedScenario, ScenarioError, SupportScenario, load_scenarios, prepare
from .simulator import STOP_TOKEN, CustomerSimulator, LLMCustomer, RuleBasedCustomer
from .verifier import SupportVerifier

SPLITS: tuple[str, ...] = tuple(POOLS)
"""Generated splits; their names, products and shops are disjoint."""


@functools.lru_cache(maxsize=64)
def _generated(split: str, seed: int, kind: str | None, n_customers: tuple[int, int]) -> PreparedScenario:
    return prepare(generate_scenario(split, seed, kind, n_customers=n_customers))


def _prepare_user(index: int, scenario: SupportScenario) -> PreparedScenario:
    try:
        return prepare(scenario)
    except ScenarioError as exc:
        raise ScenarioError(exc.field, f"{exc.message} (scenario {index}, id {scenario.id!r})") from None


class CustomerSupportEnv(ChatEnv):
    """Customer support over a SQLite database with a simulated customer (Gymnasium env).

    Args:
        split: "train" or "test"; their names, products and shops are disjoint. Recorded on
            trajectories.
        scenarios: path to a JSONL file of user scenarios (schema: `SupportScenario`), or a
            list of them; replaces the generated ones.
        kinds: restrict generated scenarios to these kinds (see `KINDS`).
        user_model: None for the rule-based customer (default, offline, deterministic), or
            a litellm model name for an LLM customer, e.g. "openai/gpt-4o-mini" or
            "local/smollm2-135m-instruct".
        user_api_base: endpoint of the LLM customer (e.g. a vLLM server).
        user_llm_kwargs: more `JudgeLLM` settings for the LLM customer (temperature,
            max_tokens, cache, ...).
        patience: unproductive agent turns in a row after which the rule-based customer
            gives up.
        n_customers: (min, max) customers in a generated shop.
        system_prompt: override the policy prompt ("{company}", "{today}", "{window}" and
            "{threshold}" are filled in).
        judge: the terminal judge (default `SupportVerifier()`).
        max_turns, max_tool_calls, max_tool_output_chars, parser, render_mode: see `ChatEnv`.

    Seeds: seed s plays scenario ``f"{split}-{s}"`` (the kind drawn from the seed);
    ``options={"kind": k}`` plays ``f"{split}-{s}-{k}"``; ``options={"scenario_id": ...}``
    replays either. With user scenarios, seed s plays scenario ``s % len(scenarios)``.
    """

    def __init__(
        self,
        split: str = "train",
        scenarios: str | Path | Sequence[SupportScenario] | None = None,
        *,
        kinds: Sequence[str] | None = None,
        user_model: str | None = None,
        user_api_base: str | None = None,
        user_llm_kwargs: dict[str, Any] | None = None,
        patience: int = 3,
        n_customers: tuple[int, int] = (10, 20),
        system_prompt: str | None = None,
        judge: Judge | None = None,
        max_turns: int = 20,
        max_tool_calls: int = 30,
        **kwargs: Any,
    ):
        super().__init__(judge=judge, max_turns=max_turns, max_tool_calls=max_tool_calls, **kwargs)
        if scenarios is None and split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; choose one of {list(SPLITS)} or pass scenarios=")
        unknown = sorted(set(kinds or ()) - set(KINDS))
        if unknown:
            raise ValueError(f"unknown scenario kinds {unknown}; choose from {list(KINDS)}")
        if patience < 1:
            raise ValueError(f"patience must be >= 1, got {patience}")
        low, high = n_customers
        if not 2 <= low <= high:
            raise ValueError(f"n_customers must be (min, max) with 2 <= min <= max, got {n_customers}")
        if user_model is None and (user_api_base or user_llm_kwargs):
            raise ValueError("user_api_base / user_llm_kwargs need user_model (the LLM customer's model)")
        self.split = split
        self.kinds = tuple(kinds) if kinds else None
        self.patience = patience
        self.n_customers = (int(low), int(high))
        self.system_prompt = system_prompt
        self.user_llm = JudgeLLM(model=user_model, api_base=user_api_base, **(user_llm_kwargs or {})) if user_model else None
        self.user_scenarios: list[PreparedScenario] | None = None
        if scenarios is not None:
            loaded = load_scenarios(scenarios) if isinstance(scenarios, (str, Path)) else list(scenarios)
            if not loaded:
                raise ValueError("scenarios is empty")
            self.user_scenarios = [_prepare_user(i, s) for i, s in enumerate(loaded)]
            ids = [p.scenario.id for p in self.user_scenarios]
            if len(set(ids)) != len(ids):
                raise ValueError(f"scenario ids must be unique; repeated: {sorted({i for i in ids if ids.count(i) > 1})}")
        self._user_index = {p.scenario.id: i for i, p in enumerate(self.user_scenarios or [])}
        self._desk = SupportDesk()
        self._prepared: PreparedScenario | None = None
        self._customer: CustomerSimulator | None = None

    @classmethod
    def default_judge(cls) -> Judge:
        return SupportVerifier()

    @property
    def database(self) -> sqlite3.Connection | None:
        """The current episode's SQLite connection (read it; changing it bypasses the policy)."""
        return self._desk.conn

    # -- episodes -----------------------------------------------------------------------

    def _start(self, seed: int, options: dict[str, Any]) -> Episode:
        prepared = self._user_scenario(seed, options) if self.user_scenarios is not None else self._generated_scenario(seed, options)
        scenario = prepared.scenario
        self._prepared = prepared
        self._desk.start(db.copy(prepared.database), scenario)
        task = copy.deepcopy(prepared.task)
        if self.user_llm is not None:
            self._customer = LLMCustomer(self.user_llm, scenario.user, scenario.company)
        else:
            self._customer = RuleBasedCustomer(
                scenario.user, task["required_info"], bool(scenario.gold_actions), patience=self.patience, style_seed=scenario.id
            )
        policy = SupportPolicy(scenario.today, scenario.return_window_days, scenario.dispute_threshold)
        prompt = policy.prompt(scenario.company, scenario.system_prompt or self.system_prompt or SYSTEM_PROMPT)
        return Episode(
            scenario_id=scenario.id,
            messages=[Message(role="system", content=prompt), Message(role="user", content=scenario.user.opening)],
            tools=self._desk.toolset,
            task=task,
            info={"split": self.split, "kind": scenario.kind, "company": scenario.company},
            facts=policy.facts(),
        )

    def _on_text(self, content: str) -> TerminationReason | None:
        assert self._customer is not None
        reply = self._customer.reply(self._messages)
        self._append(Message(role="user", content=reply))
        return TerminationReason.USER_STOP if STOP_TOKEN in reply else None

    def _trajectory_info(self) -> dict[str, Any]:
        if self._prepared is None or self._desk.conn is None:
            return {}
        final = db.snapshot(self._desk.conn)
        return {
            "database": {"hash": db.digest(final), "diff": db.diff(self._prepared.initial, final)},
            "policy_violations": list(self._desk.violations),
            "policy_violation_count": self._desk.violation_count,
            "identified_customers": list(self._desk.identified),
        }

    def close(self) -> None:
        if self._desk.conn is not None:
            self._desk.conn.close()
            self._desk.conn = None
        super().close()

    # -- scenario choice ----------------------------------------------------------------

    def _generated_scenario(self, seed: int, options: dict[str, Any]) -> PreparedScenario:
        kind = options.get("kind")
        if "scenario_id" in options:
            seed, kind = self._parse_id(str(options["scenario_id"]))
        if kind is not None and kind not in KINDS:
            raise ValueError(f"unknown scenario kind {kind!r}; choose from {list(KINDS)}")
        if kind is None and self.kinds:
            kind = random.Random(f"customersupport-kinds/{self.split}/{seed}").choice(self.kinds)
        return _generated(self.split, seed, kind, self.n_customers)

    def _parse_id(self, scenario_id: str) -> tuple[int, str | None]:
        split, _, rest = scenario_id.partition("-")
        number, _, kind = rest.partition("-")
        if split != self.split or not number.isdigit():
            expected = f"'{self.split}-<seed>' or '{self.split}-<seed>-<kind>'"
            raise ValueError(f"scenario id {scenario_id!r} is not of this env's split; expected {expected}")
        return int(number), kind or None

    def _user_scenario(self, seed: int, options: dict[str, Any]) -> PreparedScenario:
        assert self.user_scenarios is not None
        if "scenario_id" in options:
            index = self._user_index.get(str(options["scenario_id"]))
            if index is None:
                raise ValueError(f"no scenario with id {options['scenario_id']!r} in the loaded scenarios")
            return self.user_scenarios[index]
        pool = self.user_scenarios
        if options.get("kind") is not None:
            pool = [p for p in pool if p.scenario.kind == options["kind"]]
            if not pool:
                raise ValueError(f"no loaded scenario has kind {options['kind']!r}")
        return pool[seed % len(pool)]


__all__ = ["SYSTEM_PROMPT", "CustomerSupportEnv"]
