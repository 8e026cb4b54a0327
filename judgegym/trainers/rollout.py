"""Rollouts for GRPO: B scenarios x G members played as token-level episodes, every active
episode's next turn generated in one batch. `RolloutBackend` is the seam between the episode
loop and the sampler; `TransformersBackend` (``model.generate``) is built here, `VLLMBackend`
(an in-process vLLM engine) in `vllm_rollout`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym

from ..agents.batching import Sampling
from ..agents.decoding import decode
from ..agents.generation_copy import GenerationCopy
from ..agents.prefix_cache import DEFAULT_MAX_CACHED_TOKENS, PrefixCache, cache_argument, generated_cache, supports_prefix_cache
from ..envs import env_urls, make_env
from ..trajectory import Trajectory
from .loss import selective_log_softmax
from .tokenize import EpisodeTokenizer, TokenTrajectory, env_turns


@runtime_checkable
class RolloutBackend(Protocol):
    """What the rollout loop needs from a sampler.

    Two are built: `TransformersBackend` samples with the training model itself;
    `judgegym.trainers.vllm_rollout.VLLMBackend` samples with vLLM, sending a group's
    identical first-turn prompts as one ``n=G`` request, and its `sync_weights` saves the
    trained LoRA adapter, serves it under a fresh adapter id and resets the prefix cache.
    A sampler other than the training model computes slightly different log-probabilities
    (other kernels); the trainer's ``importance_sampling`` corrects for that.

    A backend may also have ``finish_rollout()``, which the trainer calls when every episode
    of a rollout has ended, to free what it kept for their turns (`TransformersBackend`'s KV
    caches).
    """

    def generate(self, prompts: Sequence[Sequence[int]], sampling: Sampling) -> tuple[list[list[int]], list[list[float]]]:
        """Sample one continuation per prompt.

        Args:
            prompts: token ids, one list per episode (no padding).
            sampling: temperature (> 0), top_p, max_tokens (new tokens per turn) and the seed
                of this call (the same prompts and seed must give the same samples).

        Returns:
            ``(ids, logprobs)``: per prompt, the sampled ids without padding, ending with the
            EOS token if the model stopped by itself, and each id's log-probability under
            ``softmax(logits / temperature)`` (what `selective_log_softmax` computes, so the
            trainer's numbers are comparable).
        """
        ...

    def sync_weights(self, model: Any) -> None:
        """Called with the trained model once when the trainer is built (after a resume its
        weights are not the base model's) and after every optimizer step: make the sampler use
        these weights (no-op when the sampler is the training model itself)."""
        ...


class TransformersBackend:
    """Samples with the training model's own ``generate`` (CPU, or one GPU without vLLM).

    Prompts are left-padded into one batch; the log-probabilities come from the raw logits
    of each generated position (``output_logits``) divided by the temperature, the same
    arithmetic as the trainer's forward pass. Top-p truncation is not reflected in them: keep
    ``top_p=1`` for exact on-policy numbers (or turn on importance sampling).

    Rows that share a prompt (a group's first turn) share its prefill: the prompt is read once
    and its KV cache copied to each row, so a turn costs B prompt reads, not B x G.

    With `kv_reuse` (the default, for models whose every layer attends to the whole sequence)
    each episode's KV cache is kept after its turn (`judgegym.agents.prefix_cache.PrefixCache`)
    and the next turn reads only the tokens the env added; the samples and log-probabilities
    are those of re-reading the whole conversation, up to floating-point summation order. Kept
    caches of episodes that ended are dropped at the next call, all of them at `sync_weights`
    (new weights make them stale), and the least recently used past `max_cached_tokens`.

    With `generation_dtype` the backend samples with a `GenerationCopy` of the model (LoRA
    merged, weights in that dtype, refreshed at `sync_weights`) instead of the training model
    itself: on a CPU with native bfloat16 that is the fastest way to sample (the log-probabilities
    then differ from the trainer's by bfloat16 rounding; see ``sampling/*`` and importance
    sampling). Without it the sampler is the training model, exactly.

    Memory: ``generate`` keeps the logits of every new position, ``B x max_tokens x vocab``
    floats; lower the batch or ``max_tokens`` if that does not fit.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        device: str,
        *,
        kv_reuse: bool = True,
        max_cached_tokens: int = DEFAULT_MAX_CACHED_TOKENS,
        generation_dtype: Any = None,
    ):
        self.copy = GenerationCopy(model, generation_dtype) if generation_dtype is not None else None
        self.model = self.copy.model if self.copy is not None else model
        """The model that samples: the generation copy, or the training model."""
        self.tokenizer = tokenizer
        self.device = device
        self.prefix_cache = (
            PrefixCache(self.model, max_tokens=max_cached_tokens, drop_unused=True)
            if kv_reuse and supports_prefix_cache(self.model)
            else None
        )

    def generate(self, prompts: Sequence[Sequence[int]], sampling: Sampling) -> tuple[list[list[int]], list[list[float]]]:
        import torch
        from transformers import GenerationConfig

        if sampling.temperature <= 0:
            raise ValueError("rollouts sample: temperature must be > 0 (greedy turns have no log-probabilities to train on)")
        rows_of = prompt_rows(prompts)
        if not rows_of:
            return [], []
        pad, eos = pad_token_id(self.tokenizer), self.tokenizer.eos_token_id
        # A fresh GenerationConfig: nothing inherited from the model's defaults (repetition
        # penalty, top_k=50, ...) may change the distribution the logprobs describe.
        config = GenerationConfig(
            do_sample=True,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            top_k=0,
            max_new_tokens=sampling.max_tokens,
            pad_token_id=pad,
            eos_token_id=eos,
            output_logits=True,
            return_dict_in_generate=True,
        )
        cuda = [self.device] if str(self.device).startswith("cuda") else []
        with torch.no_grad(), torch.random.fork_rng(devices=cuda):
            if self.prefix_cache is not None:  # kept caches, and judgegym's own decoding loop over them
                input_ids, attention_mask, cache = self.prefix_cache.prefill(prompts, pad, self.device, room=sampling.max_tokens)
                torch.manual_seed(sampling.seed)
                new, logprobs = decode(
                    self.model,
                    input_ids,
                    attention_mask,
                    cache,
                    max_new_tokens=sampling.max_tokens,
                    temperature=sampling.temperature,
                    top_p=sampling.top_p,
                    eos_token_id=eos,
                    pad_token_id=pad,
                    logprobs=True,
                )
            else:
                input_ids, attention_mask, cache = self._left_padded(rows_of, len(prompts), pad)
                width = input_ids.shape[1]
                torch.manual_seed(sampling.seed)
                prefilled = {cache_argument(): cache} if cache is not None else {}
                out = self.model.generate(input_ids=input_ids, attention_mask=attention_mask, generation_config=config, **prefilled)
                new = out.sequences[:, width:]
                # logprobs of every generated position, one (B, V) slice at a time
                logprobs = torch.stack(
                    [selective_log_softmax(step_logits, new[:, t], sampling.temperature) for t, step_logits in enumerate(out.logits)],
                    dim=1,
                )
        ids_out, logprobs_out = [], []
        for row_ids, row_logprobs in zip(new.tolist(), logprobs.tolist(), strict=True):
            end = row_ids.index(eos) + 1 if eos in row_ids else len(row_ids)  # after EOS there is only padding
            ids_out.append(row_ids[:end])
            logprobs_out.append(row_logprobs[:end])
        if self.prefix_cache is not None:
            self.prefix_cache.keep(prompts, cache, ids_out)
        return ids_out, logprobs_out

    def _left_padded(self, rows_of: dict[tuple[int, ...], list[int]], n: int, pad: int) -> tuple[Any, Any, Any]:
        """Without KV reuse: the prompts left-padded, and the shared prompts' prefilled cache."""
        import torch

        unique = list(rows_of)
        width = max(len(p) for p in unique)
        unique_ids = torch.full((len(unique), width), pad, dtype=torch.long)
        unique_mask = torch.zeros((len(unique), width), dtype=torch.long)
        for row, prompt in enumerate(unique):
            unique_ids[row, width - len(prompt) :] = torch.tensor(prompt)
            unique_mask[row, width - len(prompt) :] = 1
        source = torch.empty(n, dtype=torch.long)  # row -> its unique prompt
        for index, rows in enumerate(rows_of.values()):
            source[rows] = index
        # Shared prompts (the G members of a group on their first turn) are read once: their
        # KV cache is computed per distinct prompt and copied to every row that shares it.
        cache = self._prefill(unique_ids, unique_mask, source) if len(unique) < n and width > 1 else None
        return unique_ids[source].to(self.device), unique_mask[source].to(self.device), cache

    def _prefill(self, unique_ids: Any, unique_mask: Any, source: Any) -> Any:
        """The KV cache of every prompt but its last token, computed once per distinct prompt
        (left-padded rows) and gathered to one row per episode; `generate` then reads only the
        last prompt token before sampling."""

        mask = unique_mask[:, :-1].to(self.device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)  # left padding: what generate computes
        out = self.model(
            input_ids=unique_ids[:, :-1].to(self.device), attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1
        )
        cache = generated_cache(out)
        cache.batch_select_indices(source.to(self.device))
        return cache

    def finish_rollout(self) -> None:
        """Every episode of a rollout has ended: drop the KV caches kept for their next turns,
        which no turn will read (the next `sync_weights` would drop them anyway), so the update
        that follows does not hold them (up to ``max_cached_tokens`` tokens: about 0.75 GB for
        SmolLM2-135M sampling in bfloat16)."""
        if self.prefix_cache is not None:
            self.prefix_cache.clear()

    def sync_weights(self, model: Any) -> None:
        """The generation copy takes `model`'s weights (without one the sampler is the training
        model itself); the kept KV caches, stale now, are dropped."""
        if self.copy is not None:
            self.copy.refresh(model)
        if self.prefix_cache is not None:
            self.prefix_cache.clear()


@dataclass
class RolloutEpisode:
    """One played episode: the env's unscored trajectory and its token-level twin."""

    group: int
    """Index of its scenario within the step (members of a group share it)."""
    seed: int
    """The scenario seed the env was reset with."""
    trajectory: Trajectory
    tokens: TokenTrajectory
    turns: int
    """Assistant turns generated."""
    clipped_turns: int
    """Turns cut by the per-turn token limit (no EOS within ``max_tokens``)."""


def make_envs(
    env_id: str, n: int, env_kwargs: dict[str, Any] | None = None, *, max_turns: int | None = None, env_url: str | None = None
) -> list[gym.Env]:
    """`n` envs that leave judging to the trainer (``defer_judging=True``); with `env_url`,
    served ones (`RemoteEnv`), spread in turn over its comma-separated URLs."""
    kwargs = dict(env_kwargs or {})
    if max_turns is not None:
        kwargs["max_turns"] = max_turns
    urls = env_urls(env_url)
    return [make_env(env_id, urls[i % len(urls)], defer_judging=True, **kwargs) for i in range(n)]


def play_groups(
    backend: RolloutBackend,
    tokenizer: Any,
    envs: Sequence[gym.Env],
    seeds: Sequence[int],
    sampling: Sampling,
) -> list[RolloutEpisode]:
    """Play ``len(seeds)`` groups of ``G = len(envs) // len(seeds)`` members to their end.

    Member ``j`` of group ``i`` plays on ``envs[i * G + j]``, reset with ``seeds[i]`` (so the
    G members play the same scenario). Each round, every episode still running contributes
    its conditioning ids (`EpisodeTokenizer.prompt_for_next_turn`) to one `backend.generate`
    call, seeded with ``sampling.seed + round``; each sample goes to its episode's tokenizer
    and, as text, to its env. Episodes end when their env says so (a final answer, or the env's
    ``max_turns`` / ``max_tool_calls``). Returns the episodes in env order.
    """
    if not seeds or len(envs) % len(seeds):
        raise ValueError(f"need a whole number of envs per scenario, got {len(envs)} envs for {len(seeds)} scenarios")
    group_size = len(envs) // len(seeds)
    episodes: list[EpisodeTokenizer] = []
    observations: list[list[dict[str, Any]]] = []
    for index, env in enumerate(envs):
        observation, info = env.reset(seed=int(seeds[index // group_size]))
        episode = EpisodeTokenizer(tokenizer, info.get("tools") or [])
        episode.start(observation)
        episodes.append(episode)
        observations.append(observation)
    turns = [0] * len(envs)
    clipped = [0] * len(envs)
    finished: dict[int, Trajectory] = {}
    round_ = 0
    while len(finished) < len(envs):
        active = [i for i in range(len(envs)) if i not in finished]
        prompts = [episodes[i].prompt_for_next_turn() for i in active]
        ids, logprobs = backend.generate(prompts, replace(sampling, seed=(sampling.seed + round_) % (2**31 - 1)))
        if len(ids) != len(active) or len(logprobs) != len(active):
            raise RuntimeError(f"{type(backend).__name__}.generate returned {len(ids)} samples for {len(active)} prompts")
        for i, sample, sample_logprobs in zip(active, ids, logprobs, strict=True):
            text = episodes[i].add_generated(sample, sample_logprobs)
            turns[i] += 1
            clipped[i] += len(sample) >= sampling.max_tokens and (not sample or sample[-1] != tokenizer.eos_token_id)
            observation, _, terminated, truncated, step_info = envs[i].step(text)
            if terminated or truncated:
                finished[i] = step_info["trajectory"]
                continue
            episodes[i].add_env_messages(env_turns(observations[i], observation))
            observations[i] = observation
        round_ += 1
    return [
        RolloutEpisode(
            group=i // group_size,
            seed=int(seeds[i // group_size]),
            trajectory=finished[i],
            tokens=episodes[i].trajectory(),
            turns=turns[i],
            clipped_turns=clipped[i],
        )
        for i in range(len(envs))
    ]


def prompt_rows(prompts: Sequence[Sequence[int]]) -> dict[tuple[int, ...], list[int]]:
    """Distinct prompts (in order of first appearance) -> the rows that carry them. Backends
    read a shared prompt once: the G members of a group share theirs on the first turn."""
    rows_of: dict[tuple[int, ...], list[int]] = {}
    for row, prompt in enumerate(prompts):
        if not prompt:
            raise ValueError(f"prompt {row} is empty; every episode starts with its first prompt's ids")
        rows_of.setdefault(tuple(int(t) for t in prompt), []).append(row)
    return rows_of


def pad_token_id(tokenizer: Any) -> int:
    """The id that pads a batch's rows: the tokenizer's pad token, else its EOS token.

    Raises:
        ValueError: the tokenizer has neither.
    """
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    if pad is None:
        raise ValueError("the tokenizer has neither a pad nor an EOS token; set tokenizer.pad_token before training")
    return int(pad)


__all__ = ["RolloutBackend", "RolloutEpisode", "TransformersBackend", "make_envs", "pad_token_id", "play_groups", "prompt_rows"]
