"""A stand-in for the parts of vLLM's offline API judgegym uses, with vLLM's documented
signatures (https://docs.vllm.ai: `vllm.LLM`, `LLM.generate`, `LLM.get_tokenizer`,
`vllm.SamplingParams`, `vllm.lora.request.LoRARequest`, `RequestOutput`, `CompletionOutput`).

It validates what it is given the way vLLM would (unknown engine or sampling arguments are
a TypeError, a LoRA id must be a positive int, sampling params must match the prompts) and
answers with a scripted `responder`, so tests can check the glue without a GPU.
`install(monkeypatch)` puts it in ``sys.modules`` as ``vllm``.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tiny_models import tiny_tokenizer

ENGINE_ARGS = {
    "tokenizer", "tokenizer_mode", "trust_remote_code", "tensor_parallel_size", "dtype", "quantization", "revision", "seed",
    "gpu_memory_utilization", "swap_space", "cpu_offload_gb", "enforce_eager", "max_model_len", "enable_prefix_caching",
    "enable_lora", "max_lora_rank", "max_loras", "max_num_seqs", "max_num_batched_tokens", "enable_sleep_mode", "disable_log_stats",
}  # fmt: skip
SAMPLING_ARGS = {
    "n", "presence_penalty", "frequency_penalty", "repetition_penalty", "temperature", "top_p", "top_k", "min_p", "seed",
    "stop", "stop_token_ids", "ignore_eos", "max_tokens", "min_tokens", "logprobs", "prompt_logprobs", "skip_special_tokens",
}  # fmt: skip


class SamplingParams:
    def __init__(self, **kwargs: Any):
        unknown = set(kwargs) - SAMPLING_ARGS
        if unknown:
            raise TypeError(f"SamplingParams got unexpected keyword argument(s) {sorted(unknown)}")
        self.n, self.temperature, self.top_p, self.seed, self.max_tokens, self.logprobs = 1, 1.0, 1.0, None, 16, None
        for key, value in kwargs.items():
            setattr(self, key, value)
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")


@dataclass
class LoRARequest:
    lora_name: str
    lora_int_id: int
    lora_path: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.lora_int_id, int) or self.lora_int_id < 1:
            raise ValueError(f"lora_int_id must be a positive int, got {self.lora_int_id!r}")


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None = None
    logprobs: Any = None
    finish_reason: str | None = "stop"


@dataclass
class RequestOutput:
    request_id: str
    prompt: str
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput] = field(default_factory=list)
    finished: bool = True


def default_responder(prompt: str, params: SamplingParams) -> str:
    """Search first, answer once a tool result is in the prompt."""
    if "<tool_response>\n" in prompt:  # a result block (the tool instructions only name the tag)
        return "The answer is in the articles."
    return '<tool_call>{"name": "search", "arguments": {"query": "warranty"}}</tool_call>'


class LLM:
    instances: list[LLM] = []
    responder: Callable[[str, SamplingParams], str] = staticmethod(default_responder)

    def __init__(self, model: str, **engine_args: Any):
        unknown = set(engine_args) - ENGINE_ARGS
        if unknown:
            raise TypeError(f"EngineArgs got unexpected keyword argument(s) {sorted(unknown)}")
        self.model, self.engine_args = model, engine_args
        self.calls: list[dict[str, Any]] = []
        self._tokenizer = tiny_tokenizer()
        LLM.instances.append(self)

    def get_tokenizer(self) -> Any:
        return self._tokenizer

    def generate(
        self,
        prompts: Any,
        sampling_params: SamplingParams | list[SamplingParams] | None = None,
        *,
        use_tqdm: bool = True,
        lora_request: LoRARequest | list[LoRARequest] | None = None,
        priority: list[int] | None = None,
    ) -> list[RequestOutput]:
        prompts = [prompts] if isinstance(prompts, str) else list(prompts)
        params = sampling_params if isinstance(sampling_params, list) else [sampling_params or SamplingParams()] * len(prompts)
        if len(params) != len(prompts):
            raise ValueError(f"{len(params)} sampling params for {len(prompts)} prompts")
        if lora_request is not None:
            if not self.engine_args.get("enable_lora"):
                raise ValueError("LoRA is not enabled: LLM(enable_lora=True)")
            if not isinstance(lora_request, LoRARequest):
                raise TypeError(f"lora_request must be a LoRARequest, got {type(lora_request).__name__}")
        self.calls.append({"prompts": prompts, "params": params, "lora_request": lora_request})
        outputs = []
        for i, (prompt, p) in enumerate(zip(prompts, params, strict=True)):
            if not isinstance(prompt, str):
                raise TypeError(f"prompt must be a str here, got {type(prompt).__name__}")
            text = type(self).responder(prompt, p)
            ids = self._tokenizer(text, add_special_tokens=False)["input_ids"][: p.max_tokens]
            prompt_ids = self._tokenizer(prompt, add_special_tokens=False)["input_ids"]
            outputs.append(RequestOutput(str(i), prompt, prompt_ids, [CompletionOutput(0, text, ids)]))
        return outputs


def install(monkeypatch: Any) -> types.ModuleType:
    """Make ``import vllm`` (and ``vllm.lora.request``) give this stand-in for one test."""
    LLM.instances = []
    LLM.responder = staticmethod(default_responder)
    vllm = types.ModuleType("vllm")
    vllm.LLM, vllm.SamplingParams, vllm.RequestOutput, vllm.CompletionOutput = LLM, SamplingParams, RequestOutput, CompletionOutput
    lora, request = types.ModuleType("vllm.lora"), types.ModuleType("vllm.lora.request")
    request.LoRARequest = LoRARequest
    lora.request, vllm.lora = request, lora
    for name, module in (("vllm", vllm), ("vllm.lora", lora), ("vllm.lora.request", request)):
        monkeypatch.setitem(sys.modules, name, module)
    return vllm


__all__ = ["LLM", "LoRARequest", "SamplingParams", "install"]
