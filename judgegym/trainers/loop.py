"""The run loop both trainers share: `Trainer.train` runs the steps with progress, evaluates on
held-out episodes every few steps (`evaluate_policy`) keeping the best weights in ``best/``,
appends a metrics line per step, checkpoints, resumes, and writes ``last/`` and the plot at the
end. `GRPOTrainer` and `SFTTrainer` supply their step, when they evaluate and what they plot.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import os
import random
import time
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np
import torch
from rich.console import Console

from ..agents.generation_copy import GenerationCopy
from ..judges.base import run_sync
from ..progress import RunProgress, format_seconds
from ..trajectory import Trajectory, write_jsonl
from .checkpoint import (
    TrainerState,
    atomic_directory,
    keep_best,
    load_checkpoint,
    prune_checkpoints,
    resume_run,
    save_checkpoint,
    save_weights,
)
from .device import release_memory, resolve_device_dtype, resolve_generation_dtype, resolve_mixed_precision
from .distributed import Ranks
from .policy import load_policy

log = logging.getLogger("judgegym.trainers")


class RunConfig(Protocol):
    """The config fields the run loop and the held-out eval read; `GRPOConfig` and `SFTConfig`
    both have them (the policy's are `PolicyConfig`'s)."""

    model: str
    dtype: str
    device: str
    mixed_precision: str
    gradient_checkpointing: bool
    use_lora: bool
    init_adapter: str | None
    seed: int
    weight_decay: float
    warmup_steps: int
    lr_scheduler: str
    output_dir: str
    save_steps: int
    keep_last: int | None
    tensorboard: bool
    resume: bool | str
    env_kwargs: dict[str, Any]
    env_url: str | None
    eval_judge: str
    eval_episodes: int
    eval_split: str
    max_new_tokens: int
    max_turns: int

    def lora_config(self) -> Any: ...

    def to_dict(self) -> dict[str, Any]: ...


class Trainer(ABC):
    """A training run of `total_steps` optimizer steps over a policy, and the loop that runs it
    (`train`), shared by `GRPOTrainer` and `SFTTrainer`.

    A subclass's ``__init__`` calls ``super().__init__(config)`` (output paths, device, dtype,
    mixed precision, seeds), loads the policy (`load_model`), sets `total_steps` and `env_id`,
    makes the optimizer (`make_optimizer`) and ends with `prepare_output` (resume, or a fresh
    output folder). It implements `train_step`, `evaluates_at`, `describe_step` and `plot`, and
    may override `run_steps` (GRPO's asynchronous pipeline), `checkpoints_at`, `eval_name` and
    `eval_setting`.

    Files under ``output_dir``: ``metrics.jsonl`` (a line per step), ``config.json``,
    ``checkpoints/step-N/``, ``best/`` and ``last/`` (loadable weights), ``eval/step-N.jsonl``
    and the plot; under torchrun rank 0 writes them.
    """

    label: ClassVar[str]
    """What trains: ``"GRPO"`` or ``"SFT"`` (the progress bar's label; lower-cased, the eval agent's name)."""
    step_activity: ClassVar[str] = ""
    """What a step does, shown after ``step k/N`` in the live progress bar."""
    resumable_changes: ClassVar[frozenset[str]] = frozenset()
    """Config fields a resumed run may change without a warning."""

    config: RunConfig
    total_steps: int
    """The step the run ends at."""
    env_id: str | None
    """The env held-out evals play (None: no eval)."""
    model: Any
    tokenizer: Any
    trainable: list[torch.nn.Parameter]
    optimizer: torch.optim.Optimizer
    scheduler: Any

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.output_dir = Path(config.output_dir)
        self.checkpoints_dir = self.output_dir / "checkpoints"
        self.metrics_path = self.output_dir / "metrics.jsonl"
        self.device, self.dtype = resolve_device_dtype(config.device, config.dtype)
        self.mixed_precision = resolve_mixed_precision(config.mixed_precision, self.device, self.dtype)
        self.generation_dtype = resolve_generation_dtype(config.generation_dtype, self.device, self.dtype)
        """The dtype of the `GenerationCopy` rollouts and evals generate with (None: the training model)."""
        self.ranks = Ranks()
        """This process among the trainer's ranks (torchrun); one rank otherwise."""
        self.state = TrainerState()
        self.history: list[dict[str, Any]] = []
        """Metric records this trainer logged (also appended to metrics.jsonl)."""
        self.resumed_from: Path | None = None
        """The checkpoint the run continues from (None: a fresh run)."""
        seed_everything(config.seed)

    # -- what a trainer supplies ----------------------------------------------------------

    @abstractmethod
    def train_step(self) -> dict[str, Any]:
        """One optimizer step; advances ``state.step`` (and ``state.cursor``) and returns the
        step's metrics record, with at least ``step`` and ``step_time_s``."""

    @abstractmethod
    def evaluates_at(self, step: int) -> bool:
        """Whether rank 0 runs a held-out eval after `step` (0: before training)."""

    @abstractmethod
    def describe_step(self, record: dict[str, Any]) -> tuple[str, str]:
        """(the note beside the live bar, the step's line without ``step k/N`` and the time
        left) for a `train_step` record."""

    @abstractmethod
    def plot(self) -> None:
        """Plot the run's metrics.jsonl into ``output_dir`` (at the end of `train`)."""

    @contextlib.contextmanager
    def run_steps(self) -> Iterator[Callable[[], dict[str, Any]]]:
        """The context the steps run in; yields what runs the next step (`train_step`)."""
        yield self.train_step

    def checkpoints_at(self, step: int) -> bool:
        """Whether to write a checkpoint after `step`: every ``save_steps`` (0: never)."""
        save_steps = self.config.save_steps
        return bool(save_steps) and step % save_steps == 0

    def eval_name(self, step: int) -> str:
        """What progress calls the held-out eval after `step`."""
        return f"eval at step {step}"

    def eval_setting(self) -> str:
        """The judge and episodes of a held-out eval, as its line names them."""
        config = self.config
        return f"{config.eval_judge}, {config.eval_episodes} {config.eval_split} episodes"

    # -- the run --------------------------------------------------------------------------

    def train(self) -> list[dict[str, Any]]:
        """Run steps ``state.step + 1 .. total_steps``; returns the metric records logged.

        Progress goes to stdout (rank 0's only under torchrun): in a terminal a bar labelled
        with the phase (eval before training, step k/N, eval at step k), elsewhere one line
        per step and per held-out eval. Rank 0 evaluates where `evaluates_at` says (keeping
        the best weights in ``best/``), appends each record to metrics.jsonl, checkpoints
        where `checkpoints_at` says, and at the end writes ``last/`` and the plot."""
        main = self.ranks.is_main
        writer = tensorboard_writer(self.config.tensorboard, self.output_dir / "tensorboard", self.state.step + 1) if main else None
        console = None if main else Console(file=io.StringIO())
        try:
            with RunProgress(self.total_steps, label=self.label, completed=self.state.step, console=console) as progress:
                if self.state.step == 0 and main and self.evaluates_at(0):
                    self.log_metrics({"step": 0, **self.evaluate_and_keep_best(progress)}, writer)
                with self.run_steps() as next_step:
                    while self.state.step < self.total_steps:
                        progress.phase(f"step {self.state.step + 1}/{self.total_steps}{self.step_activity}")
                        record = next_step()
                        step = self.state.step
                        note, line = self.describe_step(record)
                        progress.update(step, note=note)
                        left = progress.time_left(record["step_time_s"])
                        if not progress.live:
                            progress.line(f"step {step}/{self.total_steps}: {line}, about {format_seconds(left)} left")
                        if not main:
                            continue
                        if self.evaluates_at(step):
                            record.update(self.evaluate_and_keep_best(progress))
                        self.log_metrics(record, writer)  # before the checkpoint: a crash in between re-runs this step
                        if self.checkpoints_at(step):
                            progress.phase(f"step {step}/{self.total_steps}: saving a checkpoint")
                            self.write_checkpoint()
                if main:
                    progress.phase("saving the last weights and the plot")
                    with atomic_directory(self.output_dir / "last") as folder:
                        save_weights(self.model, folder, self.tokenizer)
                    self.plot()
                self.ranks.barrier("waiting for rank 0 to save the last adapter")
                progress.phase("done")
        finally:
            if writer is not None:
                writer.close()
        return self.history

    def evaluate(self, on_episode: Callable[[Trajectory], None] | None = None) -> dict[str, float]:
        """Held-out eval of the current policy: ``eval_episodes`` greedy episodes of `env_id`'s
        ``eval_split`` scored by ``eval_judge``; returns ``eval/reward`` (mean),
        ``eval/success`` (share at or above the success threshold), ``eval/failed`` and
        ``eval/<metric>``, the mean of each judge component and episode counter (e.g.
        ``eval/recall``). The judged episodes go to ``output_dir/eval/step-N.jsonl``;
        `on_episode` is called with each as it finishes.

        Raises:
            ValueError: no env to evaluate on (`env_id` is None).
        """
        if not self.env_id:
            raise ValueError(f"no env to evaluate on: set {type(self.config).__name__}.env_id (the data does not name one env)")
        player = GenerationCopy(self.model, self.generation_dtype).model if self.generation_dtype is not None else self.model
        return evaluate_policy(
            player,
            self.tokenizer,
            self.config,
            env_id=self.env_id,
            out=self.output_dir / "eval" / f"step-{self.state.step}.jsonl",
            name=f"{self.label.lower()}-step-{self.state.step}",
            device=self.device,
            on_episode=on_episode,
        )

    def evaluate_and_keep_best(self, progress: RunProgress) -> dict[str, float]:
        """`evaluate` at the current step, shown in `progress` (a phase per episode, a line at
        the end); when its reward is the best so far the weights go to ``best/`` (`keep_best`).
        Returns the eval's metrics and ``timing/eval_s``."""
        config, step, started = self.config, self.state.step, time.perf_counter()
        name = self.eval_name(step)
        finished = 0

        def advance(_: Trajectory) -> None:
            nonlocal finished
            finished += 1
            progress.phase(f"{name}: {finished}/{config.eval_episodes} episodes")

        progress.phase(f"{name}: 0/{config.eval_episodes} episodes")
        metrics = self.evaluate(on_episode=advance)
        reward = metrics["eval/reward"]
        keep_best(self.state, step, metrics, folder=self.output_dir / "best", model=self.model, tokenizer=self.tokenizer)
        metrics["timing/eval_s"] = time.perf_counter() - started
        progress.line(f"{name}: held-out reward {reward:.3f} ({self.eval_setting()}, {metrics['timing/eval_s']:.0f} s)")
        return metrics

    def log_metrics(self, record: dict[str, Any], writer: Any = None) -> None:
        """Append `record` to metrics.jsonl (and TensorBoard's `writer`) and to `history`."""
        clean = append_metrics(self.metrics_path, record, writer)
        self.history.append(clean)
        shown = ", ".join(f"{k}={format_metric(clean.get(k))}" for k in ("reward", "loss", "eval/reward") if k in clean)
        log.info("step %d: %s", record["step"], shown)

    def write_checkpoint(self) -> Path:
        """Write ``checkpoints/step-N`` of the current step and prune the old ones (``keep_last``)."""
        path = save_checkpoint(
            self.checkpoints_dir,
            model=self.model,
            optimizer=self.optimizer,
            scheduler=self.scheduler,
            state=self.state,
            config=self.config.to_dict(),
        )
        prune_checkpoints(self.checkpoints_dir, self.config.keep_last)
        return path

    # -- set-up, for a subclass's __init__ ------------------------------------------------

    def load_model(self) -> tuple[Any, Any]:
        """(model, tokenizer): `load_policy` with the config's model, LoRA and checkpointing."""
        config = self.config
        return load_policy(
            config.model,
            self.dtype,
            self.device,
            lora=config.lora_config() if config.use_lora else None,
            init_adapter=config.init_adapter,
            gradient_checkpointing=config.gradient_checkpointing,
            seed=config.seed,
        )

    def make_optimizer(self, learning_rate: float) -> None:
        """AdamW over the model's trainable parameters, and its schedule over `total_steps`."""
        config = self.config
        self.trainable = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.trainable, lr=learning_rate, weight_decay=config.weight_decay)
        self.scheduler = make_scheduler(config.lr_scheduler, self.optimizer, warmup_steps=config.warmup_steps, total_steps=self.total_steps)

    def prepare_output(self) -> None:
        """Resume from a checkpoint (``config.resume``, `resume_run`), or check that the output
        folder holds no other run; then write ``config.json``. Under torchrun rank 0 does the
        checks and picks the checkpoint, and every rank loads it."""
        if not self.ranks.is_main:
            checkpoint = self.ranks.broadcast(None)
            if checkpoint is not None:
                self.state, _ = load_checkpoint(checkpoint, model=self.model, optimizer=self.optimizer, scheduler=self.scheduler)
                self.resumed_from = Path(checkpoint)
            return
        try:
            self.state, self.resumed_from = resume_run(
                self.output_dir,
                self.config.resume,
                model=self.model,
                optimizer=self.optimizer,
                scheduler=self.scheduler,
                config=self.config.to_dict(),
                may_change=set(self.resumable_changes),
            )
        except BaseException:
            self.ranks.broadcast(None)  # the others must not wait for a checkpoint that will not come
            raise
        self.ranks.broadcast(str(self.resumed_from) if self.resumed_from is not None else None)
        # The run's settings beside its weights: `judgegym eval --from-run DIR` plays the same env with them.
        (self.output_dir / "config.json").write_text(json.dumps(self.config.to_dict(), indent=2, default=str), encoding="utf-8")


def held_out_env_kwargs(config: RunConfig) -> dict[str, Any]:
    """The held-out eval env's keyword arguments: a `GRPOConfig`'s ``eval_env_kwargs`` where
    set (a curriculum's training env differs from the one it is judged on), else
    ``config.env_kwargs`` (an `SFTConfig`'s are its eval env's)."""
    separate = getattr(config, "eval_env_kwargs", None)
    return dict(config.env_kwargs if separate is None else separate)


def evaluate_policy(
    model: Any,
    tokenizer: Any,
    config: RunConfig,
    *,
    env_id: str,
    out: str | Path,
    name: str,
    device: str,
    on_episode: Callable[[Trajectory], None] | None = None,
) -> dict[str, float]:
    """Held-out eval of a trainer's policy: ``config.eval_episodes`` greedy episodes (seeds
    ``0..n-1``) of `env_id` made with `held_out_env_kwargs` on ``config.eval_split`` with at
    most ``config.max_turns`` turns of ``config.max_new_tokens`` tokens, scored by the
    pointwise ``config.eval_judge`` spec, on the served env at ``config.env_url`` if set
    (`config` is a `GRPOConfig` or an `SFTConfig`); the
    judged episodes go to `out` (JSONL). Returns ``eval/reward`` (mean), ``eval/success``
    (share at or above the success threshold), ``eval/failed`` (episodes that raised), and
    ``eval/<metric>``, the mean of each judge component and episode counter (``eval/recall``,
    ``eval/tool_calls``, ...)."""
    from ..agents.hf import HFAgent
    from ..evaluation import evaluate, summarize

    episodes = config.eval_episodes
    agent = HFAgent(config.model, model_obj=model, tokenizer_obj=tokenizer, device=device, max_tokens=config.max_new_tokens, name=name)
    release_memory()  # what training freed, before generation in worker threads allocates afresh
    run = run_sync(
        evaluate(
            env_id,
            agent,
            episodes=episodes,
            env_kwargs={**held_out_env_kwargs(config), "split": config.eval_split, "max_turns": config.max_turns},
            judge=config.eval_judge,
            concurrency=min(episodes, 16),
            on_episode=on_episode,
            env_url=config.env_url,
        )
    )
    release_memory()
    if not run.trajectories:
        raise RuntimeError(f"every eval episode failed; the first: {run.failed[0][2] if run.failed else '?'}")
    write_jsonl(out, run.trajectories)
    summary = summarize(run.trajectories, failed=len(run.failed))
    means = {f"eval/{key}": value for key, value in summary.components.items() if math.isfinite(value)}
    return {**means, "eval/reward": summary.mean_reward, "eval/success": summary.success_rate, "eval/failed": float(len(run.failed))}


def append_metrics(path: str | Path, record: dict[str, Any], writer: Any = None) -> dict[str, Any]:
    """Append one step's record to a metrics.jsonl file (durably: a crash after it keeps the
    line) and to a TensorBoard `writer`; non-finite floats become null. Returns the clean record."""
    clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
    with Path(path).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(clean) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    if writer is not None:
        for key, value in clean.items():
            if key != "step" and isinstance(value, int | float):
                writer.add_scalar(key, value, record["step"])
    return clean


def tensorboard_writer(enabled: bool, folder: Path, purge_step: int) -> Any:
    """A TensorBoard ``SummaryWriter`` in `folder`, or None (disabled, or the package is missing: a warning)."""
    if not enabled:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        warnings.warn(
            "tensorboard=True but the tensorboard package is not installed (pip install tensorboard); metrics go to metrics.jsonl only",
            stacklevel=3,
        )
        return None
    return SummaryWriter(log_dir=str(folder), purge_step=purge_step)


def make_scheduler(name: str, optimizer: torch.optim.Optimizer, *, warmup_steps: int, total_steps: int) -> Any:
    """`transformers.get_scheduler` for 'constant' (with warmup), 'linear' or 'cosine'."""
    from transformers import get_scheduler

    name = "constant_with_warmup" if name == "constant" else name
    return get_scheduler(name, optimizer, num_warmup_steps=warmup_steps, num_training_steps=total_steps)


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global RNGs (what a run's set-up draws from)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def format_metric(value: Any) -> str:
    """A metric as progress and log lines show it: ``0.312``, or ``-`` when missing or not finite."""
    return f"{value:.3f}" if isinstance(value, float) and math.isfinite(value) else "-"


__all__ = [
    "RunConfig",
    "Trainer",
    "append_metrics",
    "evaluate_policy",
    "format_metric",
    "make_scheduler",
    "seed_everything",
    "tensorboard_writer",
]
