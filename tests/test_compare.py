"""`judgegym compare`: paired changes between eval runs played on the same scenarios."""

from __future__ import annotations

import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

from judgegym import cli, read_jsonl
from judgegym.cli import app
from judgegym.evaluation.compare import align_runs, paired_changes, read_runs, reward_by_kind
from judgegym.trajectory import Trajectory, write_jsonl

runner = CliRunner()


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    monkeypatch.setattr(cli, "console", Console(width=250))


def _episode(seed: int, reward: float, kind: str, trial: int = 0) -> Trajectory:
    return Trajectory(scenario_id=f"test-{seed}", seed=seed, reward=reward, info={"task": {"kind": kind}, "trial": trial})


def _write(path, agent, rewards, split="test"):
    episodes = [_episode(seed, reward, "single_fact") for seed, reward in enumerate(rewards)]
    for episode in episodes:
        episode.env_id, episode.split, episode.info["agent"] = "RagSupport-v0", split, agent
    write_jsonl(path, episodes)


def _eval(path, *agents, episodes=8, split="test"):
    args = ["eval", "--env", "RagSupport-v0", "--env-arg", "n_products=20", "--split", split, "--episodes", str(episodes)]
    args += ["--out", str(path)]
    for agent in agents:
        args += ["--agent", agent]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output


@pytest.mark.slow  # about 10 s: plays 16 episodes
def test_compare_pairs_the_runs_of_an_eval_file(tmp_path):
    played = tmp_path / "rag.jsonl"
    _eval(played, "oracle", "search-quote")
    page, out = tmp_path / "page.md", tmp_path / "changes.json"
    result = runner.invoke(app, ["compare", str(played), "--by-kind", "--episodes", str(page), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "8 paired scenarios; change from oracle" in result.output and "reward by scenario kind" in result.output
    record = json.loads(out.read_text())
    rewards = {agent: [t.reward for t in read_jsonl(played) if t.info["agent"] == agent] for agent in ("oracle", "search-quote")}
    assert record["base"] == "oracle [n_products=20]"
    reward = next(c for c in record["changes"]["search-quote [n_products=20]"] if c["metric"] == "reward")
    assert reward["before"] == pytest.approx(sum(rewards["oracle"]) / 8)
    assert reward["difference"] == pytest.approx((sum(rewards["search-quote"]) - sum(rewards["oracle"])) / 8)
    assert reward["ci_low"] <= reward["difference"] <= reward["ci_high"]
    assert sum(cell["oracle [n_products=20]"]["scenarios"] for cell in record["by_kind"].values()) == 8
    assert page.read_text().count("## Test scenario") == 6 and "**search-quote [n_products=20]**" in page.read_text()


def test_compare_names_files_and_pairs_the_scenarios_every_run_played(tmp_path):
    _write(tmp_path / "a.jsonl", "oracle", [1.0] * 8)
    _write(tmp_path / "b.jsonl", "unhelpful", [0.0] * 5)
    result = runner.invoke(app, ["compare", f"teacher={tmp_path / 'a.jsonl'}", f"nothing={tmp_path / 'b.jsonl'}", "--metric", "reward"])
    assert result.exit_code == 0, result.output
    assert "compared on the 5 scenarios every run played; left out: teacher 3" in result.output
    assert "teacher" in result.output and "nothing" in result.output
    assert "-1.000 [-1.000, -1.000]*" in result.output  # every scenario lost all of its reward


@pytest.mark.parametrize(
    ("files", "extra", "message"),
    [
        (["missing.jsonl"], [], "no such file"),
        (["a.jsonl"], [], "one run to compare"),
        (["a.jsonl", "c.jsonl"], [], "share no scenario"),
        (["a.jsonl", "b.jsonl"], ["--metric", "kindness"], "no run reports 'kindness'; figures they share: reward"),
    ],
)
def test_compare_errors_say_what_to_change(tmp_path, files, extra, message):
    _write(tmp_path / "a.jsonl", "oracle", [1.0, 1.0, 0.5])
    _write(tmp_path / "b.jsonl", "unhelpful", [0.0, 0.0, 0.0])
    write_jsonl(tmp_path / "c.jsonl", [_episode(seed + 10, 0.0, "single_fact") for seed in range(3)])
    result = runner.invoke(app, ["compare", *(str(tmp_path / f) for f in files), *extra])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_runs_pair_on_scenario_seed_and_trial_and_refuse_repeats(tmp_path):
    base = [_episode(0, 0.0, "a"), _episode(1, 1.0, "b"), _episode(1, 0.0, "b", trial=1)]
    other = [_episode(1, 1.0, "b", trial=1), _episode(0, 1.0, "a")]
    aligned = align_runs({"base": base, "other": other})
    assert [(t.seed, t.info["trial"]) for t in aligned["other"]] == [(0, 0), (1, 1)]  # the base's order, its unshared episode left out
    change = paired_changes(aligned["base"], aligned["other"])[0]
    assert (change.before, change.after, change.difference) == (0.0, 1.0, 1.0)
    assert reward_by_kind(aligned) == {"a": {"base": (1, 0.0), "other": (1, 1.0)}, "b": {"base": (1, 0.0), "other": (1, 1.0)}}
    with pytest.raises(ValueError, match="plays some scenario twice"):
        align_runs({"base": base, "other": [*other, _episode(0, 0.5, "a")]})


def test_a_path_with_an_equals_sign_is_a_path_not_a_name(tmp_path):
    path = tmp_path / "lr=1e-4.jsonl"
    _write(path, "oracle", [1.0, 0.0])
    assert list(read_runs([str(path)])) == ["oracle"]
    assert list(read_runs([f"mine={path}"])) == ["mine"]
