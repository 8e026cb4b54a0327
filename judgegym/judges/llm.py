"""The LLM call behind every LLM judge: litellm, transport retries, a timeout, a disk cache,
a concurrency limit, one or several endpoints of the same model, and token / cost accounting.

litellm is imported on first use (it is slow to import and, unless told otherwise, fetches a
cost map from the network at import; we tell it otherwise).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import time
import weakref
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

log = logging.getLogger("judgegym.judges")

DEFAULT_CACHE_DIR = Path(os.environ.get("JUDGEGYM_CACHE_DIR", Path.home() / ".cache" / "judgegym" / "judge-cache"))
"""Where judge replies are cached: ``$JUDGEGYM_CACHE_DIR``, else ``~/.cache/judgegym/judge-cache``."""


class JudgeError(RuntimeError):
    """A judge could not produce valid scores (after its retries); the message says why."""


def import_litellm() -> Any:
    """litellm, imported with the bundled cost map so that import makes no network call."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True  # our errors say what happened; drop litellm's banner
    return litellm


def _transient(exc: BaseException) -> bool:
    litellm = import_litellm()
    transient = (
        litellm.APIConnectionError,
        litellm.Timeout,
        litellm.RateLimitError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
        asyncio.TimeoutError,
    )
    return isinstance(exc, transient)


@dataclass
class Usage:
    """Running totals of one judge's LLM calls."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    failovers: int = 0
    """Calls that failed on one endpoint (timeout, connection error, 429, 5xx) and were tried
    again on another."""

    def add(self, other: Usage) -> None:
        for name in ("calls", "cached_calls", "prompt_tokens", "completion_tokens", "cost", "failovers"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class JudgeLLM:
    """One model endpoint as judges use it.

    Args:
        model: any litellm model name: ``openai/gpt-4o-mini``, ``anthropic/claude-...``,
            ``hosted_vllm/NAME`` (with `api_base`), ``ollama/NAME``, ``local/smollm2-135m-instruct``.
        api_base: the endpoint, or several endpoints serving the same model (a list, or URLs
            separated by commas), e.g. one vLLM server per GPU. Each call goes to the
            endpoint with the fewest calls in flight among those not resting after a failure;
            a call that fails there (timeout, connection error, 429, 5xx) is retried on
            another one and counted in ``usage.failovers``. A failing endpoint rests for 5 s,
            then 10 s, ... up to 60 s, and is back in turn after its next success.
        api_key: the endpoints' key (falls back to the provider's env var).
        temperature, max_tokens, seed: sampling parameters sent with every call.
        timeout: seconds per call; a call that takes longer is retried.
        retries: attempts for transient failures (connection errors, timeouts, 429, 5xx),
            with exponential backoff (0.5 s, 1 s, 2 s, ... capped at 8 s); with several
            endpoints, at least one attempt per endpoint.
        max_concurrency: calls in flight at once from this object, per endpoint.
        cache: reuse replies from the disk cache (keyed by model, messages and parameters);
            `cache_dir` defaults to `DEFAULT_CACHE_DIR`. The cache is SQLite-backed
            (diskcache) and safe with concurrent processes.
        extra: more litellm parameters, e.g. ``{"num_ctx": 16384}`` for Ollama's context window.
    """

    model: str
    api_base: str | Sequence[str] | None = None
    api_key: str | None = None
    temperature: float = 0.0
    max_tokens: int = 1024
    seed: int | None = 0
    timeout: float = 120.0
    retries: int = 3
    max_concurrency: int = 8
    cache: bool = True
    cache_dir: str | Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)

    def __post_init__(self) -> None:
        bases = self.api_base.split(",") if isinstance(self.api_base, str) else list(self.api_base or [None])
        bases = [b.strip() if isinstance(b, str) else b for b in bases]
        if not bases or any(b == "" for b in bases):
            raise ValueError(f"api_base has an empty endpoint: {self.api_base!r}")
        if len(set(bases)) != len(bases):
            raise ValueError(f"api_base names an endpoint twice: {self.api_base!r}")
        self.api_base = bases[0] if len(bases) == 1 else bases
        self._endpoints = [_Endpoint(base) for base in bases]
        self._cache: Any = None

    @property
    def params(self) -> dict[str, Any]:
        """Everything but the messages that determines a reply (part of the cache key)."""
        params = {"temperature": self.temperature, "max_tokens": self.max_tokens, **self.extra}
        if self.seed is not None:
            params["seed"] = self.seed
        if self.api_base:
            params["api_base"] = self.api_base
        return params

    def cache_key(self, messages: list[dict[str, Any]], params: dict[str, Any] | None = None) -> str:
        """sha256 of the canonical JSON of model, messages and parameters (default `params`)."""
        params = self.params if params is None else params
        payload = json.dumps({"model": self.model, "messages": messages, "params": params}, sort_keys=True)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def _disk(self) -> Any:
        if self._cache is None:
            import diskcache

            self._cache = diskcache.Cache(str(self.cache_dir or DEFAULT_CACHE_DIR))
        return self._cache

    def _pick(self, avoid: _Endpoint | None) -> _Endpoint:
        """The endpoint for the next attempt: not resting if any is not, not the one that
        just failed if another exists, then the fewest calls in flight (queued included)."""
        now = time.monotonic()
        candidates = [e for e in self._endpoints if e.resting_until <= now] or self._endpoints
        candidates = [e for e in candidates if e is not avoid] or candidates
        return min(candidates, key=lambda e: (e.in_flight, e.resting_until))

    async def complete(self, messages: list[dict[str, Any]]) -> tuple[str, Usage]:
        """The reply text to `messages` and what it cost. Raises `JudgeError` when the call
        keeps failing, naming the model and the last error."""
        message, usage = await self.complete_message(messages)
        return message.get("content") or "", usage

    async def complete_message(
        self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None, **overrides: Any
    ) -> tuple[dict[str, Any], Usage]:
        """The assistant message (``content`` and, with native `tools`, ``tool_calls`` in
        OpenAI format) replying to `messages`, and what it cost. `overrides` replace
        sampling parameters for this call (e.g. a per-episode ``seed``); they are part of
        the cache key. Raises `JudgeError` when the call keeps failing."""
        params = {**self.params, **{k: v for k, v in overrides.items() if v is not None}}
        if tools:
            params["tools"] = tools
        key = self.cache_key(messages, params)
        if self.cache:
            hit = self._disk().get(key)
            if hit is not None:
                usage = Usage(cached_calls=1)
                self.usage.add(usage)
                return ({"role": "assistant", "content": hit} if isinstance(hit, str) else dict(hit)), usage
        litellm = import_litellm()
        if self.model.startswith("local/"):
            from ..models import register_local_provider

            register_local_provider()
        params.pop("api_base", None)
        attempts = max(1, self.retries, len(self._endpoints))
        failed: _Endpoint | None = None
        failovers, tries, last = 0, 0, None
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(attempts),
                wait=wait_exponential(multiplier=0.5, max=8) if len(self._endpoints) == 1 else _wait_unless_fresh(self),
                retry=retry_if_exception(_transient),
                reraise=True,
            ):
                with attempt:
                    endpoint = self._pick(failed)
                    tries, last = tries + 1, endpoint.base
                    if failed is not None and endpoint is not failed:
                        failovers += 1
                    try:
                        async with endpoint.slot(self.max_concurrency):
                            response = await litellm.acompletion(
                                model=self.model,
                                messages=messages,
                                api_key=self.api_key,
                                timeout=self.timeout,
                                num_retries=0,
                                **({"api_base": endpoint.base} if endpoint.base else {}),
                                **params,
                            )
                    except Exception as exc:
                        if _transient(exc):
                            endpoint.failed()
                            failed = endpoint
                        raise
                    endpoint.succeeded()
        except Exception as exc:
            tried = f"{tries} attempt(s)" + (f", the last at {last}" if len(self._endpoints) > 1 else "")
            raise JudgeError(f"model {self.model!r} failed after {tried}: {type(exc).__name__}: {exc}") from exc
        reply = response.choices[0].message
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or ""}
        calls = getattr(reply, "tool_calls", None)
        if calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments or "{}"}}
                for c in calls
            ]
        usage = Usage(calls=1, **_token_counts(response), cost=_cost(litellm, response), failovers=failovers)
        self.usage.add(usage)
        if self.cache:
            self._disk().set(key, message if calls else message["content"])
        return message, usage


class _Endpoint:
    """One server of a `JudgeLLM`: its calls in flight, a concurrency limit per event loop, and
    how long it rests after failures."""

    def __init__(self, base: str | None):
        self.base = base
        self.in_flight = 0
        self.failures = 0
        self.resting_until = 0.0
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()

    @contextlib.asynccontextmanager
    async def slot(self, limit: int) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.setdefault(loop, asyncio.Semaphore(limit))
        self.in_flight += 1
        try:
            async with semaphore:
                yield
        finally:
            self.in_flight -= 1

    def failed(self) -> None:
        self.failures += 1
        self.resting_until = time.monotonic() + min(60.0, 5.0 * 2 ** (self.failures - 1))

    def succeeded(self) -> None:
        self.failures = 0
        self.resting_until = 0.0


def _wait_unless_fresh(llm: JudgeLLM) -> Any:
    """Between attempts with several endpoints: none while one is not resting (the retry
    goes there at once), else the usual backoff."""
    backoff = wait_exponential(multiplier=0.5, max=8)

    def wait(retry_state: Any) -> float:
        now = time.monotonic()
        return 0.0 if any(e.resting_until <= now for e in llm._endpoints) else backoff(retry_state)

    return wait


def _token_counts(response: Any) -> dict[str, int]:
    usage = getattr(response, "usage", None)
    return {
        "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
        "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
    }


def _cost(litellm: Any, response: Any) -> float:
    try:
        return float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # unknown models have no price: cost is simply not known
        return 0.0


__all__ = ["DEFAULT_CACHE_DIR", "JudgeError", "JudgeLLM", "Usage", "import_litellm"]
