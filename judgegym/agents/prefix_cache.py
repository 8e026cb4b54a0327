"""KV reuse across the turns of multi-turn episodes: a transformers model's key/value cache of
each live episode is kept after a turn, and the next turn's prompt, which extends it, reads only
the tokens the env added (tool results, the customer's reply).

`PrefixCache` matches prompts to kept caches by their longest common token prefix, as vLLM's
prefix cache and SGLang's radix cache do, so it needs no episode ids and stays exact when a
prompt only partly extends a kept one (a re-rendered chat template): attention is causal, so
the keys and values of a prefix do not depend on what follows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

DEFAULT_MAX_CACHED_TOKENS = 32_768
"""Tokens of kept caches (all episodes together) before the least recently used are dropped.
A kept token costs ``2 x layers x kv_heads x head_dim`` numbers: 46 KB in float32 for
SmolLM2-135M, so the default holds about 1.5 GB for it."""


@dataclass
class _Entry:
    ids: np.ndarray
    """The token ids whose keys and values `layers` holds."""
    layers: list[tuple[Any, Any]]
    """Per layer, ``(keys, values)`` of shape ``(kv_heads, len(ids), head_dim)``."""
    used: int = 0


@dataclass
class CacheStats:
    """What `PrefixCache` did, summed over its calls (reset with `PrefixCache.stats` = a new one)."""

    reused_tokens: int = 0
    """Prompt tokens whose keys and values came from a kept cache."""
    prefilled_tokens: int = 0
    """Prompt tokens read by the model (the rest of each prompt)."""
    evicted_tokens: int = 0
    """Kept tokens dropped to stay within ``max_tokens``."""
    calls: int = 0

    @property
    def reuse_share(self) -> float:
        """Share of prompt tokens that were not read again."""
        total = self.reused_tokens + self.prefilled_tokens
        return self.reused_tokens / total if total else 0.0


class PrefixCache:
    """Kept KV caches of a causal LM's recent sequences, handed to ``generate`` as a prefilled cache.

    Use: ``input_ids, mask, cache = pc.prefill(prompts, pad_id)``, then
    ``model.generate(input_ids=..., attention_mask=..., <cache argument>=cache, ...)``, then
    ``pc.keep(prompts, cache, generated)`` with each row's generated ids. `prefill` computes,
    for every prompt but its last token, the keys and values the kept caches lack (one forward
    pass per row over only the new tokens; rows that share a prompt read it once) and lays them
    out left-padded, as ``generate`` lays out a left-padded batch; ``generate`` then reads the
    last prompt token and samples. Results equal a plain ``generate`` on the left-padded prompts
    up to floating-point summation order.

    Args:
        model: the transformers causal LM (a peft model works).
        max_tokens: kept tokens, all entries together; past it the least recently used entries
            are dropped (their episodes read their prompts again next turn).
        drop_unused: drop, at each `keep`, the entries no prompt of that call used: right when
            every live episode takes part in every call (the trainer's lock-step rounds), so a
            finished episode's cache is freed at once; leave False when episodes join batches as
            they come (an agent serving concurrent episodes).
    """

    def __init__(self, model: Any, *, max_tokens: int = DEFAULT_MAX_CACHED_TOKENS, drop_unused: bool = False):
        if max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
        self.model = model
        self.max_tokens = max_tokens
        self.drop_unused = drop_unused
        self.stats = CacheStats()
        self._entries: list[_Entry] = []
        self._clock = 0

    @property
    def cached_tokens(self) -> int:
        """Tokens held by kept entries now."""
        return sum(len(e.ids) for e in self._entries)

    def clear(self) -> None:
        """Drop every kept cache."""
        self._entries.clear()

    def prefill(self, prompts: Sequence[Sequence[int]], pad_id: int, device: Any = "cpu", *, room: int = 0) -> tuple[Any, Any, Any]:
        """``(input_ids, attention_mask, cache)`` for one ``generate`` call on `prompts`.

        `input_ids` and `attention_mask` are the prompts left-padded to the longest; `cache` (a
        ``DynamicCache``, or None when every prompt is one token long) holds the keys and values
        of every prompt but its last token, left-padded the same way, with space for `room`
        more positions (the call's ``max_new_tokens``) reserved in place (`GrowingLayer`)."""
        import torch

        if not prompts or any(len(p) == 0 for p in prompts):
            raise ValueError("every prompt needs at least one token")
        self._clock += 1
        self.stats.calls += 1
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            input_ids[row, width - len(prompt) :] = torch.tensor(list(prompt), dtype=torch.long)
            attention_mask[row, width - len(prompt) :] = 1
        if width == 1:
            return input_ids.to(device), attention_mask.to(device), None
        rows = [self._row(np.asarray(prompt[:-1], dtype=np.int64), device) for prompt in prompts]
        cache = _batched_cache(rows, width - 1, room + 1)
        return input_ids.to(device), attention_mask.to(device), cache

    def keep(self, prompts: Sequence[Sequence[int]], cache: Any, generated: Sequence[Sequence[int]]) -> None:
        """After ``generate`` ran on `prefill`'s batch: keep each row's keys and values of its
        prompt and generated ids but the last (the one the model has not read yet)."""
        if cache is None or self.max_tokens == 0:
            self._retire()
            return
        width = max(len(p) for p in prompts)
        layers = [(layer.keys, layer.values) for layer in cache.layers]
        length = layers[0][0].shape[2]
        for row, (prompt, new) in enumerate(zip(prompts, generated, strict=True)):
            ids = np.asarray([*prompt, *new][:-1], dtype=np.int64)
            start, stop = width - len(prompt), width - len(prompt) + len(ids)
            if stop > length:  # generate stopped before feeding every sampled token back
                ids, stop = ids[: length - start], length
            kept = [(k[row, :, start:stop].clone(), v[row, :, start:stop].clone()) for k, v in layers]
            self._add(_Entry(ids, kept, self._clock))
        self._retire()

    # -- internals --------------------------------------------------------------------------

    def _row(self, ids: np.ndarray, device: Any) -> list[tuple[Any, Any]]:
        """Keys and values of `ids` (one sequence): the longest kept prefix, extended by one
        forward pass over the rest; the result is kept too (rows that share a prompt read it once)."""
        import torch

        entry, common = self._longest_prefix(ids)
        base = [(k[:, :common], v[:, :common]) for k, v in entry.layers] if entry is not None and common else None
        if entry is not None:
            entry.used = self._clock
        self.stats.reused_tokens += common
        if common == len(ids):
            return base or []
        self.stats.prefilled_tokens += len(ids) - common
        from transformers import DynamicCache

        past = DynamicCache()
        if base:
            for index, (k, v) in enumerate(base):
                past.update(k[None], v[None], index)
        suffix = torch.tensor(ids[common:], dtype=torch.long, device=device)[None]
        positions = torch.arange(common, len(ids), device=device)[None]
        with torch.no_grad():
            self.model(input_ids=suffix, position_ids=positions, use_cache=True, logits_to_keep=1, **{cache_argument(): past})
        layers = [(layer.keys[0], layer.values[0]) for layer in past.layers]
        self._add(_Entry(ids, layers, self._clock))
        return layers

    def _longest_prefix(self, ids: np.ndarray) -> tuple[_Entry | None, int]:
        best, best_len = None, 0
        for entry in self._entries:
            n = min(len(entry.ids), len(ids))
            if n <= best_len:
                continue
            differ = np.flatnonzero(entry.ids[:n] != ids[:n])
            common = int(differ[0]) if len(differ) else n
            if common > best_len:
                best, best_len = entry, common
        return best, best_len

    def _add(self, entry: _Entry) -> None:
        # An entry that is a prefix of the new one holds nothing the new one lacks.
        self._entries = [e for e in self._entries if not (len(e.ids) <= len(entry.ids) and np.array_equal(e.ids, entry.ids[: len(e.ids)]))]
        self._entries.append(entry)

    def _retire(self) -> None:
        if self.drop_unused:  # entries no prompt of this call used belong to finished episodes
            self._entries = [e for e in self._entries if e.used == self._clock]
        self._entries.sort(key=lambda e: e.used)
        total = self.cached_tokens
        while self._entries and total > self.max_tokens:
            dropped = self._entries.pop(0)
            total -= len(dropped.ids)
            self.stats.evicted_tokens += len(dropped.ids)


def supports_prefix_cache(model: Any) -> bool:
    """Whether `PrefixCache` may serve `model`: every layer keeps full attention over the whole
    sequence (no sliding window, no recurrent state), so a plain ``DynamicCache`` is its cache."""
    config = getattr(model, "config", None)
    if config is None:
        return False
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    if getattr(text, "sliding_window", None) is not None and getattr(text, "use_sliding_window", True):
        return False
    return all(kind == "full_attention" for kind in getattr(text, "layer_types", None) or ["full_attention"])


def cache_argument() -> str:
    """The name `generate` takes a prefilled KV cache under: ``cache`` in transformers 5,
    ``past_key_values`` before."""
    from transformers.generation import utils

    return "cache" if "cache" in getattr(utils, "ALL_CACHE_NAMES", ()) else "past_key_values"


def generated_cache(output: Any) -> Any:
    """The KV cache a ``generate`` (or forward) output carries (``cache`` in transformers 5)."""
    return getattr(output, "cache", None) if hasattr(output, "cache") else getattr(output, "past_key_values", None)


def growing_layer_class() -> type:
    """`GrowingLayer`, defined on first use (transformers is imported lazily)."""
    global _GROWING_LAYER
    if _GROWING_LAYER is not None:
        return _GROWING_LAYER
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):
        """A ``DynamicLayer`` that writes each decoding step's keys and values into space
        reserved ahead, instead of concatenating a new tensor every step.

        ``DynamicLayer.update`` copies the whole layer's cache at every generated token
        (``torch.cat``); at 600 tokens of context that copy was a fifth of a CPU decoding
        step for SmolLM2-135M. Here the buffers hold `capacity` positions (doubled when
        exceeded) and `keys` / `values` are views of the filled part: the same numbers, so
        attention computes the same result."""

        def __init__(self, keys: Any, values: Any, filled: int):
            """`keys` and `values`: buffers of shape ``(batch, heads, capacity, head_dim)`` whose
            first `filled` positions hold the cache (taken as they are, not copied)."""
            super().__init__()
            self.device, self.is_initialized = keys.device, True
            self._keys, self._values, self._filled = keys, values, filled
            self.keys, self.values = keys[..., :filled, :], values[..., :filled, :]

        def _write(self, keys: Any, values: Any) -> None:
            end = self._filled + keys.shape[-2]
            if end > self._keys.shape[-2]:
                size = max(end, 2 * self._keys.shape[-2])
                grown_keys = self._keys.new_zeros((*self._keys.shape[:-2], size, self._keys.shape[-1]))
                grown_values = self._values.new_zeros((*self._values.shape[:-2], size, self._values.shape[-1]))
                grown_keys[..., : self._filled, :] = self._keys[..., : self._filled, :]
                grown_values[..., : self._filled, :] = self._values[..., : self._filled, :]
                self._keys, self._values = grown_keys, grown_values
            self._keys[..., self._filled : end, :] = keys
            self._values[..., self._filled : end, :] = values
            self._filled = end
            self.keys, self.values = self._keys[..., :end, :], self._values[..., :end, :]

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            self._write(key_states, value_states)
            return self.keys, self.values

        def crop(self, tokens_to_remove: int) -> None:
            super().crop(tokens_to_remove)
            self._filled = self.keys.shape[-2]

        def batch_select_indices(self, indices: Any) -> None:
            self._keys, self._values = self._keys[indices, ...], self._values[indices, ...]
            self.keys, self.values = self._keys[..., : self._filled, :], self._values[..., : self._filled, :]

        def batch_repeat_interleave(self, repeats: int) -> None:
            self._keys = self._keys.repeat_interleave(repeats, dim=0)
            self._values = self._values.repeat_interleave(repeats, dim=0)
            self.keys, self.values = self._keys[..., : self._filled, :], self._values[..., : self._filled, :]

    _GROWING_LAYER = GrowingLayer
    return GrowingLayer


_GROWING_LAYER: type | None = None


def _batched_cache(rows: list[list[tuple[Any, Any]]], width: int, room: int = 0) -> Any:
    """A ``DynamicCache`` of ``len(rows)`` rows, each row's keys and values right-aligned in
    `width` positions (zeros before them: masked as padding), with `room` positions reserved
    after them for generation (`growing_layer_class`)."""
    import torch
    from transformers import DynamicCache

    growing = growing_layer_class()
    template = next(r for r in rows if r)
    cache = DynamicCache()
    layers = []
    for index, (k0, v0) in enumerate(template):
        keys = torch.zeros((len(rows), k0.shape[0], width + room, k0.shape[2]), dtype=k0.dtype, device=k0.device)
        values = torch.zeros((len(rows), v0.shape[0], width + room, v0.shape[2]), dtype=v0.dtype, device=v0.device)
        for row, row_layers in enumerate(rows):
            if row_layers:
                k, v = row_layers[index]
                keys[row, :, width - k.shape[1] : width] = k
                values[row, :, width - v.shape[1] : width] = v
        layers.append(growing(keys, values, width))
    cache.layers = layers
    return cache


__all__ = ["DEFAULT_MAX_CACHED_TOKENS", "CacheStats", "PrefixCache", "cache_argument", "generated_cache", "supports_prefix_cache"]
