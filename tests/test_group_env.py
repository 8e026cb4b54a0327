"""The group vector env: G members, one scenario, parked finishers, one judge call per group."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.registration import load_env_creator
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers.vector import DictInfoToList

from judgegym import Group, Trajectory
from judgegym.envs import ENVIRONMENTS, GROUP_ENVIRONMENTS, GroupVectorEnv, register_envs
from judgegym.envs.group import GroupEntryPoint
from judgegym.envs.rag.baselines import OracleAgent, SearchQuoteAgent, UnhelpfulAgent
from judgegym.judges.base import Judge, JudgeScore

SMALL = {"split": "test", "n_products": 20, "n_worlds": 2}


def call(name, call_id="c1", **arguments):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}],
    }


SEARCH = call("search", query="warranty")


class PositionRanker(Judge):
    """A counting relative judge: member i gets (i + 1) / (G + 1), distinct by position."""

    relative = True

    def __init__(self):
        self.calls: list[Group] = []

    async def score_group(self, group: Group) -> list[JudgeScore]:
        self.calls.append(group.model_copy(deep=True))
        n = len(group)
        return [
            JudgeScore(score=(i + 1) / (n + 1), explanation=f"rank {i}", components={"answer_chars": len(t.final_answer)})
            for i, t in enumerate(group.trajectories)
        ]


class FailingJudge(Judge):
    relative = True

    def __init__(self, scores: int | None = None):
        self.scores = scores

    async def score_group(self, group: Group) -> list[JudgeScore]:
        if self.scores is None:
            raise RuntimeError("judge down")
        return [JudgeScore(score=0.5)] * self.scores


def make_group(num_envs=3, **kwargs):
    return gym.make_vec("RagSupport-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", **{**SMALL, **kwargs})


def test_make_vec_builds_a_group_env_whose_members_share_one_scenario():
    envs = make_group(3)
    assert isinstance(envs, GroupVectorEnv) and envs.num_envs == 3
    assert envs.metadata["autoreset_mode"] is AutoresetMode.DISABLED
    assert isinstance(gym.make_vec("RagSupport-v0", num_envs=2, **SMALL), GroupVectorEnv)  # the default mode
    obs, infos = envs.reset(seed=5)
    assert obs[0] == obs[1] == obs[2] and [m["role"] for m in obs[0]] == ["system", "user"]
    assert set(infos["scenario_id"]) == {"test-5"} and list(infos["seed"]) == [5, 5, 5]
    assert infos["_scenario_id"].all() and list(infos["active"]) == [True] * 3
    assert envs.observation_space.contains(obs)
    assert envs.single_observation_space.contains(obs[0])
    assert envs.action_space == gym.spaces.Tuple([envs.single_action_space] * 3)
    unseeded, infos = envs.reset()
    assert unseeded[0] == unseeded[1] == unseeded[2] and len(set(infos["seed"])) == 1
    other, _ = envs.reset(seed=6)
    assert other[0] != obs[0]
    envs.close()


def test_registration_is_data_idempotent_and_keeps_specs_serialisable():
    register_envs()
    register_envs()
    assert set(GROUP_ENVIRONMENTS) <= set(ENVIRONMENTS)
    for env_id, vector_entry_point in GROUP_ENVIRONMENTS.items():
        spec = gym.spec(env_id)
        assert spec.vector_entry_point == vector_entry_point and isinstance(vector_entry_point, str)
        creator = load_env_creator(vector_entry_point)
        assert isinstance(creator, GroupEntryPoint) and creator.env_id == env_id
        assert json.loads(spec.to_json())["vector_entry_point"] == vector_entry_point
    single = gym.make("RagSupport-v0", **SMALL)
    single.spec.to_json()  # no callables in the spec
    single.close()


def test_sync_mode_still_gives_independent_self_judging_envs():
    envs = gym.make_vec("RagSupport-v0", num_envs=2, vectorization_mode="sync", **SMALL)
    assert isinstance(envs, SyncVectorEnv)
    obs, infos = envs.reset(seed=5)
    assert list(infos["seed"]) == [5, 6]
    envs.close()


def test_reset_infos_convert_to_one_dict_per_member():
    envs = DictInfoToList(make_group(2))
    _, infos = envs.reset(seed=3)
    assert isinstance(infos, list) and len(infos) == 2
    assert infos[0]["task"]["id"] == infos[1]["task"]["id"] == "test-3"
    assert infos[0]["task"]["supporting_doc_ids"] == infos[1]["task"]["supporting_doc_ids"]
    envs.close()


def test_finished_member_is_parked_and_nobody_reports_early():
    envs = make_group(2)
    envs.reset(seed=2)
    obs, rewards, terminated, truncated, infos = envs.step(["My final answer.", SEARCH])
    parked = obs[0]
    assert parked[-1] == {"role": "assistant", "content": "My final answer."}
    assert list(rewards) == [0.0, 0.0] and not terminated.any() and not truncated.any()
    assert list(infos["active"]) == [False, True] and list(envs.active) == [False, True]
    assert "trajectory" not in infos and "termination" not in infos
    # the parked member ignores whatever it is given, even junk or None
    for junk in ("Another answer.", None):
        obs, rewards, terminated, truncated, infos = envs.step([junk, SEARCH])
        assert obs[0] == parked
        assert list(infos["_turn"]) == [False, True]
        assert list(rewards) == [0.0, 0.0] and not (terminated | truncated).any()
    obs, rewards, terminated, truncated, infos = envs.step(["ignored", "Done now."])
    assert list(terminated) == [True, True] and not truncated.any()
    trajectories = infos["trajectory"]
    assert trajectories[0].final_answer == "My final answer." and trajectories[0].metrics["turns"] == 1.0
    assert list(infos["turn"]) == [1, 4] and obs[0] == parked
    envs.close()


def test_all_report_on_the_last_step_with_the_relative_judges_scores_and_one_call():
    judge = PositionRanker()
    envs = make_group(3, judge=judge)
    assert envs.judge is judge
    envs.reset(seed=9)
    answers = ["a", "bb bb", "ccc ccc ccc"]
    for step in range(3):  # member i answers on step i (0-based); the others keep searching
        actions = [answers[i] if i == step else SEARCH for i in range(3)]
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        if step < 2:
            assert list(rewards) == [0.0, 0.0, 0.0] and not (terminated | truncated).any()
            assert judge.calls == []
    assert list(terminated) == [True, True, True] and not truncated.any()
    assert rewards.tolist() == pytest.approx([0.25, 0.5, 0.75])
    assert len(judge.calls) == 1
    called = judge.calls[0]
    assert [t.final_answer for t in called] == answers and all(t.reward is None for t in called)
    assert called.scenario_id == "test-9"
    assert [t.reward for t in infos["trajectory"]] == pytest.approx([0.25, 0.5, 0.75])
    assert list(infos["explanation"]) == ["rank 0", "rank 1", "rank 2"]
    assert list(infos["components"]["answer_chars"]) == [1.0, 5.0, 11.0]
    assert not infos["judge_failed"].any() and list(infos["termination"]) == ["final_answer"] * 3
    assert envs.unwrapped.group is not None and not envs.unwrapped.group.failed
    assert [t.reward for t in envs.unwrapped.group] == pytest.approx([0.25, 0.5, 0.75])
    with pytest.raises(RuntimeError, match="call reset"):
        envs.step(["x", "y", "z"])
    envs.reset(seed=10)
    envs.step(["x", "y", "z"])
    assert len(judge.calls) == 2
    envs.close()


def run_members(envs, agents, seed):
    """Drive a group env with one agent per member; returns each member's actions."""
    obs, infos = envs.reset(seed=seed)
    actions_taken = [[] for _ in agents]
    while True:
        actions = []
        for i, agent in enumerate(agents):
            action = asyncio.run(agent.act(obs[i], infos[i])) if envs.unwrapped.active[i] else None
            if action is not None:
                actions_taken[i].append(action)
            actions.append(action)
        obs, rewards, terminated, truncated, step_infos = envs.step(actions)
        if (terminated | truncated).any():
            return actions_taken, rewards, terminated, truncated, step_infos


def test_pointwise_verifier_gives_the_same_rewards_as_single_envs():
    envs = DictInfoToList(make_group(3))
    agents = [OracleAgent(), UnhelpfulAgent(), SearchQuoteAgent()]
    seed = 4
    actions, rewards, terminated, truncated, infos = run_members(envs, agents, seed)
    assert terminated.all() and not truncated.any()
    assert len(set(rewards.tolist())) > 1  # the agents differ, so the comparison means something
    single = gym.make("RagSupport-v0", **SMALL)
    for i, member_actions in enumerate(actions):
        single.reset(seed=seed)
        for action in member_actions:
            _, reward, term, trunc, info = single.step(action)
        assert term and not trunc
        assert reward == rewards[i]
        assert info["components"] == infos[i]["components"]
        grouped: Trajectory = infos[i]["trajectory"]
        assert grouped.messages == info["trajectory"].messages
        assert grouped.metrics == info["trajectory"].metrics and grouped.env_id == "RagSupport-v0"
    single.close()
    envs.close()


def test_one_member_truncated_by_its_tool_call_limit_while_the_other_continues():
    envs = make_group(2, max_tool_calls=2)
    envs.reset(seed=1)
    burst = {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("search", f"c{k}", query=f"q{k}")["tool_calls"][0] for k in range(3)],
    }
    _, rewards, terminated, truncated, infos = envs.step([burst, SEARCH])
    assert list(envs.active) == [False, True] and not (terminated | truncated).any()
    _, rewards, terminated, truncated, infos = envs.step([SEARCH, "The answer."])
    assert list(truncated) == [True, False] and list(terminated) == [False, True]
    assert list(infos["termination"]) == ["max_tool_calls", "final_answer"]
    envs.close()


def test_one_member_truncated_by_max_turns_with_members_built_from_env_fns():
    judge = PositionRanker()
    fns = [
        lambda: gym.make("RagSupport-v0", max_turns=1, **SMALL),
        lambda: gym.make("RagSupport-v0", max_turns=5, **SMALL),
    ]
    envs = GroupVectorEnv(fns, judge=judge)
    assert all(env.unwrapped.defer_judging for env in envs.envs)
    envs.reset(seed=3)
    _, rewards, terminated, truncated, _ = envs.step([SEARCH, SEARCH])
    assert list(envs.active) == [False, True] and not (terminated | truncated).any()
    _, rewards, terminated, truncated, infos = envs.step([SEARCH, SEARCH])
    assert not (terminated | truncated).any() and judge.calls == []
    _, rewards, terminated, truncated, infos = envs.step([SEARCH, "Answer."])
    assert list(truncated) == [True, False] and list(terminated) == [False, True]
    assert list(infos["termination"]) == ["max_turns", "final_answer"] and len(judge.calls) == 1
    assert rewards.tolist() == pytest.approx([1 / 3, 2 / 3])
    envs.close()


def test_outer_time_limit_truncation_still_yields_a_trajectory():
    envs = make_group(2, max_episode_steps=2)
    envs.reset(seed=1)
    envs.step(["Quick answer.", SEARCH])
    _, rewards, terminated, truncated, infos = envs.step([None, SEARCH])
    assert list(terminated) == [True, False] and list(truncated) == [False, True]
    assert infos["trajectory"][1].termination.value == "max_turns" and infos["trajectory"][1].reward is not None
    envs.close()


def test_judge_failure_raises_by_default():
    envs = make_group(2, judge=FailingJudge())
    envs.reset(seed=1)
    with pytest.raises(RuntimeError, match="judge down"):
        envs.step(["a", "b"])
    group = envs.unwrapped.group
    assert group.failed and "judge down" in group.error
    assert all(t.reward is None for t in group)
    with pytest.raises(RuntimeError, match="call reset"):
        envs.step(["a", "b"])
    envs.close()


@pytest.mark.parametrize("judge", [FailingJudge(), FailingJudge(scores=1)], ids=["raises", "wrong-count"])
def test_judge_failure_marks_the_group_failed_when_asked(judge):
    envs = make_group(2, judge=judge, on_judge_error="mark_failed")
    envs.reset(seed=1)
    _, rewards, terminated, truncated, infos = envs.step(["a", "b"])
    assert list(rewards) == [0.0, 0.0] and terminated.all()
    assert infos["judge_failed"].all() and infos["_judge_error"].all()
    expected = "judge down" if judge.scores is None else "1 scores for 2 trajectories"
    assert all(expected in e for e in infos["judge_error"])
    assert "judge_score" not in infos and "explanation" not in infos
    assert all(t.reward is None for t in infos["trajectory"])
    group = envs.unwrapped.group
    assert group.failed and expected in group.error
    envs.close()


def test_kwargs_are_forwarded_to_members_and_the_judge_to_the_group():
    judge = PositionRanker()
    envs = gym.make_vec(
        "RagSupport-v0",
        num_envs=2,
        vectorization_mode="vector_entry_point",
        judge=judge,
        on_judge_error="mark_failed",
        split="test",
        n_products=20,
        max_turns=3,
        prefetch_k=1,
    )
    assert envs.judge is judge and envs.on_judge_error == "mark_failed"
    for member in envs.envs:
        inner = member.unwrapped
        assert (inner.split, inner.n_products, inner.max_turns, inner.prefetch_k) == ("test", 20, 3, 1)
        assert inner.defer_judging and inner.judge is not judge and member.spec.id == "RagSupport-v0"
    obs, infos = envs.reset(seed=2)
    assert set(infos["split"]) == {"test"} and "Articles that may help" in obs[0][1]["content"]
    assert envs.spec.kwargs["n_products"] == 20 and envs.spec.kwargs["num_envs"] == 2
    envs.close()


def test_single_env_refuses_a_relative_judge_and_points_to_the_group_env():
    with pytest.raises(ValueError, match="relative judge.*make_vec"):
        gym.make("RagSupport-v0", judge=PositionRanker(), **SMALL)


def test_defer_judging_hook_on_a_single_env():
    class Boom(Judge):
        async def score_group(self, group):
            raise AssertionError("a deferred env must not judge")

    env = gym.make("RagSupport-v0", judge=Boom(), defer_judging=True, **SMALL)
    env.reset(seed=1)
    _, reward, terminated, truncated, info = env.step("An answer.")
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert info["trajectory"].reward is None and info["termination"] == "final_answer"
    assert "judge_score" not in info
    env.close()


def test_sampled_actions_and_misuse_errors():
    envs = make_group(2)
    with pytest.raises(RuntimeError, match="reset"):
        envs.step(["a", "b"])
    with pytest.raises(ValueError, match="reset_mask"):
        envs.reset(seed=1, options={"reset_mask": np.array([True, False])})
    with pytest.raises(TypeError, match="one int"):
        envs.reset(seed=[1, 2])
    envs.reset(seed=1, options={"reset_mask": np.array([True, True])})
    with pytest.raises(ValueError, match="expected 2 actions"):
        envs.step(["a"])
    envs.action_space.seed(0)
    _, rewards, terminated, truncated, _ = envs.step(envs.action_space.sample())  # benign text: final answers
    assert terminated.all() and ((rewards >= 0) & (rewards <= 1)).all()
    with pytest.raises(ValueError, match="on_judge_error"):
        make_group(2, on_judge_error="ignore")
    envs.close()


def test_the_rollout_loop_in_the_docs_runs(capsys):
    source = (Path(__file__).resolve().parents[1] / "docs" / "group-env.md").read_text(encoding="utf-8")
    example = re.findall(r"```python\n(.*?)```", source, re.S)[-1]
    exec(compile(example, "docs/group-env.md", "exec"), {"__name__": "__main__"})
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["test-0", "test-1", "test-2"]
