"""The envs' text formats (`judgegym.formats`): each writer and its readers agree, the facts the
envs publish equal what their prompts state, and the readers of tool use take any messages."""

from __future__ import annotations

import asyncio
import json
from datetime import date

import gymnasium as gym
import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgegym import Message, Trajectory
from judgegym.envs.support.baselines import PolicySupportAgent
from judgegym.evaluation import play_episode
from judgegym.formats.chat import NOT_EXECUTED_PREFIX, ToolExchange, tool_call_turn, tool_exchanges
from judgegym.formats.rag import ARTICLE_HEADER, CITATION, split_citations
from judgegym.formats.summarize import CONTINUED, PART_HEADER, SECTION_LINE, word_limit_of
from judgegym.formats.support import SYSTEM_PROMPT, SupportPolicy
from judgegym.judges.learned.view import View


@pytest.mark.parametrize("seed", range(6))
def test_support_publishes_the_policy_its_prompt_states(seed):
    env = gym.make("CustomerSupport-v0", split="test")
    observation, info = env.reset(seed=seed)
    published = SupportPolicy.from_facts(info["facts"])
    assert published == SupportPolicy.from_prompt(observation[0]["content"])
    assert None not in (published.today, published.window_days, published.dispute_threshold)
    trajectory = asyncio.run(play_episode(env, PolicySupportAgent(), seed=seed))
    assert trajectory.info["facts"] == info["facts"]


def test_a_reworded_policy_prompt_keeps_its_facts():
    """A scenario's own prompt in other words: nothing parses it, the facts still arrive."""
    reworded = "You work for {company}. Date: {today}. Returns within {window} days; disputes above {threshold} USD go to a human."
    env = gym.make("CustomerSupport-v0", split="test", system_prompt=reworded)
    observation, info = env.reset(seed=3)
    assert SupportPolicy.from_prompt(observation[0]["content"]).window_days is None  # the fallback cannot read it
    policy = SupportPolicy.of(info["facts"], observation[0]["content"])
    assert policy.window_days is not None and str(policy.window_days) in observation[0]["content"]
    assert policy.today is not None and policy.today.isoformat() in observation[0]["content"]


def test_support_policy_reads_back_what_it_writes():
    policy = SupportPolicy(date(2026, 2, 28), 45, 1250.5)
    assert SupportPolicy.from_prompt(policy.prompt("Acme")) == policy == SupportPolicy.from_facts(policy.facts())
    assert SupportPolicy.from_prompt("no policy here") == SupportPolicy()
    assert SupportPolicy.from_facts({"today": "not a date", "refund_window_days": "30", "dispute_threshold": True}) == SupportPolicy()
    assert "{" not in policy.prompt("Acme", SYSTEM_PROMPT)


def test_summarize_writes_what_its_readers_read():
    env = gym.make("Summarize-v0", split="test", max_tool_output_chars=1500)
    observation, info = env.reset(seed=1)
    assert info["facts"]["word_limit"] == word_limit_of(observation[1]["content"])
    _, *_ = env.step(tool_call_turn("list_sections", {}))
    listing = env.unwrapped._messages[-1].content
    lines = SECTION_LINE.findall(listing)
    sections = env.unwrapped._scenario.sections
    assert [(i, int(w.replace(",", ""))) for i, _, w in lines] == [(s.id, s.words) for s in sections]
    long = max(sections, key=lambda s: s.words)
    env.step(tool_call_turn("read_section", {"section_id": long.id}))
    result = env.unwrapped._messages[-1].content
    header = PART_HEADER.fullmatch(result.partition("\n")[0])
    assert header is not None and header["id"] == long.id
    assert header["part"] == "1" and int(header["of"]) > 1 and CONTINUED.search(result)  # a section in parts says how to go on


def test_rag_headers_and_citations_round_trip():
    env = gym.make("RagSupport-v0", split="test")
    _, info = env.reset(seed=2)
    env.step(tool_call_turn("search", {"query": info["task"]["question"], "k": 3}))
    hits = env.unwrapped._messages[-1].content
    ids = ARTICLE_HEADER.findall(hits)
    assert len(ids) == 3
    env.step(tool_call_turn("read", {"doc_id": ids[0]}, first_id=1))
    assert ARTICLE_HEADER.findall(env.unwrapped._messages[-1].content) == ids[:1]
    answer = f"See {ids[0]} [{ids[0]}] and [{ids[1]}]; not [two words] or []."
    assert CITATION.findall(answer) == ids[:2]
    assert split_citations(answer)[1::2] == [f"[{ids[0]}]", f"[{ids[1]}]"]


def _call(call_id: str, name: str, arguments: str) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_tool_exchanges_pair_calls_with_results_on_dicts_and_messages():
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "hi"},
        tool_call_turn("search", [{"query": "a"}, {"query": "b"}]),
        {"role": "tool", "tool_call_id": "call_1", "name": "search", "content": "Error: bad"},
        {"role": "user", "content": "[format error] Your last turn could not be used."},
        {"role": "tool", "tool_call_id": "call_0", "name": "search", "content": "[d] Title"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "x", "type": "function", "function": {"name": "read", "arguments": "[1]"}}],
        },
        {"role": "tool", "tool_call_id": "x", "name": "read", "content": f"{NOT_EXECUTED_PREFIX}: the limit was reached."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "y", "type": "function", "function": {"name": "read", "arguments": "{"}}],
        },
    ]
    for source in (messages, [Message.model_validate(m) for m in messages]):
        first, second, third, fourth = tool_exchanges(source)
        assert (first.name, first.arguments, first.result, first.ok, first.after_user) == (
            "search",
            {"query": "a"},
            "[d] Title",
            True,
            "hi",
        )
        assert (second.call_id, second.ok) == ("call_1", False)
        assert (third.arguments, third.ok, third.executed) == ({}, True, False)
        assert (fourth.result, fourth.ok) == (None, False)


_ARGUMENTS = st.one_of(st.text(max_size=20), st.none(), st.builds(json.dumps, st.dictionaries(st.text(max_size=4), st.integers())))
_MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool"]), "content": st.one_of(st.none(), st.text(max_size=30))},
    optional={
        "tool_call_id": st.sampled_from(["call_0", "call_1", "z"]),
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {
                    "id": st.sampled_from(["call_0", "call_1", "z"]),
                    "function": st.fixed_dictionaries(
                        {"name": st.text(max_size=8), "arguments": st.one_of(st.text(max_size=20), st.none())}
                    ),
                }
            ),
            max_size=3,
        ),
    },
)


@given(st.lists(_MESSAGE, max_size=12))
def test_tool_exchanges_take_any_messages(messages):
    """Model text feeds these readers: any arguments, ids or order of results reads without error."""
    exchanges = tool_exchanges(messages)
    assert all(isinstance(e, ToolExchange) and isinstance(e.arguments, dict) for e in exchanges)
    assert len(exchanges) == sum(len(m.get("tool_calls") or []) for m in messages if m["role"] == "assistant")


def test_the_learned_judge_reads_published_facts_before_the_prompt():
    facts = SupportPolicy(date(2026, 3, 1), 14, 99.0).facts()
    trajectory = Trajectory(
        scenario_id="s",
        messages=[
            Message(role="system", content="Be nice."),
            Message(role="user", content="Refund please"),
            Message(role="assistant", content="ok"),
        ],
        info={"facts": facts},
    )
    view = View.of(trajectory)
    assert SupportPolicy.of(view.facts, view.system) == SupportPolicy.from_facts(facts)
    assert json.loads(json.dumps(view.facts)) == facts


@pytest.mark.parametrize(
    ("request_text", "limit"),
    [
        ('Summarize the report "Q3" in at most 120 words.', 120),
        ("Could you summarise the minutes? Under 80 words please.", 80),
        ("Summarise it in no more than sixty words.", 60),
        ("Give me the gist, 50 words max.", 50),
        ("Write a 100-word summary for the board.", 100),
        ("Keep it to 40 words or fewer.", 40),
        ("≤ 60 words, please.", 60),
        ("In one hundred and fifty words or less, what changed?", 150),
        ("Summarise the 1,200-word report in 90 words.", 90),
        ("[s3] Budget (412 words)", None),
        ("I wrote about 500 words of notes; what is the fee?", None),
        ("What is the fee?", None),
    ],
)
def test_a_word_limit_is_read_in_any_of_the_ways_english_bounds_a_length(request_text, limit):
    assert word_limit_of(request_text) == limit


@given(st.text(max_size=200))
def test_a_word_limit_is_a_positive_count_or_none_for_any_text(text):
    limit = word_limit_of(text)
    assert limit is None or limit > 0
