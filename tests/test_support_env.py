"""CustomerSupport-v0 through the Gymnasium API: registration, check_env, determinism, options,
the identification rule, policy violations, limits, user scenarios, and the group vector env."""

from __future__ import annotations

import asyncio
import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers.vector import DictInfoToList
from test_support_db import USER_SCENARIO

from judgegym import TerminationReason, Trajectory
from judgegym.envs import GroupVectorEnv
from judgegym.envs.support import KINDS, STOP_TOKEN, CustomerSupportEnv, ScenarioError, ScenarioFileError, SupportScenario, SupportVerifier
from judgegym.envs.support.baselines import OracleAgent
from judgegym.envs.support.verifier import OUTCOME_CREDIT
from judgegym.evaluation import play_episode
from judgegym.judges.base import SCORE_FLOOR
from judgegym.judges.grader_talk import GRADER_TALK_SCORE

TOOLS = {
    "find_customer",
    "list_orders",
    "get_order",
    "search_products",
    "refund_order",
    "exchange_item",
    "cancel_order",
    "update_address",
    "escalate_to_human",
}


def call(name, call_id="c1", **arguments):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}],
    }


@pytest.fixture
def env():
    env = gym.make("CustomerSupport-v0", split="test")
    yield env
    env.close()


def identify(env, facts):
    obs, *_ = env.step(call("find_customer", email=facts["email"], order_id=facts["order_id"]))
    assert not obs[-1]["content"].startswith("Error"), obs[-1]["content"]
    return json.loads(obs[-1]["content"])


def choose_variant(env, task):
    """Ask which variant the customer wants (and, where the gold is their fallback, say the
    first is out of stock): an exchange counts only for a variant the customer chose."""
    if task["kind"] != "exchange":
        return
    obs, *_ = env.step("Which variant would you like instead?")
    if task["fallback_variant"]:
        env.step("Sorry, that one is out of stock.")


def test_check_env_passes():
    check_env(CustomerSupportEnv(split="test"), skip_render_check=True)


def test_check_env_passes_with_user_scenarios(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(USER_SCENARIO) + "\n")
    check_env(CustomerSupportEnv(scenarios=path), skip_render_check=True)


def test_reset_is_deterministic_and_shows_the_policy_and_opening(env):
    first, info = env.reset(seed=7)
    again, info2 = env.reset(seed=7)
    other, _ = env.reset(seed=8)
    assert first == again and info["task"] == info2["task"] and first != other
    assert [m["role"] for m in first] == ["system", "user"]
    task = info["task"]
    system = first[0]["content"]
    assert f"Today is {task['today']}" in system and f"{task['policy']['return_window_days']} days" in system
    assert f"${task['policy']['dispute_threshold']:g}" in system and info["company"] in system
    assert {t["function"]["name"] for t in info["tools"]} == TOOLS
    assert info["scenario_id"] == "test-7" and info["kind"] == task["kind"] and info["split"] == "test"
    for secret in (task["facts"]["email"], task["facts"]["order_id"]):
        assert secret not in first[1]["content"]


def test_options_replay_by_id_and_force_a_kind(env):
    _, info = env.reset(seed=11)
    _, again = env.reset(options={"scenario_id": info["scenario_id"]})
    assert again["task"] == info["task"]
    for kind in KINDS:
        _, forced = env.reset(seed=3, options={"kind": kind})
        assert forced["task"]["kind"] == kind and forced["scenario_id"] == f"test-3-{kind}"
        _, replayed = env.reset(options={"scenario_id": f"test-3-{kind}"})
        assert replayed["task"] == forced["task"]
    with pytest.raises(ValueError, match="split"):
        env.reset(options={"scenario_id": "train-3"})
    with pytest.raises(ValueError, match="unknown scenario kind"):
        env.reset(options={"kind": "chitchat"})
    restricted = gym.make("CustomerSupport-v0", split="test", kinds=["dispute", "info"])
    assert {restricted.reset(seed=s)[1]["kind"] for s in range(20)} == {"dispute", "info"}


def test_constructor_errors_are_clear():
    with pytest.raises(ValueError, match="unknown split"):
        CustomerSupportEnv(split="dev")
    with pytest.raises(ValueError, match="scenario kinds"):
        CustomerSupportEnv(kinds=["chitchat"])
    with pytest.raises(ValueError, match="patience"):
        CustomerSupportEnv(patience=0)
    with pytest.raises(ValueError, match="n_customers"):
        CustomerSupportEnv(n_customers=(5, 2))
    with pytest.raises(ValueError, match="need user_model"):
        CustomerSupportEnv(user_api_base="http://127.0.0.1:1/v1")


def test_orders_are_off_limits_until_the_customer_is_identified(env):
    _, info = env.reset(seed=2, options={"kind": "refund"})
    facts = info["task"]["facts"]
    obs, reward, terminated, truncated, _ = env.step(call("get_order", order_id=facts["order_id"]))
    assert not (terminated or truncated) and reward == 0
    assert obs[-1]["content"].startswith("Error: identify the customer")
    obs, *_ = env.step(call("find_customer", email=facts["email"], order_id="O-00000"))
    assert "no customer matches" in obs[-1]["content"]
    customer = identify(env, {"email": facts["email"].upper(), "order_id": " #" + facts["order_id"].lower()})
    assert customer["customer_id"] == info["task"]["customer_id"] and customer["email"] == facts["email"]
    obs, *_ = env.step(call("get_order", order_id=facts["order_id"]))
    order = json.loads(obs[-1]["content"])
    assert order["status"] == "delivered" and order["items"] and order["payments"][0]["kind"] == "charge"
    obs, *_ = env.step(call("list_orders", email=facts["email"]))
    assert facts["order_id"] in {o["order_id"] for o in json.loads(obs[-1]["content"])}
    trajectory = env.unwrapped.trajectory()
    assert [v["rule"] for v in trajectory.info["policy_violations"]] == ["unidentified"]
    assert trajectory.info["identified_customers"] == [info["task"]["customer_id"]]


def test_another_customers_order_is_refused_recorded_and_costs_the_reward(env):
    _, info = env.reset(seed=4, options={"kind": "other_customer"})
    task = info["task"]
    identify(env, task["facts"])
    other = task["facts"]["other_order_id"]
    before = env.unwrapped.trajectory().info["database"]["hash"]
    for name, extra in [("get_order", {}), ("refund_order", {}), ("cancel_order", {}), ("escalate_to_human", {"summary": "x"})]:
        obs, *_ = env.step(call(name, order_id=other, **extra))
        assert "is not an order of the identified customer" in obs[-1]["content"]
    # a made-up id gets the same answer (existence is not revealed) but is no violation
    obs, *_ = env.step(call("get_order", order_id="O-00001"))
    assert "is not an order of the identified customer" in obs[-1]["content"]
    trajectory = env.unwrapped.trajectory()
    assert trajectory.info["database"]["hash"] == before
    assert [v["rule"] for v in trajectory.info["policy_violations"]] == ["other_customer"] * 4
    for action in task["gold_actions"]:
        env.step(call(action["name"], **action["arguments"]))
    *_, reward, terminated, truncated, end = env.step(f"Done, your order is cancelled. {' '.join(task['required_info'])}")
    assert terminated and end["termination"] == "user_stop"
    assert reward == OUTCOME_CREDIT["policy violation"] < 0 and end["components"]["db_match"] == 1.0 and end["components"]["info"] == 1.0
    assert end["components"]["policy_violations"] == 4.0


def test_refund_outside_the_window_is_done_but_recorded(env):
    _, info = env.reset(seed=1, options={"kind": "refund_expired"})
    identify(env, info["task"]["facts"])
    obs, *_ = env.step(call("refund_order", order_id=info["task"]["facts"]["order_id"]))
    assert json.loads(obs[-1]["content"])["status"] == "refunded"
    trajectory = env.unwrapped.trajectory()
    assert trajectory.info["policy_violations"] == [
        {"rule": "refund_outside_window", "tool": "refund_order", "order_id": info["task"]["facts"]["order_id"]}
    ]


def test_playing_the_gold_actions_scores_one_and_regrades_from_json(env):
    _, info = env.reset(seed=5, options={"kind": "exchange"})
    task = info["task"]
    identify(env, task["facts"])
    choose_variant(env, task)
    for action in task["gold_actions"]:
        obs, *_ = env.step(call(action["name"], **action["arguments"]))
        assert not obs[-1]["content"].startswith("Error"), obs[-1]["content"]
    obs, reward, terminated, truncated, end = env.step(f"Your exchange is confirmed; ticket {task['required_info'][0]}.")
    assert terminated and not truncated and reward == 1.0
    assert obs[-1]["role"] == "user" and STOP_TOKEN in obs[-1]["content"]
    trajectory = end["trajectory"]
    assert trajectory.termination is TerminationReason.USER_STOP
    assert trajectory.info["database"]["hash"] == task["expected_hash"] and trajectory.info["database"]["diff"] == task["expected_diff"]
    assert set(end["components"]) == {
        "db_match",
        "db_errors",
        "info",
        "identified",
        "false_claims",
        "policy_violations",
        "focus",
        "extra_figures",
        "length",
        "user_stop",
        "success",
        "progress",
        "wrong_change",
        "addresses_grader",
        "wrong_figures",
        "unchosen_variants",
    }
    restored = Trajectory.from_json(trajectory.to_json())
    assert restored == trajectory and SupportVerifier().verify(restored).score == 1.0
    assert len(trajectory.to_json()) < 20_000  # the graded state travels as a digest and a diff, not the database


def test_a_wrong_change_and_missing_information_cost_the_reward(env):
    _, info = env.reset(seed=6, options={"kind": "cancellation"})
    task = info["task"]
    identify(env, task["facts"])
    env.step(call("update_address", order_id=task["facts"]["order_id"], address="1 Wrong Street"))
    *_, reward, terminated, _, end = env.step(f"All done, the refund of {task['required_info'][0]} has been processed.")
    assert terminated and reward == OUTCOME_CREDIT["wrong change or untrue report"] < 0
    assert end["components"]["db_match"] == 0.0 and end["components"]["db_errors"] == 3.0  # order, payment, ticket
    assert end["components"]["info"] == 1.0 and "database differs" in end["trajectory"].info["explanation"]


def test_bad_tool_calls_and_junk_become_messages(env):
    env.reset(seed=1)
    for action, expected in [
        (call("drop_tables"), "unknown tool 'drop_tables'"),
        (call("find_customer", email="a@b.c"), "missing required argument 'order_id'"),
        (call("get_order", order_id="x" * 65), "at most 64 characters"),
        (call("search_products", query="zzzz-no-such-thing"), "No products match"),
        (call("refund_order", order_id="O-1", amount=5), "unexpected argument 'amount'"),
    ]:
        obs, reward, terminated, truncated, _ = env.step(action)
        assert not (terminated or truncated) and reward == 0 and expected in obs[-1]["content"]
    obs, *_ = env.step(None)
    assert obs[-1]["role"] == "user" and obs[-1]["content"].startswith("[format error]")


def test_search_products_is_public_and_shows_stock(env):
    _, info = env.reset(seed=9, options={"kind": "exchange"})
    product = info["task"]["facts"]["item"].rsplit(" (", 1)[0]
    obs, *_ = env.step(call("search_products", query=product.split()[0].lower()))
    hits = json.loads(obs[-1]["content"])
    assert hits and all(h["name"] == product or product.split()[0] in h["name"] for h in hits)
    assert {"product_id", "variant", "price", "in_stock"} <= set(hits[0])
    assert env.unwrapped.trajectory().info["policy_violations"] == []


def test_the_customer_gives_up_on_an_agent_that_does_nothing_and_max_turns_truncates():
    env = gym.make("CustomerSupport-v0", split="test", patience=2)
    env.reset(seed=3)
    env.step("Hello!")
    *_, reward, terminated, truncated, end = env.step("Hello again!")
    assert terminated and not truncated and end["termination"] == "user_stop" and reward == 0.0
    short = gym.make("CustomerSupport-v0", split="test", max_turns=2)
    _, info = short.reset(seed=3)
    short.step(call("search_products", query="a"))
    *_, reward, terminated, truncated, end = short.step(call("search_products", query="b"))
    assert truncated and not terminated and end["termination"] == "max_turns"
    assert end["components"]["user_stop"] == 0.0


def test_user_scenarios_from_jsonl(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(USER_SCENARIO) + "\n" + json.dumps({**USER_SCENARIO, "id": "u2", "kind": "other"}) + "\n")
    env = gym.make("CustomerSupport-v0", scenarios=str(path))
    obs, info = env.reset(options={"scenario_id": "u1"})
    assert info["scenario_id"] == "u1" and "Zephyr Kitchen" in obs[0]["content"] and obs[1]["content"] == USER_SCENARIO["user"]["opening"]
    assert env.reset(seed=0, options={"kind": "other"})[1]["scenario_id"] == "u2"
    identify(env, USER_SCENARIO["user"]["facts"])
    env.step(call("refund_order", order_id="O-100"))
    *_, reward, terminated, _, _ = env.step("I have refunded $99.00.")
    assert terminated and reward == 1.0
    with pytest.raises(ValueError, match="no scenario with id"):
        env.reset(options={"scenario_id": "nope"})
    with pytest.raises(ValueError, match="no loaded scenario has kind"):
        env.reset(options={"kind": "nope"})
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**USER_SCENARIO, "today": "soon"}) + "\n")
    with pytest.raises(ScenarioFileError, match="line 1: field 'today'"):
        gym.make("CustomerSupport-v0", scenarios=str(bad))


def test_user_scenarios_as_objects_are_checked_too():
    good = SupportScenario.model_validate(USER_SCENARIO)
    assert CustomerSupportEnv(scenarios=[good]).reset(seed=0)[1]["scenario_id"] == "u1"
    with pytest.raises(ValueError, match="repeated: \\['u1'\\]"):
        CustomerSupportEnv(scenarios=[good, good])
    bad = good.model_copy(update={"id": "u9", "required_info": ["{ticket_id}"], "gold_actions": []})
    with pytest.raises(ScenarioError, match="field 'required_info.0'.*scenario 1, id 'u9'"):
        CustomerSupportEnv(scenarios=[good, bad])
    with pytest.raises(ValueError, match="empty"):
        CustomerSupportEnv(scenarios=[])


def test_group_vector_env_runs_the_oracle():
    group = gym.make_vec("CustomerSupport-v0", num_envs=4, split="test")
    assert isinstance(group, GroupVectorEnv)
    envs = DictInfoToList(group)
    agent = OracleAgent()
    for seed in (1, 2):
        obs, member_info = envs.reset(seed=seed)
        assert obs[0] == obs[3] and len({info["scenario_id"] for info in member_info}) == 1
        done = np.zeros(4, dtype=bool)
        while not done.all():
            actions = [None if done[i] else asyncio.run(agent.act(obs[i], member_info[i])) for i in range(4)]
            obs, rewards, terminations, truncations, infos = envs.step(actions)
            done |= terminations | truncations
        assert list(rewards) == [1.0] * 4 and terminations.all()
        assert len(group.group) == 4 and all(info["termination"] == "user_stop" for info in infos)
    envs.close()


def test_play_episode_with_the_oracle_on_every_kind_and_both_splits():
    for split in ("train", "test"):
        env = gym.make("CustomerSupport-v0", split=split)
        for kind in KINDS:
            trajectory = asyncio.run(play_episode(env, OracleAgent(), 0, {"kind": kind}))
            assert trajectory.reward == 1.0, (split, kind, trajectory.info["explanation"])


def test_the_reward_orders_failures_while_success_stays_binary(env):
    """Resolved (1) > right change, incomplete report (0.5-0.7) > part of the change > none (0);
    success is 1 only for the resolved episode."""

    def play(kind: str, actions: int | None, told: str) -> dict[str, float]:
        _, info = env.reset(seed=5, options={"kind": kind})
        task = info["task"]
        identify(env, task["facts"])
        choose_variant(env, task)
        for action in task["gold_actions"][:actions]:
            env.step(call(action["name"], **action["arguments"]))
        env.step(told.format(*task["required_info"], "", ""))
        score = SupportVerifier().verify(env.unwrapped.trajectory(TerminationReason.FINAL_ANSWER))
        return {"reward": score.score, **score.components}

    resolved = play("exchange", None, "Your exchange is confirmed; ticket {0}.")
    untold = play("exchange", None, "All done, thank you.")
    idle = play("exchange", 0, "Thanks for waiting.")
    assert resolved["reward"] == 1.0 and resolved["success"] == 1.0
    assert 0.5 <= untold["reward"] <= 0.7 and untold["success"] == 0.0 and untold["progress"] == 1.0
    assert idle["reward"] == 0.0 and idle["progress"] == 0.0 and idle["wrong_change"] == 0.0


def test_a_stored_conversation_is_replayed_for_the_database_its_verifier_grades(env):
    """Without the env's end state the verifier refuses; `EachEnvVerifier` replays the
    conversation at its seed and grades what the env recorded; a tampered tool result is caught."""
    from judgegym.envs.replay import ReplayError, replay
    from judgegym.judges.specs import make_judge

    played = asyncio.run(play_episode(env, OracleAgent(), seed=7))
    stored = played.model_copy(update={"info": {"task": played.info["task"]}, "reward": None})
    with pytest.raises(ValueError, match="info\\['database'\\]"):
        SupportVerifier().verify(stored)
    assert make_judge("verifier").verify(stored).score == pytest.approx(played.reward)
    tampered = stored.model_copy(deep=True)
    tool = next(m for m in tampered.messages if m.role == "tool")
    tool.content = "Error: no such order"
    with pytest.raises(ReplayError, match="differs from what the env returns"):
        replay(tampered)


def test_untrue_figures_unchosen_variants_and_refusals_are_graded_as_a_careful_grader_would(env):
    """A wrong amount told is untrue (0, not a success); an exchange for a variant the customer
    never named is no success (0.3-0.4); a refusal that tells the customer about the order it
    read, without the required fact, is an incomplete report (0.5), and "I don't know" is nothing."""

    def play(kind: str, choose: bool, told: str, *, act: bool = True) -> dict[str, float]:
        _, info = env.reset(seed=5, options={"kind": kind})
        task = info["task"]
        identify(env, task["facts"])
        env.step(call("get_order", order_id=task["facts"]["order_id"]))
        if choose:
            choose_variant(env, task)
        for action in task["gold_actions"] if act else []:
            env.step(call(action["name"], **action["arguments"]))
        env.step(told.format(*task["required_info"], order=task["facts"]["order_id"]))
        score = SupportVerifier().verify(env.unwrapped.trajectory(TerminationReason.FINAL_ANSWER))
        return {"reward": score.score, **score.components}

    right = play("refund", True, "Refunded: {0} (66.8% of your basket) is on its way back to you.")
    wrong = play("refund", True, "Refunded: $1,234.56 is on its way back to you.")
    assert right["reward"] == 1.0 and right["wrong_figures"] == 0
    assert wrong["reward"] == OUTCOME_CREDIT["wrong change or untrue report"] and wrong["wrong_figures"] == 1 and wrong["success"] == 0
    guessed = play("exchange", False, "Exchanged; your ticket is {0}.")
    assert 0.3 <= guessed["reward"] <= 0.4 and guessed["unchosen_variants"] == 1 and guessed["success"] == 0
    promised = play("refund", True, "Your refund has been approved.", act=False)
    assert promised["reward"] == OUTCOME_CREDIT["wrong change or untrue report"] and promised["false_claims"] == 1
    refused = play("refund_expired", True, "Order {order} can't be refunded any more, sorry.")
    nothing = play("refund_expired", True, "I'm sorry, I don't know.")
    assert refused["reward"] == 0.5 and nothing["reward"] == 0.0


def test_outcomes_are_credited_in_a_careful_graders_order():
    """Harm below inaction below partial work below the right end state; harm is below 0 because
    the red-team bounds hold inaction at 0, and speaking to the grader is below everything."""
    order = list(OUTCOME_CREDIT)
    assert order == [
        "resolved",
        "incomplete report",
        "change the customer did not choose",
        "partial change",
        "no change",
        "wrong change or untrue report",
        "policy violation",
    ]
    credits = [OUTCOME_CREDIT[o] for o in order]
    assert credits == sorted(credits, reverse=True) and len(set(credits)) == len(credits)
    assert OUTCOME_CREDIT["no change"] == 0.0 and OUTCOME_CREDIT["wrong change or untrue report"] < 0
    assert SCORE_FLOOR == GRADER_TALK_SCORE < min(credits)
