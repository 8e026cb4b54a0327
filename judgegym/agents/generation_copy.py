"""`GenerationCopy`: the weights a trainer samples with, kept apart from the weights it trains.

A LoRA model generates slower than a plain one (every projection runs its adapter beside the
base layer), and float32 weights read twice the memory of bfloat16 ones at every decoding step,
which on a CPU is most of a step's cost. Inference engines (vLLM, SGLang) keep their own copy of
the weights for this reason; on the transformers backend this is that copy: the adapters merged
into the base weights, cast to the sampling dtype, refreshed from the training model after each
optimizer step. The training model is never modified (no merge and unmerge around sampling), so
its float32 master weights and its optimizer state stay exact.

The sampler's log-probabilities then differ slightly from the trainer's (bfloat16 rounding);
GRPO reports the difference (``sampling/*``) and importance sampling corrects it.
"""

from __future__ import annotations

import copy
from typing import Any


def is_peft_model(model: Any) -> bool:
    """Whether `model` is a peft model (LoRA adapters over a base model)."""
    return hasattr(model, "get_base_model") and hasattr(model, "peft_config")


class GenerationCopy:
    """A generation-only copy of `model`: LoRA adapters merged into the weights, in `dtype`.

    Args:
        model: the training model (a peft LoRA model or a plain transformers causal LM).
        dtype: the copy's weights dtype (``torch.bfloat16`` where the device computes it natively).

    Memory: one more copy of the base weights in `dtype` (270 MB for SmolLM2-135M in bfloat16).
    Call `refresh` after each optimizer step; it copies only what training changes (the merged
    LoRA projections, or every parameter of a fully trained model).
    """

    def __init__(self, model: Any, dtype: Any):
        import torch

        self.dtype = dtype
        with torch.no_grad():
            clone = copy.deepcopy(model)
            if is_peft_model(clone):
                clone = clone.merge_and_unload()  # merged in the training dtype, then cast: one rounding
            self.model = clone.to(dtype=dtype).eval().requires_grad_(False)

    def refresh(self, model: Any) -> None:
        """Copy `model`'s current weights in: each LoRA projection as base + delta, or every
        parameter of a model without adapters."""
        import torch

        with torch.no_grad():
            if not is_peft_model(model):
                for source, target in zip(model.parameters(), self.model.parameters(), strict=True):
                    target.copy_(source)
                return
            from peft.tuners.lora import LoraLayer

            for path, module in model.get_base_model().named_modules():
                if not isinstance(module, LoraLayer):
                    continue
                weight = module.get_base_layer().weight
                for name in module.active_adapters:
                    if name in module.lora_A:
                        weight = weight + module.get_delta_weight(name)
                self.model.get_submodule(path).weight.copy_(weight)


__all__ = ["GenerationCopy", "is_peft_model"]
