"""The CPU demo's plumbing (`judgegym demo`, `run_demo`) on a tiny random model: a real run,
held-out evals read back and compared scenario by scenario."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from judgegym.cli import app
from judgegym.evaluation import load_trajectories
from judgegym.trainers import demo

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """A tiny model (see conftest.one_thread)."""


DEMO_CONFIG = demo.demo_config


def tiny_demo(tiny_model, output_dir, **overrides):
    config = DEMO_CONFIG(output_dir, steps=2, eval_episodes=3)
    env_kwargs = {**config.env_kwargs, "n_products": 20, "n_worlds": 1}
    return replace(config, model=str(tiny_model), env_kwargs=env_kwargs, scenarios_per_step=2, group_size=2, max_new_tokens=6, **overrides)


def test_the_demo_config_is_the_documented_shape():
    config = demo.demo_config(steps=20)
    assert config.env_kwargs["max_tool_calls"] == 0 and config.env_kwargs["prefetch_k"] == 1
    assert config.judge == demo.DEMO_JUDGE == "0.5*verifier+0.5*grounding" and config.eval_judge == "verifier"
    assert config.model == "smollm2-135m" and config.max_turns == 1
    assert (config.eval_steps, config.max_steps) == (10, 20)


def test_run_demo_compares_the_same_held_out_scenarios(tmp_path, tiny_model):
    result = demo.run_demo(tiny_demo(tiny_model, tmp_path / "demo"))
    assert (result.before.step, result.after.step) == (0, 2)
    assert [t.scenario_id for t in result.before.trajectories] == [t.scenario_id for t in result.after.trajectories]
    assert len(result.before.trajectories) == 3 and set(result.before.components) == set(demo.DEMO_COMPONENTS)
    deltas = [(a.reward or 0) - (b.reward or 0) for b, a in zip(result.before.trajectories, result.after.trajectories, strict=True)]
    assert result.difference == pytest.approx(sum(deltas) / 3)
    assert result.ci_low <= result.difference <= result.ci_high
    assert result.improved == sum(d > 0 for d in deltas) and result.worse == sum(d < 0 for d in deltas)
    assert result.plot is not None and result.plot.is_file()
    history_evals = [r["eval/reward"] for r in result.history if "eval/reward" in r]
    assert history_evals[-1] == pytest.approx(result.after.reward)


def test_run_demo_needs_held_out_evals(tmp_path, tiny_model):
    with pytest.raises(ValueError, match="eval_steps"):
        demo.run_demo(tiny_demo(tiny_model, tmp_path / "demo", eval_steps=0))


def test_the_demo_command_prints_before_and_after(tmp_path, tiny_model, monkeypatch):
    monkeypatch.setattr(demo, "demo_config", lambda output_dir, **options: tiny_demo(tiny_model, output_dir))
    result = CliRunner().invoke(app, ["demo", "--output-dir", str(tmp_path / "demo"), "--steps", "2"])
    assert result.exit_code == 0, result.output
    for text in ("before (step 0)", "after (step 2)", "recall", "citation", "paired bootstrap interval", "reward.png"):
        assert text in result.output, text
    # Not a terminal: a plain line per phase, step and eval, as they happen.
    lines = result.output.splitlines()
    assert any(line.startswith("loading ") for line in lines)
    for pattern in (
        r"\[\d+:\d\d\] eval before training: held-out reward \d\.\d{3}",
        r"\[\d+:\d\d\] step 1/2: reward .*s/step, about \d+:\d\d left",
    ):
        assert any(re.match(pattern, line) for line in lines), pattern
    assert [line for line in lines if "eval after training: held-out reward" in line]
    # The closing line's command re-evaluates the adapter on the shaped task it was trained on.
    command = next(line for line in lines if line.startswith("re-evaluate an adapter")).split(": ", 1)[1]
    assert command.startswith("judgegym eval --from-run ")


def test_eval_from_run_plays_the_runs_env_options(tmp_path, tiny_model):
    out = tmp_path / "demo"
    demo.run_demo(tiny_demo(tiny_model, out))
    episodes = tmp_path / "episodes.jsonl"
    result = CliRunner().invoke(app, ["eval", "--from-run", str(out), "--agent", "unhelpful", "--episodes", "2", "--out", str(episodes)])
    assert result.exit_code == 0, result.output
    trajectories = load_trajectories(episodes)
    shaped = demo.DEMO_SYSTEM_PROMPT.split("{company}")[1]
    assert len(trajectories) == 2 and all(t.messages[0].content.endswith(shaped) for t in trajectories)
    assert all(t.info["env_args"]["prefetch_k"] == 1 for t in trajectories)
    result = CliRunner().invoke(app, ["eval", "--from-run", str(out), "--env", "Summarize-v0", "--agent", "unhelpful"])
    assert result.exit_code == 2 and "contradicts the run's env RagSupport-v0" in result.output
