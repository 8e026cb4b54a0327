"""Leaderboards from eval runs: the Markdown table, the chart, and the CLI."""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

import judgegym  # noqa: F401
from judgegym.agents import make_agent
from judgegym.cli import app
from judgegym.evaluation import evaluate
from judgegym.evaluation.leaderboard import leaderboard_markdown, summarize_runs

ENV = {"n_products": 20, "n_worlds": 1, "split": "test"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    for spec in ("oracle", "search-quote", "unhelpful"):
        asyncio.run(evaluate("RagSupport-v0", make_agent(spec), episodes=6, trials=2, env_kwargs=ENV, out=folder / "rag.jsonl"))
    asyncio.run(evaluate("RagSupport-v0", make_agent("oracle"), episodes=4, env_kwargs={**ENV, "prefetch_k": 2}, out=folder / "b.jsonl"))
    return folder


def test_runs_are_summarised_and_ranked(runs):
    summaries = summarize_runs(sorted(runs.glob("*.jsonl")))
    options = "[n_products=20, n_worlds=1]"
    assert [s.agent for s in summaries][2:] == [f"search-quote {options}", f"unhelpful {options}"]
    assert {s.agent for s in summaries[:2]} == {f"oracle {options}", "oracle [n_products=20, n_worlds=1, prefetch_k=2]"}
    by_agent = {s.agent: s for s in summaries}
    assert by_agent[f"oracle {options}"].pass_k == {1: 1.0, 2: 1.0} and by_agent[f"unhelpful {options}"].mean_reward == 0.0
    assert by_agent[f"oracle {options}"].episodes == 12 and by_agent[f"oracle {options}"].scenarios == 6


def test_markdown_has_an_overview_and_a_table_per_env(runs):
    text = leaderboard_markdown(summarize_runs(sorted(runs.glob("*.jsonl"))), title="T")
    assert text.startswith("# T\n")
    overview = text.split("## RagSupport-v0 (test split)")[0]
    rows = [line for line in overview.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert rows[-1] == "| unhelpful [n_products=20, n_worlds=1] | 0.000 [0.000, 0.000] |"
    assert "| pass^2 |" in text and "| 6 x 2 |" in text


def test_cli_writes_table_and_chart(runs, tmp_path):
    out = tmp_path / "docs" / "board.md"
    result = CliRunner().invoke(app, ["leaderboard", *map(str, sorted(runs.glob("*.jsonl"))), "--out", str(out), "--title", "Board"])
    assert result.exit_code == 0, result.output
    png = out.with_suffix(".png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5_000
    assert "![Board](board.png)" in out.read_text()


def test_cli_reports_missing_and_bad_files(tmp_path):
    result = CliRunner().invoke(app, ["leaderboard", str(tmp_path / "none.jsonl")])
    assert result.exit_code == 2 and "no such file" in result.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n")
    result = CliRunner().invoke(app, ["leaderboard", str(bad), "--out", str(tmp_path / "x.md")])
    assert result.exit_code == 2 and "line 1" in result.output


def test_same_agent_on_several_envs_keeps_its_plain_name(tmp_path):
    out = tmp_path / "runs.jsonl"
    for env_id in ("RagSupport-v0", "CustomerSupport-v0"):
        asyncio.run(evaluate(env_id, make_agent("oracle", env_id), episodes=2, env_kwargs={"split": "test"}, out=out))
    assert sorted(s.agent for s in summarize_runs([out])) == ["oracle", "oracle"]


def test_rejudge_grades_the_stored_episodes_again_with_the_verifier_as_it_is_now(runs, tmp_path):
    """A stale stored reward (a verifier that has changed since) is replaced; without --rejudge it stays."""
    import json

    stale = tmp_path / "stale.jsonl"
    lines = [json.loads(line) for line in (runs / "rag.jsonl").read_text().splitlines()]
    for line in lines:
        line["reward"] = 0.5
    stale.write_text("".join(json.dumps(line) + "\n" for line in lines))
    kept = {s.agent.split()[0]: s.mean_reward for s in summarize_runs([stale])}
    fresh = {s.agent.split()[0]: s.mean_reward for s in summarize_runs([stale], rejudge=True)}
    assert kept == {"oracle": 0.5, "search-quote": 0.5, "unhelpful": 0.5}
    assert fresh["oracle"] == 1.0 and fresh["unhelpful"] == 0.0
    result = CliRunner().invoke(app, ["leaderboard", str(stale), "--rejudge", "--out", str(tmp_path / "lb.md")])
    assert result.exit_code == 0, result.output
    assert "| oracle [n_products=20, n_worlds=1] | 1.000" in (tmp_path / "lb.md").read_text()


def test_each_env_table_has_a_reward_hacking_watch(runs):
    """The share of episodes showing each sign the verifier logs: none for the oracle, and a
    sign shows when a component says so."""
    from judgegym.evaluation.stats import WATCH

    summaries = summarize_runs(sorted(runs.glob("*.jsonl")))
    assert all(s.watch and max(s.watch.values()) == 0.0 for s in summaries if s.agent.startswith("oracle"))
    text = leaderboard_markdown(summaries, title="T")
    assert "Reward-hacking watch, RagSupport-v0" in text and "| agent | speaks to the grader | untrue | padding or dump |" in text
    _, shows = WATCH["padding or dump"]
    assert shows({"length": 0.5}) and not shows({"length": 1.0, "focus": 1.0}) and not shows({})
    _, shows = WATCH["untrue"]
    assert shows({"wrong_figures": 1.0}) and not shows({"false_claims": 0.0})


def test_keep_carries_the_rows_a_regeneration_does_not_replay(runs, tmp_path):
    """The summaries JSON written beside the page is read back by --keep: a regeneration that
    replays one run replaces that row and keeps the others, naming them as kept."""
    from judgegym.evaluation.leaderboard import load_summaries

    first = tmp_path / "first.md"
    result = CliRunner().invoke(app, ["leaderboard", str(runs / "rag.jsonl"), str(runs / "b.jsonl"), "--out", str(first)])
    assert result.exit_code == 0, result.output
    stored = load_summaries(first.with_suffix(".json"))
    assert len(stored) == 4 and {1, 2} <= set(next(s for s in stored if s.trials == 2).pass_k)

    second = tmp_path / "second.md"
    kept = first.with_suffix(".json")
    result = CliRunner().invoke(app, ["leaderboard", str(runs / "b.jsonl"), "--keep", str(kept), "--out", str(second)])
    assert result.exit_code == 0, result.output
    assert "(3 kept)" in result.output
    text = second.read_text()
    assert "Rows kept from an earlier regeneration" in text and "`unhelpful [n_products=20, n_worlds=1]` on RagSupport-v0" in text
    assert "prefetch_k=2]` on" not in text  # replayed, not kept
    assert [s.to_dict() for s in load_summaries(second.with_suffix(".json"))] == [s.to_dict() for s in stored]


def test_keep_reports_a_file_that_holds_no_summaries(runs, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"agent": 1}')
    result = CliRunner().invoke(app, ["leaderboard", str(runs / "b.jsonl"), "--keep", str(bad), "--out", str(tmp_path / "x.md")])
    assert result.exit_code == 2 and "not a list of leaderboard summaries" in result.output
