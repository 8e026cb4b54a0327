"""Hypothesis feeds Summarize-v0 arbitrary actions: the env never raises, observations stay in
the space, rewards stay in [0, 1], and the turn limit always ends the episode.

Section reads are paged at a small output limit, so long parts and bad part numbers get
exercised too. About 1,600 actions are stepped per run (300 examples of up to 12 actions)."""

from __future__ import annotations

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import action_strategy, examples, fuzz_episodes

import judgegym  # noqa: F401

MAX_TURNS = 6
ENV = gym.make("Summarize-v0", split="test", max_turns=MAX_TURNS, max_tool_calls=8, max_tool_output_chars=600)

section_ids = st.sampled_from(["s1", "S2", "3", "[s4]", "s99", "", " ", "s1\x00"]) | st.text(max_size=40)
actions = action_strategy(
    ["list_sections", "read_section"],
    [
        st.fixed_dictionaries({}, optional={"verbose": st.booleans()}),
        st.fixed_dictionaries({"section_id": section_ids}, optional={"part": st.integers(-3, 40) | st.text(max_size=3)}),
    ],
)


@pytest.mark.slow
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.integers(0, 40), actions_=st.lists(actions, min_size=1, max_size=12))
def test_arbitrary_actions_never_break_the_env(seed, actions_):
    """Every generated action is stepped: when an episode ends, the next one starts."""
    fuzz_episodes(ENV, seed, actions_, MAX_TURNS)
