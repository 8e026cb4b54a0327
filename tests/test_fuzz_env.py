"""Hypothesis feeds RagSupport-v0 arbitrary actions: the env never raises, observations stay
in the space, rewards stay in [0, 1], and the turn limit always ends the episode.

About 3,700 actions are stepped per run (700 examples of up to 12 actions each)."""

from __future__ import annotations

import json
import math

import gymnasium as gym
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import judgegym  # noqa: F401

MAX_TURNS = 6
ENV = gym.make(
    "RagSupport-v0",
    split="test",
    n_products=20,
    n_worlds=1,
    max_turns=MAX_TURNS,
    max_tool_calls=8,
    max_tool_output_chars=600,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
tool_names = st.sampled_from(["search", "read", "Search", "", "lookup", "read\x00", "search "]) | st.text(max_size=12)
arguments = st.one_of(
    st.fixed_dictionaries({"query": st.text(max_size=200)}, optional={"k": st.integers(-5, 50) | st.text(max_size=3)}),
    st.fixed_dictionaries({"doc_id": st.text(max_size=60)}),
    st.dictionaries(st.text(max_size=10), json_values, max_size=4),
    json_values,
)
raw_arguments = arguments.map(lambda a: json.dumps(a)) | st.text(max_size=80)
native_call = st.fixed_dictionaries(
    {
        "id": st.text(max_size=8),
        "type": st.just("function"),
        "function": st.fixed_dictionaries({"name": tool_names, "arguments": raw_arguments | arguments}),
    }
)
dict_action = st.fixed_dictionaries(
    {"role": st.sampled_from(["assistant", "assistant", "user", "tool", 3])},
    optional={
        "content": st.none() | st.text(max_size=200) | st.integers(),
        "tool_calls": st.lists(native_call | json_values, max_size=4) | json_values,
    },
)
text_call = st.builds(
    lambda name, args: f'<tool_call>{{"name": {json.dumps(name)}, "arguments": {args}}}</tool_call>',
    tool_names,
    raw_arguments,
)
fragments = st.sampled_from(["<tool_call>", "</tool_call>", "<think>", "</think>", "{", "}", '"name"', ":", "[", "]", "\n"])
text_action = st.one_of(
    st.text(max_size=300),
    st.lists(st.one_of(text_call, fragments, st.text(max_size=40)), max_size=8).map("".join),
    st.just(""),
    st.integers(100_000, 400_000).map(lambda n: "x" * n),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=50).map(lambda s: s * 500),
)
junk = st.one_of(st.none(), st.integers(), st.floats(), st.binary(max_size=20), st.lists(st.integers(), max_size=3), json_values)
actions = st.one_of(text_action, text_action, dict_action, dict_action, junk)


@settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.integers(0, 2**31 - 2), actions_=st.lists(actions, min_size=1, max_size=12))
def test_arbitrary_actions_never_break_the_env(seed, actions_):
    """Every generated action is stepped: when an episode ends, the next one starts."""
    observation, _ = ENV.reset(seed=seed)
    assert ENV.observation_space.contains(observation)
    turns = 0
    for action in actions_:
        observation, reward, terminated, truncated, info = ENV.step(action)
        turns += 1
        assert ENV.observation_space.contains(observation)
        assert isinstance(terminated, bool) and isinstance(truncated, bool)
        assert math.isfinite(reward) and 0.0 <= reward <= 1.0
        if terminated or truncated:
            assert info["trajectory"].reward == reward
            assert turns <= MAX_TURNS
            assert truncated == (info["termination"] in ("max_turns", "max_tool_calls"))
            observation, _ = ENV.reset(seed=seed + turns)
            turns = 0
        else:
            assert reward == 0.0
            assert turns < MAX_TURNS, "the turn limit must end the episode"
