"""The simulated customers: the rule-based one's rules, and the LLM one through a scripted
OpenAI-compatible server (and, marked slow, the embedded local model)."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from openai_stub import StubServer

import judgegym  # noqa: F401
from judgegym.envs.support import STOP_TOKEN, LLMCustomer, RuleBasedCustomer, User
from judgegym.judges.llm import JudgeError, JudgeLLM
from judgegym.trajectory import Message

USER = User(
    opening="Hi, I'd like to return my kettle.",
    goal="Get order O-100 refunded.",
    persona="brisk",
    facts={"email": "ada@example.com", "order_id": "O-100", "reason": "It leaks.", "loyalty_number": "LN-77"},
    wrong_order_id="O-999",
)


def talk(customer, *agent_turns):
    messages = [Message(role="system", content="policy"), Message(role="user", content=USER.opening)]
    replies = []
    for turn in agent_turns:
        messages.append(Message(role="assistant", content=turn))
        replies.append(customer.reply(messages))
        messages.append(Message(role="user", content=replies[-1]))
    return replies


def rule_based(**kwargs):
    return RuleBasedCustomer(USER, ["$99.00"], True, style_seed="fixed", **kwargs)


def test_facts_are_given_only_when_asked_and_the_wrong_order_id_comes_first():
    customer = rule_based()
    first, second, third = talk(
        customer,
        "Could you give me your email address and order number?",
        "I couldn't find that order with this email. Could you double-check?",
        "Why do you want to return it? And what is your loyalty number?",
    )
    assert "ada@example.com" in first and "999" in first and "O-100" not in first and "leaks" not in first
    assert "100" in second and STOP_TOKEN not in second
    assert "It leaks." in third and "LN-77" in third and "ada@" not in third


def test_the_customer_stops_once_the_outcome_and_required_info_are_told():
    customer = rule_based()
    ask, confirm, done = talk(
        customer,
        "Please share your email.",
        "I can refund the full $99.00 for order O-100. Shall I go ahead?",
        "Done: your refund of $99.00 has been processed.",
    )
    assert "ada@example.com" in ask and STOP_TOKEN not in confirm and STOP_TOKEN in done
    # the required information said earlier counts; a later outcome turn ends it
    later = rule_based()
    assert STOP_TOKEN in talk(later, "Your order cost $99.00.", "It has been refunded.")[-1]


def test_a_refusal_ends_a_no_change_scenario_but_not_one_that_needs_a_change():
    accepting = RuleBasedCustomer(USER, ["30"], False)
    assert STOP_TOKEN in talk(accepting, "I'm afraid that order is outside our 30-day return window.")[0]
    assert STOP_TOKEN in talk(RuleBasedCustomer(USER, ["30"], False), "I'm afraid I cannot help with that.")[0]
    insisting = rule_based()
    assert STOP_TOKEN not in talk(insisting, "I'm afraid I cannot help with that.")[0]


def test_the_customer_gives_up_after_unproductive_turns_and_repeated_questions():
    replies = talk(rule_based(patience=3), "Nice weather today.", "Indeed.", "Anything else?")
    assert [STOP_TOKEN in r for r in replies] == [False, False, True]
    assert USER.opening in replies[0]
    repeated = talk(rule_based(patience=2), *["What is your email?"] * 4)
    assert [STOP_TOKEN in r for r in repeated] == [False, False, False, True] and repeated[2].startswith("As I said")


def test_an_out_of_stock_answer_brings_the_fallback_variant():
    user = USER.model_copy(update={"facts": {**USER.facts, "new_variant": "Blue"}, "fallback_variant": "Green"})
    customer = RuleBasedCustomer(user, ["T-1001"], True)
    which, sold_out, again = talk(customer, "Which colour would you like instead?", "Sorry, Blue is out of stock.", "Which colour then?")
    assert "Blue" in which and "Green" in sold_out and "Green" in again


def test_phrasing_varies_with_the_style_seed_but_is_deterministic():
    ask = "What is your email address and order id?"
    assert talk(rule_based(), ask) == talk(rule_based(), ask)
    styles = {talk(RuleBasedCustomer(USER, ["$99.00"], True, style_seed=s), ask)[0] for s in range(30)}
    assert len(styles) > 3


def test_rule_based_customer_ignores_tool_results_and_format_errors():
    customer = rule_based()
    messages = [
        Message(role="user", content=USER.opening),
        Message(role="assistant", content="Your refund of $99.00 has been processed."),
        Message(role="tool", tool_call_id="c", content="secret tool output: email"),
        Message(role="user", content="[format error] Your last turn could not be used"),
    ]
    assert STOP_TOKEN in customer.reply(messages)


def test_llm_customer_prompt_swaps_roles_and_hides_tools(tmp_path):
    stub = StubServer()
    try:
        stub.script = ["My email is ada@example.com.", f"Thanks, bye! {STOP_TOKEN}"]
        llm = JudgeLLM("openai/customer", api_base=stub.api_base, api_key="k", cache_dir=tmp_path)
        customer = LLMCustomer(llm, USER, "Zephyr Kitchen")
        messages = [
            Message(role="system", content="agent policy"),
            Message(role="user", content=USER.opening),
            Message(role="assistant", content="What is your email?"),
        ]
        assert customer.reply(messages) == "My email is ada@example.com."
        sent = stub.requests[0]["messages"]
        assert [m["role"] for m in sent] == ["system", "assistant", "user"]
        assert sent[1]["content"] == USER.opening and sent[2]["content"] == "What is your email?"
        system = sent[0]["content"]
        for text in ("Zephyr Kitchen", USER.goal, "brisk", "ada@example.com", "loyalty number: LN-77", "O-999", STOP_TOKEN):
            assert text in system
        assert "agent policy" not in json.dumps(sent)
    finally:
        stub.close()


def test_env_with_an_llm_customer_over_the_stub_server(tmp_path):
    stub = StubServer()
    try:
        stub.script = ["Sure: ada@example.com and order O-100.", "", f"Great, thank you! {STOP_TOKEN}"]
        env = gym.make(
            "CustomerSupport-v0",
            split="test",
            user_model="openai/customer",
            user_api_base=stub.api_base,
            user_llm_kwargs={"api_key": "k", "cache": False, "max_tokens": 64},
        )
        obs, info = env.reset(seed=1)
        assert obs[1]["role"] == "user" and obs[1]["content"]  # the opening is the scenario's, not the model's
        obs, reward, terminated, truncated, _ = env.step("Hello! What is your email and order id?")
        assert obs[-1] == {"role": "user", "content": "Sure: ada@example.com and order O-100."} and not terminated
        tool_call = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "search_products", "arguments": '{"query": "a"}'}}],
        }
        env.step(tool_call)
        assert len(stub.requests) == 1  # tool calls do not go to the customer
        obs, *_ = env.step("Let me check.")
        assert obs[-1]["content"] == "..."  # an empty reply is kept visible
        second = stub.requests[1]["messages"]
        assert all(m["role"] != "tool" for m in second) and "search_products" not in json.dumps(second)
        obs, reward, terminated, truncated, end = env.step("Anything else?")
        assert terminated and end["termination"] == "user_stop" and 0.0 <= reward <= 1.0
        assert stub.requests[0]["model"] == "customer" and stub.requests[0]["max_tokens"] == 64
    finally:
        stub.close()


def test_llm_customer_failure_is_loud(tmp_path):
    stub = StubServer()
    try:
        stub.default = {"status": 400, "content": "bad request"}
        env = gym.make(
            "CustomerSupport-v0",
            user_model="openai/customer",
            user_api_base=stub.api_base,
            user_llm_kwargs={"api_key": "k", "cache": False, "retries": 1},
        )
        env.reset(seed=0)
        with pytest.raises(JudgeError, match="customer"):
            env.step("Hello?")
    finally:
        stub.close()


@pytest.mark.slow
def test_the_local_model_can_play_the_customer():
    """One reply from the embedded SmolLM2 (about a minute on two CPU cores: load plus one reply)."""
    pytest.importorskip("transformers")
    env = gym.make(
        "CustomerSupport-v0",
        split="test",
        user_model="local/smollm2-135m-instruct",
        user_llm_kwargs={"cache": False, "max_tokens": 16},
        max_turns=1,
    )
    env.reset(seed=2, options={"kind": "cancellation"})
    obs, reward, terminated, truncated, end = env.step("Hello! Could you tell me your email address and order id?")
    assert obs[-1]["role"] == "user" and obs[-1]["content"].strip()
    assert terminated or truncated  # a stop token, or the one-turn limit
    assert end["components"]["db_match"] == 0.0 and reward == 0.0  # nothing was cancelled
