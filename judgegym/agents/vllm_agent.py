"""`VLLMAgent`: an in-process vLLM engine as an agent (optional ``gpu`` extra).

Concurrent episodes are submitted to ``vllm.LLM.generate`` together (vLLM schedules them
with continuous batching); prefix caching is on, so the shared system prompt and tool
schemas are computed once. LoRA adapters are served with ``LoRARequest``; `load_adapter`
swaps in a new one under a fresh adapter id (vLLM caches adapters by id).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from .batching import BatchedAgent, Generation, Sampling

_AGENT_FALLBACK = "Without a GPU, use an hf: agent (transformers) or a litellm: agent against a served model."


def import_vllm(user: str = "VLLMAgent", fallback: str = _AGENT_FALLBACK) -> Any:
    """The ``vllm`` module, or an ImportError saying that `user` needs it, how to install it
    and what to use instead (`fallback`)."""
    try:
        import vllm
    except ImportError as exc:
        raise ImportError(f"{user} needs vLLM, which runs on NVIDIA GPUs: pip install 'judgegym[gpu]'. {fallback}") from exc
    return vllm


class VLLMAgent(BatchedAgent):
    """A model served by an in-process vLLM engine.

    Args:
        model: a model folder or hub id vLLM can load.
        adapter: a LoRA adapter folder to serve on top of the base model.
        temperature, top_p, max_tokens, seed: sampling (greedy by default); the seed is per
            request, so sampling is reproducible whatever the batch.
        max_batch: most prompts handed to vLLM per call (vLLM batches further inside).
        gpu_memory_utilization, max_model_len, max_lora_rank: vLLM engine arguments.
        engine_kwargs: more ``vllm.LLM`` arguments (``tensor_parallel_size``, ``dtype``, ...).
        name: the agent's name in results (default: its spec, e.g. ``vllm:PATH``).
    """

    _adapter_ids = itertools.count(1)

    def __init__(
        self,
        model: str,
        adapter: str | Path | None = None,
        *,
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_tokens: int = 256,
        seed: int = 0,
        max_batch: int = 256,
        gpu_memory_utilization: float = 0.85,
        max_model_len: int | None = None,
        max_lora_rank: int = 64,
        engine_kwargs: dict[str, Any] | None = None,
        name: str | None = None,
    ):
        super().__init__(Sampling(temperature, top_p, max_tokens, seed), max_batch)
        self._vllm = import_vllm()
        self.name = name or f"vllm:{model}" + (f"+{adapter}" if adapter else "")
        kwargs: dict[str, Any] = {
            "model": model,
            "enable_prefix_caching": True,
            "gpu_memory_utilization": gpu_memory_utilization,
            **({"max_model_len": max_model_len} if max_model_len else {}),
            **(engine_kwargs or {}),
        }
        if adapter is not None:
            kwargs.update(enable_lora=True, max_lora_rank=max_lora_rank)
        self.llm = self._vllm.LLM(**kwargs)
        self._tokenizer = self.llm.get_tokenizer()
        self.lora_request: Any = None
        if adapter is not None:
            self.load_adapter(adapter)

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    def load_adapter(self, adapter: str | Path) -> None:
        """Serve `adapter` from now on, under a fresh id (an id reused for new weights would
        hit vLLM's adapter cache and keep serving the old ones)."""
        from vllm.lora.request import LoRARequest

        path = Path(adapter)
        if not (path / "adapter_config.json").is_file():
            raise FileNotFoundError(f"{path} is not a LoRA adapter folder (no adapter_config.json)")
        adapter_id = next(self._adapter_ids)
        self.lora_request = LoRARequest(f"adapter-{adapter_id}", adapter_id, str(path))

    def generate_batch(self, prompts: list[str], seeds: list[int]) -> list[Generation]:
        s = self.sampling
        params = [self._vllm.SamplingParams(temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens, seed=seed) for seed in seeds]
        outputs = self.llm.generate(prompts, params, use_tqdm=False, lora_request=self.lora_request)
        return [Generation(o.outputs[0].text, len(o.prompt_token_ids or []), len(o.outputs[0].token_ids)) for o in outputs]

    def close(self) -> None:
        """Drop the engine (its GPU memory is freed when the last reference goes)."""
        self.llm = None


__all__ = ["VLLMAgent", "import_vllm"]
