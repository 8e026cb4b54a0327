"""Summarize-v0 through the Gymnasium API: registration, check_env, determinism, options, the two
tools (paging included), prefetch, limits, user scenario files and the group vector env."""

from __future__ import annotations

import asyncio
import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from judgegym import TerminationReason, Trajectory
from judgegym.envs.summarize import KINDS, ScenarioFileError, SummarizeEnv, SummaryScenario, SummaryVerifier
from judgegym.envs.summarize.baselines import OracleAgent


def call(name, call_id="c1", **arguments):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}],
    }


def reads(*section_ids):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"r{i}", "type": "function", "function": {"name": "read_section", "arguments": json.dumps({"section_id": s})}}
            for i, s in enumerate(section_ids)
        ],
    }


USER_SCENARIO = {
    "id": "memo-1",
    "title": "Harbourside depot memo",
    "word_limit": 60,
    "sections": [
        {"title": "Results", "text": "Revenue for the quarter was $4.2 million, up from $3.9 million. The operating margin was 12.5%."},
        {
            "title": "Decisions",
            "text": "The board chose Leeds for the new depot. Priya Raman will lead the project and Daniel Okafor is its sponsor. "
            "The depot opens on 2026-03-02.",
        },
    ],
    "key_facts": [
        {"description": "Revenue", "value": "$4.2 million", "aliases": ["$4.2M"], "subject": ["revenue"], "distractors": ["$3.9 million"]},
        {"description": "Operating margin", "value": "12.5%", "subject": ["margin"]},
        {"description": "New depot location", "value": "Leeds", "subject": ["depot"]},
        {
            "description": "Project lead",
            "value": "Priya Raman",
            "aliases": ["Raman"],
            "subject": ["lead"],
            "distractors": ["Daniel Okafor"],
        },
        {"description": "Depot opening date", "value": "2026-03-02", "subject": ["open"]},
    ],
    "people": ["Priya Raman", "Daniel Okafor"],
}


@pytest.fixture
def env():
    env = gym.make("Summarize-v0", split="test")
    yield env
    env.close()


def test_check_env_passes_on_generated_and_user_scenarios():
    check_env(SummarizeEnv(split="test"), skip_render_check=True)
    check_env(SummarizeEnv(scenarios=[SummaryScenario.model_validate(USER_SCENARIO)]), skip_render_check=True)


def test_reset_is_deterministic_and_seeds_differ(env):
    first, info = env.reset(seed=7)
    again, info_again = env.reset(seed=7)
    other, _ = env.reset(seed=8)
    assert first == again and info["task"] == info_again["task"]
    assert first != other
    assert [m["role"] for m in first] == ["system", "user"]
    assert {t["function"]["name"] for t in info["tools"]} == {"list_sections", "read_section"}
    assert info["scenario_id"] == f"test-{info['kind']}-7" and info["task"]["kind"] == info["kind"]


def test_the_prompt_states_task_title_sections_and_limit_but_not_the_document(env):
    obs, info = env.reset(seed=3)
    prompt, task = obs[1]["content"], info["task"]
    assert prompt.startswith("Summarize the ") and f'"{task["title"]}"' in prompt.split("\n\n")[0]
    assert f"at most {task['word_limit']} words" in prompt and f"{len(task['sections'])} sections" in prompt
    assert task["key_facts"][0]["value"] not in prompt
    assert 3000 <= info["words"] <= 8000 and len(prompt) < 1000


def test_options_replay_a_scenario_by_id_and_force_a_kind(env):
    _, info = env.reset(seed=11)
    _, again = env.reset(options={"scenario_id": info["scenario_id"]})
    assert again["task"] == info["task"]
    for kind in KINDS:
        _, forced = env.reset(seed=3, options={"kind": kind})
        assert forced["kind"] == kind and forced["scenario_id"] == f"test-{kind}-3"
    with pytest.raises(ValueError, match="split"):
        env.reset(options={"scenario_id": "train-meeting_minutes-3"})
    with pytest.raises(ValueError, match="unknown document kind"):
        env.reset(options={"kind": "novel"})


def test_kinds_restrict_generated_documents():
    env = SummarizeEnv(split="test", kinds=["incident_report"])
    assert {env.reset(seed=s)[1]["kind"] for s in range(12)} == {"incident_report"}


def test_list_then_read_then_summarise_gets_the_verifier_reward(env):
    _, info = env.reset(seed=5)
    task = info["task"]
    obs, reward, terminated, truncated, _ = env.step(call("list_sections"))
    assert reward == 0 and not (terminated or truncated)
    listing = obs[-1]["content"]
    assert all(f"[{s['id']}] {s['title']} ({s['words']:,} words)" in listing for s in task["sections"])
    obs, *_ = env.step(reads(*(s["id"] for s in task["sections"])))
    results = [m["content"] for m in obs if m["role"] == "tool"][1:]
    assert [r.split("]")[0] for r in results] == [f"[{s['id']}" for s in task["sections"]]
    assert sum(len(r.partition("\n\n")[2].split()) for r in results) == info["words"]
    obs, reward, terminated, truncated, end = env.step(task["reference_summary"])
    assert terminated and not truncated and reward == 1.0
    trajectory = end["trajectory"]
    assert isinstance(trajectory, Trajectory) and trajectory.reward == reward
    assert trajectory.termination is TerminationReason.FINAL_ANSWER
    assert end["components"]["recall"] == 1.0 and end["components"]["coverage"] == 1.0
    stored = Trajectory.from_json(trajectory.to_json())
    assert stored == trajectory and SummaryVerifier().verify(stored).score == reward


@pytest.mark.parametrize("section_id", ["s2", " S2 ", "[s2]", "2", '"s2"'])
def test_read_section_accepts_forgiving_ids(env, section_id):
    _, info = env.reset(seed=1)
    obs, *_ = env.step(call("read_section", section_id=section_id))
    assert obs[-1]["content"].startswith(f"[s2] {info['task']['sections'][1]['title']}\n\n")


@pytest.mark.parametrize(
    "action, expected",
    [
        (call("read_section", section_id="intro"), "no section with id 'intro'. Valid ids: s1, s2, s3"),
        (call("read_section", section_id="s99"), "no section with id 's99'"),
        (call("read_section"), "missing required argument 'section_id'"),
        (call("read_section", section_id="s1", part=0), "'part'"),
        (call("read_section", section_id="s1", part=2), "section 's1' has 1 part; part must be between 1 and 1"),
        (call("list_sections", verbose=True), "unexpected argument 'verbose'"),
        (call("summarize"), "unknown tool 'summarize'"),
    ],
)
def test_bad_tool_calls_become_tool_messages_and_the_episode_goes_on(env, action, expected):
    env.reset(seed=1)
    obs, reward, terminated, truncated, _ = env.step(action)
    assert not (terminated or truncated) and reward == 0
    assert obs[-1]["role"] == "tool" and expected in obs[-1]["content"]


def test_long_sections_are_read_in_parts_that_fit_the_output_limit():
    env = gym.make("Summarize-v0", split="test", max_tool_output_chars=700, max_tool_calls=200, max_turns=200)
    _, info = env.reset(seed=2)
    section = info["task"]["sections"][0]
    obs, *_ = env.step(call("read_section", section_id="s1"))
    first = obs[-1]["content"]
    total = int(first.split(" of ", 1)[1].split(")", 1)[0])
    assert total > 1 and first.startswith(f"[s1] {section['title']} (part 1 of {total})")
    assert first.endswith(f'[Part 2 of {total} follows: read_section(section_id="s1", part=2)]')
    words = len(first.partition("\n\n")[2].rpartition("\n\n")[0].split())
    for part in range(2, total + 1):
        obs, *_ = env.step(call("read_section", section_id="s1", part=part))
        assert len(obs[-1]["content"]) <= 700 and "[truncated" not in obs[-1]["content"]
        body = obs[-1]["content"].partition("\n\n")[2]
        words += len((body.rpartition("\n\n")[0] if part < total else body).split())
    assert words == section["words"]
    for s in info["task"]["sections"]:
        for part in range(1, 50):
            obs, *_ = env.step(call("read_section", section_id=s["id"], part=part))
            if "[Part " not in obs[-1]["content"]:
                break
    *_, end = env.step(info["task"]["reference_summary"])
    assert end["components"]["coverage"] == 1.0


def test_prefetch_puts_the_document_in_the_prompt():
    whole = gym.make("Summarize-v0", split="test", prefetch=True)
    obs, info = whole.reset(seed=4)
    assert all(f"[{s['id']}] {s['title']}\n\n" in obs[1]["content"] for s in info["task"]["sections"])
    assert "The whole document" in obs[1]["content"]
    *_, end = whole.step(info["task"]["reference_summary"])
    assert end["components"]["coverage"] == 1.0 and end["trajectory"].info["prefetched_sections"][0] == "s1"
    some = gym.make("Summarize-v0", split="test", prefetch=2)
    obs, info = some.reset(seed=4)
    assert "[s2] " in obs[1]["content"] and "[s3] " not in obs[1]["content"] and "the first 2 follow" in obs[1]["content"]
    with pytest.raises(ValueError, match="prefetch"):
        SummarizeEnv(prefetch=-1)


@pytest.mark.parametrize("action", [None, 42, ["a"], {"role": "user", "content": "hi"}, "", "   "])
def test_junk_actions_are_format_errors(env, action):
    env.reset(seed=1)
    obs, reward, terminated, truncated, _ = env.step(action)
    assert not (terminated or truncated) and reward == 0
    assert obs[-1]["role"] == "user" and obs[-1]["content"].startswith("[format error]")


def test_max_turns_truncates_and_scores_zero():
    env = gym.make("Summarize-v0", split="test", max_turns=2)
    env.reset(seed=0)
    assert env.step(call("list_sections"))[2:4] == (False, False)
    obs, reward, terminated, truncated, info = env.step(call("read_section", section_id="s1"))
    assert truncated and not terminated and info["termination"] == "max_turns" and reward == 0.0


def test_constructor_errors_are_clear():
    with pytest.raises(ValueError, match="unknown split"):
        SummarizeEnv(split="dev")
    with pytest.raises(ValueError, match="document kinds"):
        SummarizeEnv(kinds=["novel"])
    bad = SummaryScenario.model_validate({**USER_SCENARIO, "word_limit": 10})
    with pytest.raises(ValueError, match="scenario 'memo-1': field 'reference_summary'"):
        SummarizeEnv(scenarios=[bad])
    good = SummaryScenario.model_validate(USER_SCENARIO)
    with pytest.raises(ValueError, match="repeated: \\['memo-1'\\]"):
        SummarizeEnv(scenarios=[good, good])


def test_user_scenarios_from_jsonl(tmp_path):
    path = tmp_path / "mine.jsonl"
    second = {**USER_SCENARIO, "id": "memo-2", "kind": "memo"}
    path.write_text(json.dumps(USER_SCENARIO) + "\n\n" + json.dumps(second) + "\n")
    env = gym.make("Summarize-v0", scenarios=str(path))
    check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(options={"scenario_id": "memo-2"})
    assert info["scenario_id"] == "memo-2" and obs[1]["content"].startswith('Summarize the document "Harbourside depot memo" in at most 60')
    assert env.reset(seed=0, options={"kind": "memo"})[1]["scenario_id"] == "memo-2"
    obs, *_ = env.step(call("read_section", section_id="s2"))
    assert obs[-1]["content"].startswith("[s2] Decisions\n\nThe board chose Leeds")
    summary = "Revenue was $4.2M and the operating margin 12.5%. Priya Raman will lead the new depot in Leeds, which opens on 2026-03-02."
    *_, reward, terminated, _, end = env.step(summary)
    assert terminated and reward == 1.0, end["judge_score"].explanation


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda s: s.pop("title"), "line 2: field 'title'"),
        (lambda s: s.update(key_facts=[]), "line 2: field 'key_facts'"),
        (lambda s: s.update(sections=[{"title": "t"}]), "line 2: field 'sections.0.text'"),
        (lambda s: s.update(word_limit="many"), "line 2: field 'word_limit'"),
        (lambda s: s["sections"][1].update(id="s1"), "line 2: field 'sections': duplicate ids"),
        (lambda s: s["sections"][0].update(id="my section"), "line 2: field 'sections.0.id'"),
        (lambda s: s["key_facts"][1].update(section="s9"), "line 2: field 'key_facts.1.section': unknown section id 's9'"),
        (lambda s: s["key_facts"][2].update(value="Hull"), "line 2: field 'key_facts.2.value': 'Hull' does not occur in the document"),
        (lambda s: s["key_facts"][0].update(distractors=["$4.2 million"]), "line 2: field 'key_facts.0.distractors.0'"),
        (lambda s: s["key_facts"][1].update(distractors=["Leeds"]), "line 2: field 'key_facts.1.distractors.0'"),
        (
            lambda s: s.update(reference_summary="Revenue was $4.2 million."),
            "line 2: field 'reference_summary': does not state key fact 'k2'",
        ),
        (lambda s: s.update(id="memo-1"), "line 2: field 'id': 'memo-1' already used on line 1"),
    ],
)
def test_bad_user_scenario_lines_name_line_and_field(tmp_path, mutate, message):
    bad = json.loads(json.dumps({**USER_SCENARIO, "id": "memo-2"}))
    mutate(bad)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(USER_SCENARIO) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ScenarioFileError, match=message.replace("$", r"\$").replace("(", r"\(")):
        SummarizeEnv(scenarios=path)


def test_invalid_json_and_empty_files_are_reported(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(USER_SCENARIO) + "\n{not json\n")
    with pytest.raises(ScenarioFileError, match="line 2: not valid JSON"):
        SummarizeEnv(scenarios=path)
    path.write_text("\n")
    with pytest.raises(ScenarioFileError, match="no scenarios"):
        SummarizeEnv(scenarios=path)


def test_make_vec_plays_a_group_with_the_oracle():
    envs = gym.make_vec("Summarize-v0", num_envs=4, split="test")
    agent = OracleAgent()
    observations, infos = envs.reset(seed=21)
    assert len(set(infos["scenario_id"])) == 1
    member_info = {"task": SummarizeEnv(split="test").reset(seed=21)[1]["task"]}
    done = np.zeros(4, dtype=bool)
    rewards = np.zeros(4)
    while not done.all():
        actions = [asyncio.run(agent.act(list(obs), member_info)) for obs in observations]
        observations, rewards, terminated, truncated, infos = envs.step(actions)
        done = terminated | truncated
    assert list(rewards) == [1.0] * 4
    assert len(envs.unwrapped.group) == 4
    envs.close()
