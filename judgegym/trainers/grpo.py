"""GRPO for multi-turn, tool-using agents: `GRPOConfig` (every knob, with its help) and
`GRPOTrainer`. One optimizer step reads top to bottom in `GRPOTrainer.train_step`: rollouts ->
judge -> group advantages -> clipped policy loss over sampled tokens -> AdamW.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import queue
import threading
import time
import uuid
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from ..agents.batching import Sampling
from ..judges.base import Judge, run_sync, score_groups
from ..progress import peak_rss_mb
from ..trajectory import Group
from .advantages import ScaleRewards, group_advantages, widest_groups
from .device import release_memory, training_autocast
from .distributed import Ranks
from .loop import Trainer, format_metric
from .loss import (
    IMPORTANCE_SAMPLING_METRICS,
    ImportanceSamplingMode,
    LossType,
    importance_sampling_weights,
    policy_loss,
    selective_log_softmax,
)
from .policy import DEFAULT_LORA_TARGETS, PolicyConfig, config_field
from .rollout import RolloutBackend, RolloutEpisode, TransformersBackend, make_envs, pad_token_id, play_groups
from .server_rollout import ServerBackend
from .tokenize import TokenTrajectory
from .vllm_rollout import LORA_RANKS, VLLMBackend, require_vllm

log = logging.getLogger("judgegym.trainers")

LORA_LEARNING_RATE = 1e-4
FULL_LEARNING_RATE = 1e-5

_SEED_STRIDE = 1_000_003
"""Scenario seeds of run seed s start at s * stride: different run seeds see different scenarios."""


@dataclass
class GRPOConfig(PolicyConfig):
    """Everything a GRPO run is made of. ``fields(GRPOConfig)[i].metadata["help"]`` holds each
    field's help (what a command line shows). Names follow TRL's ``GRPOConfig`` where it has
    the same knob (``epsilon``, ``epsilon_high``, ``beta``, ``loss_type``, ``scale_rewards``,
    ``max_grad_norm``, ``warmup_steps``, ...); TRL's ``num_generations`` is `group_size`."""

    # -- task ---------------------------------------------------------------------------
    env_id: str = config_field("RagSupport-v0", "Gymnasium id of the env to train on (a judgegym ChatEnv).")
    env_kwargs: dict[str, Any] = config_field(
        help="Keyword arguments for gym.make, e.g. {'prefetch_k': 2}. Not max_turns (use max_turns) or defer_judging (always on).",
        factory=dict,
    )
    eval_env_kwargs: dict[str, Any] | None = config_field(
        None,
        "Keyword arguments for the held-out eval's gym.make; None: env_kwargs. A curriculum trains on some scenarios "
        "(env_kwargs={'kinds': ['multi_hop']}) and is still judged on all of them (eval_env_kwargs={}).",
    )
    env_url: str | None = config_field(
        None,
        "judgegym serve URL to play the env on (several, comma-separated, share the envs in turn); None: in this process. "
        "Judging stays here.",
    )
    judge: str = config_field(
        "verifier", "Training judge spec (judgegym.judges.make_judge): 'verifier', 'grounding', 'learned', 'ruler:MODEL', ..."
    )
    eval_judge: str = config_field("verifier", "Pointwise judge spec for held-out eval (a relative judge cannot score lone episodes).")
    # -- optimisation -------------------------------------------------------------------
    learning_rate: float | None = config_field(
        None, f"AdamW learning rate; None: {LORA_LEARNING_RATE:g} with LoRA, {FULL_LEARNING_RATE:g} full."
    )
    weight_decay: float = config_field(0.0, "AdamW weight decay.")
    max_grad_norm: float = config_field(1.0, "Clip the global gradient norm to this before each step (0 disables clipping).")
    warmup_steps: int = config_field(0, "Steps of linear learning-rate warmup.")
    lr_scheduler: Literal["constant", "linear", "cosine"] = config_field(
        "constant", "Learning-rate schedule after warmup (transformers.get_scheduler)."
    )
    max_steps: int = config_field(100, "Optimizer steps to train for.")
    # -- batch --------------------------------------------------------------------------
    scenarios_per_step: int = config_field(4, "B: scenarios (groups) per optimizer step, taken in order from the train split.")
    oversample: int = config_field(
        0,
        "Extra scenarios played each step (DAPO's dynamic sampling in a fixed budget): B + oversample groups are played and "
        "the B with the widest reward spread are trained on, so groups where every episode scored alike stop wasting steps.",
    )
    group_size: int = config_field(8, "G: episodes per scenario (TRL's num_generations); advantages are relative within a group.")
    micro_batch_size: int = config_field(4, "Sequences per forward/backward pass; gradients accumulate over the whole step.")
    # -- generation ---------------------------------------------------------------------
    max_new_tokens: int = config_field(256, "Most tokens the policy samples per assistant turn.")
    max_turns: int = config_field(6, "Most assistant turns per episode (passed to the env, which truncates the episode there).")
    temperature: float = config_field(1.0, "Sampling temperature (> 0); the loss uses the same temperature.")
    top_p: float = config_field(1.0, "Nucleus sampling. Keep 1.0: the logprobs do not model the truncation.")
    backend: Literal["transformers", "vllm", "server"] = config_field(
        "transformers",
        "Rollout sampler: 'transformers' (the training model's generate, CPU or GPU), 'vllm' (an in-process vLLM engine on "
        "the same GPU serving the LoRA adapter; needs the gpu extra and use_lora) or 'server' (inference servers over HTTP, "
        "vLLM's OpenAI-compatible API, at server_urls; needs use_lora).",
    )
    server_urls: list[str] = config_field(
        help="backend='server': base URLs of the inference servers (http://host:8000), all serving the policy model.", factory=list
    )
    server_urls_file: str | None = config_field(None, "backend='server': a file with one server URL per line (# comments), read at start.")
    server_model: str | None = config_field(
        None, "backend='server': the model name the servers serve (vllm serve --served-model-name); None: the model field."
    )
    server_adapter_dir: str | None = config_field(
        None, "backend='server': a folder every server can read at the same path, for each step's adapter; None: output_dir/adapters."
    )
    server_max_concurrent_requests: int = config_field(64, "backend='server': requests in flight per server at once.")
    server_timeout_s: float = config_field(
        600.0, "backend='server': a request's time limit; slower servers count as failed and are retried."
    )
    max_off_policy_steps: int = config_field(
        0,
        "k: 0 samples each step's rollouts with the current policy (synchronous). k >= 1 samples the next steps' rollouts while "
        "the current step trains (backend='server'), never training on a sample more than k policy versions old.",
    )
    gpu_memory_utilization: float = config_field(
        0.3, "backend='vllm': share of the GPU's memory vLLM takes (weights + KV cache); the trainer's model and optimizer use the rest."
    )
    max_model_len: int | None = config_field(
        None, "backend='vllm': longest sequence (prompt + completion) vLLM serves; None: the model's limit. Lower it to save KV memory."
    )
    # -- loss ---------------------------------------------------------------------------
    epsilon: float = config_field(0.2, "Lower clip range of the probability ratio: r >= 1 - epsilon.")
    epsilon_high: float | None = config_field(None, "Upper clip range (DAPO clip-higher, e.g. 0.28); None: epsilon.")
    loss_type: LossType = config_field(
        "dapo", "'dapo' (token mean over the step), 'grpo' (sequence mean), 'dr_grpo' (constant normaliser)."
    )
    beta: float = config_field(0.0, "KL coefficient (k3 estimator) toward the base model; needs use_lora (reference = adapter disabled).")
    scale_rewards: ScaleRewards = config_field("group", "Advantage scaling: 'group' std, 'batch' std, or 'none' (Dr. GRPO).")
    importance_sampling: ImportanceSamplingMode | Literal["off"] | None = config_field(
        None,
        "Correct sampler/trainer logprob mismatch per token: 'truncate' (TIS), 'mask' (MIS), 'off', or None: 'truncate' when "
        "max_off_policy_steps > 0 or when the transformers backend samples with a copy in another dtype (generation_dtype), "
        "else off.",
    )
    importance_sampling_cap: float = config_field(2.0, "Cap of the importance ratio pi_trainer / pi_sampler.")
    # -- run ----------------------------------------------------------------------------
    seed: int = config_field(0, "Seeds the LoRA init, the scenario order and the sampling.")
    output_dir: str = config_field("runs/grpo", "Where metrics.jsonl, checkpoints/, best/, last/ and reward.png go.")
    save_steps: int = config_field(50, "Checkpoint every this many steps (0: never).")
    keep_last: int | None = config_field(2, "Checkpoints to keep (older ones are deleted); None or 0 keeps all.")
    eval_steps: int = config_field(50, "Held-out eval every this many steps, at step 0 and at the end (0: no eval).")
    eval_episodes: int = config_field(16, "Episodes per held-out eval (seeds 0..n-1 of eval_split, greedy decoding).")
    eval_on_start: bool = config_field(
        True, "Held-out eval at step 0 too (the policy before training); off when it is already known, e.g. an SFT run's last eval."
    )
    eval_split: str = config_field("test", "The env split held-out eval plays.")
    tensorboard: bool = config_field(False, "Also write TensorBoard scalars to output_dir/tensorboard (needs the tensorboard package).")
    resume: bool | str = config_field(False, "True: continue from the newest checkpoint in output_dir (if any); a path: that checkpoint.")
    dist_timeout_s: float = config_field(
        1800.0, "Under torchrun: the time limit of every collective; a rank that dies or hangs ends the run within it, never a hang."
    )

    def __post_init__(self) -> None:
        problems = []
        if self.oversample < 0:
            problems.append(f"oversample must be >= 0, got {self.oversample}")
        positive = ("max_steps", "scenarios_per_step", "group_size", "micro_batch_size", "max_new_tokens", "max_turns", "eval_episodes")
        problems += [f"{name} must be >= 1, got {getattr(self, name)}" for name in positive if getattr(self, name) < 1]
        nonnegative = ("save_steps", "eval_steps", "warmup_steps", "weight_decay", "max_grad_norm", "beta")
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
        if self.importance_sampling not in (None, "truncate", "mask", "off"):
            problems.append(f"importance_sampling must be 'truncate', 'mask', 'off' or None, got {self.importance_sampling!r}")
        if self.beta > 0 and not self.use_lora:
            problems.append("beta > 0 needs use_lora=True: the KL reference is the base model with the adapter disabled (no second copy)")
        if self.backend not in ("transformers", "vllm", "server"):
            problems.append(f"backend must be 'transformers', 'vllm' or 'server', got {self.backend!r}")
        if self.backend == "server" and not (self.server_urls or self.server_urls_file):
            problems.append("backend='server' needs the servers' URLs: server_urls, or server_urls_file")
        if self.backend == "server" and not self.use_lora:
            problems.append(
                "backend='server' needs use_lora=True: the trained weights reach the servers as a LoRA adapter after each step "
                "(/v1/load_lora_adapter); inference servers have no API to replace a running model's full weights"
            )
        if self.max_off_policy_steps < 0:
            problems.append(f"max_off_policy_steps must be >= 0, got {self.max_off_policy_steps}")
        if self.max_off_policy_steps > 0 and self.backend != "server":
            problems.append(
                "max_off_policy_steps > 0 needs a sampler that runs beside the trainer (backend='server'); the transformers and "
                "vllm backends sample with the training process's own device"
            )
        if self.server_max_concurrent_requests < 1 or self.server_timeout_s <= 0 or self.dist_timeout_s <= 0:
            problems.append("server_max_concurrent_requests must be >= 1, server_timeout_s and dist_timeout_s > 0")
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
        problems += self.policy_problems()
        for name, kwargs in (("env_kwargs", self.env_kwargs), ("eval_env_kwargs", self.eval_env_kwargs or {})):
            owned = sorted({"max_turns", "defer_judging"} & set(kwargs))
            if owned:
                problems.append(f"{name} may not set {owned}: the trainer sets them (use GRPOConfig.max_turns)")
        if problems:
            raise ValueError("invalid GRPOConfig: " + "; ".join(problems))

    @property
    def importance_sampling_mode(self) -> ImportanceSamplingMode | None:
        """The correction in force: `importance_sampling`, where None means 'truncate' with
        ``max_off_policy_steps > 0`` (stale samples) and off otherwise; 'off' is off."""
        if self.importance_sampling == "off":
            return None
        if self.importance_sampling is None and self.max_off_policy_steps > 0:
            return "truncate"
        return self.importance_sampling

    def server_url_list(self) -> list[str]:
        """`server_urls` and the URLs in `server_urls_file` (one per line, ``#`` comments)."""
        urls = list(self.server_urls)
        if self.server_urls_file:
            path = Path(self.server_urls_file)
            if not path.is_file():
                raise FileNotFoundError(f"server_urls_file={self.server_urls_file!r}: no such file")
            lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
            urls += [line for line in lines if line]
        return urls

    @property
    def played_per_step(self) -> int:
        """Scenarios played each step: ``scenarios_per_step + oversample``."""
        return self.scenarios_per_step + self.oversample

    @property
    def effective_learning_rate(self) -> float:
        """`learning_rate`, or its default for LoRA / full fine-tuning."""
        if self.learning_rate is not None:
            return self.learning_rate
        return LORA_LEARNING_RATE if self.use_lora else FULL_LEARNING_RATE


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


@dataclass
class Rollout:
    """One step's played and judged groups (this rank's share)."""

    step: int
    policy_version: int
    """Optimizer steps behind the weights that sampled it (the oldest, if the weights changed
    during the step's sampling): ``step - 1`` when synchronous."""
    episodes: list[RolloutEpisode]
    groups: list[Group]
    """The groups as played (unscored)."""
    judged: list[Group]
    judge_metrics: dict[str, float]
    timings: dict[str, float]
    waited_s: float | None = None
    """Made ahead by a `_Pipeline`: how long the trainer waited for it (None: made in the step)."""
    sampler_idle_s: float = 0.0
    """Made ahead: how long the sampler waited for the trainer before making it."""


class _Pipeline:
    """The asynchronous loop (``max_off_policy_steps = k >= 1``): a background thread plays and
    judges steps in order, starting step s only once the trainer has finished step
    ``s - 1 - k``. Since the trainer gives the backend new weights right after each step, the
    weights that sample step s are at most k versions old; `GRPOTrainer.train_step` checks it
    again and never trains on an older group."""

    def __init__(self, trainer: GRPOTrainer, lag: int):
        self.trainer, self.lag = trainer, lag
        self.ready: queue.Queue[Rollout | BaseException] = queue.Queue()
        self.progress = threading.Condition()
        self.done = trainer.state.step
        self.stopping = False
        self.thread = threading.Thread(target=self._produce, name="judgegym-rollouts", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def next(self) -> Rollout:
        """The next step's rollout (waiting for it: the trainer's idle time)."""
        started = time.perf_counter()
        item = self.ready.get()
        if isinstance(item, BaseException):
            raise RuntimeError("the rollout thread failed") from item
        item.waited_s = time.perf_counter() - started
        return item

    def trained(self, step: int) -> None:
        with self.progress:
            self.done = step
            self.progress.notify_all()

    def stop(self) -> None:
        with self.progress:
            self.stopping = True
            self.progress.notify_all()
        self.thread.join(timeout=self.trainer.config.server_timeout_s + 5)

    def _produce(self) -> None:
        trainer = self.trainer
        first, last = trainer.state.step + 1, trainer.config.max_steps
        cursor = trainer.state.cursor
        try:
            for step in range(first, last + 1):
                started = time.perf_counter()
                with self.progress:
                    self.progress.wait_for(lambda s=step: self.stopping or self.done >= s - 1 - self.lag)
                    if self.stopping:
                        return
                idle = time.perf_counter() - started
                rollout = trainer.rollout(step, cursor)
                rollout.sampler_idle_s = idle
                cursor += trainer.config.played_per_step
                self.ready.put(rollout)
        except BaseException as error:  # noqa: BLE001  (handed to the trainer's thread, which raises it)
            self.ready.put(error)


class GRPOTrainer(Trainer):
    """GRPO over a judgegym env: each step plays B scenarios x G episodes, judges each group,
    and takes one policy-gradient step on the sampled tokens.

    Args:
        config: the run.
        judge: a judge object to use instead of ``config.judge`` (e.g. a custom verifier).
        backend: a rollout backend instead of the one ``config.backend`` names.

    The model, optimizer, scheduler, (with ``config.resume``) the checkpoint and the rollout
    backend are loaded here, and the backend is given the current weights; `train` (`Trainer`'s
    run loop) runs the remaining steps. ``config.backend="vllm"`` without vLLM installed raises
    ImportError before anything is loaded. Files under ``output_dir``: ``metrics.jsonl`` (one
    JSON object per step, see docs/trainer.md), ``config.json`` (the run's `GRPOConfig`),
    ``checkpoints/step-N/``, ``best/`` and ``last/`` (loadable weights), ``eval/step-N.jsonl``
    (held-out episodes), ``reward.png`` (and ``vllm/`` with the vLLM backend).
    """

    label = "GRPO"
    step_activity = ": sampling, judging, updating"
    resumable_changes = frozenset({
        "resume", "max_steps", "output_dir", "save_steps", "keep_last", "eval_steps", "eval_episodes", "tensorboard", "eval_on_start",
        "eval_env_kwargs",
        "gpu_memory_utilization", "max_model_len", "server_urls", "server_urls_file", "server_timeout_s", "server_max_concurrent_requests",
        "server_adapter_dir", "dist_timeout_s",
    })  # fmt: skip
    config: GRPOConfig

    def __init__(self, config: GRPOConfig, *, judge: Judge | None = None, backend: RolloutBackend | None = None):
        if backend is None and config.backend == "vllm":
            require_vllm()  # fail before loading anything
        super().__init__(config)
        self.ranks = Ranks.from_environment(device=self.device, timeout_s=config.dist_timeout_s)
        if self.ranks.active and config.device == "auto" and self.device == "cuda":
            self.device = f"cuda:{self.ranks.local_rank}"
        if config.played_per_step % self.ranks.world_size:
            raise ValueError(
                f"scenarios_per_step + oversample = {config.played_per_step} must be divisible by the {self.ranks.world_size} ranks: "
                "each rank plays whole groups"
            )
        if judge is None:
            from ..judges.specs import make_judge

            judge = make_judge(config.judge, env_id=config.env_id)
        self.judge = judge
        self.env_id = config.env_id
        self.total_steps = config.max_steps
        self.model, self.tokenizer = self.load_model()
        self.make_optimizer(config.effective_learning_rate)
        self.groups_per_rank = config.played_per_step // self.ranks.world_size
        self.envs = make_envs(
            config.env_id, self.groups_per_rank * config.group_size, config.env_kwargs, max_turns=config.max_turns, env_url=config.env_url
        )
        self.last_rollout: list[RolloutEpisode] = []
        """The episodes of the latest step (judged trajectories replace the unscored ones)."""
        self.prepare_output()
        self.backend: RolloutBackend = backend or self._make_backend()
        if config.max_off_policy_steps > 0 and isinstance(self.backend, TransformersBackend | VLLMBackend):
            raise ValueError(f"max_off_policy_steps > 0 needs a sampler beside the trainer; {type(self.backend).__name__} is not one")
        self.importance_sampling = config.importance_sampling_mode
        """The correction in force: the config's, and 'truncate' by default when the sampler is a
        copy in another dtype (bfloat16 rounding makes its log-probabilities differ)."""
        copy = getattr(self.backend, "copy", None)
        if config.importance_sampling is None and copy is not None and copy.dtype != self.dtype:
            self.importance_sampling = "truncate"
        self._sync_backend()  # a resumed model differs from the weights the backend started with

    # -- public API ---------------------------------------------------------------------

    def scenario_seeds(self, cursor: int, count: int) -> list[int]:
        """The train-split scenario seeds at data-cursor positions ``cursor .. cursor+count-1``
        (`scenario_seeds` with this run's seed)."""
        return scenario_seeds(self.config.seed, cursor, count)

    def close(self) -> None:
        """Release what the trainer holds outside this process: the backend's connections to
        inference servers, served envs' sessions, and under torchrun the process group it joined."""
        close = getattr(self.backend, "close", None)
        if close is not None:
            close()
        for env in self.envs:
            env.close()
        self.ranks.close()

    # -- what the run loop asks (`Trainer`) ---------------------------------------------

    @contextlib.contextmanager
    def run_steps(self) -> Iterator[Callable[[], dict[str, Any]]]:
        """With ``max_off_policy_steps = k > 0`` a background thread samples and judges up to k
        steps ahead of the update (`_Pipeline`) while the loop runs; else each step plays its own."""
        lag = self.config.max_off_policy_steps
        if lag == 0:
            yield self.train_step
            return
        pipeline = _Pipeline(self, lag)
        pipeline.start()

        def next_step() -> dict[str, Any]:
            record = self.train_step(pipeline.next())
            pipeline.trained(self.state.step)
            return record

        try:
            yield next_step
        finally:
            pipeline.stop()

    def evaluates_at(self, step: int) -> bool:
        """Every ``eval_steps``, at the end, and before training with ``eval_on_start``."""
        config = self.config
        if not config.eval_steps:
            return False
        return config.eval_on_start if step == 0 else step % config.eval_steps == 0 or step == config.max_steps

    def eval_name(self, step: int) -> str:
        return "eval before training" if step == 0 else "eval after training" if step == self.config.max_steps else f"eval at step {step}"

    def describe_step(self, record: dict[str, Any]) -> tuple[str, str]:
        reward, seconds = format_metric(record.get("reward")), record["step_time_s"]
        return f"reward {reward}, {seconds:.1f} s/step", f"reward {reward}, loss {format_metric(record.get('loss'))}, {seconds:.1f} s/step"

    def plot(self) -> None:
        config = self.config
        plot_rewards(self.metrics_path, self.output_dir / "reward.png", train_judge=config.judge, eval_judge=config.eval_judge)

    # -- one step -----------------------------------------------------------------------

    def rollout(self, step: int, cursor: int) -> Rollout:
        """Play and judge step `step`'s groups (this rank's share of the scenarios at data-cursor
        positions ``cursor ..``) with the policy the backend serves now."""
        config, started = self.config, time.perf_counter()
        seeds = self.scenario_seeds(cursor, config.played_per_step)[self.ranks.share(config.played_per_step)]
        version = self._served_step

        # 1. Rollouts: this rank's groups x G members, sampled by the policy the backend serves.
        sampling = Sampling(config.temperature, config.top_p, config.max_new_tokens, self._sampling_seed(step))
        episodes = play_groups(self.backend, self.tokenizer, self.envs, seeds, sampling)
        if (finish := getattr(self.backend, "finish_rollout", None)) is not None:
            finish()
        release_memory()  # the generation threads' freed memory, before the judge and the update allocate
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
        timings = {"timing/generate_s": generated - started, "timing/judge_s": time.perf_counter() - generated}
        return Rollout(step, version, episodes, groups, judged, judge_metrics, timings)

    def train_step(self, rollout: Rollout | None = None) -> dict[str, Any]:
        """One GRPO step: play, judge (or take the `rollout` a pipeline made ahead), compute
        advantages across every rank's groups, update. Returns its metrics."""
        config, started = self.config, time.perf_counter()
        step, collective_before = self.state.step + 1, self.ranks.collective_s
        if rollout is None:
            self.model.eval()
            rollout = self.rollout(step, self.state.cursor)
        elif rollout.step != step:
            raise RuntimeError(f"the pipeline handed step {rollout.step}'s rollouts to step {step}")
        judged_at = time.perf_counter()
        episodes, judged = rollout.episodes, rollout.judged
        members = [episodes[i * config.group_size : (i + 1) * config.group_size] for i in range(len(judged))]
        self.last_rollout = episodes

        # 3. Group-relative advantages over every rank's groups; failed and zero-variance groups
        #    carry no signal, nor do groups sampled more than max_off_policy_steps versions ago.
        #    With oversample, only the B groups of widest spread are trained on.
        staleness = step - 1 - rollout.policy_version
        too_old = staleness > config.max_off_policy_steps
        rewards = [None if group.failed else [t.reward for t in group.trajectories] for group in judged]
        all_rewards = [r for share in self.ranks.gather(rewards) for r in share]
        advantages = group_advantages(all_rewards, config.scale_rewards)
        trained = set(widest_groups(all_rewards, config.scenarios_per_step))
        mine = self.ranks.share(config.played_per_step)
        batch: list[tuple[TokenTrajectory, float]] = []
        for index, group_members in zip(range(config.played_per_step)[mine], members, strict=True):
            group_advantage = advantages.advantages[index]
            if group_advantage is not None and not advantages.zero_std[index] and index in trained and not too_old:
                batch += [(e.tokens, a) for e, a in zip(group_members, group_advantage, strict=True)]

        # 4. One policy-gradient step over the sampled tokens of the kept groups.
        self.model.train()
        train_metrics = self._update(batch)
        self.model.eval()
        self.state.step, self.state.cursor = step, self.state.cursor + config.played_per_step
        updated = time.perf_counter()
        self._sync_backend()
        release_memory()  # the update's activations and gradients, before the next rollout
        finished = time.perf_counter()

        record: dict[str, Any] = {"step": step}
        record.update({k: advantages.metrics()[k] for k in ("reward", "reward_std", "frac_reward_zero_std")})
        shared = self.ranks.gather((_component_values(rollout.groups, judged), [_episode_counts(e) for e in episodes]))
        record.update(_reward_components([row for components, _ in shared for row in components]))
        record.update(_episode_metrics([counts for _, rows in shared for counts in rows]))
        record.update(train_metrics)
        record.update(self.ranks.sum(rollout.judge_metrics))
        record["num_failed_groups"] = advantages.n_failed
        record["num_zero_std_groups"] = advantages.n_zero_std
        record["num_trained_groups"] = sum(1 for i in trained if not advantages.zero_std[i]) if not too_old else 0
        timing = dict(rollout.timings)
        if rollout.waited_s is not None:  # made ahead by the pipeline
            stale = self.ranks.sum({"stale": float(too_old) * len(judged)})["stale"]
            record.update({"async/staleness": staleness, "async/dropped_stale_groups": stale})
            timing.update({"timing/trainer_idle_s": rollout.waited_s, "timing/sampler_idle_s": rollout.sampler_idle_s})
            record["step_time_s"] = rollout.waited_s + finished - judged_at
        else:
            record["step_time_s"] = finished - started
        record.update(timing)
        record["timing/train_s"] = finished - judged_at
        record["timing/sync_weights_s"] = finished - updated
        record["memory/peak_rss_gb"] = peak_rss_mb() / 1024  # this process's peak so far: which phase sets it
        if self.ranks.active:
            record["timing/collectives_s"] = self.ranks.collective_s - collective_before
        record.update(getattr(self.backend, "metrics", dict)())
        return record

    # -- the update ---------------------------------------------------------------------

    def _update(self, batch: list[tuple[TokenTrajectory, float]]) -> dict[str, Any]:
        """Accumulate the loss of every micro-batch, sum the gradients over ranks, clip, and step
        the optimizer. The loss is normalised by the sampled tokens and sequences of every
        rank's batch, so the summed gradient is the one a single process would compute."""
        config = self.config
        learning_rate = self.scheduler.get_last_lr()[0]
        totals = self.ranks.sum({"tokens": sum(tokens.num_sampled for tokens, _ in batch), "sequences": len(batch)})
        num_tokens, num_sequences = int(totals["tokens"]), int(totals["sequences"])
        metrics: dict[str, Any] = {
            "loss": 0.0,
            "grad_norm": 0.0,
            "learning_rate": learning_rate,
            "num_trained_sequences": num_sequences,
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

        importance_sampling = self.importance_sampling
        sums: dict[str, float] = defaultdict(float)
        # every rank reduces the same keys, trained or not
        for key in ("loss", "entropy", "logp_diff", "logp_diff_max", *(f"clip_ratio/{k}_mean" for k in ("low", "high", "region"))):
            sums[key] = 0.0
        if config.beta > 0:
            sums["kl"] = 0.0
        if importance_sampling:
            sums.update({key: 0.0 for key in IMPORTANCE_SAMPLING_METRICS})
        for start in range(0, len(batch), config.micro_batch_size):
            micro = _pad_batch(batch[start : start + config.micro_batch_size], pad_token_id(self.tokenizer), self.device)
            logits = self._logits(micro)
            logprobs = selective_log_softmax(logits, micro.targets, config.temperature)
            ref_logprobs = None
            if config.beta > 0:
                with torch.no_grad(), self.model.disable_adapter():
                    ref_logprobs = selective_log_softmax(self._logits(micro), micro.targets, config.temperature)
            weights = None
            if importance_sampling:
                weights, is_metrics = importance_sampling_weights(
                    logprobs.detach(),
                    micro.sampler_logprobs,
                    micro.mask,
                    mode=importance_sampling,
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
                num_sequences_in_batch=num_sequences,
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
                sums["logp_diff_max"] = max(sums["logp_diff_max"], float(diff.max()) if diff.numel() else 0.0)
            sums["loss"] += loss.item()
            for key in ("clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean", "kl"):
                if key in loss_metrics:
                    sums[key] += loss_metrics[key] * n
            del logits, logprobs, loss

        self.ranks.sum_gradients(self.trainable)
        sums = defaultdict(float, self.ranks.sum(dict(sums), maxima=[k for k in sums if k.endswith("max_abs") or k == "logp_diff_max"]))
        grad_norm = torch.nn.utils.clip_grad_norm_(self.trainable, config.max_grad_norm if config.max_grad_norm > 0 else math.inf)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)

        metrics["loss"] = sums.pop("loss")
        metrics["grad_norm"] = float(grad_norm)
        metrics["entropy"] = sums.pop("entropy") / num_tokens
        metrics["sampling/sampling_logp_difference/mean"] = sums.pop("logp_diff") / num_tokens
        metrics["sampling/sampling_logp_difference/max"] = sums.pop("logp_diff_max")
        for key, value in sums.items():
            metrics[key] = value if key.endswith("max_abs") else value / num_tokens
        return metrics

    def _logits(self, micro: _Batch) -> torch.Tensor:
        """Logits predicting ``micro.targets``: (b, T, V) for target positions start+1 .. L-1, in
        float32 also under ``mixed_precision='bf16'`` (the log-softmax of bf16 logits is too coarse
        for the policy ratio)."""
        with training_autocast(self.mixed_precision, self.device):
            out = self.model(input_ids=micro.input_ids, attention_mask=micro.attention_mask, logits_to_keep=micro.keep, use_cache=False)
        return out.logits[:, :-1].float()

    # -- the rollout backend ------------------------------------------------------------

    def _make_backend(self) -> RolloutBackend:
        """The rollout backend ``config.backend`` names."""
        config = self.config
        if config.backend == "transformers":
            return TransformersBackend(self.model, self.tokenizer, self.device, generation_dtype=self.generation_dtype)
        if config.backend == "server":
            # Adapter names carry a run nonce shared by every rank (rank 0's), fresh on every start.
            run_name = self.ranks.broadcast(f"judgegym-{uuid.uuid4().hex[:8]}")
            return ServerBackend(
                config.server_url_list(),
                model=config.server_model or config.model,
                adapter_dir=config.server_adapter_dir or self.output_dir / "adapters",
                max_concurrent_requests=config.server_max_concurrent_requests,
                timeout_s=config.server_timeout_s,
                keep_adapters=config.max_off_policy_steps + 1,
                publisher=self.ranks.is_main,
                run_name=run_name,
            )
        backend = VLLMBackend(
            config.model,
            work_dir=self.output_dir / "vllm",
            lora_rank=config.lora_r,
            gpu_memory_utilization=config.gpu_memory_utilization,
            max_model_len=config.max_model_len,
            dtype=str(self.dtype).removeprefix("torch."),
            seed=config.seed,
        )
        if config.importance_sampling_mode is None:
            warnings.warn(
                "backend='vllm' with importance_sampling=None: vLLM's kernels compute slightly different log-probabilities "
                "than the trainer's forward pass, so the rollouts are a little off-policy; set importance_sampling='truncate'",
                stacklevel=3,
            )
        return backend

    def _sync_backend(self) -> None:
        """Give the backend the current weights (on every rank: a backend whose servers rank 0
        feeds adopts rank 0's adapter) and note which policy version it now serves."""
        self.backend.sync_weights(self.model)
        if self.ranks.active and isinstance(self.backend, ServerBackend):
            self.backend.adopt(self.ranks.broadcast(self.backend.adapter_state()))
        self._served_step = self.state.step

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
    axes.set_ylim(min(0.0, *values) - 0.02, max(1.0, *values) + 0.02)  # the whole scale, penalties too
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


def _component_values(unjudged: Sequence[Group], judged: Sequence[Group]) -> list[tuple[str, float]]:
    """(component, value) of every trajectory in the kept groups: the metrics the judge added
    (not the env's counters, nor a judge's token accounting ``judge_*``)."""
    env_keys = {key for group in unjudged for trajectory in group.trajectories for key in trajectory.metrics}
    return [
        (key, value)
        for group in judged
        if not group.failed
        for trajectory in group.trajectories
        for key, value in trajectory.metrics.items()
        if key not in env_keys and not key.startswith("judge_") and key != "independent_reward"
    ]


def _reward_components(values: Sequence[tuple[str, float]]) -> dict[str, float]:
    """``rewards/<component>/mean`` of `_component_values` (of every rank)."""
    by_key: dict[str, list[float]] = defaultdict(list)
    for key, value in values:
        by_key[key].append(value)
    return {f"rewards/{key}/mean": float(np.mean(v)) for key, v in sorted(by_key.items())}


def _episode_counts(episode: RolloutEpisode) -> tuple[int, int, int, float, float]:
    """(sampled tokens, turns, clipped turns, tool calls, tool errors) of an episode."""
    metrics = episode.trajectory.metrics
    return episode.tokens.num_sampled, episode.turns, episode.clipped_turns, metrics.get("tool_calls", 0.0), metrics.get("tool_errors", 0.0)


def _episode_metrics(counts: Sequence[tuple[int, int, int, float, float]]) -> dict[str, float]:
    """Length, turn and tool metrics of a step's episodes (`_episode_counts` of every rank)."""
    lengths = [c[0] for c in counts]
    turns = sum(c[1] for c in counts)
    calls = sum(c[3] for c in counts)
    return {
        "completions/mean_length": float(np.mean(lengths)),
        "completions/min_length": float(min(lengths)),
        "completions/max_length": float(max(lengths)),
        "completions/clipped_ratio": sum(c[2] for c in counts) / max(turns, 1),
        "completions/mean_turns": turns / len(counts),
        "tools/call_frequency": calls / len(counts),
        "tools/failure_frequency": sum(c[4] for c in counts) / calls if calls else 0.0,
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


def _step_scheduler_only(scheduler: Any) -> None:
    """Advance the schedule on a step without an update (the schedule follows step numbers)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`")
        scheduler.step()


__all__ = ["DEFAULT_LORA_TARGETS", "GRPOConfig", "GRPOTrainer", "plot_rewards"]
