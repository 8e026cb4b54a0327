"""`VLLMBackend`: GRPO rollouts sampled by an in-process vLLM engine on the trainer's GPU
(optional ``gpu`` extra). The G members of a group go to vLLM as one request with ``n=G``;
the trained LoRA adapter is swapped in after every optimizer step under a fresh adapter id.
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..agents.batching import Sampling
from ..agents.vllm_agent import import_vllm
from .checkpoint import save_pretrained
from .rollout import prompt_rows

LOGPROBS_MODE = "processed_logprobs"
"""What vLLM's ``logprobs`` hold (engine argument ``logprobs_mode``). vLLM's default,
``raw_logprobs``, is ``log_softmax(logits)`` before temperature scaling; ``processed_logprobs``
is taken after temperature (and top-k / top-p, both off here), i.e.
``log_softmax(logits / temperature)``, what the trainer computes."""

LORA_RANKS = (8, 16, 32, 64, 128, 256, 320, 512)
"""The values vLLM accepts for ``max_lora_rank``."""


def require_vllm() -> Any:
    """The ``vllm`` module, or an ImportError saying how to install it for training."""
    return import_vllm("backend='vllm'", "Without it, train with backend='transformers' (the default).")


def max_lora_rank(rank: int) -> int:
    """The smallest ``max_lora_rank`` vLLM accepts that serves an adapter of `rank`."""
    fitting = [r for r in LORA_RANKS if r >= rank]
    if not fitting:
        raise ValueError(f"vLLM serves LoRA ranks up to {LORA_RANKS[-1]}, got lora_r={rank}")
    return fitting[0]


def request_seed(seed: int, index: int) -> int:
    """The seed of request `index` in a `generate` call seeded `seed`. Hashed rather than
    ``seed + index``: vLLM seeds the n samples of one request with ``seed, seed + 1, ...``,
    so consecutive request seeds would reuse each other's randomness."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0]) % 2**31


class VLLMBackend:
    """Samples rollouts with ``vllm.LLM`` in the trainer's process, serving the trained LoRA
    adapter on top of the base model.

    Each `generate` call is one ``LLM.generate`` call. Identical prompts within it (the G
    members of a group in their first turn) become one request with ``SamplingParams(n=count)``
    and their samples are handed back in prompt order; prompts that differ (later turns) are
    requests with ``n=1``. Prefix caching is on, so a group's shared history is computed once.

    Args:
        model: the base model: a transformers folder or hub id, or an embedded model name
            (``smollm2-135m``), which is written once as a safetensors folder under
            ``work_dir/base`` (vLLM does not read the embedded GGUF file).
        work_dir: a folder of the backend's own: the exported base model and the current
            adapter (``adapters/adapter-N``) live there.
        lora_rank: rank of the trained adapter (``max_lora_rank`` is the smallest vLLM
            accepts at or above it).
        gpu_memory_utilization: share of the GPU's memory vLLM takes for its weights and KV
            cache; the trainer's model, gradients and optimizer state live in the rest.
        max_model_len: longest sequence (prompt and completion) vLLM serves; None: the model's.
        dtype: vLLM's weight dtype (``bfloat16``, ``float16``, ``float32``, ``auto``).
        seed: the engine's seed (sampling itself is seeded per request).
        engine_kwargs: more ``vllm.LLM`` arguments (``enforce_eager``, ``max_num_seqs``, ...).

    Raises:
        ImportError: vLLM is not installed (naming the ``gpu`` extra).
    """

    def __init__(
        self,
        model: str,
        *,
        work_dir: str | Path,
        lora_rank: int,
        gpu_memory_utilization: float = 0.3,
        max_model_len: int | None = None,
        dtype: str = "auto",
        seed: int = 0,
        engine_kwargs: dict[str, Any] | None = None,
    ):
        self._vllm = require_vllm()
        self.work_dir = Path(work_dir)
        self.adapters_dir = self.work_dir / "adapters"
        shutil.rmtree(self.adapters_dir, ignore_errors=True)  # a previous run's adapters: never served again
        self.adapters_dir.mkdir(parents=True)
        self.model_path = _servable_model(model, self.work_dir / "base", dtype)
        kwargs: dict[str, Any] = {
            "model": self.model_path,
            "enable_lora": True,
            "max_lora_rank": max_lora_rank(lora_rank),
            "enable_prefix_caching": True,
            "gpu_memory_utilization": gpu_memory_utilization,
            "dtype": dtype,
            "seed": seed,
            "logprobs_mode": LOGPROBS_MODE,
            **({"max_model_len": max_model_len} if max_model_len else {}),
            **(engine_kwargs or {}),
        }
        self.llm = self._vllm.LLM(**kwargs)
        self.lora_request: Any = None
        """The adapter every request is served with (None: the base model, before `sync_weights`)."""
        self._adapter_ids = itertools.count(1)

    def generate(self, prompts: Sequence[Sequence[int]], sampling: Sampling) -> tuple[list[list[int]], list[list[float]]]:
        """Sample one continuation per prompt (the `RolloutBackend` contract): ids ending with
        the EOS token when the model stopped by itself (vLLM keeps the stop token in
        ``token_ids``), and each id's log-probability under ``softmax(logits / temperature)``."""
        if sampling.temperature <= 0:
            raise ValueError("rollouts sample: temperature must be > 0 (greedy turns have no log-probabilities to train on)")
        rows_of = prompt_rows(prompts)
        if not rows_of:
            return [], []
        requests = [{"prompt_token_ids": list(prompt)} for prompt in rows_of]
        params = [
            self._vllm.SamplingParams(
                n=len(rows),
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                top_k=-1,  # no top-k: the logprobs then describe the distribution the trainer computes
                max_tokens=sampling.max_tokens,
                seed=request_seed(sampling.seed, index),
                logprobs=0,  # only the sampled token's
            )
            for index, rows in enumerate(rows_of.values())
        ]
        outputs = self.llm.generate(requests, params, use_tqdm=False, lora_request=self.lora_request)
        if len(outputs) != len(requests):
            raise RuntimeError(f"vLLM returned {len(outputs)} outputs for {len(requests)} requests")
        ids: list[list[int]] = [[] for _ in prompts]
        logprobs: list[list[float]] = [[] for _ in prompts]
        for rows, output in zip(rows_of.values(), outputs, strict=True):
            completions = sorted(output.outputs, key=lambda completion: completion.index)
            if len(completions) != len(rows):
                raise RuntimeError(f"vLLM returned {len(completions)} samples for a request with n={len(rows)}")
            for row, completion in zip(rows, completions, strict=True):
                ids[row], logprobs[row] = _sampled(completion)
        return ids, logprobs

    def sync_weights(self, model: Any) -> None:
        """Serve `model`'s LoRA adapter from now on: save it to a fresh folder, point a
        ``LoRARequest`` with a fresh id at it (vLLM caches adapters by id: a reused id would
        keep serving the old weights), delete the previous folder, and reset the prefix
        cache (its KV blocks were computed with the old weights)."""
        if not hasattr(model, "peft_config"):
            raise ValueError("VLLMBackend hands the trainer's weights to vLLM as a LoRA adapter; this model has none (use_lora=True)")
        from vllm.lora.request import LoRARequest

        adapter_id = next(self._adapter_ids)
        folder = self.adapters_dir / f"adapter-{adapter_id}"
        save_pretrained(model, folder)
        self.lora_request = LoRARequest(f"adapter-{adapter_id}", adapter_id, str(folder))
        for old in self.adapters_dir.iterdir():
            if old != folder:
                shutil.rmtree(old, ignore_errors=True)
        self.llm.reset_prefix_cache()


def _sampled(completion: Any) -> tuple[list[int], list[float]]:
    """A completion's ids and each one's log-probability (``logprobs`` holds one dict per
    generated position, token id -> ``Logprob``, the sampled token always among them)."""
    ids = [int(t) for t in completion.token_ids]
    positions = completion.logprobs
    if positions is None or len(positions) != len(ids):
        got = "no" if positions is None else len(positions)
        raise RuntimeError(f"vLLM returned {got} logprob positions for {len(ids)} tokens; requests ask for logprobs=0")
    logprobs = []
    for position, (token, candidates) in enumerate(zip(ids, positions, strict=True)):
        entry = candidates.get(token)
        if entry is None:
            raise RuntimeError(f"vLLM's logprobs at position {position} lack the sampled token {token}")
        logprobs.append(float(entry.logprob))
    return ids, logprobs


def _servable_model(model: str, folder: Path, dtype: str) -> str:
    """What vLLM should load: `model` itself, or for an embedded model a safetensors folder
    written once (reused when it is there, e.g. on resume)."""
    from ..models import EMBEDDED_ALIASES

    if model not in EMBEDDED_ALIASES:
        return model
    if not (folder / "config.json").is_file():
        import torch

        from ..models import load_model, unmark_quantized
        from .checkpoint import atomic_directory, remove_temp_dirs

        remove_temp_dirs(folder.parent)  # an export a crash cut short
        weights, tokenizer = load_model(model, getattr(torch, dtype) if dtype != "auto" else torch.bfloat16, fresh=True)
        unmark_quantized(weights)  # plain floats after loading: save them as such
        with atomic_directory(folder) as temp:
            weights.save_pretrained(str(temp))
            tokenizer.save_pretrained(str(temp))
    return str(folder)


__all__ = ["LOGPROBS_MODE", "VLLMBackend", "max_lora_rank", "request_seed", "require_vllm"]
