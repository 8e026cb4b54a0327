"""`HFAgent`: a transformers causal LM as an agent, in-process, with batched generation.

Tools are described in the system prompt (or through the chat template when it takes
``tools=``) and calls are parsed from the generated text by the env. The default model is
the embedded SmolLM2-135M-Instruct; a LoRA adapter directory (what the trainer writes) can
be loaded on top.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..models.embedded import load_model, peft_quietly, unmark_quantized
from .batching import BatchedAgent, Generation, Sampling
from .decoding import decode
from .prefix_cache import DEFAULT_MAX_CACHED_TOKENS, PrefixCache, supports_prefix_cache


class HFAgent(BatchedAgent):
    """A transformers model playing envs; concurrent episodes are generated as one batch.

    Args:
        model: an embedded model name (``smollm2-135m``, the default), a local folder, or a
            hub id (hubs are only reached if you allow it).
        adapter: a peft LoRA adapter folder loaded on top of the base model (merged into its
            weights: the agent only generates).
        temperature, top_p, max_tokens, seed: sampling (greedy by default). Sampling is
            seeded per batch: reruns reproduce only with the same concurrency.
        max_batch: most prompts per `generate` call.
        device: ``cuda``, ``cpu``, ... (default: cuda when available).
        dtype: ``bfloat16`` / ``float32`` ... (default: bf16 on GPU, fp32 on CPU).
        model_obj, tokenizer_obj: an already loaded model and tokenizer (skip loading).
        name: the agent's name in results (default: its spec, e.g. ``hf:smollm2-135m``).
        kv_reuse: keep each episode's KV cache after its turn and read only the new part of
            its next prompt (`judgegym.agents.prefix_cache.PrefixCache`, matched by the longest
            common token prefix, so a re-rendered conversation reuses what it shares); the
            generations are those of re-reading the whole conversation, up to floating-point
            summation order. On by default where the model allows it (full attention only).
            Generation then runs judgegym's decoding loop (`judgegym.agents.decoding.decode`):
            temperature, top-p and the model's EOS ids; other generation defaults a model
            ships (a repetition penalty, top-k) are not applied.
        max_cached_tokens: kept tokens, all episodes together; past it the least recently used
            caches are dropped and those episodes read their conversation again.
    """

    def __init__(
        self,
        model: str = "smollm2-135m",
        adapter: str | Path | None = None,
        *,
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_tokens: int = 256,
        seed: int = 0,
        max_batch: int = 16,
        device: str | None = None,
        dtype: str | None = None,
        model_obj: Any = None,
        tokenizer_obj: Any = None,
        name: str | None = None,
        kv_reuse: bool = True,
        max_cached_tokens: int = DEFAULT_MAX_CACHED_TOKENS,
    ):
        super().__init__(Sampling(temperature, top_p, max_tokens, seed), max_batch)
        import torch

        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.dtype = getattr(torch, dtype) if dtype else (torch.bfloat16 if self.device.startswith("cuda") else torch.float32)
        self.name = name or f"hf:{model}" + (f"+{adapter}" if adapter else "")
        if model_obj is None or tokenizer_obj is None:
            model_obj, tokenizer_obj = load_model(model, self.dtype, fresh=adapter is not None)
        if adapter is not None:
            model_obj = _with_adapter(model_obj, Path(adapter))
        self.model = model_obj.to(self.device).eval()
        self._tokenizer = tokenizer_obj
        if self._tokenizer.pad_token_id is None:
            self._tokenizer.pad_token = self._tokenizer.eos_token
        reuse = kv_reuse and supports_prefix_cache(self.model)
        self.prefix_cache = PrefixCache(self.model, max_tokens=max_cached_tokens) if reuse else None

    def close(self) -> None:
        """Drop the kept KV caches."""
        if self.prefix_cache is not None:
            self.prefix_cache.clear()

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    def generate_batch(self, prompts: list[str], seeds: list[int]) -> list[Generation]:
        import torch

        tokenizer, sampling = self._tokenizer, self.sampling
        tokenizer.padding_side = "left"  # generation continues from the right edge of every row
        options: dict[str, Any] = {"max_new_tokens": sampling.max_tokens, "pad_token_id": tokenizer.pad_token_id}
        if sampling.temperature == 0:
            options.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        else:
            options.update(do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p, top_k=0)
        prompt_ids: list[list[int]] = tokenizer(prompts, add_special_tokens=False)["input_ids"]
        with torch.inference_mode(), torch.random.fork_rng(devices=[self.device] if self.device.startswith("cuda") else []):
            if self.prefix_cache is not None:  # kept caches, and judgegym's own decoding loop over them
                input_ids, attention_mask, cache = self.prefix_cache.prefill(
                    prompt_ids, tokenizer.pad_token_id, self.device, room=sampling.max_tokens
                )
                torch.manual_seed(seeds[0])
                output, _ = decode(
                    self.model,
                    input_ids,
                    attention_mask,
                    cache,
                    max_new_tokens=sampling.max_tokens,
                    temperature=sampling.temperature,
                    top_p=sampling.top_p,
                    eos_token_id=self.model.generation_config.eos_token_id or tokenizer.eos_token_id,
                    pad_token_id=tokenizer.pad_token_id,
                )
            else:
                inputs = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
                input_ids, attention_mask, cache = inputs["input_ids"], inputs["attention_mask"], None
                torch.manual_seed(seeds[0])
                output = self.model.generate(input_ids=input_ids, attention_mask=attention_mask, **options)
                output = output[:, input_ids.shape[1] :]
            rows = []
            for row in output.tolist():
                if tokenizer.eos_token_id in row:
                    row = row[: row.index(tokenizer.eos_token_id) + 1]
                while row and row[-1] == tokenizer.pad_token_id and tokenizer.pad_token_id != tokenizer.eos_token_id:
                    row.pop()
                rows.append(row)
            if self.prefix_cache is not None:
                self.prefix_cache.keep(prompt_ids, cache, rows)
        return [
            Generation(tokenizer.decode(row, skip_special_tokens=True), len(prompt), len(row))
            for row, prompt in zip(rows, prompt_ids, strict=True)
        ]


def _with_adapter(model: Any, adapter: Path) -> Any:
    if not (adapter / "adapter_config.json").is_file():
        raise FileNotFoundError(f"{adapter} is not a LoRA adapter folder (no adapter_config.json)")
    from peft import PeftModel

    unmark_quantized(model)
    with peft_quietly():
        # merged into the weights: the agent only generates, and a merged model decodes faster
        return PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()


__all__ = ["HFAgent"]
