"""`BatchedAgent`: in-process model agents that batch the turns of concurrent episodes.

The eval runner (and any asyncio loop) plays many episodes at once; each episode awaits its
agent's `act`. A batched agent queues those requests and runs them as one batched
generation, so a GPU sees batch 16 or 64 while every episode is still written as plain
sequential code. Subclasses implement `generate_batch` (blocking; run in a worker thread)
and `tokenizer`.
"""

from __future__ import annotations

import asyncio
import time
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

from ..chat_format import render_prompt
from .base import Action, Agent, sampling_seed


@dataclass(frozen=True)
class Sampling:
    """Sampling parameters of a model agent (OpenAI meaning). ``temperature=0`` is greedy."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int = 0

    def __post_init__(self) -> None:
        if self.temperature < 0 or not 0 < self.top_p <= 1 or self.max_tokens < 1:
            raise ValueError(f"need temperature >= 0, 0 < top_p <= 1 and max_tokens >= 1, got {self}")


@dataclass
class Generation:
    """One completion: its text and token counts."""

    text: str
    prompt_tokens: int
    completion_tokens: int


class BatchedAgent(Agent):
    """An agent over an in-process model; concurrent `act` calls are generated together,
    up to `max_batch` prompts per batch.

    A batch starts as soon as the queue stops growing (the other episodes have had a chance
    to submit their turn), so a lone episode is not delayed and a full set of concurrent
    episodes shares one forward pass per token.
    """

    def __init__(self, sampling: Sampling, max_batch: int):
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.sampling = sampling
        self.max_batch = max_batch
        self.batch_sizes: list[int] = []
        """Size of every batch generated so far (a throughput diagnostic)."""
        self.generate_seconds = 0.0
        """Wall time spent inside `generate_batch` so far."""
        self._queue: list[tuple[str, int, asyncio.Future[Generation]]] = []
        self._worker: asyncio.Task[None] | None = None

    @property
    @abstractmethod
    def tokenizer(self) -> Any:
        """The model's tokenizer (its chat template renders the prompts)."""

    @abstractmethod
    def generate_batch(self, prompts: list[str], seeds: list[int]) -> list[Generation]:
        """Complete every prompt (blocking); `seeds` are per-prompt sampling seeds."""

    def prompt(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> str:
        """The text prompt for this turn (chat template + tool instructions)."""
        return render_prompt(self.tokenizer, observation, info.get("tools") or None)

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Generation] = loop.create_future()
        self._queue.append((self.prompt(observation, info), sampling_seed(self.sampling.seed, observation, info), future))
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._drain())
        generation = await future
        usage = {"prompt_tokens": generation.prompt_tokens, "completion_tokens": generation.completion_tokens}
        return {"role": "assistant", "content": generation.text, "usage": usage}

    async def _drain(self) -> None:
        while self._queue:
            size = -1
            while size != len(self._queue) and len(self._queue) < self.max_batch:
                size = len(self._queue)
                for _ in range(3):  # woken episodes step their env, then queue their next turn
                    await asyncio.sleep(0)
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            self.batch_sizes.append(len(batch))
            try:
                start = time.perf_counter()
                results = await asyncio.to_thread(self.generate_batch, [p for p, _, _ in batch], [s for _, s, _ in batch])
                self.generate_seconds += time.perf_counter() - start
                if len(results) != len(batch):
                    raise RuntimeError(f"{type(self).__name__}.generate_batch returned {len(results)} results for {len(batch)} prompts")
            except Exception as exc:  # every waiting episode gets the error, none hangs
                for _, _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, _, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)


__all__ = ["BatchedAgent", "Generation", "Sampling"]
