"""A short GRPO run of the tiny model, run by tests/test_trainer_distributed.py alone or as
one rank under torchrun. Samples depend on the prompt and the step's seed only
(`PromptSeededBackend`), so one process with B groups and N ranks with B/N groups each play
identical episodes and their updates can be compared."""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))

from judgegym.benchmarks.data_parallel import PromptSeededBackend  # noqa: E402
from judgegym.judges.base import JudgeScore, Verifier  # noqa: E402
from judgegym.trainers import GRPOConfig, GRPOTrainer  # noqa: E402


class HashJudge(Verifier):
    """Distinct answers get distinct rewards; `die_at_step` makes rank 1 exit while judging."""

    def __init__(self, die_at_step: int | None):
        self.die_at_step, self.calls = die_at_step, 0

    def verify(self, trajectory):
        self.calls += 1
        if self.die_at_step is not None and os.environ.get("RANK") == "1" and self.calls > (self.die_at_step - 1) * 4:
            os._exit(3)  # a rank dying mid-step, as a killed process does
        score = random.Random(f"{trajectory.seed}/{trajectory.final_answer}").random()
        return JudgeScore(score=score, components={"hash": score})


class Trainer(GRPOTrainer):
    def _make_backend(self):
        return PromptSeededBackend(self.model, self.tokenizer, self.device)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--die-at-step", type=int, default=None)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = GRPOConfig(
        model=args.model,
        mixed_precision="no",
        env_kwargs={"n_products": 20, "n_worlds": 1},
        scenarios_per_step=4,
        group_size=2,
        micro_batch_size=2,
        max_new_tokens=8,
        max_turns=2,
        max_steps=args.steps,
        eval_steps=0,
        save_steps=1,
        scale_rewards="batch",
        learning_rate=1e-3,
        output_dir=args.out,
        resume=args.resume,
        dist_timeout_s=args.timeout,
    )
    trainer = Trainer(config, judge=HashJudge(args.die_at_step))
    try:
        trainer.train()
    finally:
        trainer.close()
    weights = {name: p.detach().clone() for name, p in trainer.model.named_parameters() if p.requires_grad}
    torch.save(weights, Path(args.out) / f"weights-rank{trainer.ranks.rank}.pt")
    (Path(args.out) / f"episodes-rank{trainer.ranks.rank}.json").write_text(
        json.dumps([e.trajectory.final_answer for e in trainer.last_rollout]), encoding="utf-8"
    )


if __name__ == "__main__":
    main()
