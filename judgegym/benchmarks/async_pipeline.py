"""Synchronous against asynchronous GRPO over an inference server: steps per minute with
``max_off_policy_steps`` k = 0 (sample, then train) and k = 1 (sample the next step while this
one trains), in one run, on the same scenarios, seeds and server.

The server is the stand-in (`judgegym.testing.vllm_server`) in a child process on its
own thread(s); each setting's trainer runs in a fresh child process of its own (so neither
inherits the other's warm caches) on its own thread(s). Both pieces are real: the server samples the
policy model and serves each step's LoRA adapter over HTTP as vLLM would, and the trainer is
`GRPOTrainer` with ``backend="server"``. The task is the CPU demo's (RagSupport-v0, one
prefetched article, one-sentence answers) with its training reward. On two cores:

    python -m judgegym.benchmarks.async_pipeline --steps 8 --json async.json

What k buys is the overlap of sampling (and judging) with training: a synchronous step takes
``rollout + train``, an asynchronous one about ``max(rollout, train)``, so the ratio is near
2 when the two are balanced and near 1 when one dominates; the script prints the time of
each so the ratio can be read against that model. The reward curves should agree within
noise (k = 1 trains on samples one version old, with the truncated importance-sampling
correction on).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..testing.vllm_server import spawn

MODULE = "judgegym.benchmarks.async_pipeline"


def run(model: str, *, lag: int, steps: int, url: str, judge: str, output_dir: Path, max_new_tokens: int, seed: int) -> dict[str, Any]:
    """Train `steps` steps against the server at `url` with ``max_off_policy_steps = lag``;
    returns the timings and rewards."""
    from ..trainers import GRPOTrainer
    from ..trainers.demo import demo_config

    config = replace(
        demo_config(output_dir, steps=steps, seed=seed),
        model=model,
        judge=judge,
        backend="server",
        server_urls=[url],
        max_off_policy_steps=lag,
        max_new_tokens=max_new_tokens,
        gradient_checkpointing=False,
        eval_steps=0,
        save_steps=0,
    )
    trainer = GRPOTrainer(config)
    started = time.perf_counter()
    records = trainer.train()
    wall = time.perf_counter() - started
    trainer.close()
    steady = records[1:] or records  # the first step also warms caches up

    def median(key: str) -> float:
        values = [r[key] for r in steady if r.get(key) is not None]
        return statistics.median(values) if values else float("nan")

    return {
        "max_off_policy_steps": lag,
        "steps": steps,
        "wall_s": wall,
        "steps_per_min": 60 * steps / wall,
        "median_step_s": median("step_time_s"),
        "median_generate_s": median("timing/generate_s"),
        "median_judge_s": median("timing/judge_s"),
        "median_train_s": median("timing/train_s"),
        "median_sync_weights_s": median("timing/sync_weights_s"),
        "median_trainer_idle_s": median("timing/trainer_idle_s"),
        "median_sampler_idle_s": median("timing/sampler_idle_s"),
        "staleness": [r.get("async/staleness", 0) for r in records],
        "reward": [r["reward"] for r in records],
        "records": records,
        "mean_reward": statistics.fmean(r["reward"] for r in records),
        "sampler_logp_difference_mean": median("sampling/sampling_logp_difference/mean"),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m", help="policy: an embedded name or a transformers folder")
    parser.add_argument("--steps", type=int, default=8, help="GRPO steps per setting")
    parser.add_argument("--lags", default="0,1", help="values of max_off_policy_steps to compare, in order")
    parser.add_argument("--judge", default="0.5*verifier+0.5*grounding", help="training judge spec (the demo's by default)")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--server-threads", type=int, default=1, help="torch threads of the server process")
    parser.add_argument("--trainer-threads", type=int, default=1, help="torch threads of the trainer")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # URL,LAG,OUT: one setting, in a child process
    args = parser.parse_args(argv)

    if args.worker:
        import torch

        torch.set_num_threads(args.trainer_threads)
        url, lag, out = args.worker.split(",", 2)
        result = run(args.model, lag=int(lag), steps=args.steps, url=url, judge=args.judge, output_dir=Path(out) / "run",
                     max_new_tokens=args.max_new_tokens, seed=args.seed)  # fmt: skip
        (Path(out) / "result.json").write_text(json.dumps(result), encoding="utf-8")
        return
    lags = [int(x) for x in args.lags.split(",")]
    process, url = spawn(args.model, threads=args.server_threads, extra_args=["--logprobs-mode", "processed_logprobs"])
    results = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            for lag in lags:
                print(f"max_off_policy_steps={lag}: {args.steps} steps against {url} ...", flush=True)
                out = Path(folder) / f"k{lag}"
                out.mkdir()
                command = [sys.executable, "-m", MODULE, "--worker", f"{url},{lag},{out}", "--model", args.model, "--steps",
                           str(args.steps), "--judge", args.judge, "--max-new-tokens", str(args.max_new_tokens), "--trainer-threads",
                           str(args.trainer_threads), "--seed", str(args.seed)]  # fmt: skip
                env = {**os.environ, "OMP_NUM_THREADS": str(args.trainer_threads)}
                subprocess.run(command, env=env, check=True)
                result = json.loads((out / "result.json").read_text(encoding="utf-8"))
                results.append(result)
                print(
                    f"  {result['steps_per_min']:.2f} steps/min, median step {result['median_step_s']:.1f} s (generate "
                    f"{result['median_generate_s']:.1f} s, judge {result['median_judge_s']:.1f} s, train {result['median_train_s']:.1f} s, "
                    f"trainer idle {result['median_trainer_idle_s']:.1f} s), mean reward {result['mean_reward']:.3f}",
                    flush=True,
                )
    finally:
        process.terminate()
        process.wait(timeout=30)
    base = results[0]
    for result in results[1:]:
        result["speedup_vs_first"] = result["steps_per_min"] / base["steps_per_min"]
        print(f"k={result['max_off_policy_steps']} / k={base['max_off_policy_steps']}: {result['speedup_vs_first']:.2f}x steps/min")
    report = {
        "benchmark": "async_pipeline",
        "date": datetime.date.today().isoformat(),
        "machine": {"platform": platform.platform(), "python": sys.version.split()[0]},
        "settings": vars(args) | {"json": str(args.json) if args.json else None},
        "results": results,
    }
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
