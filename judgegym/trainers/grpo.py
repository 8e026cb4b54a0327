"""GRPO for multi-turn, tool-using agents: `GRPOConfig` (every knob, with its help) and
`GRPOTrainer`. One optimizer step reads top to bottom in `GRPOTrainer.train_step`: rollouts ->
judge -> group advantages -> clipped policy loss over sampled tokens -> AdamW.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from ..agents.batching import Sampling
from ..judges.base import Judge, run_sync, score_groups
from ..progress import RunProgress, format_seconds
from ..trajectory import Group, Trajectory, write_jsonl
from .advantages import ScaleRewards, group_advantages
from .checkpoint import (
    TrainerState,
    atomic_directory,
    latest_checkpoint,
    load_checkpoint,
    prune_checkpoints,
    remove_temp_dirs,
    save_checkpoint,
    save_weights,
    truncate_metrics,
)
from .loss import ImportanceSamplingMode, LossType, importance_sampling_weights, policy_loss, selective_log_softmax
from .rollout import RolloutBackend, RolloutEpisode, TransformersBackend, _pad_id, make_envs, play_groups
from .tokenize import TokenTrajectory
from .vllm_rollout import LORA_RANKS, VLLMBackend, require_vllm

log = logging.getLogger("judgegym.trainers")

DEFAULT_LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""Every linear projection of attention and MLP in Llama-style models (SmolLM2, Qwen, Mistral)."""

LORA_LEARNING_RATE = 1e-4
FULL_LEARNING_RATE = 1e-5

_SEED_STRIDE = 1_000_003
"""Scenario seeds of run seed s start at s * stride: different run seeds see different scenarios."""

_RESUMABLE_CHANGES = {
    "resume", "max_steps", "output_dir", "save_steps", "keep_last", "eval_steps", "eval_episodes", "tensorboard",
    "gpu_memory_utilization", "max_model_len",
}  # fmt: skip
"""Config fields a resumed run may change without a warning."""


def _field(default: Any = None, help: str = "", *, factory: Any = None) -> Any:  # noqa: A002  (TRL's spelling)
    if factory is not None:
        return field(default_factory=factory, metadata={"help": help})
    return field(default=default, metadata={"help": help})


@dataclass
class GRPOConfig:
    """Everything a GRPO run is made of. ``fields(GRPOConfig)[i].metadata["help"]`` holds each
    field's help (what a command line shows). Names follow TRL's ``GRPOConfig`` where it has
    the same knob (``epsilon``, ``epsilon_high``, ``beta``, ``loss_type``, ``scale_rewards``,
    ``max_grad_norm``, ``warmup_steps``, ...); TRL's ``num_generations`` is `group_size`."""

    # -- task ---------------------------------------------------------------------------
    env_id: str = _field("RagSupport-v0", "Gymnasium id of the env to train on (a judgegym ChatEnv).")
    env_kwargs: dict[str, Any] = _field(
        help="Keyword arguments for gym.make, e.g. {'prefetch_k': 2}. Not max_turns (use max_turns) or defer_judging (always on).",
        factory=dict,
    )
    judge: str = _field(
        "verifier", "Training judge spec (judgegym.judges.make_judge): 'verifier', 'grounding', 'learned', 'ruler:MODEL', ..."
    )
    eval_judge: str = _field("verifier", "Pointwise judge spec for held-out eval (a relative judge cannot score lone episodes).")
    # -- model --------------------------------------------------------------------------
    model: str = _field("smollm2-135m", "Policy: an embedded model name (smollm2-135m), a transformers folder, or a hub id.")
    dtype: str = _field("auto", "Weights dtype: 'auto' (float32 on CPU, bfloat16 on GPU), 'float32', 'bfloat16', 'float16'.")
    device: str = _field("auto", "'auto' (cuda when available, else cpu), 'cpu', 'cuda', 'cuda:1', ...")
    gradient_checkpointing: bool = _field(False, "Recompute activations in the backward pass: less memory, about 30% slower.")
    # -- LoRA ---------------------------------------------------------------------------
    use_lora: bool = _field(True, "Train a LoRA adapter (peft) instead of all weights; the KL reference is then free.")
    lora_r: int = _field(16, "LoRA rank.")
    lora_alpha: int = _field(32, "LoRA scaling numerator (the update is scaled by alpha / r).")
    lora_dropout: float = _field(0.0, "Dropout on the LoRA input. Above 0 the trainer's logprobs no longer equal the sampler's.")
    lora_target_modules: list[str] | str = _field(
        help="Modules that get adapters: names, or 'all-linear' (peft: every linear layer but the output head).",
        factory=lambda: list(DEFAULT_LORA_TARGETS),
    )
    # -- optimisation -------------------------------------------------------------------
    learning_rate: float | None = _field(None, f"AdamW learning rate; None: {LORA_LEARNING_RATE:g} with LoRA, {FULL_LEARNING_RATE:g} full.")
    weight_decay: float = _field(0.0, "AdamW weight decay.")
    max_grad_norm: float = _field(1.0, "Clip the global gradient norm to this before each step (0 disables clipping).")
    warmup_steps: int = _field(0, "Steps of linear learning-rate warmup.")
    lr_scheduler: Literal["constant", "linear", "cosine"] = _field(
        "constant", "Learning-rate schedule after warmup (transformers.get_scheduler)."
    )
    max_steps: int = _field(100, "Optimizer steps to train for.")
    # -- batch --------------------------------------------------------------------------
    scenarios_per_step: int = _field(4, "B: scenarios (groups) per optimizer step, taken in order from the train split.")
    group_size: int = _field(8, "G: episodes per scenario (TRL's num_generations); advantages are relative within a group.")
    micro_batch_size: int = _field(4, "Sequences per forward/backward pass; gradients accumulate over the whole step.")
    # -- generation ---------------------------------------------------------------------
    max_new_tokens: int = _field(256, "Most tokens the policy samples per assistant turn.")
    max_turns: int = _field(6, "Most assistant turns per episode (passed to the env, which truncates the episode there).")
    temperature: float = _field(1.0, "Sampling temperature (> 0); the loss uses the same temperature.")
    top_p: float = _field(1.0, "Nucleus sampling. Keep 1.0: the logprobs do not model the truncation.")
    backend: Literal["transformers", "vllm"] = _field(
        "transformers",
        "Rollout sampler: 'transformers' (the training model's generate, CPU or GPU) or 'vllm' (an in-process vLLM engine on "
        "the same GPU serving the LoRA adapter; needs the gpu extra and use_lora).",
    )
    gpu_memory_utilization: float = _field(
        0.3, "backend='vllm': share of the GPU's memory vLLM takes (weights + KV cache); the trainer's model and optimizer use the rest."
    )
    max_model_len: int | None = _field(
        None, "backend='vllm': longest sequence (prompt + completion) vLLM serves; None: the model's limit. Lower it to save KV memory."
    )
    # -- loss ---------------------------------------------------------------------------
    epsilon: float = _field(0.2, "Lower clip range of the probability ratio: r >= 1 - epsilon.")
    epsilon_high: float | None = _field(None, "Upper clip range (DAPO clip-higher, e.g. 0.28); None: epsilon.")
    loss_type: LossType = _field("dapo", "'dapo' (token mean over the step), 'grpo' (sequence mean), 'dr_grpo' (constant normaliser).")
    beta: float = _field(0.0, "KL coefficient (k3 estimator) toward the base model; needs use_lora (reference = adapter disabled).")
    scale_rewards: ScaleRewards = _field("group", "Advantage scaling: 'group' std, 'batch' std, or 'none' (Dr. GRPO).")
    importance_sampling: ImportanceSamplingMode | None = _field(
        None, "Correct sampler/trainer logprob mismatch per token: 'truncate' (TIS), 'mask' (MIS) or None (off)."
    )
    importance_sampling_cap: float = _field(2.0, "Cap of the importance ratio pi_trainer / pi_sampler.")
    # -- run ----------------------------------------------------------------------------
    seed: int = _field(0, "Seeds the LoRA init, the scenario order and the sampling.")
    output_dir: str = _field("runs/grpo", "Where metrics.jsonl, checkpoints/, best/, last/ and reward.png go.")
    save_steps: int = _field(50, "Checkpoint every this many steps (0: never).")
    keep_last: int | None = _field(2, "Checkpoints to keep (older ones are deleted); None or 0 keeps all.")
    eval_steps: int = _field(50, "Held-out eval every this many steps, at step 0 and at the end (0: no eval).")
    eval_episodes: int = _field(16, "Episodes per held-out eval (seeds 0..n-1 of eval_split, greedy decoding).")
    eval_split: str = _field("test", "The env split held-out eval plays.")
    tensorboard: bool = _field(False, "Also write TensorBoard scalars to output_dir/tensorboard (needs the tensorboard package).")
    resume: bool | str = _field(False, "True: continue from the newest checkpoint in output_dir (if any); a path: that checkpoint.")

    def __post_init__(self) -> None:
        problems = []
        positive = ("max_steps", "scenarios_per_step", "group_size", "micro_batch_size", "max_new_tokens", "max_turns", "eval_episodes")
        problems += [f"{name} must be >= 1, got {getattr(self, name)}" for name in positive if getattr(self, name) < 1]
        nonnegative = ("save_steps", "eval_steps", "warmup_steps", "weight_decay", "max_grad_norm", "beta", "lora_dropout")
        problems += [f"{name} must be >= 0, got {getattr(self, name)}" for name in nonnegative if getattr(self, name) < 0]
        if self.temperature <= 0:
            problems.append(f"temperature must be > 0 (training samples), got {self.temperature}")
        if not 0 < self.top_p <= 1:
            problems.append(f"top_p must be in (0, 1], got {self.top_p}")
        if self.lr_scheduler not in ("constant", "linear", "cosine"):
            problems.append(f"lr_scheduler must be 'constant', 'linear' or 'cosine', got {self.lr_scheduler!r}")
        if self.loss_type not in ("dapo", "grpo", "dr_grpo"):
            problems.append(f"loss_type must be 'dapo', 'grpo' or 'dr_grpo', got {self.loss_type!r}")
        if self.scale_rewards not in ("group", "batch", "none"):
            problems.append(f"scale_rewards must be 'group', 'batch' or 'none', got {self.scale_rewards!r}")
        if self.importance_sampling not in (None, "truncate", "mask"):
            problems.append(f"importance_sampling must be 'truncate', 'mask' or None, got {self.importance_sampling!r}")
        if self.beta > 0 and not self.use_lora:
            problems.append("beta > 0 needs use_lora=True: the KL reference is the base model with the adapter disabled (no second copy)")
        if self.backend not in ("transformers", "vllm"):
            problems.append(f"backend must be 'transformers' or 'vllm', got {self.backend!r}")
        if not 0 < self.gpu_memory_utilization <= 1:
            problems.append(f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}")
        if self.max_model_len is not None and self.max_model_len < 1:
            problems.append(f"max_model_len must be >= 1 or None, got {self.max_model_len}")
        if self.backend == "vllm" and not self.use_lora:
            problems.append(
                "backend='vllm' needs use_lora=True: the trained weights reach vLLM as a LoRA adapter after each step, and vLLM has "
                "no stable public API to load full weights into a running engine"
            )
        if self.backend == "vllm" and self.use_lora and self.lora_r > LORA_RANKS[-1]:
            problems.append(f"backend='vllm' serves LoRA ranks up to {LORA_RANKS[-1]}, got lora_r={self.lora_r}")
        if self.dtype not in ("auto", "float32", "bfloat16", "float16"):
            problems.append(f"dtype must be 'auto', 'float32', 'bfloat16' or 'float16', got {self.dtype!r}")
        owned = sorted({"max_turns", "defer_judging"} & set(self.env_kwargs))
        if owned:
            problems.append(f"env_kwargs may not set {owned}: the trainer sets them (use GRPOConfig.max_turns)")
        if problems:
            raise ValueError("invalid GRPOConfig: " + "; ".join(problems))

    @property
    def effective_learning_rate(self) -> float:
        """`learning_rate`, or its default for LoRA / full fine-tuning."""
        if self.learning_rate is not None:
            return self.learning_rate
        return LORA_LEARNING_RATE if self.use_lora else FULL_LEARNING_RATE

    def lora_config(self) -> Any:
        """The peft ``LoraConfig`` of this run (rank, alpha, dropout, target modules)."""
        from peft import LoraConfig

        return LoraConfig(
            r=self.lora_r,
            lora_alpha=self.lora_alpha,
            lora_dropout=self.lora_dropout,
            target_modules=self.lora_target_modules,
            task_type="CAUSAL_LM",
        )

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-able data (what checkpoints store)."""
        return json.loads(json.dumps(asdict(self), default=str))

    @classmethod
    def help(cls) -> dict[str, str]:
        """Field name -> help text."""
        return {f.name: f.metadata.get("help", "") for f in fields(cls)}


@dataclass
class _Batch:
    """A right-padded micro-batch; per-token tensors cover target positions ``start+1 .. L-1``."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    targets: torch.Tensor
    mask: torch.Tensor
    sampler_logprobs: torch.Tensor
    advantages: torch.Tensor
    keep: int
    """Logit positions the forward pass keeps (``logits_to_keep``): from the first prompt end on."""


class GRPOTrainer:
    """GRPO over a judgegym env: each step plays B scenarios x G episodes, judges each group,
    and takes one policy-gradient step on the sampled tokens.

    Args:
        config: the run.
        judge: a judge object to use instead of ``config.judge`` (e.g. a custom verifier).
        backend: a rollout backend instead of the one ``config.backend`` names.

    The model, optimizer, scheduler, (with ``config.resume``) the checkpoint and the rollout
    backend are loaded here, and the backend is given the current weights; `train` runs the
    remaining steps. ``config.backend="vllm"`` without vLLM installed raises ImportError
    before anything is loaded. Files under ``output_dir``: ``metrics.jsonl`` (one JSON object
    per step, see docs/trainer.md), ``config.json`` (the run's `GRPOConfig`),
    ``checkpoints/step-N/``, ``best/`` and ``last/`` (loadable weights), ``eval/step-N.jsonl``
    (held-out episodes), ``reward.png`` (and ``vllm/`` with the vLLM backend).
    """

    def __init__(self, config: GRPOConfig, *, judge: Judge | None = None, backend: RolloutBackend | None = None):
        self.config = config
        self.output_dir = Path(config.output_dir)
        self.checkpoints_dir = self.output_dir / "checkpoints"
        self.metrics_path = self.output_dir / "metrics.jsonl"
        if backend is None and config.backend == "vllm":
            require_vllm()  # fail before loading anything
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if config.device == "auto" else config.device
        if config.dtype == "auto":
            self.dtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        else:
            self.dtype = getattr(torch, config.dtype)
        _seed_everything(config.seed)
        if judge is None:
            from ..judges.specs import make_judge

            judge = make_judge(config.judge, env_id=config.env_id)
        self.judge = judge
        self.model, self.tokenizer = self._load_model()
        self.trainable = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.trainable, lr=config.effective_learning_rate, weight_decay=config.weight_decay)
        self.scheduler = _scheduler(config, self.optimizer)
        self.envs = make_envs(config.env_id, config.scenarios_per_step * config.group_size, config.env_kwargs, max_turns=config.max_turns)
        self.state = TrainerState()
        self.history: list[dict[str, Any]] = []
        """Metric records this trainer logged (also appended to metrics.jsonl)."""
        self.last_rollout: list[RolloutEpisode] = []
        """The episodes of the latest step (judged trajectories replace the unscored ones)."""
        self.resumed_from: Path | None = None
        self._prepare_output()
        # The run's settings beside its adapters: `judgegym eval --from-run DIR` plays the same env with them.
        (self.output_dir / "config.json").write_text(json.dumps(config.to_dict(), indent=2, default=str), encoding="utf-8")
        self.backend: RolloutBackend = backend or self._make_backend()
        self.backend.sync_weights(self.model)  # a resumed model differs from the weights the backend started with

    # -- public API ---------------------------------------------------------------------

    def scenario_seeds(self, cursor: int, count: int) -> list[int]:
        """The train-split scenario seeds at data-cursor positions ``cursor .. cursor+count-1``
        (`scenario_seeds` with this run's seed)."""
        return scenario_seeds(self.config.seed, cursor, count)

    def train(self) -> list[dict[str, Any]]:
        """Run steps ``state.step + 1 .. max_steps``; returns the metric records logged.

        Progress goes to stdout: in a terminal a bar labelled with the phase (eval before
        training, step k/N, eval at step k), elsewhere one line per step (reward, s/step,
        time left) and per held-out eval."""
        config = self.config
        writer = self._tensorboard()
        done_before = self.state.step
        try:
            with RunProgress(config.max_steps, label="GRPO", completed=self.state.step) as progress:
                if self.state.step == 0 and config.eval_steps:
                    self._log({"step": 0, **self._evaluate_and_keep_best(progress)}, writer)
                while self.state.step < config.max_steps:
                    progress.phase(f"step {self.state.step + 1}/{config.max_steps}: sampling, judging, updating")
                    record = self.train_step()
                    step = self.state.step
                    left = (config.max_steps - step) * progress.elapsed / max(1, step - done_before)
                    progress.update(step, note=f"reward {_fmt(record.get('reward'))}, {record['step_time_s']:.1f} s/step")
                    if not progress.live:
                        progress.line(
                            f"step {step}/{config.max_steps}: reward {_fmt(record.get('reward'))}, loss {_fmt(record.get('loss'))}, "
                            f"{record['step_time_s']:.1f} s/step, about {format_seconds(left)} left"
                        )
                    if config.eval_steps and (step % config.eval_steps == 0 or step == config.max_steps):
                        record.update(self._evaluate_and_keep_best(progress))
                    self._log(record, writer)  # before the checkpoint: a crash in between re-runs this step
                    if config.save_steps and step % config.save_steps == 0:
                        progress.phase(f"step {step}/{config.max_steps}: saving a checkpoint")
                        save_checkpoint(
                            self.checkpoints_dir,
                            model=self.model,
                            optimizer=self.optimizer,
                            scheduler=self.scheduler,
                            state=self.state,
                            config=config.to_dict(),
                        )
                        prune_checkpoints(self.checkpoints_dir, config.keep_last)
                progress.phase("saving the last adapter and the plot")
                with atomic_directory(self.output_dir / "last") as folder:
                    save_weights(self.model, folder, self.tokenizer)
                plot_rewards(self.metrics_path, self.output_dir / "reward.png", train_judge=config.judge, eval_judge=config.eval_judge)
                progress.phase("done")
        finally:
            if writer is not None:
                writer.close()
        return self.history

    def train_step(self) -> dict[str, Any]:
        """One GRPO step: play, judge, compute advantages, update. Returns its metrics."""
        config, started = self.config, time.perf_counter()
        step = self.state.step + 1
        seeds = self.scenario_seeds(self.state.cursor, config.scenarios_per_step)

        # 1. Rollouts: B scenarios x G members, sampled by the current policy.
        self.model.eval()
        sampling = Sampling(config.temperature, config.top_p, config.max_new_tokens, self._sampling_seed(step))
        episodes = play_groups(self.backend, self.tokenizer, self.envs, seeds, sampling)
        generated = time.perf_counter()

        # 2. Judge each group (a group whose judge fails is dropped and counted, never zeroed).
        members = [episodes[i * config.group_size : (i + 1) * config.group_size] for i in range(len(seeds))]
        groups = [Group(scenario_id=m[0].trajectory.scenario_id, trajectories=[e.trajectory for e in m]) for m in members]
        usage_before = _judge_usage(self.judge)
        judged = run_sync(score_groups(self.judge, groups, skip_failed=True))
        judge_metrics = {f"judge/{k}": v - usage_before.get(k, 0.0) for k, v in _judge_usage(self.judge).items()}
        for group_members, group in zip(members, judged, strict=True):
            for episode, trajectory in zip(group_members, group.trajectories, strict=True):
                episode.trajectory = trajectory
        self.last_rollout = episodes
        judged_at = time.perf_counter()

        # 3. Group-relative advantages; failed and zero-variance groups carry no signal.
        advantages = group_advantages(judged, config.scale_rewards)
        batch: list[tuple[TokenTrajectory, float]] = []
        for group_members, group_advantage, flat in zip(members, advantages.advantages, advantages.zero_std, strict=True):
            if group_advantage is not None and not flat:
                batch += [(e.tokens, a) for e, a in zip(group_members, group_advantage, strict=True)]

        # 4. One policy-gradient step over the sampled tokens of the kept groups.
        self.model.train()
        train_metrics = self._update(batch)
        self.model.eval()
        self.backend.sync_weights(self.model)
        self.state.step, self.state.cursor = step, self.state.cursor + len(seeds)
        finished = time.perf_counter()

        record: dict[str, Any] = {"step": step}
        record.update({k: advantages.metrics()[k] for k in ("reward", "reward_std", "frac_reward_zero_std")})
        record.update(_reward_components(groups, judged))
        record.update(_episode_metrics(episodes))
        record.update(train_metrics)
        record.update(judge_metrics)
        record["num_failed_groups"] = advantages.n_failed
        record["num_zero_std_groups"] = advantages.n_zero_std
        record["timing/generate_s"] = generated - started
        record["timing/judge_s"] = judged_at - generated
        record["timing/train_s"] = finished - judged_at
        record["step_time_s"] = finished - started
        return record

    def evaluate(self, on_episode: Callable[[Trajectory], None] | None = None) -> dict[str, float]:
        """Held-out eval of the current policy: ``eval_episodes`` greedy episodes of
        ``eval_split`` scored by ``eval_judge``; returns ``eval/reward`` (mean),
        ``eval/success`` (share at or above the success threshold), ``eval/failed`` and
        ``eval/<metric>``, the mean of each judge component and episode counter (e.g.
        ``eval/recall``). The judged episodes go to ``output_dir/eval/step-N.jsonl``;
        `on_episode` is called with each as it finishes."""
        from ..agents.hf import HFAgent
        from ..evaluation import evaluate, summarize

        config = self.config
        agent = HFAgent(
            config.model,
            model_obj=self.model,
            tokenizer_obj=self.tokenizer,
            device=self.device,
            max_tokens=config.max_new_tokens,
            name=f"grpo-step-{self.state.step}",
        )
        env_kwargs = {**config.env_kwargs, "split": config.eval_split, "max_turns": config.max_turns}
        concurrency = min(config.eval_episodes, 16)
        run = run_sync(
            evaluate(
                config.env_id,
                agent,
                episodes=config.eval_episodes,
                env_kwargs=env_kwargs,
                judge=config.eval_judge,
                concurrency=concurrency,
                on_episode=on_episode,
            )
        )
        if not run.trajectories:
            raise RuntimeError(f"every eval episode failed; the first: {run.failed[0][2] if run.failed else '?'}")
        write_jsonl(self.output_dir / "eval" / f"step-{self.state.step}.jsonl", run.trajectories)
        summary = summarize(run.trajectories, failed=len(run.failed))
        means = {f"eval/{name}": value for name, value in summary.components.items() if math.isfinite(value)}
        return {**means, "eval/reward": summary.mean_reward, "eval/success": summary.success_rate, "eval/failed": float(len(run.failed))}

    # -- the update ---------------------------------------------------------------------

    def _update(self, batch: list[tuple[TokenTrajectory, float]]) -> dict[str, Any]:
        """Accumulate the loss of every micro-batch, clip, and step the optimizer."""
        config = self.config
        learning_rate = self.scheduler.get_last_lr()[0]
        num_tokens = sum(tokens.num_sampled for tokens, _ in batch)
        metrics: dict[str, Any] = {
            "loss": 0.0,
            "grad_norm": 0.0,
            "learning_rate": learning_rate,
            "num_trained_sequences": len(batch),
            "num_trained_tokens": num_tokens,
            "entropy": math.nan,
            "clip_ratio/low_mean": math.nan,
            "clip_ratio/high_mean": math.nan,
            "clip_ratio/region_mean": math.nan,
            "sampling/sampling_logp_difference/mean": math.nan,
            "sampling/sampling_logp_difference/max": math.nan,
        }
        if config.beta > 0:
            metrics["kl"] = math.nan
        self.optimizer.zero_grad(set_to_none=True)
        if num_tokens == 0:  # every group failed or was flat: nothing to learn this step
            _step_scheduler_only(self.scheduler)
            return metrics

        sums: dict[str, float] = defaultdict(float)
        max_diff = 0.0
        for start in range(0, len(batch), config.micro_batch_size):
            micro = _pad_batch(batch[start : start + config.micro_batch_size], _pad_id(self.tokenizer), self.device)
            logits = self._logits(micro)
            logprobs = selective_log_softmax(logits, micro.targets, config.temperature)
            ref_logprobs = None
            if config.beta > 0:
                with torch.no_grad(), self.model.disable_adapter():
                    ref_logprobs = selective_log_softmax(self._logits(micro), micro.targets, config.temperature)
            weights = None
            if config.importance_sampling:
                weights, is_metrics = importance_sampling_weights(
                    logprobs.detach(),
                    micro.sampler_logprobs,
                    micro.mask,
                    mode=config.importance_sampling,
                    cap=config.importance_sampling_cap,
                )
                n = float(micro.mask.sum())
                for key, value in is_metrics.items():
                    if key.endswith("max_abs"):
                        sums[key] = max(sums[key], value)
                    else:
                        sums[key] += value * n
            loss, loss_metrics = policy_loss(
                logprobs,
                None,  # single update per rollout: pi_old is the current policy (ratio 1, as TRL with num_iterations=1)
                micro.advantages,
                micro.mask,
                epsilon=config.epsilon,
                epsilon_high=config.epsilon_high,
                loss_type=config.loss_type,
                beta=config.beta,
                ref_logprobs=ref_logprobs,
                num_items_in_batch=num_tokens,
                num_sequences_in_batch=len(batch),
                max_completion_length=config.max_turns * config.max_new_tokens,
                importance_weights=weights,
            )
            loss.backward()
            with torch.no_grad():
                active = micro.mask.bool()
                n = float(active.sum())
                sampled_logits = logits[active].float() / config.temperature
                sums["entropy"] += float(_entropy(sampled_logits).sum())
                diff = (logprobs.detach() - micro.sampler_logprobs)[active].abs()
                sums["logp_diff"] += float(diff.sum())
                max_diff = max(max_diff, float(diff.max()) if diff.numel() else 0.0)
            sums["loss"] += loss.item()
            for key in ("clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean", "kl"):
                if key in loss_metrics:
                    sums[key] += loss_metrics[key] * n
            del logits, logprobs, loss

        grad_norm = torch.nn.utils.clip_grad_norm_(self.trainable, config.max_grad_norm if config.max_grad_norm > 0 else math.inf)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)

        metrics["loss"] = sums.pop("loss")
        metrics["grad_norm"] = float(grad_norm)
        metrics["entropy"] = sums.pop("entropy") / num_tokens
        metrics["sampling/sampling_logp_difference/mean"] = sums.pop("logp_diff") / num_tokens
        metrics["sampling/sampling_logp_difference/max"] = max_diff
        for key, value in sums.items():
            metrics[key] = value if key.endswith("max_abs") else value / num_tokens
        return metrics

    def _logits(self, micro: _Batch) -> torch.Tensor:
        """Logits predicting ``micro.targets``: (b, T, V) for target positions start+1 .. L-1."""
        out = self.model(input_ids=micro.input_ids, attention_mask=micro.attention_mask, logits_to_keep=micro.keep, use_cache=False)
        return out.logits[:, :-1]

    # -- eval, logging, files -----------------------------------------------------------

    def _evaluate_and_keep_best(self, progress: RunProgress | None = None) -> dict[str, float]:
        config, step, started = self.config, self.state.step, time.perf_counter()
        name = "eval before training" if step == 0 else "eval after training" if step == config.max_steps else f"eval at step {step}"
        finished = [0]

        def advance(_: Trajectory) -> None:
            finished[0] += 1
            if progress is not None:
                progress.phase(f"{name}: {finished[0]}/{config.eval_episodes} episodes")

        if progress is not None:
            progress.phase(f"{name}: 0/{config.eval_episodes} episodes")
        metrics = self.evaluate(on_episode=advance)
        reward = metrics["eval/reward"]
        if self.state.best_eval_reward is None or reward > self.state.best_eval_reward:
            self.state.best_eval_reward, self.state.best_step = reward, step
            with atomic_directory(self.output_dir / "best") as folder:
                save_weights(self.model, folder, self.tokenizer)
                (folder / "eval.json").write_text(json.dumps({"step": step, **metrics}), encoding="utf-8")
        metrics["timing/eval_s"] = time.perf_counter() - started
        if progress is not None:
            progress.line(
                f"{name}: held-out reward {reward:.3f} ({config.eval_judge}, {config.eval_episodes} {config.eval_split} episodes, "
                f"{metrics['timing/eval_s']:.0f} s)"
            )
        return metrics

    def _log(self, record: dict[str, Any], writer: Any) -> None:
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
        self.history.append(clean)
        with self.metrics_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(clean) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        if writer is not None:
            for key, value in clean.items():
                if key != "step" and isinstance(value, int | float):
                    writer.add_scalar(key, value, record["step"])
        shown = ", ".join(f"{k}={_fmt(clean.get(k))}" for k in ("reward", "loss", "eval/reward") if k in clean)
        log.info("step %d: %s", record["step"], shown)

    def _tensorboard(self) -> Any:
        if not self.config.tensorboard:
            return None
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            warnings.warn(
                "tensorboard=True but the tensorboard package is not installed (pip install tensorboard); metrics go to metrics.jsonl only",
                stacklevel=2,
            )
            return None
        return SummaryWriter(log_dir=str(self.output_dir / "tensorboard"), purge_step=self.state.step + 1)

    def _prepare_output(self) -> None:
        """Resume from a checkpoint, or check that the output folder holds no other run."""
        config = self.config
        self.output_dir.mkdir(parents=True, exist_ok=True)
        remove_temp_dirs(self.output_dir)
        remove_temp_dirs(self.checkpoints_dir)
        checkpoint = None
        if isinstance(config.resume, str | os.PathLike) and config.resume:
            checkpoint = Path(config.resume)
            if not checkpoint.is_dir():
                raise FileNotFoundError(f"resume={str(config.resume)!r}: no such checkpoint folder")
        elif config.resume:
            checkpoint = latest_checkpoint(self.checkpoints_dir)
            if checkpoint is None:
                log.warning("resume=True but %s holds no checkpoint: starting from scratch", self.checkpoints_dir)
        elif self.metrics_path.exists() or latest_checkpoint(self.checkpoints_dir) is not None:
            raise FileExistsError(
                f"{self.output_dir} already holds a run (metrics.jsonl or checkpoints); pass resume=True to continue it, "
                "or choose another output_dir"
            )
        if checkpoint is None:
            truncate_metrics(self.metrics_path, -1)
            return
        self.state, saved = load_checkpoint(checkpoint, model=self.model, optimizer=self.optimizer, scheduler=self.scheduler)
        changed = sorted(k for k, v in config.to_dict().items() if k not in _RESUMABLE_CHANGES and saved.get(k, v) != v)
        if changed:
            log.warning("resuming %s with a different config for %s", checkpoint, ", ".join(changed))
        truncate_metrics(self.metrics_path, self.state.step)
        self.resumed_from = checkpoint
        log.info("resumed from %s at step %d", checkpoint, self.state.step)

    def _make_backend(self) -> RolloutBackend:
        """The rollout backend ``config.backend`` names."""
        config = self.config
        if config.backend == "transformers":
            return TransformersBackend(self.model, self.tokenizer, self.device)
        backend = VLLMBackend(
            config.model,
            work_dir=self.output_dir / "vllm",
            lora_rank=config.lora_r,
            gpu_memory_utilization=config.gpu_memory_utilization,
            max_model_len=config.max_model_len,
            dtype=str(self.dtype).removeprefix("torch."),
            seed=config.seed,
        )
        if config.importance_sampling is None:
            warnings.warn(
                "backend='vllm' with importance_sampling=None: vLLM's kernels compute slightly different log-probabilities "
                "than the trainer's forward pass, so the rollouts are a little off-policy; set importance_sampling='truncate'",
                stacklevel=3,
            )
        return backend

    def _load_model(self) -> tuple[Any, Any]:
        from ..models import load_model, peft_quietly, unmark_quantized

        config = self.config
        model, tokenizer = load_model(config.model, self.dtype, fresh=True)
        unmark_quantized(model)  # a GGUF-loaded model is plain floats but marked quantized, which peft refuses
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        if config.use_lora:
            from peft import get_peft_model

            torch.manual_seed(config.seed)  # the adapter's initialisation
            lora = config.lora_config()
            with peft_quietly():
                model = get_peft_model(model, lora)
        if config.gradient_checkpointing:
            # transformers 5 renamed it activation checkpointing (the old name warns); 4.x has only the old one.
            enable = getattr(model, "activation_checkpointing_enable", None)
            if enable is not None:
                enable(activation_checkpointing_kwargs={"use_reentrant": False})
            else:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            if config.use_lora:
                model.enable_input_require_grads()  # frozen embeddings: give checkpointed blocks an input with grad
        return model.to(self.device), tokenizer

    def _sampling_seed(self, step: int) -> int:
        """The sampling seed of a step: fixed by (seed, step), so a resumed run samples alike."""
        return int(np.random.SeedSequence([self.config.seed, step]).generate_state(1)[0]) % (2**31 - 1)


# -- helpers --------------------------------------------------------------------------------


def scenario_seeds(seed: int, cursor: int, count: int) -> list[int]:
    """The train-split scenario seeds a run with `seed` plays at data-cursor positions
    ``cursor .. cursor+count-1``: consecutive seeds from ``seed * 1_000_003``, so a JSONL
    scenario file (picked by ``seed % n``) is walked through in order."""
    return [(seed * _SEED_STRIDE + position) % (2**31 - 1) for position in range(cursor, cursor + count)]


def plot_rewards(
    metrics_path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    train_judge: str | None = None,
    eval_judge: str | None = None,
    title: str | None = None,
) -> Path | None:
    """Plot the train reward per step and the held-out reward at eval steps from a
    metrics.jsonl file; returns the PNG's path (None when there is nothing to plot).

    The legend names each series' judge: the train reward and the held-out reward often
    come from different judges (e.g. a shaped ``0.5*verifier+0.5*grounding`` against the
    verifier alone), so their levels are not comparable, only their trends."""
    path = Path(metrics_path)
    if not path.exists():
        return None
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    train = [(r["step"], r["reward"]) for r in records if r.get("reward") is not None]
    held_out = [(r["step"], r["eval/reward"]) for r in records if r.get("eval/reward") is not None]
    if not train and not held_out:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4))
    if train:
        label = "train reward (mean of the step's groups)" + (f", judge {train_judge}" if train_judge else "")
        axes.plot(*zip(*train, strict=True), label=label, linewidth=1)
    if held_out:
        label = "held-out reward (greedy)" + (f", judge {eval_judge}" if eval_judge else "")
        axes.plot(*zip(*held_out, strict=True), "o-", label=label)
    axes.set_title(title or f"GRPO reward per step ({path.parent.name})")
    axes.set_xlabel("optimizer step")
    axes.set_ylabel("mean reward")
    values = [r for _, r in train + held_out]
    axes.set_ylim(min(0.0, *values) - 0.02, max(1.0, *values) + 0.02)  # judges score in [0, 1]: show the whole scale
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(out, dpi=120)
    plt.close(figure)
    return Path(out)


def _pad_batch(items: Sequence[tuple[TokenTrajectory, float]], pad_id: int, device: str) -> _Batch:
    """Right-pad a micro-batch. Target position j of row i is input position start + 1 + j,
    where start is one before the shortest prompt's end (no earlier position predicts a
    sampled token, so those logits are never computed)."""
    lengths = [len(tokens.input_ids) for tokens, _ in items]
    width = max(lengths)
    start = min(len(tokens.prompt_ids) for tokens, _ in items) - 1
    span = width - start - 1
    input_ids = torch.full((len(items), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(items), width), dtype=torch.long)
    mask = torch.zeros((len(items), span))
    sampler = torch.zeros((len(items), span))
    for row, (tokens, _) in enumerate(items):
        n, first = len(tokens.input_ids), len(tokens.prompt_ids) - start - 1  # first completion token's target index
        input_ids[row, :n] = torch.tensor(tokens.input_ids)
        attention_mask[row, :n] = 1
        mask[row, first : first + len(tokens.completion_ids)] = torch.tensor(tokens.loss_mask, dtype=torch.float32)
        sampler[row, first : first + len(tokens.completion_ids)] = torch.tensor(tokens.sampler_logprobs)
    return _Batch(
        input_ids=input_ids.to(device),
        attention_mask=attention_mask.to(device),
        targets=input_ids[:, start + 1 :].to(device),
        mask=mask.to(device),
        sampler_logprobs=sampler.to(device),
        advantages=torch.tensor([a for _, a in items], dtype=torch.float32, device=device),
        keep=width - start,
    )


def _entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of softmax(logits) per row."""
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(dim=-1)


def _reward_components(unjudged: Sequence[Group], judged: Sequence[Group]) -> dict[str, float]:
    """``rewards/<component>/mean`` over kept groups: the metrics the judge added to the
    trajectories (not the env's counters, nor a judge's token accounting ``judge_*``)."""
    env_keys = {key for group in unjudged for trajectory in group.trajectories for key in trajectory.metrics}
    values: dict[str, list[float]] = defaultdict(list)
    for group in judged:
        if group.failed:
            continue
        for trajectory in group.trajectories:
            for key, value in trajectory.metrics.items():
                if key not in env_keys and not key.startswith("judge_") and key != "independent_reward":
                    values[key].append(value)
    return {f"rewards/{key}/mean": float(np.mean(v)) for key, v in sorted(values.items())}


def _episode_metrics(episodes: Sequence[RolloutEpisode]) -> dict[str, float]:
    lengths = [e.tokens.num_sampled for e in episodes]
    turns = sum(e.turns for e in episodes)
    calls = sum(e.trajectory.metrics.get("tool_calls", 0.0) for e in episodes)
    failures = sum(e.trajectory.metrics.get("tool_errors", 0.0) for e in episodes)
    return {
        "completions/mean_length": float(np.mean(lengths)),
        "completions/min_length": float(min(lengths)),
        "completions/max_length": float(max(lengths)),
        "completions/clipped_ratio": sum(e.clipped_turns for e in episodes) / max(turns, 1),
        "completions/mean_turns": turns / len(episodes),
        "tools/call_frequency": calls / len(episodes),
        "tools/failure_frequency": failures / calls if calls else 0.0,
    }


def _judge_usage(judge: Judge) -> dict[str, float]:
    """An LLM judge's running token and cost totals ({} for judges without `usage`)."""
    usage = getattr(judge, "usage", None)
    if usage is None:
        return {}
    return {
        "calls": float(usage.calls),
        "cached_calls": float(usage.cached_calls),
        "prompt_tokens": float(usage.prompt_tokens),
        "completion_tokens": float(usage.completion_tokens),
        "cost": float(usage.cost),
        "failovers": float(usage.failovers),
    }


def _scheduler(config: GRPOConfig, optimizer: torch.optim.Optimizer) -> Any:
    from transformers import get_scheduler

    name = "constant_with_warmup" if config.lr_scheduler == "constant" else config.lr_scheduler
    return get_scheduler(name, optimizer, num_warmup_steps=config.warmup_steps, num_training_steps=config.max_steps)


def _step_scheduler_only(scheduler: Any) -> None:
    """Advance the schedule on a step without an update (the schedule follows step numbers)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`")
        scheduler.step()


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) and math.isfinite(value) else "-"


__all__ = ["DEFAULT_LORA_TARGETS", "GRPOConfig", "GRPOTrainer", "plot_rewards"]
