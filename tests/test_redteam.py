"""Red team: answers that try to game each env's verifier without doing the task.

Every case plays through the real env (``gym.make``, ``reset`` with a seed, tool calls through
``step``) on generated test-split scenarios and on a hand-written scenario file per env
(``tests/data/redteam_*.jsonl``), and must score at most its bound, while an honest partial
answer scores at least the env's honest floor, well above every bound. The bounds are defined
once here; docs/ragsupport.md, docs/customersupport.md and docs/summarize.md give the same
numbers. Hypothesis checks the properties that hold for any text: what an answer copies from
its instructions earns nothing.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import examples

import judgegym  # noqa: F401  (registers the envs)
from judgegym import Trajectory
from judgegym.envs.rag import RagVerifier
from judgegym.envs.summarize import SummaryVerifier
from judgegym.envs.support import KINDS as SUPPORT_KINDS
from judgegym.envs.support import SupportVerifier
from judgegym.judges.facts import fact_present

DATA = Path(__file__).parent / "data"

# -- the bounds (docs/ragsupport.md, docs/customersupport.md, docs/summarize.md) -------------------

RAG_BOUNDS: dict[str, float] = {
    "placeholder_citation": 0.0,  # "The warranty is 24 months [doc-id]."
    "placeholder_citation_no_idea": 0.0,  # "Sorry, no idea [doc-id]."
    "invented_citation": 0.0,  # a vague claim citing made-up article ids
    "echo_system_prompt": 0.0,
    "echo_question": 0.0,
    "copy_layout": 0.0,  # "Question: <question> Article: [real-id]" after reading that article
    "other_scenario": 0.0,  # another question's reference answer, its articles read
    "dump": 0.1,  # every figure and capitalised name of every article seen, every id cited
    "huge": 0.0,  # the reference answer padded to over 2,000 words with every article seen
    "empty": 0.0,
    "i_dont_know": 0.0,  # on an answerable question
}
RAG_HONEST_PARTIAL = 0.4
"""Floor of an honest partial RagSupport answer: half the gold facts (at least one), citing a
supporting article it read."""

SUPPORT_BOUNDS: dict[str, float] = {
    "claim_without_tools": 0.0,  # "I have refunded your order #123, $84.50 will be back in 5 days."
    "claim_with_required_info": 0.0,  # identifies, states every required fact, claims the change, makes none
    "required_info_without_action": 0.0,  # the same without the claim (kinds that need a change)
    "invented_ticket": 0.0,  # "I have escalated your case, ticket T-4821" with no escalation
    "echo_system_prompt": 0.0,
    "identify_then_echo_system_prompt": 0.0,  # recites the policy after reading the order
    "echo_opening": 0.0,
    "copy_layout": 0.0,  # "Customer: <opening> Order: <id> Status: resolved"
    "other_scenario": 0.0,  # another scenario's required facts and claimed change
    "dump": 0.1,  # every tool result of the customer's orders and the catalogue, as one message
    "huge": 0.0,  # the required facts in a message of over 2,000 words, after reading the order
    "empty": 0.0,
    "i_dont_know": 0.0,
}
SUPPORT_HONEST_PARTIAL = 0.5
"""Floor of an honest partial CustomerSupport episode (scenarios needing two facts): the right
change (if any) made, one of the two facts told."""

SUMMARIZE_BOUNDS: dict[str, float] = {
    "headings": 0.0,  # the section titles
    "dump": 0.1,  # every figure (with its unit word) and every person of the document
    "echo_system_prompt": 0.0,
    "echo_request": 0.0,
    "copy_layout": 0.0,  # 'Document: "<title>" Section: [s1] <title>'
    "other_scenario": 0.05,  # another document's reference summary
    "huge": 0.0,  # the reference summary, then every section
    "empty": 0.0,
    "i_dont_know": 0.0,
}
SUMMARIZE_HONEST_PARTIAL = 0.45
"""Floor of an honest partial summary: the statements of half the key facts."""


def test_every_bound_is_well_below_the_honest_partial_answer():
    for bounds, honest in (
        (RAG_BOUNDS, RAG_HONEST_PARTIAL),
        (SUPPORT_BOUNDS, SUPPORT_HONEST_PARTIAL),
        (SUMMARIZE_BOUNDS, SUMMARIZE_HONEST_PARTIAL),
    ):
        assert max(bounds.values()) <= honest / 4


@pytest.mark.parametrize(
    ("page", "bounds", "honest"),
    [
        ("ragsupport.md", RAG_BOUNDS, RAG_HONEST_PARTIAL),
        ("customersupport.md", SUPPORT_BOUNDS, SUPPORT_HONEST_PARTIAL),
        ("summarize.md", SUMMARIZE_BOUNDS, SUMMARIZE_HONEST_PARTIAL),
    ],
)
def test_the_docs_state_these_bounds(page, bounds, honest):
    text = (Path(__file__).parent.parent / "docs" / page).read_text()
    section = text.split("## Gaming the verifier", 1)[1].split("\n## ", 1)[0]
    documented = {name: float(bound) for name, bound in re.findall(r"^\| `(\w+)` \|.*\| ([\d.]+) \|$", section, re.MULTILINE)}
    assert documented == bounds
    assert f"at least **{honest:g}**" in " ".join(section.split())


# -- playing --------------------------------------------------------------------------------------

_ids = itertools.count()


def call(name: str, **arguments: Any) -> dict[str, Any]:
    call_id = f"rt{next(_ids)}"
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}],
    }


@dataclass
class Game:
    """One episode in progress: the env, the latest observation and the reset info."""

    env: gym.Env
    observation: list[dict[str, Any]]
    info: dict[str, Any]
    trajectory: Trajectory | None = None

    @property
    def task(self) -> dict[str, Any]:
        return self.info["task"]

    @property
    def system(self) -> str:
        return self.observation[0]["content"]

    @property
    def first_user(self) -> str:
        return self.observation[1]["content"]

    def step(self, action: Any) -> str:
        """Play `action`; return the text of the last message (a tool result or a reply)."""
        assert self.trajectory is None, "the episode is over"
        self.observation, _, terminated, truncated, end = self.env.step(action)
        if terminated or truncated:
            self.trajectory = end["trajectory"]
        return self.observation[-1].get("content") or ""

    def tool(self, name: str, **arguments: Any) -> str:
        return self.step(call(name, **arguments))

    def say(self, text: str, turns: int = 30) -> Trajectory:
        """Send `text` until the episode ends (a simulated customer may answer it again and again)."""
        for _ in range(turns):
            if self.trajectory is not None:
                break
            self.step(text)
        assert self.trajectory is not None, "the episode did not end"
        return self.trajectory

    def tool_results(self) -> list[str]:
        return [
            m.get("content") or "" for m in self.observation if m["role"] == "tool" and not (m.get("content") or "").startswith("Error")
        ]


def start(env: gym.Env, reset: dict[str, Any]) -> Game:
    observation, info = env.reset(**reset)
    return Game(env, observation, info)


_FIGURE = re.compile(r"\S*\d\S*(?:\s+[^\W\d_]{2,})?")  # a token with a digit, and the word after it (its unit)
_CAPITALISED = re.compile(r"\b[A-Z][\w'-]+")
_HEADER = re.compile(r"^\[([^\[\]\s]+)\] ", re.MULTILINE)


def every_figure_and_name(texts: list[str]) -> str:
    """Each figure (with the word after it, its unit) and each capitalised word of `texts`, once."""
    joined = "\n".join(texts)
    items = dict.fromkeys([*(m.group().strip(".,;:()") for m in _FIGURE.finditer(joined)), *_CAPITALISED.findall(joined)])
    return ", ".join(items)


def filler(words: int) -> str:
    return " ".join(itertools.islice(itertools.cycle("Thank you for your patience while we look into this for you.".split()), words))


# -- RagSupport-v0 ---------------------------------------------------------------------------------

RAG_FILE = DATA / "redteam_rag.jsonl"
RAG_GENERATED = [
    {"seed": seed, "options": {"kind": kind}} for kind in ("single_fact", "multi_hop", "comparison", "unanswerable") for seed in (0, 1, 2)
]
RAG_HANDWRITTEN = [{"seed": seed} for seed in range(4)]


def rag_env(source: str) -> gym.Env:
    if source == "generated":
        return gym.make("RagSupport-v0", split="test", n_products=40)
    return gym.make("RagSupport-v0", scenarios=str(RAG_FILE))


def rag_read_supporting(game: Game) -> list[str]:
    ids = game.task["supporting_doc_ids"] or _HEADER.findall(game.tool("search", query=game.task["question"], k=3))[:1]
    for doc_id in ids:
        game.tool("read", doc_id=doc_id)
    return list(ids)


def rag_other_task(env: gym.Env, source: str, reset: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Another answerable scenario of the same knowledge base whose reference states none of
    this one's gold facts; returns (its task, this scenario's reset)."""
    _, info = env.reset(**reset)
    gold = info["task"]["gold_facts"]
    if source == "generated":
        candidates = [{"seed": reset["seed"] + 8 * j} for j in range(1, 40)]  # the same world: seed % 8
    else:
        candidates = [{"seed": reset["seed"] + j} for j in range(1, len(RAG_HANDWRITTEN))]
    for candidate in candidates:
        other = env.reset(**candidate)[1]["task"]
        if other["answerable"] and other["supporting_doc_ids"] and not any(fact_present(f, other["reference_answer"]) for f in gold):
            return other, reset
    raise AssertionError("no other scenario without shared facts")


def _rag_placeholder(game: Game) -> Trajectory | None:
    if not game.task["answerable"] or any(fact_present(f, "24 months") for f in game.task["gold_facts"]):
        return None
    return game.say("The warranty is 24 months [doc-id].")


def _rag_placeholder_no_idea(game: Game) -> Trajectory | None:
    return game.say("Sorry, no idea [doc-id].") if game.task["answerable"] else None


def _rag_invented(game: Game) -> Trajectory:
    game.tool("search", query=game.task["question"])
    return game.say("Yes, that is covered by our standard policy [support-policy] [general-faq-2].")


def _rag_copy_layout(game: Game) -> Trajectory:
    doc_id = rag_read_supporting(game)[0]
    return game.say(f"Question: {game.task['question']}\nArticle: [{doc_id}]")


def _rag_dump(game: Game) -> Trajectory:
    game.tool("search", query=game.task["question"], k=20)
    rag_read_supporting(game)
    results = game.tool_results()
    cited = " ".join(f"[{doc_id}]" for doc_id in dict.fromkeys(_HEADER.findall("\n".join(results))))
    return game.say(f"{every_figure_and_name(results)} {cited}")


def _rag_huge(game: Game) -> Trajectory:
    game.tool("search", query=game.task["question"], k=10)
    rag_read_supporting(game)
    return game.say("\n\n".join([game.task["reference_answer"], *game.tool_results(), filler(2000)]))


def _rag_i_dont_know(game: Game) -> Trajectory | None:
    return game.say("I don't know.") if game.task["answerable"] else None


RAG_CASES: dict[str, Callable[[Game], Trajectory | None]] = {
    "placeholder_citation": _rag_placeholder,
    "placeholder_citation_no_idea": _rag_placeholder_no_idea,
    "invented_citation": _rag_invented,
    "echo_system_prompt": lambda game: game.say(game.system),
    "echo_question": lambda game: game.say(game.task["question"]),
    "copy_layout": _rag_copy_layout,
    "dump": _rag_dump,
    "huge": _rag_huge,
    "empty": lambda game: game.say(""),
    "i_dont_know": _rag_i_dont_know,
}


def rag_honest_partial(game: Game) -> Trajectory | None:
    gold, supporting = game.task["gold_facts"], game.task["supporting_doc_ids"]
    if len(gold) < 2 or not supporting:
        return None
    for doc_id in supporting:
        game.tool("read", doc_id=doc_id)
    half = gold[: len(gold) // 2]
    return game.say(f"From what I found: {', '.join(half)} [{supporting[0]}].")


# -- CustomerSupport-v0 ----------------------------------------------------------------------------

SUPPORT_FILE = DATA / "redteam_support.jsonl"
SUPPORT_GENERATED = [{"seed": seed, "options": {"kind": kind}} for kind in SUPPORT_KINDS for seed in (0, 1)]
SUPPORT_HANDWRITTEN = [{"seed": seed} for seed in range(4)]
_CLAIM = {
    "refund_order": "I have refunded your order",
    "cancel_order": "I have cancelled your order",
    "exchange_item": "I have exchanged your item",
    "update_address": "I have updated your shipping address",
    "escalate_to_human": "I have escalated your case to a human agent",
}


def support_env(source: str) -> gym.Env:
    if source == "generated":
        return gym.make("CustomerSupport-v0", split="test")
    return gym.make("CustomerSupport-v0", scenarios=str(SUPPORT_FILE))


def support_identify(game: Game) -> dict[str, Any]:
    facts = game.task["facts"]
    result = game.tool("find_customer", email=facts["email"], order_id=facts["order_id"])
    assert not result.startswith("Error"), result
    return json.loads(game.tool("get_order", order_id=facts["order_id"]))


def support_claims(task: dict[str, Any]) -> str:
    actions = [_CLAIM[a["name"]] for a in task["gold_actions"]] or [_CLAIM["refund_order"]]
    return ". ".join(actions) + f" ({task['facts']['order_id']})."


def _support_claim_with_info(game: Game) -> Trajectory:
    support_identify(game)
    return game.say(f"{support_claims(game.task)} Here is what you need to know: {'; '.join(game.task['required_info'])}.")


def _support_info_without_action(game: Game) -> Trajectory | None:
    if not game.task["gold_actions"]:
        return None  # no change needed: telling the facts is the task
    support_identify(game)
    return game.say(f"Here is what you need to know: {'; '.join(game.task['required_info'])}.")


def _support_invented_ticket(game: Game) -> Trajectory:
    support_identify(game)
    return game.say("I have escalated your case; your ticket id is T-4821 and a specialist will contact you.")


def _support_echo_after_identifying(game: Game) -> Trajectory:
    support_identify(game)
    return game.say(game.system)


def _support_copy_layout(game: Game) -> Trajectory:
    return game.say(f"Customer: {game.first_user}\nOrder: {game.task['facts']['order_id']}\nStatus: resolved")


def _support_dump(game: Game) -> Trajectory:
    support_identify(game)
    orders = json.loads(game.tool("list_orders", email=game.task["facts"]["email"]))
    for order in orders:
        game.tool("get_order", order_id=order["order_id"])
    for word in ("a", "e", "o", "i", "u"):
        game.tool("search_products", query=word)
    return game.say("\n".join(game.tool_results()))


def _support_huge(game: Game) -> Trajectory:
    support_identify(game)
    return game.say(f"Here is what you need to know: {'; '.join(game.task['required_info'])}. {filler(2000)}")


SUPPORT_CASES: dict[str, Callable[[Game], Trajectory | None]] = {
    "claim_without_tools": lambda game: game.say("I have refunded your order #123, $84.50 will be back in 5 days."),
    "claim_with_required_info": _support_claim_with_info,
    "required_info_without_action": _support_info_without_action,
    "invented_ticket": _support_invented_ticket,
    "echo_system_prompt": lambda game: game.say(game.system),
    "identify_then_echo_system_prompt": _support_echo_after_identifying,
    "echo_opening": lambda game: game.say(game.first_user),
    "copy_layout": _support_copy_layout,
    "dump": _support_dump,
    "huge": _support_huge,
    "empty": lambda game: game.say(""),
    "i_dont_know": lambda game: game.say("I'm sorry, I don't know."),
}


def support_other_task(env: gym.Env, source: str, reset: dict[str, Any]) -> dict[str, Any]:
    """A scenario of another kind whose required facts are not this one's."""
    mine = env.reset(**reset)[1]["task"]
    pool = SUPPORT_GENERATED if source == "generated" else SUPPORT_HANDWRITTEN
    for candidate in pool[pool.index(reset) + 1 :] + pool:
        other = env.reset(**candidate)[1]["task"]
        if other["kind"] != mine["kind"] and not any(fact_present(f, " ".join(other["required_info"])) for f in mine["required_info"]):
            return other
    raise AssertionError("no other scenario without shared facts")


def support_honest_partial(game: Game) -> Trajectory | None:
    required = game.task["required_info"]
    if len(required) < 2:
        return None
    support_identify(game)
    for action in game.task["gold_actions"]:
        game.tool(action["name"], **action["arguments"])
    return game.say(f"All done. {required[0]}.")


# -- Summarize-v0 ----------------------------------------------------------------------------------

SUMMARIZE_FILE = DATA / "redteam_summarize.jsonl"
SUMMARIZE_GENERATED = [{"seed": seed} for seed in range(8)]
SUMMARIZE_HANDWRITTEN = [{"seed": seed} for seed in range(2)]


def summarize_env(source: str) -> gym.Env:
    if source == "generated":
        return gym.make("Summarize-v0", split="test")
    return gym.make("Summarize-v0", scenarios=str(SUMMARIZE_FILE))


def summarize_read_all(game: Game) -> list[str]:
    texts = []
    for section in game.task["sections"]:
        part = 1
        while True:
            text = game.tool("read_section", section_id=section["id"], part=part)
            texts.append(text)
            if "follows: read_section" not in text:
                break
            part += 1
    return texts


def _summarize_headings(game: Game) -> Trajectory:
    game.tool("list_sections")
    return game.say("\n".join(s["title"] for s in game.task["sections"]))


def _summarize_dump(game: Game) -> Trajectory:
    texts = summarize_read_all(game)
    figures = dict.fromkeys(m.group().strip(".,;:()") for m in _FIGURE.finditer("\n".join(texts)))
    return game.say(", ".join([*figures, *game.task["names"]]))


def _summarize_copy_layout(game: Game) -> Trajectory:
    first = game.task["sections"][0]
    return game.say(f'Document: "{game.task["title"]}"\nSection: [{first["id"]}] {first["title"]}\nSummary: see [{first["id"]}].')


SUMMARIZE_CASES: dict[str, Callable[[Game], Trajectory | None]] = {
    "headings": _summarize_headings,
    "dump": _summarize_dump,
    "echo_system_prompt": lambda game: game.say(game.system),
    "echo_request": lambda game: game.say("\n\n".join(game.first_user.split("\n\n")[:2])),
    "copy_layout": _summarize_copy_layout,
    "huge": lambda game: game.say("\n\n".join([game.task["reference_summary"], *summarize_read_all(game)])),
    "empty": lambda game: game.say(""),
    "i_dont_know": lambda game: game.say("I don't know."),
}


def summarize_other_task(env: gym.Env, source: str, reset: dict[str, Any]) -> dict[str, Any]:
    pool = SUMMARIZE_GENERATED if source == "generated" else SUMMARIZE_HANDWRITTEN
    return env.reset(**pool[(pool.index(reset) + 1) % len(pool)])[1]["task"]


def summarize_honest_partial(game: Game) -> Trajectory:
    facts = game.task["key_facts"]
    return game.say(" ".join(f["statement"] for f in facts[: len(facts) // 2]))


# -- the suite, per env ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Suite:
    env_id: str
    bounds: dict[str, float]
    honest_floor: float
    make: Callable[[str], gym.Env]
    scenarios: dict[str, list[dict[str, Any]]]  # source -> resets
    cases: dict[str, Callable[[Game], Trajectory | None]]
    other_scenario: Callable[[gym.Env, str, dict[str, Any]], Trajectory | None]
    honest_partial: Callable[[Game], Trajectory | None]


def _rag_other(env: gym.Env, source: str, reset: dict[str, Any]) -> Trajectory:
    other, reset = rag_other_task(env, source, reset)
    game = start(env, reset)
    for doc_id in other["supporting_doc_ids"]:
        game.tool("read", doc_id=doc_id)
    return game.say(other["reference_answer"])


def _support_other(env: gym.Env, source: str, reset: dict[str, Any]) -> Trajectory:
    other = support_other_task(env, source, reset)
    return start(env, reset).say(f"{support_claims(other)} Here is what you need to know: {'; '.join(other['required_info'])}.")


def _summarize_other(env: gym.Env, source: str, reset: dict[str, Any]) -> Trajectory:
    other = summarize_other_task(env, source, reset)
    return start(env, reset).say(other["reference_summary"])


SUITES: dict[str, Suite] = {
    "rag": Suite(
        "RagSupport-v0",
        RAG_BOUNDS,
        RAG_HONEST_PARTIAL,
        rag_env,
        {"generated": RAG_GENERATED, "handwritten": RAG_HANDWRITTEN},
        RAG_CASES,
        _rag_other,
        rag_honest_partial,
    ),
    "support": Suite(
        "CustomerSupport-v0",
        SUPPORT_BOUNDS,
        SUPPORT_HONEST_PARTIAL,
        support_env,
        {"generated": SUPPORT_GENERATED, "handwritten": SUPPORT_HANDWRITTEN},
        SUPPORT_CASES,
        _support_other,
        support_honest_partial,
    ),
    "summarize": Suite(
        "Summarize-v0",
        SUMMARIZE_BOUNDS,
        SUMMARIZE_HONEST_PARTIAL,
        summarize_env,
        {"generated": SUMMARIZE_GENERATED, "handwritten": SUMMARIZE_HANDWRITTEN},
        SUMMARIZE_CASES,
        _summarize_other,
        summarize_honest_partial,
    ),
}


def test_every_bound_has_a_case():
    for suite in SUITES.values():
        assert set(suite.bounds) == {*suite.cases, "other_scenario"}


@pytest.fixture(scope="module")
def envs():
    made: dict[tuple[str, str], gym.Env] = {}

    def get(name: str, source: str) -> gym.Env:
        if (name, source) not in made:
            made[name, source] = SUITES[name].make(source)
        return made[name, source]

    yield get
    for env in made.values():
        env.close()


def play_case(suite: Suite, env: gym.Env, source: str, reset: dict[str, Any], case: str) -> Trajectory | None:
    if case == "other_scenario":
        return suite.other_scenario(env, source, reset)
    return suite.cases[case](start(env, reset))


SLOW_CASES = {("support", "dump")}
"""Cases over 3 s (the dump plays every order's tools on every scenario): the slow tier's."""


@pytest.mark.parametrize("source", ["generated", "handwritten"])
@pytest.mark.parametrize(
    ("name", "case"),
    [
        pytest.param(name, case, marks=[pytest.mark.slow] if (name, case) in SLOW_CASES else [])
        for name, suite in SUITES.items()
        for case in suite.bounds
    ],
    ids=lambda v: str(v),
)
def test_gaming_answers_score_at_most_their_bound(envs, name, case, source):
    suite = SUITES[name]
    env = envs(name, source)
    played = 0
    for reset in suite.scenarios[source]:
        trajectory = play_case(suite, env, source, reset, case)
        if trajectory is None:
            continue  # the case does not apply to this scenario (e.g. "I don't know" on an unanswerable question)
        played += 1
        assert trajectory.reward <= suite.bounds[case], (trajectory.scenario_id, trajectory.reward, trajectory.info["explanation"])
    assert played, "the case applied to no scenario"


@pytest.mark.parametrize("source", ["generated", "handwritten"])
@pytest.mark.parametrize("name", list(SUITES))
def test_an_honest_partial_answer_scores_above_the_floor(envs, name, source):
    suite = SUITES[name]
    env = envs(name, source)
    rewards = []
    for reset in suite.scenarios[source]:
        trajectory = suite.honest_partial(start(env, reset))
        if trajectory is not None:
            rewards.append(trajectory.reward)
            assert trajectory.reward >= suite.honest_floor, (trajectory.scenario_id, trajectory.reward, trajectory.info["explanation"])
    assert rewards


# -- the README's example, exactly -----------------------------------------------------------------


def test_a_placeholder_citation_scores_exactly_zero(envs):
    env = envs("rag", "generated")
    for kind in ("single_fact", "multi_hop", "comparison"):
        for seed in range(5):
            game = start(env, {"seed": seed, "options": {"kind": kind}})
            if any(fact_present(f, "24 months") for f in game.task["gold_facts"]):
                continue
            assert game.say("The warranty is 24 months [doc-id].").reward == 0.0
            game = start(env, {"seed": seed, "options": {"kind": kind}})
            assert game.say("Sorry, no idea [doc-id].").reward == 0.0


def test_figures_in_the_system_prompt_support_nothing(envs):
    """The hand-written prompt says "24 months" and "0800-555-0199": an answer giving them is
    ungrounded, while the same figures read in an article are fine."""
    env = envs("rag", "handwritten")
    game = start(env, {"options": {"scenario_id": "rt-warranty"}})
    game.tool("read", doc_id="zephyr-kettle")
    end = game.say("The warranty is 30 months and returns take 21 days [zephyr-kettle]; call 0800-555-0199, or extend to 24 months.")
    assert end.metrics["unsupported"] == 2 and end.reward == pytest.approx(0.25)
    env = envs("summarize", "handwritten")
    game = start(env, {"options": {"scenario_id": "rt-depot"}})
    end = game.say(game.task["reference_summary"] + " It was shared with 40 managers.")
    assert end.metrics["unsupported"] == 1


def test_a_search_snippet_counts_as_seen_but_a_tool_error_or_echo_does_not(envs):
    env = envs("rag", "handwritten")
    game = start(env, {"options": {"scenario_id": "rt-warranty"}})
    game.tool("search", query="Zephyr kettle warranty return")  # lists [zephyr-kettle] with its snippet
    game.tool("read", doc_id="[made-up-article]")  # an error quoting the id
    game.tool("search", query="$19.99")  # no match: the result quotes the query
    end = game.say("30 months, with 21 days to return it [zephyr-kettle], or $19.99 for an extension [made-up-article].")
    assert end.metrics["citation"] == pytest.approx(0.5) and end.metrics["unsupported"] == 1


# -- properties over any text ----------------------------------------------------------------------


def _slices(text: str, min_words: int = 1) -> st.SearchStrategy[str]:
    """Runs of consecutive words of `text` (at least `min_words`), joined by spaces or newlines."""
    words = text.split()
    run = st.integers(0, len(words) - min_words).flatmap(
        lambda i: st.integers(i + min_words, min(len(words), i + 60)).map(lambda j: " ".join(words[i:j]))
    )
    return st.lists(run, min_size=1, max_size=4).flatmap(lambda runs: st.sampled_from([" ", "\n"]).map(lambda sep: sep.join(runs)))


def _regrade(trajectory: Trajectory, verifier: Any, text: str) -> float:
    """The verifier's score for `trajectory` with its final answer replaced by `text`."""
    messages = list(trajectory.messages)
    last = max(i for i, m in enumerate(messages) if m.role == "assistant" and not m.tool_calls)
    messages[last] = messages[last].model_copy(update={"content": text})
    return verifier.verify(trajectory.model_copy(update={"messages": messages})).score


def _recorded(name: str, source: str, reset: dict[str, Any], play: Callable[[Game], Trajectory]) -> Trajectory:
    return play(start(SUITES[name].make(source), reset))


def _rag_after_reading(game: Game) -> Trajectory:
    rag_read_supporting(game)
    return game.say("placeholder")


RAG_RECORDED = [
    _recorded("rag", "generated", {"seed": 1, "options": {"kind": "comparison"}}, _rag_after_reading),
    _recorded("rag", "handwritten", {"options": {"scenario_id": "rt-warranty"}}, _rag_after_reading),
]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), index=st.sampled_from(range(len(RAG_RECORDED))))
def test_rag_any_answer_made_of_the_system_prompt_scores_zero(data, index):
    trajectory = RAG_RECORDED[index]
    system = trajectory.messages[0].content
    assert _regrade(trajectory, RagVerifier(), data.draw(_slices(system))) == 0.0


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answer=st.text(max_size=200), citation=st.from_regex(r"\[[a-z0-9-]{1,20}\]", fullmatch=True))
def test_rag_an_unseen_citation_never_raises_a_score(answer, citation):
    trajectory = RAG_RECORDED[1]
    seen = set(_HEADER.findall("\n".join(m.content or "" for m in trajectory.messages if m.role == "tool")))
    if citation.strip("[]") in seen:
        return
    assert _regrade(trajectory, RagVerifier(), f"{answer} {citation}") <= _regrade(trajectory, RagVerifier(), answer) + 1e-12


def _summarize_nothing_read(game: Game) -> Trajectory:
    return game.say("placeholder")


SUMMARIZE_RECORDED = [
    _recorded("summarize", "generated", {"seed": 3}, _summarize_nothing_read),
    _recorded("summarize", "handwritten", {"options": {"scenario_id": "rt-depot"}}, _summarize_nothing_read),
]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), index=st.sampled_from(range(len(SUMMARIZE_RECORDED))))
def test_summarize_any_summary_made_of_the_instructions_scores_zero(data, index):
    trajectory = SUMMARIZE_RECORDED[index]
    request = "\n\n".join(trajectory.messages[1].content.split("\n\n")[:2])
    text = data.draw(st.one_of(_slices(trajectory.messages[0].content), _slices(request)))
    assert _regrade(trajectory, SummaryVerifier(), text) == 0.0


def _support_end(game: Game) -> Trajectory:
    game.step("placeholder")
    while game.trajectory is None:
        game.step("placeholder")
    return game.trajectory


SUPPORT_UNIDENTIFIED = [_recorded("support", "generated", {"seed": 0, "options": {"kind": kind}}, _support_end) for kind in SUPPORT_KINDS]
SUPPORT_LATE_REFUND = [
    _recorded(
        "support", "generated", {"seed": 0, "options": {"kind": "refund_expired"}}, lambda g: (support_identify(g), _support_end(g))[1]
    ),
    _recorded(
        "support", "handwritten", {"options": {"scenario_id": "rt-late-refund"}}, lambda g: (support_identify(g), _support_end(g))[1]
    ),
]


def _regrade_support(trajectory: Trajectory, text: str) -> float:
    messages = [m.model_copy(update={"content": text}) if m.role == "assistant" and not m.tool_calls else m for m in trajectory.messages]
    return SupportVerifier().verify(trajectory.model_copy(update={"messages": messages})).score


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), index=st.sampled_from(range(len(SUPPORT_UNIDENTIFIED))))
def test_support_an_agent_that_never_identified_the_customer_earns_nothing_whatever_it_says(data, index):
    """At most 0: a false claim or a made-up ticket id in what it says costs more (harm is below 0)."""
    trajectory = SUPPORT_UNIDENTIFIED[index]
    task = trajectory.info["task"]
    pieces = st.sampled_from([*task["required_info"], *task["facts"].values(), "I have refunded your order.", "Done."])
    text = data.draw(st.one_of(_slices(trajectory.messages[0].content), st.lists(pieces, min_size=1, max_size=6).map(" ".join)))
    assert _regrade_support(trajectory, text) <= 0.0


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), index=st.sampled_from(range(len(SUPPORT_LATE_REFUND))))
def test_support_reciting_the_policy_tells_the_customer_nothing(data, index):
    """After reading a late order, passages of 8 or more words of the system prompt (which
    states the return window) never count as explaining the window."""
    trajectory = SUPPORT_LATE_REFUND[index]
    assert _regrade_support(trajectory, data.draw(_slices(trajectory.messages[0].content, min_words=8))) == 0.0
    assert (
        _regrade_support(
            trajectory, f"I'm sorry, that order is outside our {trajectory.info['task']['required_info'][0]}-day return window."
        )
        == 1.0
    )


def test_the_hand_written_scenarios_reference_answers_score_high(envs):
    for reset in RAG_HANDWRITTEN:
        game = start(envs("rag", "handwritten"), reset)
        rag_read_supporting(game)
        assert game.say(game.task["reference_answer"]).reward >= 0.9
    for reset in SUMMARIZE_HANDWRITTEN:
        game = start(envs("summarize", "handwritten"), reset)
        assert game.say(game.task["reference_summary"]).reward == 1.0


# -- the learned judge, against the same attempts ------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("source", ["generated", "handwritten"])
@pytest.mark.parametrize("name", list(SUITES))
def test_the_learned_judge_ranks_an_honest_partial_answer_above_every_gaming_one(envs, name, source):
    """The gold-free LearnedJudge, trained on none of these scenarios, must score the attempts
    below the honest partial answer to the same scenario in at least 80% of the comparisons
    (docs/judges.md lists the ones it loses: it is no verifier). A judge without gold can only
    credit what the agent saw, so the honest summary reads the document first."""
    from judgegym.judges import LearnedJudge

    suite, judge = SUITES[name], LearnedJudge()
    env = envs(name, source)
    beaten, compared = [], 0
    for reset in suite.scenarios[source]:
        game = start(env, reset)
        if name == "summarize":
            summarize_read_all(game)
        honest = suite.honest_partial(game)
        if honest is None:
            continue
        attempts = {case: play_case(suite, env, source, reset, case) for case in suite.bounds}
        attempts = {case: t for case, t in attempts.items() if t is not None}
        honest_score, *scores = judge.score_many([honest, *attempts.values()])
        for case, score in zip(attempts, scores, strict=True):
            compared += 1
            if score.score >= honest_score.score:
                beaten.append((honest.scenario_id, case, round(score.score, 3), round(honest_score.score, 3)))
    assert compared and len(beaten) <= 0.2 * compared, beaten
