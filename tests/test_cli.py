"""The command line: eval prints a table and writes JSONL; wrong arguments get clear errors."""

from __future__ import annotations

import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

from judgegym import cli, read_jsonl
from judgegym.cli import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    monkeypatch.setattr(cli, "console", Console(width=200))


def test_eval_prints_table_and_writes_trajectories(tmp_path):
    out = tmp_path / "runs" / "x.jsonl"
    result = runner.invoke(
        app,
        [
            "eval",
            "--env",
            "RagSupport-v0",
            "--agent",
            "oracle",
            "--agent",
            "unhelpful",
            "--episodes",
            "6",
            "--split",
            "test",
            "--env-arg",
            "n_products=20",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "reward (95% CI)" in result.output and "oracle" in result.output and "unhelpful" in result.output
    trajectories = read_jsonl(out)
    assert len(trajectories) == 12
    assert {t.info["agent"] for t in trajectories} == {"oracle", "unhelpful"}
    assert [t.seed for t in trajectories[:6]] == list(range(6))
    oracle = [t.reward for t in trajectories if t.info["agent"] == "oracle"]
    unhelpful = [t.reward for t in trajectories if t.info["agent"] == "unhelpful"]
    assert min(oracle) >= 0.9 and max(unhelpful) <= 0.2


def test_unknown_agent_lists_the_known_ones():
    result = runner.invoke(app, ["eval", "--agent", "gpt-17", "--episodes", "1"])
    assert result.exit_code == 2
    assert "unknown agent 'gpt-17'" in result.output and "search-quote" in result.output


def test_unknown_env_lists_the_known_ones():
    result = runner.invoke(app, ["eval", "--env", "Nope-v0", "--episodes", "1"])
    assert result.exit_code == 2 and "RagSupport-v0" in result.output


def test_bad_env_args_and_split_are_reported():
    result = runner.invoke(app, ["eval", "--split", "dev", "--episodes", "1"])
    assert result.exit_code == 2 and "unknown split 'dev'" in result.output
    result = runner.invoke(app, ["eval", "--env-arg", "novalue", "--episodes", "1"])
    assert result.exit_code == 2 and "KEY=VALUE" in result.output
    result = runner.invoke(app, ["eval", "--env-arg", "bogus=1", "--episodes", "1"])
    assert result.exit_code == 2 and "bogus" in result.output


def test_missing_scenario_file_is_reported(tmp_path):
    result = runner.invoke(app, ["eval", "--scenarios", str(tmp_path / "none.jsonl"), "--episodes", "1"])
    assert result.exit_code == 2 and "does not exist" in result.output


def test_episodes_must_be_positive():
    result = runner.invoke(app, ["eval", "--episodes", "0"])
    assert result.exit_code != 0


def test_bench_times_any_env_under_a_baseline(tmp_path):
    out = tmp_path / "bench.json"
    result = runner.invoke(app, ["bench", "--env", "CustomerSupport-v0", "--episodes", "10", "--agent", "policy", "--json", str(out)])
    assert result.exit_code == 0, result.output
    figures = json.loads(out.read_text())
    assert figures["reset"]["n"] == 10 and figures["step_final"]["n"] == 10 and figures["step"]["n"] >= 10
    result = runner.invoke(app, ["bench", "--env", "CustomerSupport-v0", "--episodes", "10", "--agent", "search-quote"])
    assert result.exit_code == 2 and "unknown agent" in result.output


def test_eval_trials_pass_k_json_and_resume(tmp_path):
    out, summary = tmp_path / "runs.jsonl", tmp_path / "summary.json"
    args = ["eval", "--agent", "oracle", "--episodes", "3", "--trials", "2", "--env-arg", "n_products=20", "--env-arg", "n_worlds=1"]
    result = runner.invoke(app, [*args, "--out", str(out), "--json", str(summary)])
    assert result.exit_code == 0, result.output
    assert "pass^2" in result.output and len(out.read_text().splitlines()) == 6
    (figures,) = json.loads(summary.read_text())
    assert figures["pass_k"] == {"1": 1.0, "2": 1.0} and figures["scenarios"] == 3 and figures["trials"] == 2
    again = runner.invoke(app, [*args, "--out", str(out)])
    assert again.exit_code == 0 and "6 episodes taken from" in again.output and len(out.read_text().splitlines()) == 6
    assert "/6 episodes" not in again.output  # episodes read back are not reported as played


def test_unknown_env_options_are_refused_with_the_valid_names():
    result = runner.invoke(app, ["eval", "--episodes", "1", "--env-arg", "prefetch=1"])
    assert result.exit_code == 2
    assert "takes no option 'prefetch' (did you mean 'prefetch_k'?)" in result.output and "n_products" in result.output
    assert "unexpected keyword" not in result.output
    result = runner.invoke(app, ["train", "--env", "Summarize-v0", "--env-arg", "prefetch_k=1", "--steps", "1"])
    assert result.exit_code == 2 and "Summarize-v0 takes no option 'prefetch_k' (did you mean 'prefetch'?)" in result.output


@pytest.mark.parametrize(
    ("env", "baseline"), [("RagSupport-v0", "search-quote"), ("CustomerSupport-v0", "policy"), ("Summarize-v0", "lead")]
)
def test_eval_without_an_agent_plays_the_envs_scripted_baseline_and_says_so(env, baseline):
    result = runner.invoke(app, ["eval", "--env", env, "--episodes", "1"])
    assert result.exit_code == 0, result.output
    assert f"│ {baseline} " in result.output and "(test split; 1 scenario, 1 episode per agent)" in result.output
    assert f"{baseline} on {env}" in " ".join(runner.invoke(app, ["eval", "--help"]).output.split())


def test_eval_refuses_relative_judges_and_bad_agent_options():
    result = runner.invoke(app, ["eval", "--episodes", "1", "--judge", "ruler:openai/gpt-4o-mini"])
    assert result.exit_code == 2 and "relative judge" in result.output
    result = runner.invoke(app, ["eval", "--episodes", "1", "--agent", "hf:smollm2-135m?temprature=0.5"])
    assert result.exit_code == 2 and "unknown option(s) temprature" in result.output


def _scenario_line(scenario_id: str, **overrides) -> str:
    scenario = {
        "id": scenario_id,
        "question": "How long is the Kettle warranty?",
        "gold_facts": ["2 years"],
        "reference_answer": "The Kettle has a 2 years warranty [kettle].",
        "supporting_doc_ids": ["kettle"],
        "documents": [{"id": "kettle", "title": "Kettle warranty", "text": "The Kettle has a 2 years warranty."}],
        **overrides,
    }
    return json.dumps(scenario)


def test_eval_on_a_scenario_file_names_it_and_says_when_it_replays(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text(_scenario_line("k1") + "\n")
    result = runner.invoke(app, ["eval", "--scenarios", str(path), "--agent", "oracle", "--episodes", "3"])
    assert result.exit_code == 0, result.output
    assert "test split" not in result.output
    assert f"{path}: 1 scenario; 1 scenario x 3 trials, 3 episodes per agent" in " ".join(result.output.split())
    assert "holds 1 scenario: 3 episodes replay them" in " ".join(result.output.split())


def test_a_bad_scenario_file_error_names_the_line_and_no_unasked_split(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(_scenario_line("k1") + "\n" + _scenario_line("k2", gold_facts="two years") + "\n")
    result = runner.invoke(app, ["eval", "--scenarios", str(path), "--episodes", "1"])
    assert result.exit_code == 2
    assert f"bad scenario file: {path}, line 2: field 'gold_facts'" in " ".join(result.output.split())
    assert "split" not in result.output


def test_eval_from_a_curriculum_run_plays_its_held_out_env(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    config = {"env_id": "RagSupport-v0", "env_kwargs": {"kinds": ["multi_hop"]}, "max_turns": 3}
    config["eval_env_kwargs"] = {"kinds": ["comparison"]}
    (run / "config.json").write_text(json.dumps(config))
    episodes = tmp_path / "episodes.jsonl"
    result = CliRunner().invoke(app, ["eval", "--from-run", str(run), "--agent", "unhelpful", "--episodes", "2", "--out", str(episodes)])
    assert result.exit_code == 0, result.output
    assert [t.info["task"]["kind"] for t in read_jsonl(episodes)] == ["comparison", "comparison"]
