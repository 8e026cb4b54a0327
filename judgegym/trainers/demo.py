"""The CPU demo: GRPO with a LoRA adapter teaches the embedded SmolLM2-135M-Instruct to answer
RagSupport-v0 questions, and held-out scenarios measure it before and after.

The full task (search, read, answer, cite) is beyond a 135M model in minutes of CPU time: it
does not call tools and its sampled answers almost never state the gold fact, so the
verifier's reward has no spread and GRPO has nothing to learn from. The demo shapes the task,
and adds a dense term to the reward (the held-out number is the env's own `RagVerifier`):

- answer-only: ``max_tool_calls=0`` offers no tools, ``prefetch_k=1`` puts the best-matching
  article into the question (the agent sees what a perfect first search would return);
- ``single_fact`` questions only, answered in one sentence (``max_new_tokens=32``) built from
  the article's words;
- sampling at temperature 0.7, where the model's replies are coherent enough to compare;
- a training reward that adds the offline `GroundingJudge` to the verifier (half each): the
  verifier alone is almost always 0 for this model, so groups are flat; grounding gives
  partial credit to answers made of the article's sentences about the question, the way to
  the facts the verifier checks. The held-out eval uses the verifier alone.

A first version without the grounding half, and with an example reply in the system prompt,
taught the model to copy the example's "Question: ... Article: [id]" layout with the real
article id: citation rose, recall fell to 0, and the verifier's reward still went up (from
0.06 to 0.14). Keep an eye on the components, not only the reward.

`run_demo` trains, then compares the greedy held-out episodes of step 0 and of the last step
(the same test-split scenarios) with a paired bootstrap interval of the difference.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..trajectory import Trajectory, read_jsonl
from .grpo import GRPOConfig, GRPOTrainer

DEMO_SYSTEM_PROMPT = (
    "You are the customer-support assistant of {company}. Answer the customer's question in one sentence, "
    "using the exact words and figures of the article, then give the article's id in square brackets."
)
"""The demo's system prompt ("{company}" is filled in by the env)."""

DEMO_JUDGE = "0.5*verifier+0.5*grounding"
"""The training reward: the env's verifier plus the offline `GroundingJudge`, which gives
partial credit to answers built from the article's sentences about the question."""

DEMO_COMPONENTS = ("recall", "citation", "grounding")
"""Verifier components the demo reports beside the reward."""


def demo_config(output_dir: str | Path = "runs/demo", *, steps: int = 10, eval_episodes: int = 32, seed: int = 0) -> GRPOConfig:
    """The demo's `GRPOConfig`: B=4 scenarios x G=4 answers per step rewarded by `DEMO_JUDGE`,
    LoRA r=16 at learning rate 5e-4, held-out eval of `eval_episodes` test scenarios by the
    verifier alone at step 0, halfway and at the end. See the module docstring for why the
    task is shaped this way."""
    return GRPOConfig(
        env_id="RagSupport-v0",
        env_kwargs={"prefetch_k": 1, "max_tool_calls": 0, "kinds": ["single_fact"], "system_prompt": DEMO_SYSTEM_PROMPT},
        judge=DEMO_JUDGE,
        eval_judge="verifier",
        model="smollm2-135m",
        scenarios_per_step=4,
        group_size=4,
        micro_batch_size=8,
        gradient_checkpointing=True,  # same gradients; peak memory about 4.6 GB instead of 7.8 GB, train time +50%
        mixed_precision="no",  # the README's figures are float32's, on every CPU alike
        max_new_tokens=32,
        max_turns=1,
        temperature=0.7,
        learning_rate=5e-4,
        max_steps=steps,
        eval_steps=max(1, steps // 2),
        eval_episodes=eval_episodes,
        save_steps=max(1, steps // 2),
        seed=seed,
        output_dir=str(output_dir),
    )


@dataclass
class HeldOut:
    """One held-out eval: the mean reward and component means over its episodes."""

    step: int
    reward: float
    components: dict[str, float]
    trajectories: list[Trajectory]


@dataclass
class DemoResult:
    """Before (step 0) and after (last step) on the same held-out scenarios."""

    before: HeldOut
    after: HeldOut
    difference: float
    """Mean of after - before, paired by scenario."""
    ci_low: float
    ci_high: float
    """95% paired bootstrap interval of `difference`."""
    improved: int
    worse: int
    """Scenarios whose reward went up / down."""
    plot: Path | None
    history: list[dict[str, Any]]

    def examples(self, n: int = 2) -> list[tuple[str, Trajectory, Trajectory]]:
        """Up to `n` scenarios whose reward went up the most: (question, before, after)."""
        pairs = sorted(
            zip(self.before.trajectories, self.after.trajectories, strict=True), key=lambda p: (p[0].reward or 0) - (p[1].reward or 0)
        )
        return [(_question(b), b, a) for b, a in pairs[:n] if (a.reward or 0) > (b.reward or 0)]


def run_demo(config: GRPOConfig | None = None, *, trainer: GRPOTrainer | None = None) -> DemoResult:
    """Train with `config` (default `demo_config()`; or the given `trainer`, already loaded),
    then compare the held-out episodes of step 0 and of the last step (read back from
    ``output_dir/eval``)."""
    from ..evaluation.compare import paired_changes

    config = trainer.config if trainer is not None else config or demo_config()
    if not config.eval_steps:
        raise ValueError("the demo compares held-out evals: eval_steps must be > 0")
    trainer = trainer or GRPOTrainer(config)
    history = trainer.train()
    before, after = _held_out(trainer.output_dir, 0), _held_out(trainer.output_dir, config.max_steps)
    keys = [(t.scenario_id, t.seed) for t in before.trajectories]
    if keys != [(t.scenario_id, t.seed) for t in after.trajectories]:
        raise RuntimeError("the two held-out evals played different scenarios; was eval_episodes changed on resume?")
    [change] = paired_changes(before.trajectories, after.trajectories, ["reward"])
    deltas = [(a.reward or 0.0) - (b.reward or 0.0) for b, a in zip(before.trajectories, after.trajectories, strict=True)]
    plot = trainer.output_dir / "reward.png"
    return DemoResult(
        before=before,
        after=after,
        difference=change.difference,
        ci_low=change.ci_low,
        ci_high=change.ci_high,
        improved=sum(d > 0 for d in deltas),
        worse=sum(d < 0 for d in deltas),
        plot=plot if plot.is_file() else None,
        history=history,
    )


def _held_out(output_dir: Path, step: int) -> HeldOut:
    path = output_dir / "eval" / f"step-{step}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"no held-out eval at step {step} ({path}); the run has no eval there")
    trajectories = sorted(read_jsonl(path), key=lambda t: (t.seed or 0, t.scenario_id))
    components = {name: float(np.mean([t.metrics.get(name, 0.0) for t in trajectories])) for name in DEMO_COMPONENTS}
    reward = float(np.mean([t.reward or 0.0 for t in trajectories]))
    return HeldOut(step=step, reward=reward, components=components, trajectories=trajectories)


def _question(trajectory: Trajectory) -> str:
    first_user = next((m.content or "" for m in trajectory.messages if m.role == "user"), "")
    return first_user.split("\n\n", 1)[0]


__all__ = ["DEMO_COMPONENTS", "DEMO_JUDGE", "DEMO_SYSTEM_PROMPT", "DemoResult", "HeldOut", "demo_config", "run_demo"]
