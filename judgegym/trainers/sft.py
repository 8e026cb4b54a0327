"""Supervised fine-tuning on judged trajectories, the warm start before GRPO: `SFTConfig` (every
knob, with its help) and `SFTTrainer`. Episodes are tokenized by the same `EpisodeTokenizer` as
GRPO's rollouts (the same chat template, tool-call convention and masks), so the loss covers
exactly the tokens a policy samples, and nothing else: system, user and tool turns are context.

Data are rejection-sampled with `judgegym.evaluation.select_trajectories` (reward, best of
group, judge components) from judgegym JSONL (``judgegym eval --out``, trainer eval files,
groups) or OpenAI chat JSONL (``{"messages": [...], "tools": [...]}``).
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from ..evaluation.selection import select_trajectories
from ..progress import peak_rss_mb
from ..trajectory import Group, Message, Trajectory
from .device import release_memory, training_autocast
from .loop import Trainer
from .policy import PolicyConfig, config_field
from .rollout import pad_token_id
from .tokenize import EpisodeTokenizer, TemplateError, TokenTrajectory

log = logging.getLogger("judgegym.trainers")


@dataclass
class SFTConfig(PolicyConfig):
    """Everything an SFT run is made of; ``SFTConfig.help()`` gives each field's help. The
    model and LoRA fields are `PolicyConfig`'s, as `GRPOConfig`'s are, so the adapter an SFT
    run writes continues under ``judgegym train --init-adapter DIR`` unchanged."""

    # -- data ---------------------------------------------------------------------------
    data: list[str] = config_field(
        help="JSONL files of trajectories, groups (judgegym) or OpenAI chat lines ({'messages', 'tools'}).", factory=list
    )
    min_reward: float | None = config_field(None, "Keep trajectories whose reward is at least this (unscored ones go).")
    best_of_group: bool = config_field(False, "Keep only the best trajectory of each scenario (a group, or an eval run's trials).")
    min_components: dict[str, float] = config_field(
        help="Keep trajectories whose judge components are at least these, e.g. {'recall': 1.0, 'citation': 1.0}.", factory=dict
    )
    max_length: int = config_field(4096, "Episodes longer than this many tokens are left out (and counted), never cut mid-turn.")
    # -- model: PolicyConfig's fields, and ----------------------------------------------
    # -- optimisation ---------------------------------------------------------------------
    learning_rate: float = config_field(2e-4, "AdamW learning rate (2e-4 suits LoRA; use about 1e-5 for full fine-tuning).")
    weight_decay: float = config_field(0.0, "AdamW weight decay.")
    max_grad_norm: float = config_field(1.0, "Clip the global gradient norm to this before each step (0 disables clipping).")
    warmup_steps: int = config_field(0, "Steps of linear learning-rate warmup.")
    lr_scheduler: Literal["constant", "linear", "cosine"] = config_field("cosine", "Learning-rate schedule after warmup.")
    epochs: int = config_field(1, "Passes over the selected data.")
    max_steps: int | None = config_field(None, "Stop after this many optimizer steps (None: all the epochs' steps).")
    micro_batch_tokens: int = config_field(
        2048,
        "Most tokens (padded: rows x longest row) per forward/backward pass; episodes of similar length share one. The "
        "activations grow with it: 4096 peaked at 13.4 GB in float32 for SmolLM2-135M, 2048 stays under 8 GB.",
    )
    gradient_accumulation_steps: int = config_field(4, "Micro-batches per optimizer step; the loss is the token mean over the whole step.")
    # -- held-out eval --------------------------------------------------------------------
    env_id: str | None = config_field(None, "Env of the held-out eval (None: the data's env, when every trajectory names the same one).")
    env_kwargs: dict[str, Any] = config_field(help="Keyword arguments for the eval env's gym.make.", factory=dict)
    env_url: str | None = config_field(
        None,
        "judgegym serve URL to play the eval env on (several, comma-separated, share the envs in turn); None: in this process. "
        "Judging stays here.",
    )
    eval_judge: str = config_field("verifier", "Pointwise judge spec for held-out eval.")
    eval_steps: int = config_field(0, "Held-out eval every this many steps, and at the end (0: only at the end; eval_episodes=0: never).")
    eval_episodes: int = config_field(16, "Episodes per held-out eval (seeds 0..n-1 of eval_split, greedy); 0 disables eval.")
    eval_split: str = config_field("test", "The env split held-out eval plays.")
    max_new_tokens: int = config_field(256, "Eval: most tokens per assistant turn.")
    max_turns: int = config_field(6, "Eval: most assistant turns per episode.")
    # -- run ------------------------------------------------------------------------------
    seed: int = config_field(0, "Seeds the LoRA init and the order of the batches.")
    output_dir: str = config_field("runs/sft", "Where metrics.jsonl, checkpoints/, best/, last/, eval/ and loss.png go.")
    save_steps: int = config_field(50, "Checkpoint every this many steps (0: never).")
    keep_last: int | None = config_field(2, "Checkpoints to keep (older ones are deleted); None or 0 keeps all.")
    tensorboard: bool = config_field(False, "Also write TensorBoard scalars to output_dir/tensorboard.")
    resume: bool | str = config_field(False, "True: continue from the newest checkpoint in output_dir (if any); a path: that checkpoint.")

    def __post_init__(self) -> None:
        problems = []
        positive = ("epochs", "micro_batch_tokens", "gradient_accumulation_steps", "max_length", "max_new_tokens", "max_turns")
        problems += [f"{name} must be >= 1, got {getattr(self, name)}" for name in positive if getattr(self, name) < 1]
        nonnegative = ("save_steps", "eval_steps", "eval_episodes", "warmup_steps", "weight_decay", "max_grad_norm")
        problems += [f"{name} must be >= 0, got {getattr(self, name)}" for name in nonnegative if getattr(self, name) < 0]
        if self.max_steps is not None and self.max_steps < 1:
            problems.append(f"max_steps must be >= 1 or None, got {self.max_steps}")
        if self.learning_rate <= 0:
            problems.append(f"learning_rate must be > 0, got {self.learning_rate}")
        if self.lr_scheduler not in ("constant", "linear", "cosine"):
            problems.append(f"lr_scheduler must be 'constant', 'linear' or 'cosine', got {self.lr_scheduler!r}")
        problems += self.policy_problems()
        if isinstance(self.data, str):
            self.data = [self.data]
        if problems:
            raise ValueError("invalid SFTConfig: " + "; ".join(problems))


# -- data -------------------------------------------------------------------------------------


def read_sft_records(paths: Iterable[str | Path]) -> list[Trajectory | Group]:
    """Every record of the given JSONL files: judgegym trajectories (``eval --out``, the
    trainers' ``eval/step-N.jsonl``), groups (lines with ``trajectories``), or OpenAI chat
    lines (``{"messages": [...], "tools": [...]}`` plus optional scenario_id, env_id, reward,
    metrics, as ``write_chat_jsonl`` writes them). Content given as a list of parts is joined.

    Raises:
        FileNotFoundError: a file does not exist.
        ValueError: a bad line, naming the file and line.
    """
    records: list[Trajectory | Group] = []
    for path in map(Path, paths):
        if not path.is_file():
            raise FileNotFoundError(f"SFT data file {str(path)!r} does not exist")
        with path.open(encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    records.append(_record(json.loads(line), f"{path.name}:{lineno}"))
                except (ValueError, TypeError) as exc:  # JSON and pydantic errors are ValueErrors
                    raise ValueError(f"{path}, line {lineno}: not a trajectory, group or chat line: {_short(exc)}") from None
    return records


def _record(raw: Any, default_id: str) -> Trajectory | Group:
    if not isinstance(raw, dict):
        raise TypeError(f"expected a JSON object, got {type(raw).__name__}")
    if "trajectories" in raw:
        return Group.model_validate(raw)
    if not isinstance(raw.get("messages"), list) or not raw["messages"]:
        raise ValueError("no 'messages' list")
    messages = [{**m, "content": _text(m.get("content"))} if isinstance(m, dict) else m for m in raw["messages"]]
    known = {name for name in Trajectory.model_fields}
    data = {key: value for key, value in raw.items() if key in known}
    data.update(messages=messages, scenario_id=str(raw.get("scenario_id") or default_id))
    data["tools"] = raw.get("tools") or []
    return Trajectory.model_validate(data)


def _text(content: Any) -> Any:
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return content


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__


def tokenize_trajectory(tokenizer: Any, trajectory: Trajectory) -> TokenTrajectory:
    """A stored episode as the token sequence GRPO would have trained on had the policy sampled
    its assistant turns: the messages before the first assistant turn are the prompt, each
    assistant turn is `EpisodeTokenizer.add_assistant_message` (mask 1, ending with the
    end-of-turn token), and the turns between them are env turns (mask 0). A trailing run of
    non-assistant turns (a closing user message) is not included: nothing follows it to learn.

    Raises:
        ValueError: the episode has no assistant turn, or starts with one.
        TemplateError: the chat template cannot render it turn by turn.
    """
    messages = [m.to_openai() if isinstance(m, Message) else dict(m) for m in trajectory.messages]
    first = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), None)
    if first is None:
        raise ValueError(f"trajectory {trajectory.scenario_id!r} has no assistant turn to learn")
    if first == 0:
        raise ValueError(f"trajectory {trajectory.scenario_id!r} starts with an assistant turn; it needs a prompt before it")
    episode = EpisodeTokenizer(tokenizer, trajectory.tools)
    episode.start(messages[:first])
    pending: list[dict[str, Any]] = []
    for message in messages[first:]:
        if message.get("role") != "assistant":
            pending.append(message)
            continue
        if pending:
            episode.add_env_messages(pending)
            pending = []
        elif episode.messages and episode.messages[-1].get("role") == "assistant":
            raise ValueError(f"trajectory {trajectory.scenario_id!r} has two assistant turns in a row")
        episode.add_assistant_message(message)
    return episode.trajectory()


@dataclass
class SFTExample:
    """One selected episode, tokenized."""

    trajectory: Trajectory
    tokens: TokenTrajectory


def length_grouped_batches(lengths: Sequence[int], max_tokens: int, seed: int) -> list[list[int]]:
    """Indices grouped into micro-batches of similar length: shuffled (by `seed`), cut into
    chunks of 64, each chunk sorted by length and packed while ``rows x longest row`` stays
    within `max_tokens` (a longer sequence gets a batch of its own); the batches are then
    shuffled. Every index appears exactly once; padding stays small and no two episodes share
    a row, so nothing attends across episodes."""
    rng = random.Random(seed)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    batches: list[list[int]] = []
    for start in range(0, len(order), 64):
        chunk = sorted(order[start : start + 64], key=lambda i: lengths[i])
        current: list[int] = []
        for index in chunk:
            width = max([lengths[i] for i in current] + [lengths[index]])
            if current and width * (len(current) + 1) > max_tokens:
                batches.append(current)
                current = []
            current.append(index)
        if current:
            batches.append(current)
    rng.shuffle(batches)
    return batches


# -- the trainer ----------------------------------------------------------------------------


class SFTTrainer(Trainer):
    """Supervised fine-tuning of a policy on selected trajectories.

    Args:
        config: the run (``config.data`` names the files, unless `records` are given).
        records: trajectories and/or groups to select from instead of ``config.data``.

    Loading selects the trajectories (`select_trajectories` with the config's filters),
    tokenizes them (`tokenize_trajectory`; episodes over ``max_length`` are left out and
    counted), plans every epoch's length-grouped micro-batches from the seed, and loads the
    model (and, with ``resume``, the checkpoint). `train` (`Trainer`'s run loop) runs the
    remaining steps; held-out eval (when an env is known and ``eval_episodes > 0``) runs every
    ``eval_steps`` and at the end, and ``best/`` keeps the weights of the best eval. Files under
    ``output_dir``: ``metrics.jsonl``, ``config.json``, ``data.json`` (what was selected and
    left out), ``checkpoints/step-N/``, ``best/`` and ``last/``, ``eval/step-N.jsonl`` and
    ``loss.png``.

    Raises:
        ValueError: nothing left to train on after selection, or a bad data line.
    """

    label = "SFT"
    resumable_changes = frozenset({"resume", "output_dir", "save_steps", "keep_last", "eval_steps", "eval_episodes", "tensorboard"})
    config: SFTConfig

    def __init__(self, config: SFTConfig, *, records: Sequence[Trajectory | Group] | None = None):
        if records is None:
            if not config.data:
                raise ValueError("SFT needs data: set SFTConfig.data to JSONL files, or pass records=")
            records = read_sft_records(config.data)
        super().__init__(config)
        self.model, self.tokenizer = self.load_model()
        self.examples, self.data_report = self._examples(records)
        self.env_id = config.env_id or self._data_env()
        lengths = [len(example.tokens.input_ids) for example in self.examples]
        self.plan = [
            batch
            for epoch in range(config.epochs)
            for batch in length_grouped_batches(lengths, config.micro_batch_tokens, config.seed + epoch)
        ]
        """Every micro-batch of the run, in order (epoch after epoch)."""
        accumulation = config.gradient_accumulation_steps
        self.total_steps = math.ceil(len(self.plan) / accumulation)
        if config.max_steps is not None:
            self.total_steps = min(self.total_steps, config.max_steps)
        self.steps_per_epoch = len(self.plan) / config.epochs / accumulation
        self.make_optimizer(config.learning_rate)
        self.prepare_output()
        (self.output_dir / "data.json").write_text(json.dumps(self.data_report, indent=2), encoding="utf-8")

    # -- what the run loop asks (`Trainer`) -----------------------------------------------

    def evaluates_at(self, step: int) -> bool:
        """Every ``eval_steps`` and at the end, when there is an env to evaluate on and
        ``eval_episodes > 0``; never before training."""
        config = self.config
        if step == 0 or not (self.env_id and config.eval_episodes > 0):
            return False
        return step == self.total_steps or bool(config.eval_steps) and step % config.eval_steps == 0

    def checkpoints_at(self, step: int) -> bool:
        """Every ``save_steps`` and at the end (0: never)."""
        return super().checkpoints_at(step) or bool(self.config.save_steps) and step == self.total_steps

    def eval_setting(self) -> str:
        return f"{super().eval_setting()} of {self.env_id}"

    def describe_step(self, record: dict[str, Any]) -> tuple[str, str]:
        loss = f"loss {record['loss']:.3f}"
        return f"{loss}, {record['step_time_s']:.1f} s/step", f"{loss}, {record['tokens_per_s']:.0f} tokens/s"

    def plot(self) -> None:
        plot_sft(self.metrics_path, self.output_dir / "loss.png")

    # -- one step -------------------------------------------------------------------------

    def train_step(self) -> dict[str, Any]:
        """One optimizer step over the next ``gradient_accumulation_steps`` micro-batches of the
        plan: the summed negative log-likelihood of the assistant tokens divided by their count
        over the whole step, backward per micro-batch, clip, AdamW. Returns its metrics."""
        config, started = self.config, time.perf_counter()
        step = self.state.step + 1
        accumulation = config.gradient_accumulation_steps
        batches = self.plan[(step - 1) * accumulation : step * accumulation]
        examples = [self.examples[i].tokens for batch in batches for i in batch]
        num_targets = sum(tokens.num_sampled for tokens in examples)
        learning_rate = self.scheduler.get_last_lr()[0]
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        total_nll, correct, input_tokens = 0.0, 0, 0
        for batch in batches:
            items = [self.examples[i].tokens for i in batch]
            nll, hits = self._micro_batch_loss(items)
            (nll / num_targets).backward()
            total_nll += float(nll.detach())
            correct += hits
            input_tokens += sum(len(t.input_ids) for t in items)
        grad_norm = torch.nn.utils.clip_grad_norm_(self.trainable, config.max_grad_norm if config.max_grad_norm > 0 else math.inf)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.model.eval()
        release_memory()  # episodes of every length leave glibc's heap fragmented: give it back each step
        self.state.step, self.state.cursor = step, step * accumulation
        elapsed = time.perf_counter() - started
        return {
            "step": step,
            "epoch": step / self.steps_per_epoch if self.steps_per_epoch else 0.0,
            "loss": total_nll / max(num_targets, 1),
            "token_accuracy": correct / max(num_targets, 1),
            "grad_norm": float(grad_norm),
            "learning_rate": learning_rate,
            "num_sequences": len(examples),
            "num_target_tokens": num_targets,
            "num_input_tokens": input_tokens,
            "tokens_per_s": input_tokens / elapsed,
            "step_time_s": elapsed,
            "memory/peak_rss_gb": peak_rss_mb() / 1024,
        }

    # -- internals ------------------------------------------------------------------------

    def _examples(self, records: Sequence[Trajectory | Group]) -> tuple[list[SFTExample], dict[str, Any]]:
        config = self.config
        records = list(records)
        total = sum(len(r.trajectories) if isinstance(r, Group) else 1 for r in records)
        selected = select_trajectories(
            records, min_reward=config.min_reward, best_of_group=config.best_of_group, min_components=config.min_components or None
        )
        examples, too_long, untrainable = [], 0, []
        for trajectory in selected:
            try:
                tokens = tokenize_trajectory(self.tokenizer, trajectory)
            except (ValueError, TemplateError) as exc:
                untrainable.append(f"{trajectory.scenario_id}: {exc}")
                continue
            if len(tokens.input_ids) > config.max_length:
                too_long += 1
                continue
            examples.append(SFTExample(trajectory, tokens))
        if untrainable:
            log.warning("left out %d trajectories that cannot be trained on, e.g. %s", len(untrainable), untrainable[0])
        if too_long:
            log.warning("left out %d trajectories longer than max_length=%d tokens", too_long, config.max_length)
        if not examples:
            raise ValueError(
                f"nothing to train on: {total} trajectories read, {len(selected)} selected (min_reward={config.min_reward}, "
                f"best_of_group={config.best_of_group}, min_components={config.min_components}), {too_long} too long, "
                f"{len(untrainable)} untrainable"
            )
        lengths = [len(e.tokens.input_ids) for e in examples]
        report = {
            "read": total,
            "selected": len(selected),
            "too_long": too_long,
            "untrainable": len(untrainable),
            "trained": len(examples),
            "target_tokens": sum(e.tokens.num_sampled for e in examples),
            "input_tokens": sum(lengths),
            "median_length": float(np.median(lengths)),
            "mean_reward": float(np.mean([e.trajectory.reward for e in examples if e.trajectory.reward is not None] or [math.nan])),
        }
        return examples, report

    def _data_env(self) -> str | None:
        envs = {e.trajectory.env_id for e in self.examples}
        return next(iter(envs)) if len(envs) == 1 and None not in envs else None

    def _micro_batch_loss(self, items: Sequence[TokenTrajectory]) -> tuple[torch.Tensor, int]:
        """(summed NLL of the mask-1 tokens, how many of them the model ranks first). Hidden
        states are computed for every position, but the output head only for the target
        positions: the vocabulary-wide logits of a long multi-turn episode would dwarf the
        rest of the activations."""
        width = max(len(t.input_ids) for t in items)
        pad = pad_token_id(self.tokenizer)
        input_ids = torch.full((len(items), width), pad, dtype=torch.long)
        attention = torch.zeros((len(items), width), dtype=torch.long)
        predicts = torch.zeros((len(items), width), dtype=torch.bool)  # position p predicts token p + 1
        for row, tokens in enumerate(items):
            ids = tokens.input_ids
            input_ids[row, : len(ids)] = torch.tensor(ids)
            attention[row, : len(ids)] = 1
            start = len(tokens.prompt_ids)
            for offset, m in enumerate(tokens.loss_mask):
                if m:
                    predicts[row, start + offset - 1] = True
        input_ids, attention, predicts = input_ids.to(self.device), attention.to(self.device), predicts.to(self.device)
        targets = input_ids[:, 1:][predicts[:, :-1]]
        with training_autocast(self.mixed_precision, self.device):
            hidden = _body(self.model)(input_ids=input_ids, attention_mask=attention, use_cache=False).last_hidden_state
            logits = _head(self.model)(hidden[predicts]).float()
        nll = torch.nn.functional.cross_entropy(logits, targets, reduction="sum")
        hits = int((logits.argmax(-1) == targets).sum())
        return nll, hits


def _body(model: Any) -> Any:
    """The decoder stack (hidden states before the output head), through a peft wrapper."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.get_decoder()


def _head(model: Any) -> Any:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.get_output_embeddings()


def plot_sft(metrics_path: str | Path, out: str | Path) -> Path | None:
    """Plot the training loss per step and the held-out reward at eval steps (a second axis)
    from an SFT run's metrics.jsonl; returns the PNG's path (None when there is nothing)."""
    path = Path(metrics_path)
    if not path.exists():
        return None
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    loss = [(r["step"], r["loss"]) for r in records if r.get("loss") is not None]
    held_out = [(r["step"], r["eval/reward"]) for r in records if r.get("eval/reward") is not None]
    if not loss:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4))
    axes.plot(*zip(*loss, strict=True), label="train loss (NLL per assistant token)", linewidth=1)
    axes.set_xlabel("optimizer step")
    axes.set_ylabel("loss")
    axes.set_title(f"SFT ({path.parent.name})")
    axes.grid(alpha=0.3)
    if held_out:
        right = axes.twinx()
        right.plot(*zip(*held_out, strict=True), "o-", color="tab:orange", label="held-out reward (greedy)")
        right.set_ylabel("held-out reward")
        right.set_ylim(-0.02, 1.02)
        right.legend(loc="upper right", fontsize="small")
    axes.legend(loc="upper left", fontsize="small")
    figure.tight_layout()
    figure.savefig(out, dpi=120)
    plt.close(figure)
    return Path(out)


__all__ = ["SFTConfig", "SFTExample", "SFTTrainer", "length_grouped_batches", "plot_sft", "read_sft_records", "tokenize_trajectory"]
