"""RagSupport-v0 through the Gymnasium API: registration, check_env, determinism, splits,
tools, limits and user scenario files."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from strategies import examples

from judgegym import TerminationReason, Trajectory
from judgegym.envs.rag import RagSupportEnv, ScenarioFileError


def call(name, **arguments):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}],
    }


def test_check_env_passes():
    check_env(RagSupportEnv(split="test", n_products=20, n_worlds=2), skip_render_check=True)


def test_check_env_passes_with_user_scenarios(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(USER_SCENARIO) + "\n")
    check_env(RagSupportEnv(scenarios=path), skip_render_check=True)


def test_judgegym_prefix_imports_the_package_in_a_fresh_interpreter():
    code = (
        "import gymnasium as gym; env = gym.make('judgegym:RagSupport-v0', n_products=20); obs, info = env.reset(seed=1); print(len(obs))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"


def test_reset_is_deterministic_and_seeds_differ(rag_env):
    first, info1 = rag_env.reset(seed=7)
    again, info2 = rag_env.reset(seed=7)
    other, _ = rag_env.reset(seed=8)
    assert first == again and info1["task"] == info2["task"]
    assert first != other
    assert [m["role"] for m in first] == ["system", "user"]
    assert {t["function"]["name"] for t in info1["tools"]} == {"search", "read"}


def test_train_and_test_worlds_are_disjoint():
    train = RagSupportEnv(split="train", n_products=20)
    test = RagSupportEnv(split="test", n_products=20)
    train_worlds = {train.reset(seed=s)[1]["world"] for s in range(64)}
    test_worlds = {test.reset(seed=s)[1]["world"] for s in range(64)}
    assert len(train_worlds) == 32 and len(test_worlds) == 8
    assert not train_worlds & test_worlds
    train_docs = {doc.text for doc in train.unwrapped._kb.documents}
    test_docs = {doc.text for doc in test.unwrapped._kb.documents}
    assert len(train_docs & test_docs) < 0.2 * len(test_docs)  # only boilerplate (guides) may repeat


def test_options_replay_a_scenario_by_id_and_force_a_kind(rag_env):
    _, info = rag_env.reset(seed=11)
    obs, again = rag_env.reset(options={"scenario_id": info["scenario_id"]})
    assert again["task"] == info["task"]
    for kind in ("single_fact", "multi_hop", "comparison", "unanswerable"):
        _, forced = rag_env.reset(seed=3, options={"kind": kind})
        assert forced["task"]["kind"] == kind
    with pytest.raises(ValueError, match="split"):
        rag_env.reset(options={"scenario_id": "train-3"})


def test_search_and_read_then_answer_gets_the_verifier_reward(rag_env):
    obs, info = rag_env.reset(seed=5, options={"kind": "single_fact"})
    task = info["task"]
    obs, reward, terminated, truncated, _ = rag_env.step(call("search", query=task["question"]))
    assert reward == 0 and not terminated and not truncated
    assert obs[-1]["role"] == "tool" and obs[-1]["tool_call_id"] == "c1" and obs[-1]["content"].startswith("[")
    for doc_id in task["supporting_doc_ids"]:
        obs, *_ = rag_env.step(call("read", doc_id=doc_id))
        assert obs[-1]["content"].startswith(f"[{doc_id}]")
    obs, reward, terminated, truncated, info = rag_env.step(task["reference_answer"])
    assert terminated and not truncated
    assert reward >= 0.9
    trajectory = info["trajectory"]
    assert isinstance(trajectory, Trajectory) and trajectory.reward == reward
    assert trajectory.termination is TerminationReason.FINAL_ANSWER
    assert info["components"]["recall"] == 1.0
    assert Trajectory.from_json(trajectory.to_json()) == trajectory


def test_text_format_tool_calls_work(rag_env):
    rag_env.reset(seed=2)
    text = 'Let me check. <tool_call>{"name": "search", "arguments": {"query": "warranty", "k": 2}}</tool_call>'
    obs, reward, terminated, truncated, _ = rag_env.step(text)
    assert not terminated and obs[-2]["tool_calls"][0]["function"]["name"] == "search"
    assert obs[-2]["content"] == "Let me check."
    assert obs[-1]["content"].count("\n\n[") == 1  # two results


@pytest.mark.parametrize(
    "action, expected",
    [
        (call("lookup", q="x"), "unknown tool 'lookup'"),
        (call("search"), "missing required argument 'query'"),
        (call("search", query="x", k="many"), "'k'"),
        (call("search", query="x", k=99), "less than or equal to 20"),
        (call("search", query="x", extra=1), "unexpected argument 'extra'"),
        (call("read", doc_id="no-such-doc"), "no article with id 'no-such-doc'"),
        ('<tool_call>{"name": "search", "arguments": {"query": </tool_call>', "not valid JSON"),
    ],
)
def test_bad_tool_calls_become_tool_messages_and_the_episode_goes_on(rag_env, action, expected):
    rag_env.reset(seed=1)
    obs, reward, terminated, truncated, _ = rag_env.step(action)
    assert not (terminated or truncated) and reward == 0
    assert obs[-1]["role"] == "tool" and expected in obs[-1]["content"]


@pytest.mark.parametrize("action", [None, 42, ["a"], {"role": "user", "content": "hi"}, "", "   ", {"content": 5}])
def test_junk_actions_are_format_errors(rag_env, action):
    rag_env.reset(seed=1)
    obs, reward, terminated, truncated, _ = rag_env.step(action)
    assert not (terminated or truncated) and reward == 0
    assert obs[-1]["role"] == "user" and obs[-1]["content"].startswith("[format error]")


def test_max_turns_truncates_and_still_judges():
    env = gym.make("RagSupport-v0", n_products=20, max_turns=3)
    env.reset(seed=0)
    for _ in range(2):
        assert env.step(call("search", query="warranty"))[2:4] == (False, False)
    obs, reward, terminated, truncated, info = env.step(call("search", query="price"))
    assert truncated and not terminated
    assert info["termination"] == "max_turns" and reward == 0.0
    with pytest.raises(RuntimeError, match="reset"):
        env.step("more")


def test_max_tool_calls_truncates_with_answers_for_every_call():
    env = gym.make("RagSupport-v0", n_products=20, max_tool_calls=2)
    env.reset(seed=0)
    text = "".join(f'<tool_call>{{"name": "search", "arguments": {{"query": "q{i}"}}}}</tool_call>' for i in range(3))
    obs, reward, terminated, truncated, info = env.step(text)
    assert truncated and info["termination"] == "max_tool_calls"
    assert [m["role"] for m in obs[-3:]] == ["tool"] * 3
    assert "limit of 2 tool calls" in obs[-1]["content"]


def test_zero_tool_calls_is_an_answer_only_task():
    env = gym.make("RagSupport-v0", n_products=20, max_tool_calls=0, prefetch_k=1, max_turns=1)
    _, info = env.reset(seed=0)
    assert info["tools"] == []
    obs, _, _, truncated, info = env.step(call("search", query="warranty"))
    assert truncated and info["termination"] == "max_tool_calls" and "Not executed" in obs[-1]["content"]


def test_long_tool_output_is_truncated_with_marker():
    env = gym.make("RagSupport-v0", n_products=20, max_tool_output_chars=100)
    env.reset(seed=0)
    obs, *_ = env.step(call("search", query="warranty shipping price", k=10))
    assert "[truncated" in obs[-1]["content"] and len(obs[-1]["content"]) < 160


def test_prefetch_puts_articles_in_the_first_observation():
    env = gym.make("RagSupport-v0", n_products=20, prefetch_k=3)
    obs, info = env.reset(seed=4)
    assert "Articles that may help" in obs[1]["content"] and obs[1]["content"].count("\n\n[") >= 1


def test_constructor_errors_are_clear():
    with pytest.raises(ValueError, match="unknown split"):
        RagSupportEnv(split="dev")
    with pytest.raises(ValueError, match="question kinds"):
        RagSupportEnv(kinds=["trivia"])
    with pytest.raises(ValueError, match="prefetch_k"):
        RagSupportEnv(prefetch_k=-1)


USER_SCENARIO = {
    "id": "u1",
    "question": "How long is the warranty on the Zephyr kettle?",
    "documents": [
        {"id": "zephyr", "title": "Zephyr kettle", "text": "The Zephyr kettle has a 30-month warranty."},
        {"id": "breeze", "title": "Breeze kettle", "text": "The Breeze kettle has a 12-month warranty."},
    ],
    "gold_facts": ["30 months"],
    "reference_answer": "The Zephyr kettle has a 30-month warranty [zephyr].",
    "answerable": True,
}


def test_user_scenarios_from_jsonl(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(USER_SCENARIO) + "\n\n" + json.dumps({**USER_SCENARIO, "id": "u2"}) + "\n")
    env = gym.make("RagSupport-v0", scenarios=str(path))
    obs, info = env.reset(options={"scenario_id": "u2"})
    assert info["scenario_id"] == "u2" and "Zephyr" in obs[1]["content"]
    obs, *_ = env.step(call("search", query="Zephyr warranty"))
    assert obs[-1]["content"].startswith("[zephyr]")
    *_, reward, terminated, _, _ = env.step("The Zephyr kettle has a 30-month warranty [zephyr].")
    assert terminated and reward >= 0.9


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda s: s.pop("question"), "line 2: field 'question'"),
        (lambda s: s.update(gold_facts="30"), "line 2: field 'gold_facts'"),
        (lambda s: s.update(documents=[{"id": "a", "title": "t"}]), "line 2: field 'documents.0.text'"),
        (lambda s: s.update(documents=[]), "line 2: field 'documents'"),
        (lambda s: s.update(documents=[{"id": "user guide", "title": "t", "text": "x"}]), "line 2: field 'documents.0.id'"),
        (lambda s: s.update(documents=[{"id": "[a]", "title": "t", "text": "x"}]), "line 2: field 'documents.0.id'"),
        (lambda s: s.update(supporting_doc_ids=["nope"]), "line 2: field 'supporting_doc_ids'"),
        (lambda s: s.update(id="u1"), "line 2: field 'id'"),
    ],
)
def test_bad_user_scenario_lines_name_line_and_field(tmp_path, mutate, message):
    bad = json.loads(json.dumps(USER_SCENARIO))
    mutate(bad)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(USER_SCENARIO) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ScenarioFileError, match=message):
        RagSupportEnv(scenarios=path)


def test_invalid_json_line_is_reported(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(USER_SCENARIO) + "\n{not json\n")
    with pytest.raises(ScenarioFileError, match="line 2: not valid JSON"):
        RagSupportEnv(scenarios=path)


class SlashCommandParser:
    """A toy text format, "/search warranty", to show the parser is pluggable."""

    def parse(self, text, call_prefix):
        from judgegym.parsing import ParsedCall

        if text.startswith("/search "):
            return None, None, [ParsedCall(f"{call_prefix}0", "search", json.dumps({"query": text[8:]}))]
        return text.strip() or None, None, []


def test_the_text_parser_is_pluggable():
    env = gym.make("RagSupport-v0", n_products=20, parser=SlashCommandParser())
    env.reset(seed=0)
    obs, reward, terminated, truncated, _ = env.step("/search warranty")
    assert not terminated and obs[-1]["role"] == "tool" and obs[-1]["content"].startswith("[")
    *_, terminated, _, _ = env.step('<tool_call>{"name": "search", "arguments": {}}</tool_call>')
    assert terminated  # this parser sees no call in Hermes text: it is a final answer


def test_query_tokens_agree_with_bm25s_tokenize():
    import bm25s
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from judgegym.envs.rag.retrieval import _STEMMER, query_tokens

    @settings(max_examples=examples(300), deadline=None)
    @given(
        st.one_of(
            st.text(max_size=80),
            st.sampled_from(["How long is the warranty on the Aurora 2 Pro?", "What's the total for shipping to Poland?", "the and of"]),
        )
    )
    def agree(query):
        expected = bm25s.tokenize([query], stopwords="en", stemmer=_STEMMER, show_progress=False, return_ids=False)[0]
        assert query_tokens(query) == expected

    agree()
