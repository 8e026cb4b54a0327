"""A stand-in for the parts of vLLM's offline API judgegym uses, with vLLM's documented
signatures (https://docs.vllm.ai: `vllm.LLM`, `LLM.generate`, `LLM.get_tokenizer`,
`LLM.reset_prefix_cache`, `vllm.SamplingParams`, `vllm.lora.request.LoRARequest`,
`RequestOutput`, `CompletionOutput`, `Logprob`).

It validates what it is given the way vLLM would (unknown engine or sampling arguments are
a TypeError, a LoRA id must be a positive int, ``max_lora_rank`` one of vLLM's ranks,
sampling params must match the prompts) and answers:

- text prompts with a scripted `responder`, so tests can check the glue without a model;
- token prompts (``{"prompt_token_ids": [...]}``, vLLM's ``TokensPrompt``) by sampling the
  transformers model in the engine's ``model`` folder, the way vLLM does: one seeded
  generator per sample (the n samples of a request seeded ``s`` use ``s, s + 1, ...``), the
  stop token kept in ``token_ids``, ``logprobs`` as one dict per position (token id ->
  `Logprob`) with the sampled token in it, raw or temperature-scaled per ``logprobs_mode``,
  and LoRA adapters loaded from ``lora_path`` and cached by ``lora_int_id`` (a reused id
  serves the weights first loaded under it).

`install(monkeypatch)` puts it in ``sys.modules`` as ``vllm``.
"""

from __future__ import annotations

import copy
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .tiny_models import tiny_tokenizer

ENGINE_ARGS = {
    "tokenizer", "tokenizer_mode", "trust_remote_code", "tensor_parallel_size", "dtype", "quantization", "revision", "seed",
    "gpu_memory_utilization", "swap_space", "cpu_offload_gb", "enforce_eager", "max_model_len", "enable_prefix_caching",
    "enable_lora", "max_lora_rank", "max_loras", "max_num_seqs", "max_num_batched_tokens", "enable_sleep_mode", "disable_log_stats",
    "logprobs_mode", "max_logprobs",
}  # fmt: skip
SAMPLING_ARGS = {
    "n", "presence_penalty", "frequency_penalty", "repetition_penalty", "temperature", "top_p", "top_k", "min_p", "seed",
    "stop", "stop_token_ids", "ignore_eos", "max_tokens", "min_tokens", "logprobs", "prompt_logprobs", "skip_special_tokens",
}  # fmt: skip
LOGPROBS_MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
_SAMPLING_EPS = 1e-5


class SamplingParams:
    def __init__(self, **kwargs: Any):
        unknown = set(kwargs) - SAMPLING_ARGS
        if unknown:
            raise TypeError(f"SamplingParams got unexpected keyword argument(s) {sorted(unknown)}")
        self.n, self.temperature, self.top_p, self.top_k, self.seed = 1, 1.0, 1.0, 0, None
        self.max_tokens, self.logprobs, self.stop_token_ids, self.ignore_eos = 16, None, None, False
        for key, value in kwargs.items():
            setattr(self, key, value)
        if not isinstance(self.n, int) or self.n < 1:
            raise ValueError(f"n must be at least 1, got {self.n}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be non-negative, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < -1:
            raise ValueError(f"top_k must be 0 or -1 (disable), or at least 1, got {self.top_k}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        if self.logprobs is not None and self.logprobs < -1:
            raise ValueError(f"logprobs must be non-negative or -1, got {self.logprobs}")


@dataclass
class LoRARequest:
    lora_name: str
    lora_int_id: int
    lora_path: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.lora_int_id, int) or self.lora_int_id < 1:
            raise ValueError(f"lora_int_id must be a positive int, got {self.lora_int_id!r}")


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None = None
    logprobs: Any = None
    finish_reason: str | None = "stop"
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:
    request_id: str
    prompt: str | None
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
        if engine_args.get("logprobs_mode", "raw_logprobs") not in LOGPROBS_MODES:
            raise ValueError(f"logprobs_mode must be one of {LOGPROBS_MODES}, got {engine_args['logprobs_mode']!r}")
        if engine_args.get("enable_lora") and engine_args.get("max_lora_rank", 16) not in LORA_RANKS:
            raise ValueError(f"max_lora_rank ({engine_args['max_lora_rank']}) must be one of {LORA_RANKS}")
        if not 0 < engine_args.get("gpu_memory_utilization", 0.9) <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {engine_args['gpu_memory_utilization']}")
        self.model, self.engine_args = model, engine_args
        self.calls: list[dict[str, Any]] = []
        self.prefix_cache_resets = 0
        self.loaded_adapters: list[tuple[int, str]] = []
        """(lora_int_id, lora_path) of every adapter read from disk, in order."""
        self._folder = Path(model) if (Path(model) / "config.json").is_file() else None
        if self._folder is not None:
            from transformers import AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self._folder)
        else:
            self._tokenizer = tiny_tokenizer()
        self._base: Any = None
        self._adapters: dict[int, Any] = {}
        LLM.instances.append(self)

    def get_tokenizer(self) -> Any:
        return self._tokenizer

    def reset_prefix_cache(self) -> bool:
        self.prefix_cache_resets += 1
        return True

    def generate(
        self,
        prompts: Any,
        sampling_params: SamplingParams | list[SamplingParams] | None = None,
        *,
        use_tqdm: bool = True,
        lora_request: LoRARequest | list[LoRARequest] | None = None,
        priority: list[int] | None = None,
    ) -> list[RequestOutput]:
        prompts = [prompts] if isinstance(prompts, str | dict) else list(prompts)
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
            if isinstance(prompt, dict) and set(prompt) == {"prompt"}:
                prompt = prompt["prompt"]
            if isinstance(prompt, str):
                text = type(self).responder(prompt, p)
                ids = self._tokenizer(text, add_special_tokens=False)["input_ids"][: p.max_tokens]
                prompt_ids = self._tokenizer(prompt, add_special_tokens=False)["input_ids"]
                completions = [CompletionOutput(j, text, list(ids)) for j in range(p.n)]
                outputs.append(RequestOutput(str(i), prompt, prompt_ids, completions))
            elif isinstance(prompt, dict) and set(prompt) == {"prompt_token_ids"}:
                prompt_ids = [int(t) for t in prompt["prompt_token_ids"]]
                self._check_prompt(prompt_ids)
                model = self._model(lora_request)
                seeds = [None if p.seed is None else p.seed + j for j in range(p.n)]  # vLLM's child seeds
                completions = [self._sample(model, prompt_ids, p, j, seed) for j, seed in enumerate(seeds)]
                outputs.append(RequestOutput(str(i), None, prompt_ids, completions))
            else:
                raise TypeError(f"a prompt is a str, a TextPrompt or a TokensPrompt dict; got {prompt!r}")
        return outputs

    # -- token prompts: sampling the folder's model ---------------------------------------

    def _check_prompt(self, prompt_ids: list[int]) -> None:
        if not prompt_ids:
            raise ValueError("The decoder prompt cannot be empty")
        limit = self.engine_args.get("max_model_len")
        if limit and len(prompt_ids) > limit:
            raise ValueError(f"The decoder prompt (length {len(prompt_ids)}) is longer than the maximum model length of {limit}")

    def _model(self, lora_request: LoRARequest | None) -> Any:
        if self._folder is None:
            raise ValueError(f"token prompts need a model: {self.model!r} is not a transformers folder")
        if self._base is None:
            from transformers import AutoModelForCausalLM

            self._base = AutoModelForCausalLM.from_pretrained(self._folder).eval()
        if lora_request is None:
            return self._base
        if lora_request.lora_int_id not in self._adapters:  # vLLM's adapter cache is keyed by id
            import json

            from peft import PeftModel

            config_path = Path(lora_request.lora_path) / "adapter_config.json"
            if not config_path.is_file():
                raise ValueError(f"Loading lora {lora_request.lora_name} failed: no adapter found for {lora_request.lora_path}")
            rank = json.loads(config_path.read_text())["r"]
            if rank > self.engine_args.get("max_lora_rank", 16):
                raise ValueError(f"LoRA rank {rank} is greater than max_lora_rank {self.engine_args.get('max_lora_rank', 16)}")
            from judgegym.models import peft_quietly

            with peft_quietly():
                adapter = PeftModel.from_pretrained(copy.deepcopy(self._base), lora_request.lora_path).eval()
            self._adapters[lora_request.lora_int_id] = adapter
            self.loaded_adapters.append((lora_request.lora_int_id, lora_request.lora_path))
        return self._adapters[lora_request.lora_int_id]

    def _sample(self, model: Any, prompt_ids: list[int], p: SamplingParams, index: int, seed: int | None) -> CompletionOutput:
        import torch

        generator = torch.Generator().manual_seed(seed) if seed is not None else None
        eos = {self._tokenizer.eos_token_id}
        stops = set(p.stop_token_ids or [])
        mode = self.engine_args.get("logprobs_mode", "raw_logprobs")
        limit = self.engine_args.get("max_model_len")
        ids, out, positions, finish, stop_reason = list(prompt_ids), [], [], "length", None
        with torch.no_grad():
            for _ in range(p.max_tokens or 2**31):
                if limit and len(ids) >= limit:
                    break
                raw = model(input_ids=torch.tensor([ids])).logits[0, -1].float()
                processed = raw / p.temperature if p.temperature >= _SAMPLING_EPS else raw.clone()
                if p.top_k > 0:
                    processed[processed < processed.topk(p.top_k).values[-1]] = -float("inf")
                if p.top_p < 1:
                    probs, order = processed.softmax(-1).sort(descending=True)
                    drop = probs.cumsum(-1) - probs > p.top_p
                    processed[order[drop]] = -float("inf")
                if p.temperature < _SAMPLING_EPS:
                    token = int(raw.argmax())
                else:
                    token = int(torch.multinomial(processed.softmax(-1), 1, generator=generator))
                values = {
                    "raw_logprobs": raw.log_softmax(-1),
                    "raw_logits": raw,
                    "processed_logprobs": processed.log_softmax(-1),
                    "processed_logits": processed,
                }[mode]
                if p.logprobs is not None:
                    top = values.topk(p.logprobs).indices.tolist() if p.logprobs > 0 else []
                    positions.append({t: self._logprob(values, t) for t in [token, *top]})
                ids.append(token)
                out.append(token)
                if token in eos and not p.ignore_eos:
                    finish = "stop"
                    break
                if token in stops:
                    finish, stop_reason = "stop", token
                    break
        text = self._tokenizer.decode(out, skip_special_tokens=True)
        cumulative = sum(position[t].logprob for position, t in zip(positions, out, strict=True)) if p.logprobs is not None else None
        return CompletionOutput(index, text, out, cumulative, positions if p.logprobs is not None else None, finish, stop_reason)

    def _logprob(self, values: Any, token: int) -> Logprob:
        rank = int((values > values[token]).sum()) + 1
        return Logprob(float(values[token]), rank, self._tokenizer.decode([token]))


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


__all__ = ["LLM", "Logprob", "LoRARequest", "SamplingParams", "install"]
