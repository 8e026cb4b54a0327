"""The trainer benchmarks: `train_throughput` and `trainer_vs_trl` run end to end on a toy model
and report figures computed from what they measured; `compare` turns runs into ratios, leaves
the warm-up step out and refuses runs that played different scenarios."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from judgegym.benchmarks import train_throughput, trainer_vs_trl
from judgegym.benchmarks.train_throughput import AnswerHashJudge
from judgegym.benchmarks.trainer_vs_trl import compare
from judgegym.trajectory import Message, Trajectory

TOY = ["--tiny", "--scenarios", "2", "--group-size", "2", "--max-new-tokens", "8"]


def test_answer_hash_judge_is_deterministic_and_spreads_answers():
    judge = AnswerHashJudge()

    def score(text: str) -> float:
        trajectory = Trajectory(scenario_id="s", messages=[Message(role="user", content="q"), Message(role="assistant", content=text)])
        return judge.verify(trajectory).score

    scores = [score(f"answer {i}") for i in range(50)]
    assert all(0 <= s < 1 for s in scores)
    assert score("answer 3") == scores[3]
    assert len(set(scores)) == 50 and statistics.pstdev(scores) > 0.2


def test_train_throughput_reports_what_it_measured(tiny_model, tmp_path, one_thread):
    out = tmp_path / "train.json"
    result = train_throughput.main([*TOY, "--assets", tiny_model, "--steps", "2", "--warmup", "1", "--json", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    assert result["device"] == "cpu" and result["dtype"] == "float32" and result["mode"] == "lora"
    assert result["date"] and result["torch"] and "hash" in result["reward"]
    steps = result["steps"]
    assert len(steps) == 3 and result["warmup_steps"] == 1
    measured = steps[1:]
    assert result["median_step_s"] == statistics.median(s["step_s"] for s in measured)
    assert math.isclose(result["steps_per_minute"], 60 / result["median_step_s"])
    tokens = sum(s["generated_tokens"] for s in measured)
    assert math.isclose(result["generated_tokens_per_s"], tokens / sum(s["step_s"] for s in measured))
    assert math.isclose(result["generation_tokens_per_s"], tokens / sum(s["generate_s"] for s in measured))
    assert all(s["trained_sequences"] == 4 for s in steps), "the hash judge gives every group reward variance"
    assert [s["seeds"] for s in steps] == [[0, 1], [2, 3], [4, 5]]
    assert result["peak_rss_mb"] >= result["setup_peak_rss_mb"] > 0


@pytest.mark.slow
def test_train_throughput_trains_all_weights_without_peft(tiny_model, one_thread, monkeypatch, capsys):
    monkeypatch.setattr(train_throughput, "_peft_installed", lambda: False)
    result = train_throughput.main([*TOY, "--assets", tiny_model, "--steps", "1", "--warmup", "0"])
    assert result["mode"] == "full" and result["steps"][0]["trained_sequences"] == 4
    assert "peft is not installed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--steps", "1"], "warm-up"),
        (["--group-size", "1"], "TRL's minimum"),
        (["--scenarios", "3", "--group-size", "2", "--micro-batch-size", "4"], "multiple of --micro-batch-size"),
    ],
)
def test_trainer_vs_trl_rejects_setups_it_cannot_compare(flags, message, capsys):
    with pytest.raises(SystemExit):
        trainer_vs_trl.main(flags)
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_trainer_vs_trl_runs_both_trainers_alike(tiny_model, tmp_path):
    out = tmp_path / "vs.json"
    flags = [*TOY, "--assets", tiny_model, "--steps", "2", "--micro-batch-size", "2", "--threads", "1", "--judge", "hash"]
    result = trainer_vs_trl.main([*flags, "--json", str(out)])
    assert json.loads(out.read_text())["ratios"] == result["ratios"]
    runs = {run["trainer"]: run for run in result["runs"]}
    assert set(runs) == {"judgegym", "trl"}
    for name, run in runs.items():
        assert run["threads"] == 1 and len(run["steps"]) == 2
        assert [s["seeds"] for s in run["steps"]] == [[0, 1], [2, 3]], name
        assert all(s["trained_sequences"] == 4 for s in run["steps"]), name
        summary = result["summary"][name]
        assert summary["median_step_s"] == run["steps"][1]["step_s"]  # the warm-up step is left out
        assert summary["peak_rss_mb"] == run["peak_rss_mb"] >= run["setup_peak_rss_mb"]
    ours, theirs = result["summary"]["judgegym"], result["summary"]["trl"]
    assert result["ratios"]["step_time"] == ours["median_step_s"] / theirs["median_step_s"]
    assert result["ratios"]["peak_rss"] == ours["peak_rss_mb"] / theirs["peak_rss_mb"]
    assert result["meets_targets"]["peak_rss"] == (result["ratios"]["peak_rss"] <= 1.0)
    assert ours["prompt_tokens_mean"] == theirs["prompt_tokens_mean"], "both render the same prompts"
    trl_args = runs["trl"]["trl_arguments"]
    assert trl_args["generation_batch_size"] == 4 and trl_args["gradient_accumulation_steps"] == trl_args["steps_per_generation"] == 2
    assert trl_args["per_device_train_batch_size"] == 2 and trl_args["num_generations"] == 2 and trl_args["num_iterations"] == 1
    assert trl_args["gradient_checkpointing"] is False and trl_args["bf16"] is False and trl_args["shuffle_dataset"] is False
    assert (trl_args["optim"], trl_args["lr_scheduler_type"], trl_args["learning_rate"]) == ("adamw_torch", "constant_with_warmup", 1e-4)
    assert (trl_args["loss_type"], trl_args["beta"], trl_args["top_k"], trl_args["max_completion_length"]) == ("dapo", 0.0, 0, 8)


@pytest.fixture(scope="module")
def trl_installed() -> None:
    """TRL's GRPOConfig imported once (a few seconds), as a shared fixture."""
    pytest.importorskip("trl")
    from trl import GRPOConfig  # noqa: F401


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_trainer_vs_trl_gives_both_trainers_the_same_precision(precision, tmp_path, trl_installed):
    setup = trainer_vs_trl.Setup(model="some-folder", precision=precision)
    config = trainer_vs_trl.judgegym_config(setup, tmp_path)
    args, _ = trainer_vs_trl.trl_arguments(config, tmp_path)
    bf16 = precision == "bf16"
    assert args.bf16 is bf16 and config.mixed_precision == ("bf16" if bf16 else "no")
    assert config.generation_dtype == ("auto" if bf16 else "training"), "fp32 samples from the float32 training model itself"
    assert config.gradient_checkpointing is False and args.gradient_checkpointing is False


# -- compare, on hand-made runs --------------------------------------------------------------


def _run(trainer: str, step_s: list[float], tokens: int = 10, rss: float = 500.0, trained: int = 4, seeds_from: int = 0) -> dict:
    steps = [
        {
            "step_s": t,
            "generate_s": t / 2,
            "judge_s": 0.01,
            "generated_tokens": tokens,
            "completion_mean_length": tokens / 4,
            "prompt_tokens_mean": 100.0,
            "trained_sequences": trained,
            "reward": 0.5,
            "seeds": [seeds_from + 2 * i, seeds_from + 2 * i + 1],
        }
        for i, t in enumerate(step_s)
    ]
    return {"trainer": trainer, "steps": steps, "peak_rss_mb": rss, "setup_peak_rss_mb": rss - 50}


def test_compare_leaves_out_the_warm_up_and_divides_judgegym_by_trl():
    result = compare([_run("judgegym", [100.0, 2.0, 4.0, 3.0], rss=400.0), _run("trl", [100.0, 5.0, 5.0, 4.0], tokens=20)])
    assert result["summary"]["judgegym"]["median_step_s"] == 3.0 and result["summary"]["trl"]["median_step_s"] == 5.0
    assert result["ratios"]["step_time"] == 3.0 / 5.0
    assert result["ratios"]["time_per_generated_token"] == (9.0 / 30) / (14.0 / 60)
    assert result["ratios"]["peak_rss"] == 400.0 / 500.0
    assert result["meets_targets"] == {"step_time": True, "peak_rss": True}
    assert result["notes"] == []


def test_compare_pools_repeats_and_notes_skipped_updates():
    runs = [
        _run("judgegym", [9.0, 1.0], trained=0),
        _run("trl", [9.0, 2.0]),
        _run("trl", [9.0, 4.0], rss=700.0),
        _run("judgegym", [9.0, 3.0]),
    ]
    result = compare(runs)
    assert result["summary"]["judgegym"]["median_step_s"] == 2.0 and result["summary"]["trl"]["median_step_s"] == 3.0
    assert result["summary"]["trl"]["peak_rss_mb"] == 700.0
    assert result["summary"]["judgegym"]["steps_without_update"] == 1
    assert result["ratios"]["step_time"] == 2.0 / 3.0 and result["meets_targets"]["step_time"] is True
    assert any("skipped the update on 1 of 2" in note for note in result["notes"])


def test_compare_refuses_runs_that_played_different_scenarios():
    with pytest.raises(ValueError, match="different scenarios"):
        compare([_run("judgegym", [1.0, 1.0]), _run("trl", [1.0, 1.0], seeds_from=10)])
    with pytest.raises(ValueError, match="both trainers"):
        compare([_run("judgegym", [1.0, 1.0])])
    with pytest.raises(ValueError, match="warm-up"):
        compare([_run("judgegym", [1.0]), _run("trl", [1.0])])


def test_docs_show_the_commands():
    text = (Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md").read_text()
    assert "python -m judgegym.benchmarks.trainer_vs_trl" in text and "python -m judgegym.benchmarks.train_throughput" in text
