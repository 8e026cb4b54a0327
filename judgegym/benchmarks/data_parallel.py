"""Data-parallel GRPO on CPU: one rank against two (torchrun, gloo), the same scenarios and
samples, in one run. Reports seconds per step, the time each rank spends in collectives
(the gradient all-reduce and the reductions of counts and metrics, waiting for the slower
rank included), and how far the two runs' weights are apart after the last step.

    python -m judgegym.benchmarks.data_parallel --steps 3 --json ddp.json

The policy is the embedded SmolLM2-135M with LoRA on the CPU demo's task (RagSupport-v0, one
prefetched article, one-sentence answers), B = 4 scenarios x G = 2, one torch thread per
rank. Samples must not depend on how the groups are split, so each prompt is sampled alone,
seeded by its own content (`PromptSeededBackend`); the reward is `AnswerHashJudge` (a hash of
the answer: every group has spread, so every step trains). Both choices make the two runs
comparable; neither is how one trains for real.
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
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..trainers.rollout import TransformersBackend
from ..trainers.server_rollout import prompt_seed

MODULE = "judgegym.benchmarks.data_parallel"


class PromptSeededBackend(TransformersBackend):
    """The transformers backend, one prompt at a time, each seeded by its content (the j-th
    copy of a prompt in a call with seed + j, as a server seeds the n samples of a request):
    a prompt's sample is then the same whichever rank plays it and whatever else is in the
    batch. Slower than batched sampling; for comparisons."""

    def generate(self, prompts: Any, sampling: Any) -> tuple[list[list[int]], list[list[float]]]:
        ids: list[list[int]] = []
        logprobs: list[list[float]] = []
        copies: dict[tuple[int, ...], int] = {}
        for prompt in prompts:
            key = tuple(prompt)
            copies[key] = copies.get(key, -1) + 1
            row_ids, row_logprobs = super().generate([prompt], replace(sampling, seed=prompt_seed(sampling.seed, prompt) + copies[key]))
            ids += row_ids
            logprobs += row_logprobs
        return ids, logprobs


def worker(out: Path, steps: int, model: str) -> None:
    """One rank's run (under torchrun): train, then write the metrics and the weights."""
    import torch

    from ..trainers import GRPOTrainer
    from ..trainers.demo import demo_config
    from .train_throughput import AnswerHashJudge

    class Trainer(GRPOTrainer):
        def _make_backend(self) -> Any:
            return PromptSeededBackend(self.model, self.tokenizer, self.device)

    torch.set_num_threads(1)
    config = replace(
        demo_config(out, steps=steps),
        model=model,
        group_size=2,
        micro_batch_size=2,
        gradient_checkpointing=False,
        eval_steps=0,
        save_steps=0,
        scale_rewards="batch",
    )
    trainer = Trainer(config, judge=AnswerHashJudge())
    records = trainer.train()
    trainer.close()
    if trainer.ranks.is_main:
        weights = {name: p.detach() for name, p in trainer.model.named_parameters() if p.requires_grad}
        torch.save(weights, out / "weights.pt")
        (out / "records.json").write_text(json.dumps(records), encoding="utf-8")


def launch(ranks: int, out: Path, steps: int, model: str) -> list[dict[str, Any]]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(ranks), "-m", MODULE]
    subprocess.run([*command, "--worker", "--out", str(out), "--steps", str(steps), "--model", model], env=env, check=True)
    return json.loads((out / "records.json").read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.out, args.steps, args.model)
        return

    import torch

    results = []
    with tempfile.TemporaryDirectory() as folder:
        for ranks in (1, 2):
            out = Path(folder) / f"ranks-{ranks}"
            print(f"{ranks} rank(s): {args.steps} steps ...", flush=True)
            records = launch(ranks, out, args.steps, args.model)
            steady = records[1:] or records
            results.append(
                {
                    "ranks": ranks,
                    "median_step_s": statistics.median(r["step_time_s"] for r in steady),
                    "median_generate_s": statistics.median(r["timing/generate_s"] for r in steady),
                    "median_train_s": statistics.median(r["timing/train_s"] for r in steady),
                    "median_collectives_s": statistics.median(r.get("timing/collectives_s", 0.0) for r in steady),
                    "loss": [r["loss"] for r in records],
                    "grad_norm": [r["grad_norm"] for r in records],
                    "num_trained_tokens": [r["num_trained_tokens"] for r in records],
                }
            )
            last = results[-1]
            print(f"  median step {last['median_step_s']:.1f} s, collectives {last['median_collectives_s']:.2f} s", flush=True)
        one, two = (torch.load(Path(folder) / f"ranks-{r}" / "weights.pt") for r in (1, 2))
        difference = max(float((one[k] - two[k]).abs().max()) for k in one)
        moved = max(float(v.abs().max()) for k, v in one.items() if "lora_B" in k)
    print(f"largest weight difference after {args.steps} steps: {difference:.2e} (largest lora_B weight {moved:.2e})")
    print(f"2 ranks / 1 rank: {results[0]['median_step_s'] / results[1]['median_step_s']:.2f}x steps per minute")
    if args.json:
        report = {
            "benchmark": "data_parallel",
            "date": datetime.date.today().isoformat(),
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
            "steps": args.steps,
            "results": results,
            "max_weight_difference": difference,
            "max_lora_b": moved,
        }
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
