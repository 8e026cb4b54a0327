"""Checkpoints and resume: a resumed run continues exactly where an uninterrupted one would
be, a run killed with SIGKILL finishes after a resume with each step logged once, and the
file-level guarantees (atomic folders, metrics truncation) hold on their own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from test_trainer_loop import ScriptedJudge, make_config, parameters, text_hash_reward

from judgegym.trainers import GRPOTrainer, latest_checkpoint
from judgegym.trainers.checkpoint import atomic_directory, checkpoint_dirs, remove_temp_dirs, truncate_metrics

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """Every test here runs a tiny model (see conftest.one_thread)."""


def steps_logged(output_dir: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (output_dir / "metrics.jsonl").read_text().splitlines()]


def test_a_resumed_run_continues_like_an_uninterrupted_one(tmp_path, tiny_model):
    judge = ScriptedJudge(text_hash_reward)
    whole = GRPOTrainer(make_config(tmp_path / "whole", tiny_model, max_steps=3, save_steps=1, keep_last=None), judge=judge)
    whole_history = whole.train()

    first = GRPOTrainer(make_config(tmp_path / "split", tiny_model, max_steps=2, save_steps=1), judge=judge)
    first.train()
    resumed = GRPOTrainer(make_config(tmp_path / "split", tiny_model, max_steps=3, save_steps=1, resume=True), judge=judge)
    assert resumed.resumed_from == tmp_path / "split" / "run" / "checkpoints" / "step-2"
    assert (resumed.state.step, resumed.state.cursor) == (2, 4)
    # the RNGs are where the uninterrupted run had them after step 2
    saved = torch.load(tmp_path / "whole" / "run" / "checkpoints" / "step-2" / "rng.pt", weights_only=False)
    assert torch.equal(torch.get_rng_state(), saved["torch"])
    resumed_history = resumed.train()

    assert [r["step"] for r in resumed_history] == [3]
    assert (
        [e.seed for e in resumed.last_rollout]
        == [e.seed for e in whole.last_rollout]
        == [s for s in whole.scenario_seeds(4, 2) for _ in (0, 1)]
    )
    assert [e.tokens.completion_ids for e in resumed.last_rollout] == [e.tokens.completion_ids for e in whole.last_rollout]
    expected, got = whole_history[-1], resumed_history[-1]
    for key in ("reward", "reward_std", "loss", "grad_norm", "entropy", "learning_rate", "completions/mean_length", "num_trained_tokens"):
        assert got[key] == pytest.approx(expected[key], rel=1e-5, abs=1e-7), key
    final_whole, final_resumed = parameters(whole.model), parameters(resumed.model)
    assert all(torch.allclose(final_whole[n], final_resumed[n], atol=1e-6) for n in final_whole)
    assert steps_logged(tmp_path / "split" / "run") == [1, 2, 3]
    assert [n for n, _ in checkpoint_dirs(tmp_path / "split" / "run" / "checkpoints")] == [2, 3]  # keep_last=2


KILLED_RUN = textwrap.dedent(
    """
    import sys, time
    import torch
    torch.set_num_threads(1)
    from judgegym.judges.base import JudgeScore, Verifier
    from judgegym.trainers import GRPOConfig, GRPOTrainer

    class SlowJudge(Verifier):  # slow enough that the kill lands mid-run
        def verify(self, trajectory):
            time.sleep(0.15)
            return JudgeScore(score=(len(trajectory.final_answer) % 7) / 6)

    config = GRPOConfig(
        model=sys.argv[1], output_dir=sys.argv[2], env_kwargs={"n_products": 20, "n_worlds": 1}, scenarios_per_step=2,
        group_size=2, max_new_tokens=8, max_turns=2, max_steps=6, save_steps=1, keep_last=3, eval_steps=0, resume=True,
        mixed_precision="no",
    )
    GRPOTrainer(config, judge=SlowJudge()).train()
    """
)


@pytest.mark.slow
def test_a_run_killed_with_sigkill_resumes_and_logs_each_step_once(tmp_path, tiny_model):
    output_dir = tmp_path / "run"
    checkpoints = output_dir / "checkpoints"
    log = (tmp_path / "killed-run.log").open("wb")  # a file, not a pipe: a full pipe would stall the child
    process = subprocess.Popen([sys.executable, "-c", KILLED_RUN, tiny_model, str(output_dir)], cwd=ROOT, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 120
        while latest_checkpoint(checkpoints) is None:
            if process.poll() is not None:
                pytest.fail(f"the training process exited early:\n{(tmp_path / 'killed-run.log').read_text()[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail("no checkpoint appeared within 120 s")
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        log.close()
    assert process.returncode == -signal.SIGKILL
    killed_at = latest_checkpoint(checkpoints)
    assert killed_at is not None and killed_at.name != "step-6", "the kill must land before the run ends"
    # what a kill inside atomic_directory leaves behind must not break the resume
    (checkpoints / ".tmp-step-9-crashed").mkdir()
    (checkpoints / ".tmp-step-9-crashed" / "optimizer.pt").write_bytes(b"partial")

    config = make_config(tmp_path, tiny_model, max_steps=6, save_steps=1, keep_last=3, resume=True)
    trainer = GRPOTrainer(config, judge=ScriptedJudge(lambda t: (len(t.final_answer) % 7) / 6))
    assert trainer.resumed_from is not None and trainer.state.step >= 1
    trainer.train()

    assert trainer.state.step == 6
    assert steps_logged(output_dir) == [1, 2, 3, 4, 5, 6]
    assert not [p.name for p in checkpoints.iterdir() if p.name.startswith(".")]
    assert [n for n, _ in checkpoint_dirs(checkpoints)] == [4, 5, 6]
    assert latest_checkpoint(checkpoints) == checkpoints / "step-6"
    again = GRPOTrainer(config, judge=ScriptedJudge(lambda t: 0.0))  # the last checkpoint loads
    assert again.state.step == 6 and again.train() == []


def test_full_fine_tuning_checkpoints_restore_every_weight(tmp_path, tiny_model):
    from transformers import AutoModelForCausalLM

    options = {"use_lora": False, "learning_rate": 1e-3, "save_steps": 1}
    trained = GRPOTrainer(make_config(tmp_path, tiny_model, **options), judge=ScriptedJudge(text_hash_reward))
    trained.train()
    assert (tmp_path / "run" / "checkpoints" / "step-1" / "model.safetensors").is_file()
    assert (tmp_path / "run" / "last" / "config.json").is_file()  # a complete model folder
    resumed = GRPOTrainer(make_config(tmp_path, tiny_model, **options, resume=True), judge=ScriptedJudge(text_hash_reward))

    base, after, restored = (
        parameters(AutoModelForCausalLM.from_pretrained(tiny_model)),
        parameters(trained.model),
        parameters(resumed.model),
    )
    assert any(not torch.equal(base[n], after[n]) for n in base), "the step changed the weights"
    assert all(torch.equal(after[n], restored[n]) for n in after)
    assert resumed.optimizer.state_dict()["state"].keys() == trained.optimizer.state_dict()["state"].keys()


def test_a_fresh_run_refuses_a_folder_holding_another_run(tmp_path, tiny_model):
    GRPOTrainer(make_config(tmp_path, tiny_model, save_steps=1), judge=ScriptedJudge(text_hash_reward)).train()
    with pytest.raises(FileExistsError, match="resume=True"):
        GRPOTrainer(make_config(tmp_path, tiny_model), judge=ScriptedJudge(text_hash_reward))


def test_atomic_directory_keeps_the_old_folder_when_writing_fails(tmp_path):
    target = tmp_path / "best"
    with atomic_directory(target) as folder:
        (folder / "weights").write_text("v1")
    with pytest.raises(RuntimeError), atomic_directory(target) as folder:
        (folder / "weights").write_text("v2 (half written)")
        raise RuntimeError("crash while writing")
    assert (target / "weights").read_text() == "v1"
    with atomic_directory(target) as folder:
        (folder / "weights").write_text("v2")
    assert (target / "weights").read_text() == "v2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best"]
    (tmp_path / ".tmp-best-left-by-a-kill").mkdir()
    assert [p.name for p in remove_temp_dirs(tmp_path)] == [".tmp-best-left-by-a-kill"]


def test_truncate_metrics_drops_later_steps_and_a_torn_last_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "reward": 0.1 * s}) + "\n" for s in range(5)) + '{"step": 5, "rew')
    assert truncate_metrics(path, 2) == 3
    assert steps_logged(tmp_path) == [0, 1, 2]
    assert truncate_metrics(path, -1) == 0 and path.read_text() == ""
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]
