"""The policy both trainers train: its config fields (`PolicyConfig`, which `GRPOConfig` and
`SFTConfig` extend, so an SFT adapter continues under GRPO), the `config_field` helper every
trainer config is written with, and loading the model with a fresh or an initial LoRA adapter."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import torch

DEFAULT_LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""Every linear projection of attention and MLP in Llama-style models (SmolLM2, Qwen, Mistral)."""


def config_field(default: Any = None, help: str = "", *, factory: Any = None) -> Any:  # noqa: A002  (TRL's spelling)
    """A dataclass field with its help text in ``metadata["help"]`` (what a command line shows)."""
    if factory is not None:
        return field(default_factory=factory, metadata={"help": help})
    return field(default=default, metadata={"help": help})


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
    generation_dtype: str = config_field(
        "auto",
        "What rollouts and held-out evals generate with: 'auto' (a bfloat16 copy of the weights with LoRA merged where the "
        "device computes bfloat16 natively and dtype is float32, else the training model), 'bfloat16' / 'float32' / "
        "'float16' (a merged copy in that dtype, refreshed after every step), or 'training' (the training model itself: the "
        "sampler's log-probabilities equal the trainer's).",
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
        if self.generation_dtype not in ("auto", "training", "float32", "bfloat16", "float16"):
            problems.append(
                f"generation_dtype must be 'auto', 'training', 'float32', 'bfloat16' or 'float16', got {self.generation_dtype!r}"
            )
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


__all__ = ["DEFAULT_LORA_TARGETS", "PolicyConfig", "config_field", "load_policy"]
