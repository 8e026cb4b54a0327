"""Hypothesis feeds CustomerSupport-v0 arbitrary actions, before and after the customer is
identified: the env never raises, observations stay in the space, rewards stay in [0, 1], the
turn limit ends the episode, and no other customer is ever identified or changed."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import action_strategy, checked_step, examples

import judgegym  # noqa: F401

MAX_TURNS = 6
ENV = gym.make("CustomerSupport-v0", split="test", max_turns=MAX_TURNS, max_tool_calls=8, max_tool_output_chars=600)

ids = st.text(max_size=20) | st.from_regex(r"\A#?[Oo]-\d{5}\Z") | st.sampled_from(["x' OR '1'='1", "'; DROP TABLE orders; --", "%"])
emails = st.text(max_size=30) | st.emails() | st.just("' OR 1=1 --")
free_text = st.text(max_size=120)
actions = action_strategy(
    [
        "find_customer",
        "list_orders",
        "get_order",
        "search_products",
        "refund_order",
        "exchange_item",
        "cancel_order",
        "update_address",
        "escalate_to_human",
    ],
    [
        st.fixed_dictionaries({"email": emails, "order_id": ids}),
        st.fixed_dictionaries({"email": emails}),
        st.fixed_dictionaries({"order_id": ids}),
        st.fixed_dictionaries({"query": free_text}),
        st.fixed_dictionaries(
            {"order_id": ids, "item_id": st.from_regex(r"\AI-1\d{3}\Z") | ids, "new_product_id": st.from_regex(r"\AP-1\d\d\Z") | ids}
        ),
        st.fixed_dictionaries({"order_id": ids, "address": free_text}),
        st.fixed_dictionaries({"order_id": ids}, optional={"summary": free_text}),
    ],
)


def identify(facts):
    arguments = json.dumps({"email": facts["email"], "order_id": facts["order_id"]})
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "id", "type": "function", "function": {"name": "find_customer", "arguments": arguments}}],
    }


def check_privacy(trajectory, task):
    """Only the caller may be identified, and only the caller's orders may change."""
    assert set(trajectory.info["identified_customers"]) <= {task["customer_id"]}
    conn = ENV.unwrapped.database
    for order_id in trajectory.info["database"]["diff"].get("orders", {}):
        assert conn.execute("SELECT customer_id FROM orders WHERE order_id = ?", (order_id,)).fetchone() == (task["customer_id"],)


@pytest.mark.slow
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.integers(0, 2**31 - 2), identified=st.booleans(), actions_=st.lists(actions, min_size=1, max_size=10))
def test_arbitrary_actions_never_break_the_env(seed, identified, actions_):
    """Every generated action is stepped: when an episode ends, the next one starts."""
    observation, info = ENV.reset(seed=seed)
    assert ENV.observation_space.contains(observation)
    turns = 0
    if identified:
        ENV.step(identify(info["task"]["facts"]))
        turns = 1
    for action in actions_:
        turns += 1
        done, step_info = checked_step(ENV, action, turns, MAX_TURNS)
        if done:
            check_privacy(step_info["trajectory"], info["task"])
            observation, info = ENV.reset(seed=seed + turns)
            turns = 0
    check_privacy(ENV.unwrapped.trajectory(), info["task"])
