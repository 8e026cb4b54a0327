"""Hypothesis feeds RagSupport-v0 arbitrary actions: the env never raises, observations stay
in the space, rewards stay in [0, 1], and the turn limit always ends the episode.

About 3,700 actions are stepped per run (700 examples of up to 12 actions each)."""

from __future__ import annotations

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import action_strategy, examples, fuzz_episodes

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

actions = action_strategy(
    ["search", "read"],
    [
        st.fixed_dictionaries({"query": st.text(max_size=200)}, optional={"k": st.integers(-5, 50) | st.text(max_size=3)}),
        st.fixed_dictionaries({"doc_id": st.text(max_size=60)}),
    ],
)


@pytest.mark.slow
@settings(max_examples=examples(700), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.integers(0, 2**31 - 2), actions_=st.lists(actions, min_size=1, max_size=12))
def test_arbitrary_actions_never_break_the_env(seed, actions_):
    """Every generated action is stepped: when an episode ends, the next one starts."""
    fuzz_episodes(ENV, seed, actions_, MAX_TURNS)
