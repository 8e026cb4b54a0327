"""Where a trainer computes and in what: the device and weights dtype of a run, whether the
device computes bfloat16 natively and so the mixed precision in force (and the line the run's log
shows), the autocast context of the update, and giving freed memory back between phases."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import torch

log = logging.getLogger("judgegym.trainers")


def resolve_device_dtype(device: str, dtype: str) -> tuple[str, torch.dtype]:
    """The device (``auto``: cuda when available, else cpu) and weights dtype (``auto``:
    bfloat16 on a GPU, float32 on a CPU) a run trains with."""
    device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    if dtype == "auto":
        return device, torch.bfloat16 if device.startswith("cuda") else torch.float32
    return device, getattr(torch, dtype)


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


def resolve_generation_dtype(generation_dtype: str, device: str, dtype: torch.dtype) -> torch.dtype | None:
    """The weights dtype rollouts and held-out evals generate with, in a `GenerationCopy` (LoRA
    merged), or None: generate with the training model itself. 'auto' is a bfloat16 copy where
    `device` computes it natively and the training weights are float32 (decoding reads half the
    bytes per token: about 1.8x the float32 decoding speed of SmolLM2-135M on a 2-core AMX CPU),
    else None; 'training' is None; a dtype name is a copy in that dtype. Said in the log."""
    if generation_dtype == "training":
        return None
    if generation_dtype != "auto":
        return getattr(torch, generation_dtype)
    native = native_bf16(device)
    chosen = torch.bfloat16 if native and dtype == torch.float32 else None
    why = "native bfloat16" if native else "no native bfloat16 (no AMX or AVX-512 BF16)"
    shown = "a bfloat16 copy, LoRA merged" if chosen is not None else "the training model"
    log.info("generation: %s (auto: %s on %s, weights %s)", shown, why, device, str(dtype).removeprefix("torch."))
    return chosen


def precision_line(mixed_precision: str, device: str, dtype: torch.dtype) -> str:
    """What a run computes its update in, for the run's log: "update in bf16 autocast (native
    bfloat16 on cpu)" or "update in float32 (cpu has no native bfloat16)"."""
    weights = str(dtype).removeprefix("torch.")
    if mixed_precision == "bf16":
        return f"update in bf16 autocast over {weights} weights ({'native' if native_bf16(device) else 'emulated'} bfloat16 on {device})"
    reason = "mixed_precision='no'" if native_bf16(device) else f"{device} has no native bfloat16"
    return f"update in {weights} ({reason})"


def training_autocast(mixed_precision: str, device: str) -> Any:
    """The context the training forward and backward run in: ``torch.autocast`` in bfloat16 for
    ``mixed_precision='bf16'``, a no-op otherwise."""
    device_type = "cuda" if str(device).startswith("cuda") else "cpu"
    return torch.autocast(device_type, dtype=torch.bfloat16, enabled=mixed_precision == "bf16")


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


__all__ = [
    "native_bf16",
    "precision_line",
    "release_memory",
    "resolve_device_dtype",
    "resolve_generation_dtype",
    "resolve_mixed_precision",
    "training_autocast",
]
