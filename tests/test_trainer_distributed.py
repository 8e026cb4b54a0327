"""Data-parallel GRPO on torch.distributed (gloo, two CPU processes): N ranks with B/N groups
each take the same step as one process with B groups, a resumed 2-rank run continues
exactly, and a rank that dies ends the run on the other with a clear error, never a hang."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

WORKER = Path(__file__).parent / "ddp_worker.py"

pytestmark = pytest.mark.slow


def environment() -> dict[str, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    return env


def run_single(model: str, out: Path, *extra: str) -> None:
    done = subprocess.run([sys.executable, str(WORKER), "--model", model, "--out", str(out), *extra], env=environment(),
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


def run_torchrun(model: str, out: Path, *extra: str) -> None:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(WORKER)]
    done = subprocess.run([*command, "--model", model, "--out", str(out), *extra], env=environment(), capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


def metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def assert_same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], tolerance: float) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert torch.allclose(a[name], b[name], atol=tolerance, rtol=0), (name, float((a[name] - b[name]).abs().max()))


def test_two_ranks_take_the_same_steps_as_one_process(tmp_path, tiny_model):
    run_single(tiny_model, tmp_path / "one")
    run_torchrun(tiny_model, tmp_path / "two")
    single = torch.load(tmp_path / "one" / "weights-rank0.pt")
    rank0, rank1 = (torch.load(tmp_path / "two" / f"weights-rank{r}.pt") for r in (0, 1))
    assert_same_weights(rank0, rank1, 0.0)  # the ranks hold one model
    assert_same_weights(single, rank0, 1e-5)
    base = {name: value for name, value in single.items() if "lora_B" in name}
    assert any(value.abs().max() > 1e-3 for value in base.values()), "the run must have trained (lora_B starts at zero)"
    # the same episodes: rank r played groups r*B/N .. of the single process's step
    answers = json.loads((tmp_path / "one" / "episodes-rank0.json").read_text())
    split = [json.loads((tmp_path / "two" / f"episodes-rank{r}.json").read_text()) for r in (0, 1)]
    assert split[0] + split[1] == answers
    # every reduced metric as one process logs it; only rank 0 wrote the file
    one, two = metrics(tmp_path / "one"), metrics(tmp_path / "two")
    assert [r["step"] for r in two] == [1, 2]
    for a, b in zip(one, two, strict=True):
        for key in ("reward", "reward_std", "frac_reward_zero_std", "num_trained_tokens", "num_trained_sequences", "num_zero_std_groups",
                    "num_failed_groups", "rewards/hash/mean", "completions/mean_length", "completions/max_length",
                    "completions/clipped_ratio", "tools/call_frequency"):  # fmt: skip
            assert a[key] == pytest.approx(b[key], abs=1e-9), key
        for key in ("loss", "grad_norm", "entropy", "sampling/sampling_logp_difference/mean", "clip_ratio/region_mean"):
            assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-6), key


def test_a_resumed_two_rank_run_continues_where_it_stopped(tmp_path, tiny_model):
    run_torchrun(tiny_model, tmp_path / "straight", "--steps", "3")
    run_torchrun(tiny_model, tmp_path / "resumed", "--steps", "2")
    run_torchrun(tiny_model, tmp_path / "resumed", "--steps", "3", "--resume")
    assert [r["step"] for r in metrics(tmp_path / "resumed")] == [1, 2, 3]
    straight = torch.load(tmp_path / "straight" / "weights-rank0.pt")
    for rank in (0, 1):
        assert_same_weights(straight, torch.load(tmp_path / "resumed" / f"weights-rank{rank}.pt"), 1e-6)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_rank_that_dies_ends_the_run_with_a_clear_error(tmp_path, tiny_model):
    port = free_port()
    processes = []
    for rank in (0, 1):
        env = {**environment(), "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
               "MASTER_PORT": str(port)}  # fmt: skip
        command = [sys.executable, str(WORKER), "--model", tiny_model, "--out", str(tmp_path / "run"), "--steps", "4", "--die-at-step",
                   "2", "--timeout", "30"]  # fmt: skip
        processes.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    started = time.monotonic()
    _, rank0_err = processes[0].communicate(timeout=300)
    processes[1].communicate(timeout=60)
    assert processes[1].returncode == 3  # the rank that died
    assert processes[0].returncode not in (0, None)
    assert "DistributedError" in rank0_err and "Another rank probably died" in rank0_err, rank0_err[-2000:]
    assert time.monotonic() - started < 300
    # the checkpoint of step 1 is intact: a run resumes from it
    assert (tmp_path / "run" / "checkpoints" / "step-1").is_dir()


def test_the_train_command_runs_under_torchrun(tmp_path, tiny_model):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "judgegym", "train",
               "--model", tiny_model, "--steps", "1", "--output-dir", str(tmp_path / "run"), "--env-arg", "n_products=20",
               "--env-arg", "n_worlds=1", "--set", "scenarios_per_step=2", "--set", "group_size=2", "--set", "max_new_tokens=4",
               "--set", "max_turns=1", "--set", "eval_steps=0", "--set", "save_steps=1"]  # fmt: skip
    done = subprocess.run(command, env=environment(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [r["step"] for r in metrics(tmp_path / "run")] == [1]
    assert (tmp_path / "run" / "checkpoints" / "step-1").is_dir() and (tmp_path / "run" / "last").is_dir()
    assert done.stdout.count("metrics, checkpoints and adapters in") == 1  # rank 0 reports


def test_the_throughput_script_reports_per_rank_under_torchrun(tmp_path):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m",
               "judgegym.benchmarks.train_throughput", "--tiny", "--scenarios", "2", "--group-size", "2", "--max-new-tokens", "4",
               "--steps", "2", "--json", str(tmp_path / "t.json")]  # fmt: skip
    done = subprocess.run(command, env=environment(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in (0, 1):
        report = json.loads((tmp_path / f"t.rank{rank}.json").read_text())
        assert report["rank"] == rank and report["world_size"] == 2 and report["steps_per_minute"] > 0 and report["peak_rss_mb"] > 0
    assert done.stdout.count("steps/min") == 2 and "rank 1 of 2" in done.stdout
