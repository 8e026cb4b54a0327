"""What the GRPO and SFT trainers share about the policy: loading it (with a fresh or an
initial LoRA adapter, and activation checkpointing), its learning-rate schedule, and the
held-out eval that plays it greedily on an env and writes the judged episodes."""

from __future__ import annotations

import json
import logging
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch

from ..judges.base import run_sync
from ..trajectory import Trajectory, write_jsonl

DEFAULT_LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""Every linear projection of attention and MLP in Llama-style models (SmolLM2, Qwen, Mistral)."""


def config_field(default: Any = None, help: str = "", *, factory: Any = None) -> Any:  # noqa: A002  (TRL's spelling)
    """A dataclass field with its help text in ``metadata["help"]`` (what a command line shows)."""
    if factory is not None:
        return field(default_factory=factory, metadata={"help": help})
    return field(default=default, metadata={"help": help})


log = logging.getLogger("judgegym.trainers")


@dataclass
class PolicyConfig:
    """The policy's fields, shared by `GRPOConfig` and `SFTConfig` (so an SFT adapter continues
    under GRPO with the same LoRA config), and what both configs can do."""

    model: str = config_field("smollm2-135m", "Policy: an embedded model name (smollm2-135m), a transformers folder, or a hub id.")
    dtype: str = config_field("auto", "Weights dtype: 'auto' (float32 on CPU, bfloat16 on GPU), 'float32', 'bfloat16', 'float16'.")
    device: str = config_field("auto", "'auto' (cuda when available, else cpu), 'cpu', 'cuda', 'cuda:1', ...")
    gradient_checkpointing: bool = config_field(False, "Recompute activations in the backward pass: less memory, about 30% slower.")
    mixed_precision: str = config_field(
        "auto",
        "'bf16': the training forward and backward under torch.autocast in bfloat16 (weights, optimizer and the loss's "
        "softmax stay in dtype); on CPUs with AMX or AVX-512 BF16 faster and half the activation memory, on other CPUs many "
        "times slower (native_bf16() tells). 'no': everything in dtype. 'auto': bf16 where the device computes it natively "
        "and the weights are float32, else 'no' (the run's log says which).",
    )
    use_lora: bool = config_field(True, "Train a LoRA adapter (peft) instead of all weights; GRPO's KL reference is then free.")
    lora_r: int = config_field(16, "LoRA rank.")
    lora_alpha: int = config_field(32, "LoRA scaling numerator (the update is scaled by alpha / r).")
    lora_dropout: float = config_field(0.0, "Dropout on the LoRA input. Above 0 GRPO's trainer logprobs no longer equal the sampler's.")
    lora_target_modules: list[str] | str = config_field(
        help="Modules that get adapters: names, or 'all-linear' (peft: every linear layer but the output head).",
        factory=lambda: list(DEFAULT_LORA_TARGETS),
    )
    init_adapter: str | None = config_field(
        None,
        "A LoRA adapter folder to start from (an SFT run's best/ or last/) instead of a fresh adapter; its rank, alpha and "
        "target modules must equal lora_r, lora_alpha and lora_target_modules.",
    )

    def policy_problems(self) -> list[str]:
        """What is wrong with the policy fields (empty when nothing)."""
        problems = []
        if self.dtype not in ("auto", "float32", "bfloat16", "float16"):
            problems.append(f"dtype must be 'auto', 'float32', 'bfloat16' or 'float16', got {self.dtype!r}")
        if self.mixed_precision not in ("auto", "no", "bf16"):
            problems.append(f"mixed_precision must be 'auto', 'no' or 'bf16', got {self.mixed_precision!r}")
        if self.init_adapter and not self.use_lora:
            problems.append("init_adapter needs use_lora=True: the adapter is what gets trained")
        if self.lora_dropout < 0:
            problems.append(f"lora_dropout must be >= 0, got {self.lora_dropout}")
        return problems

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


def load_policy(
    model_name: str,
    dtype: torch.dtype,
    device: str,
    *,
    lora: Any = None,
    init_adapter: str | Path | None = None,
    gradient_checkpointing: bool = False,
    seed: int = 0,
) -> tuple[Any, Any]:
    """(model, tokenizer) ready to train on `device`.

    Args:
        model_name: an embedded model name, a transformers folder or a hub id.
        lora: a peft ``LoraConfig`` for a fresh adapter (seeded by `seed`); None trains all
            weights (unless `init_adapter` is given).
        init_adapter: a LoRA adapter folder (what SFT or GRPO wrote in ``best/`` or ``last/``)
            to keep training. Its rank, alpha and target modules must equal `lora`'s, so
            that an SFT adapter continues under GRPO as the same adapter.
        gradient_checkpointing: recompute activations in the backward pass.

    Raises:
        FileNotFoundError: `init_adapter` is not an adapter folder.
        ValueError: `init_adapter` has another LoRA config than `lora`, or full fine-tuning
            (``lora=None``) was asked for with an adapter.
    """
    from ..models import load_model, peft_quietly, unmark_quantized

    model, tokenizer = load_model(model_name, dtype, fresh=True)
    unmark_quantized(model)  # a GGUF-loaded model is plain floats but marked quantized, which peft refuses
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if init_adapter is not None:
        if lora is None:
            raise ValueError("init_adapter needs use_lora=True: the adapter is what gets trained")
        model = _load_adapter(model, Path(init_adapter), lora)
    elif lora is not None:
        from peft import get_peft_model

        torch.manual_seed(seed)  # the adapter's initialisation
        with peft_quietly():
            model = get_peft_model(model, lora)
    if gradient_checkpointing:
        # transformers 5 renamed it activation checkpointing (the old name warns); 4.x has only the old one.
        enable = getattr(model, "activation_checkpointing_enable", None)
        if enable is not None:
            enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if lora is not None:
            model.enable_input_require_grads()  # frozen embeddings: give checkpointed blocks an input with grad
    return model.to(device), tokenizer


def _load_adapter(model: Any, folder: Path, lora: Any) -> Any:
    from peft import PeftConfig, PeftModel

    from ..models import peft_quietly

    if not (folder / "adapter_config.json").is_file():
        raise FileNotFoundError(f"init_adapter={str(folder)!r} is not a LoRA adapter folder (no adapter_config.json)")
    saved = PeftConfig.from_pretrained(str(folder))
    differences = []
    for name in ("r", "lora_alpha"):
        if getattr(saved, name) != getattr(lora, name):
            differences.append(f"{name} {getattr(saved, name)} (adapter) vs {getattr(lora, name)} (config)")
    if _targets(saved.target_modules) != _targets(lora.target_modules):
        differences.append(f"target_modules {_targets(saved.target_modules)} (adapter) vs {_targets(lora.target_modules)} (config)")
    if differences:
        raise ValueError(
            f"init_adapter={str(folder)!r} was trained with another LoRA config: {'; '.join(differences)}. Set lora_r, lora_alpha "
            "and lora_target_modules to the adapter's, so the run continues the same adapter"
        )
    with peft_quietly():
        return PeftModel.from_pretrained(model, str(folder), is_trainable=True)


def _targets(modules: Any) -> list[str] | str:
    return modules if isinstance(modules, str) else sorted(modules or [])


def native_bf16(device: str = "cpu") -> bool:
    """Whether `device` computes bfloat16 natively: a CUDA GPU that supports it, or a CPU with AMX
    or AVX-512 BF16 (elsewhere a CPU emulates bf16, many times slower than float32)."""
    if str(device).startswith("cuda"):
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return " amx_bf16" in flags or " avx512_bf16" in flags


def training_autocast(mixed_precision: str, device: str) -> Any:
    """The context the training forward and backward run in: ``torch.autocast`` in bfloat16 for
    ``mixed_precision='bf16'``, a no-op otherwise."""
    device_type = "cuda" if str(device).startswith("cuda") else "cpu"
    return torch.autocast(device_type, dtype=torch.bfloat16, enabled=mixed_precision == "bf16")


def precision_line(mixed_precision: str, device: str, dtype: torch.dtype) -> str:
    """What a run computes its update in, for the run's log: "update in bf16 autocast (native
    bfloat16 on cpu)" or "update in float32 (cpu has no native bfloat16)"."""
    weights = str(dtype).removeprefix("torch.")
    if mixed_precision == "bf16":
        return f"update in bf16 autocast over {weights} weights ({'native' if native_bf16(device) else 'emulated'} bfloat16 on {device})"
    reason = "mixed_precision='no'" if native_bf16(device) else f"{device} has no native bfloat16"
    return f"update in {weights} ({reason})"


def resolve_mixed_precision(mixed_precision: str, device: str, dtype: torch.dtype) -> str:
    """'bf16' or 'no' for a run's `mixed_precision` setting, said in the log: 'auto' is bf16
    where `device` computes it natively and the weights are float32 (bf16 weights need no
    autocast), else 'no'. An explicit 'bf16' on a device that emulates it warns."""
    if mixed_precision == "auto":
        native = native_bf16(device)
        chosen = "bf16" if native and dtype == torch.float32 else "no"
        why = "native bfloat16" if native else "no native bfloat16 (no AMX or AVX-512 BF16): float32 is faster here"
        log.info("mixed precision: %s (auto: %s on %s, weights %s)", chosen, why, device, str(dtype).removeprefix("torch."))
        return chosen
    if mixed_precision == "bf16" and not native_bf16(device):
        warnings.warn(
            f"mixed_precision='bf16' on {device}, which has no native bfloat16 (no AMX or AVX-512 BF16 on a CPU): "
            "training will be slower than in float32; set mixed_precision='no' or 'auto'",
            stacklevel=3,
        )
    return mixed_precision


def release_memory() -> None:
    """Give freed memory back to the operating system between phases (training, generation,
    eval). glibc keeps freed blocks in per-thread arenas, and generation runs in worker threads,
    so without this a run's resident memory is the sum of its phases' peaks, not the largest."""
    import ctypes
    import gc
    import sys

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):  # not glibc (musl): nothing to trim
            pass


def make_scheduler(name: str, optimizer: torch.optim.Optimizer, *, warmup_steps: int, total_steps: int) -> Any:
    """`transformers.get_scheduler` for 'constant' (with warmup), 'linear' or 'cosine'."""
    from transformers import get_scheduler

    name = "constant_with_warmup" if name == "constant" else name
    return get_scheduler(name, optimizer, num_warmup_steps=warmup_steps, num_training_steps=total_steps)


def evaluate_policy(
    model: Any,
    tokenizer: Any,
    config: Any,
    *,
    env_id: str,
    out: str | Path,
    name: str,
    device: str,
    on_episode: Callable[[Trajectory], None] | None = None,
) -> dict[str, float]:
    """Held-out eval of a trainer's policy: ``config.eval_episodes`` greedy episodes (seeds
    ``0..n-1``) of `env_id` made with ``config.env_kwargs`` on ``config.eval_split`` with at
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
            env_kwargs={**config.env_kwargs, "split": config.eval_split, "max_turns": config.max_turns},
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
    import os

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


def resolve_device_dtype(device: str, dtype: str) -> tuple[str, torch.dtype]:
    """The device (``auto``: cuda when available, else cpu) and weights dtype (``auto``:
    bfloat16 on a GPU, float32 on a CPU) a run trains with."""
    device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    if dtype == "auto":
        return device, torch.bfloat16 if device.startswith("cuda") else torch.float32
    return device, getattr(torch, dtype)


__all__: Sequence[str] = [
    "DEFAULT_LORA_TARGETS",
    "PolicyConfig",
    "append_metrics",
    "config_field",
    "evaluate_policy",
    "load_policy",
    "make_scheduler",
    "release_memory",
    "resolve_device_dtype",
    "tensorboard_writer",
]
