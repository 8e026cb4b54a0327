"""`ServerBackend`: GRPO rollouts sampled by inference servers (vLLM, SGLang, or any server
with vLLM's OpenAI-compatible completions API) over HTTP.

The user starts the servers with their own engine, e.g.::

    VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve MODEL --enable-lora --max-lora-rank 16 \\
        --logprobs-mode processed_logprobs

and lists their URLs (``GRPOConfig.server_urls``). Prompts go as token ids to
``/v1/completions``; the sampled ids come back as ids (``return_tokens_as_token_ids``) with
their log-probabilities, so returned text is never re-tokenized and the trainer's token-level
episode is exactly what the server sampled. After every optimizer step the LoRA adapter is
written to a folder the servers can read and loaded on each under a fresh name
(``/v1/load_lora_adapter``); requests then name it.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import shutil
import threading
import time
import uuid
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import numpy as np

from ..agents.batching import Sampling
from .checkpoint import save_pretrained
from .rollout import prompt_rows

log = logging.getLogger("judgegym.trainers")

T = TypeVar("T")

TOKEN_ID_PREFIX = "token_id:"
"""How vLLM writes a token with ``return_tokens_as_token_ids``: ``token_id:1234``."""


class ServerError(RuntimeError):
    """The inference servers could not do what the trainer asked: none reachable, none serving
    the model, every attempt at a request failed, or no server loaded the new adapter."""


def prompt_seed(seed: int, prompt: Sequence[int]) -> int:
    """The seed of the request for `prompt` in a `generate` call seeded `seed`: a hash of both,
    so a prompt's samples depend on the prompt and the call's seed only, not on which other
    prompts share the call (or the rank, or the server, or a retry)."""
    digest = hashlib.blake2b(np.asarray(prompt, dtype=np.int64).tobytes(), digest_size=8).digest()
    return int(np.random.SeedSequence([seed, int.from_bytes(digest, "little")]).generate_state(1)[0]) % 2**31


@dataclass
class _Server:
    """One inference server, as the client sees it."""

    url: str
    outstanding: int = 0
    """Requests sent and not answered yet (routing picks the server with fewest)."""
    version: int = 0
    """The newest policy version this server has loaded (0: the base model)."""
    loaded: list[str] = field(default_factory=list)
    """Adapter names loaded on this server by this backend, oldest first."""
    down_until: float = 0.0
    """After a failure the server is skipped until then (unless every server is down)."""
    requests: int = 0
    failures: int = 0


@dataclass(frozen=True)
class AdapterState:
    """Which adapter the servers serve: what the rank that loads adapters hands to the others."""

    version: int
    name: str | None
    servers: tuple[str, ...]
    """URLs of the servers that loaded it."""


class ServerBackend:
    """Samples rollouts with inference servers over HTTP (the `RolloutBackend` contract).

    Args:
        urls: the servers' base URLs (``http://host:8000``; a trailing ``/v1`` is dropped).
        model: the model name the servers serve (what ``/v1/models`` lists; vLLM's
            ``--served-model-name``, by default the path given to ``vllm serve``).
        adapter_dir: a folder every server can read at the same path (shared storage on
            several machines): each step's adapter is written there.
        max_concurrent_requests: requests in flight per server at once.
        timeout_s: a request's time limit; a server that exceeds it counts as failed.
        max_attempts: tries per request across servers before giving up (default three per
            server).
        keep_adapters: adapters kept loaded per server (the newest ones); an asynchronous
            trainer keeps ``max_off_policy_steps + 1`` so requests in flight under an older
            adapter finish.
        api_key: sent as a bearer token (``vllm serve --api-key``).
        check: ask every server for ``/v1/models`` now and fail with a clear message if one
            is unreachable or does not serve `model`.
        publisher: whether this backend writes and loads adapters (with several trainer
            ranks, rank 0 does and the others `adopt` its `adapter_state`).
        run_name: prefix of the adapter names (default a fresh random one, so a restarted run
            never reuses a name a long-lived server already holds).

    Routing: each request goes to the eligible server with the fewest outstanding requests,
    where eligible means serving the current adapter version (a server that failed to load
    it never samples with the old one) and not cooling down after a failure. Identical
    prompts within a call (a group's first turn) go as one request with ``n`` equal to their
    count. A request that times out, gets a 5xx, or loses its connection is retried on
    another server and counted (`metrics`); when no attempt succeeds, `ServerError`.
    """

    def __init__(
        self,
        urls: Sequence[str],
        *,
        model: str,
        adapter_dir: str | Path,
        max_concurrent_requests: int = 64,
        timeout_s: float = 600.0,
        max_attempts: int | None = None,
        keep_adapters: int = 1,
        cooldown_s: float = 5.0,
        api_key: str | None = None,
        check: bool = True,
        publisher: bool = True,
        run_name: str | None = None,
    ):
        clean = [u.strip().rstrip("/").removesuffix("/v1") for u in urls if u.strip()]
        if not clean:
            raise ValueError("backend='server' needs at least one server URL (server_urls)")
        if len(set(clean)) != len(clean):
            raise ValueError(f"server_urls names a server twice: {clean}")
        if max_concurrent_requests < 1 or keep_adapters < 1 or timeout_s <= 0:
            raise ValueError("max_concurrent_requests and keep_adapters must be >= 1 and timeout_s > 0")
        self.model = model
        self.adapter_dir = Path(adapter_dir)
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts or 3 * len(clean)
        self.keep_adapters = keep_adapters
        self.cooldown_s = cooldown_s
        self.publisher = publisher
        self.run_name = run_name or f"judgegym-{uuid.uuid4().hex[:8]}"
        self.version = 0
        """Policy version the requests name: 0 is the base model, v the v-th `sync_weights`."""
        self.adapter: str | None = None
        """The adapter name requests use (None: the base model)."""
        self.counts: dict[str, float] = {"requests": 0, "samples": 0, "retries": 0, "failures": 0, "adapter_load_failures": 0}
        """Running totals (`metrics` reports them)."""
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="judgegym-server-backend", daemon=True)
        self._thread.start()
        self._servers = self._run(self._make_servers(clean, max_concurrent_requests))
        if check:
            self._run(self._check())

    # -- RolloutBackend -------------------------------------------------------------------

    def generate(self, prompts: Sequence[Sequence[int]], sampling: Sampling) -> tuple[list[list[int]], list[list[float]]]:
        """Sample one continuation per prompt: ids as the server sampled them (ending with the
        EOS token when the model stopped by itself, as vLLM returns it) and their log-probabilities
        (``softmax(logits / temperature)`` when the server runs with ``--logprobs-mode
        processed_logprobs``; vLLM's default is before temperature)."""
        if sampling.temperature <= 0:
            raise ValueError("rollouts sample: temperature must be > 0 (greedy turns have no log-probabilities to train on)")
        rows_of = prompt_rows(prompts)
        if not rows_of:
            return [], []
        results = self._run(self.generate_async(list(rows_of), [len(rows) for rows in rows_of.values()], sampling))
        ids: list[list[int]] = [[] for _ in prompts]
        logprobs: list[list[float]] = [[] for _ in prompts]
        for rows, samples in zip(rows_of.values(), results, strict=True):
            for row, (sample_ids, sample_logprobs) in zip(rows, samples, strict=True):
                ids[row], logprobs[row] = sample_ids, sample_logprobs
        return ids, logprobs

    async def generate_async(
        self, prompts: Sequence[Sequence[int]], counts: Sequence[int], sampling: Sampling
    ) -> list[list[tuple[list[int], list[float]]]]:
        """`counts[i]` samples of each distinct prompt, all requests in flight at once (on the
        backend's event loop)."""
        return list(await asyncio.gather(*(self._complete(p, n, sampling) for p, n in zip(prompts, counts, strict=True))))

    def sync_weights(self, model: Any) -> None:
        """Serve `model`'s LoRA adapter from now on: write it to ``adapter_dir/NAME``, load it on
        every server under the fresh name ``{run_name}-v{version}``, and unload (and delete)
        the adapters older than the newest `keep_adapters`. Servers that fail to load it are
        left out of routing until a later adapter loads there; if none loads it, `ServerError`.
        A backend that is not the `publisher` does nothing here (it `adopt`s)."""
        if not self.publisher:
            return
        if not hasattr(model, "peft_config"):
            raise ValueError(
                "backend='server' hands the trained weights to the servers as a LoRA adapter; this model has none (use_lora=True)"
            )
        version = self.version + 1
        name = f"{self.run_name}-v{version}"
        folder = self.adapter_dir / name
        save_pretrained(model, folder)
        errors = self._run(self._load_everywhere(name, folder.resolve()))
        loaded = [s for s, error in zip(self._servers, errors, strict=True) if error is None]
        for server, error in zip(self._servers, errors, strict=True):
            if error is not None:
                self.counts["adapter_load_failures"] += 1
                log.warning("inference server %s did not load adapter %s (%s); it gets no requests until it loads a newer one", server.url,
                            name, error)  # fmt: skip
        if not loaded:
            raise ServerError(f"no inference server loaded adapter {name} from {folder}: " + "; ".join(f"{s.url}: {e}" for s, e in
                              zip(self._servers, errors, strict=True)))  # fmt: skip
        self.version, self.adapter = version, name
        for server in loaded:
            server.version = version
            server.loaded.append(name)
        self._run(self._unload_old())
        self._remove_old_folders()

    # -- several trainer ranks ------------------------------------------------------------

    def adapter_state(self) -> AdapterState:
        """What the servers serve now (to hand to the other ranks' backends)."""
        return AdapterState(self.version, self.adapter, tuple(s.url for s in self._servers if s.version == self.version))

    def adopt(self, state: AdapterState) -> None:
        """Serve what another rank's backend loaded (`adapter_state` there)."""
        self.version, self.adapter = state.version, state.name
        for server in self._servers:
            if server.url in state.servers:
                server.version = state.version

    # -- metrics and shutdown -------------------------------------------------------------

    def metrics(self) -> dict[str, float]:
        """Running totals: ``server/requests``, ``server/samples``, ``server/retries``
        (attempts that failed and went elsewhere), ``server/failures``,
        ``server/adapter_load_failures``, ``server/stale_servers`` (servers left out because
        they lack the current adapter) and ``server/policy_version``."""
        stale = sum(s.version != self.version for s in self._servers)
        return {**{f"server/{k}": float(v) for k, v in self.counts.items()}, "server/stale_servers": float(stale),
                "server/policy_version": float(self.version)}  # fmt: skip

    def server_stats(self) -> list[dict[str, Any]]:
        """Per server: URL, requests answered, failures, outstanding requests, version served."""
        return [
            {"url": s.url, "requests": s.requests, "failures": s.failures, "outstanding": s.outstanding, "version": s.version}
            for s in self._servers
        ]

    def close(self) -> None:
        """Close the HTTP connections and stop the backend's event loop."""
        if self._loop.is_closed():
            return
        self._run(self._client.aclose())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001  (interpreter shutdown)
            pass

    # -- internals ------------------------------------------------------------------------

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the backend's loop and wait for it (callable from any thread)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    async def _make_servers(self, urls: list[str], slots: int) -> list[_Server]:
        limits = httpx.Limits(max_connections=slots * len(urls), max_keepalive_connections=slots * len(urls))
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s)), limits=limits,
                                         headers=self._headers)  # fmt: skip
        self._slots = slots
        self._freed = asyncio.Condition()
        return [_Server(url) for url in urls]

    async def _check(self) -> None:
        async def served(server: _Server) -> str | None:
            try:
                response = await self._client.get(f"{server.url}/v1/models", timeout=min(30.0, self.timeout_s))
                response.raise_for_status()
                names = [entry.get("id") for entry in response.json().get("data", [])]
            except (httpx.HTTPError, ValueError, AttributeError) as error:
                return f"{server.url}: cannot list its models ({type(error).__name__}: {error})"
            if self.model not in names:
                return (
                    f"{server.url} serves {names}, not {self.model!r}: start it with the trainer's model (vllm serve {self.model}) "
                    "or set server_model to the name it serves (--served-model-name)"
                )
            return await probe(server)

        async def probe(server: _Server) -> str | None:
            """One token from a token-id prompt, returned as an id: the contract rollouts need."""
            body = {"model": self.model, "prompt": [0], "max_tokens": 1, "temperature": 1.0, "logprobs": 0}
            body["return_tokens_as_token_ids"] = True
            try:
                response = await self._client.post(f"{server.url}/v1/completions", json=body, timeout=min(60.0, self.timeout_s))
                if response.status_code != 200:
                    raise ValueError(f"HTTP {response.status_code}: {_error_message(response)}")
                _samples(response.json(), 1)
            except (httpx.HTTPError, ValueError, KeyError, TypeError) as error:
                return (
                    f"{server.url} does not answer vLLM's token-level completions (a prompt of token ids, samples returned as ids "
                    f"with return_tokens_as_token_ids and logprobs): {error}"
                )
            return None

        problems = [p for p in await asyncio.gather(*(served(s) for s in self._servers)) if p]
        if problems:
            raise ServerError("inference server check failed: " + "; ".join(problems))

    def _eligible(self, tried: set[str]) -> list[_Server]:
        current = [s for s in self._servers if s.version == self.version]
        untried = [s for s in current if s.url not in tried] or current
        now = time.monotonic()
        return [s for s in untried if s.down_until <= now] or untried

    async def _acquire(self, tried: set[str]) -> _Server:
        """A slot on the eligible server with the fewest outstanding requests, waiting until
        one has a free slot (so a slow server ends up with fewer requests)."""
        async with self._freed:
            while True:
                candidates = self._eligible(tried)
                if not candidates:
                    raise ServerError(f"no inference server serves the current adapter (version {self.version}); see the warnings above")
                free = [s for s in candidates if s.outstanding < self._slots]
                if free:
                    server = min(free, key=lambda s: s.outstanding)
                    server.outstanding += 1
                    return server
                await self._freed.wait()

    async def _complete(self, prompt: Sequence[int], n: int, sampling: Sampling) -> list[tuple[list[int], list[float]]]:
        """`n` samples of `prompt`, retried across servers."""
        body = {
            "prompt": [int(t) for t in prompt],
            "n": n,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "top_k": -1,  # off: the logprobs then describe the distribution the trainer computes
            "min_p": 0.0,
            "repetition_penalty": 1.0,  # explicit: vLLM applies the model's generation_config defaults otherwise
            "max_tokens": sampling.max_tokens,
            "seed": prompt_seed(sampling.seed, prompt),
            "logprobs": 0,
            "return_tokens_as_token_ids": True,
            "skip_special_tokens": False,
        }
        tried: set[str] = set()
        errors: list[str] = []
        for _attempt in range(self.max_attempts):
            server = await self._acquire(tried)
            try:
                outcome = await self._post_completion(server, {**body, "model": self.adapter or self.model}, n)
            finally:
                async with self._freed:
                    server.outstanding -= 1
                    self._freed.notify_all()
            if isinstance(outcome, list):
                server.requests += 1
                self.counts["requests"] += 1
                self.counts["samples"] += n
                return outcome
            server.failures += 1
            server.down_until = time.monotonic() + self.cooldown_s
            self.counts["failures"] += 1
            self.counts["retries"] += 1
            tried.add(server.url)
            errors.append(f"{server.url}: {outcome}")
            if len(tried) >= len(self._servers):
                tried.clear()
                await asyncio.sleep(min(2.0, 0.1 * len(errors)))
        self.counts["retries"] -= 1  # the last failure was not retried
        raise ServerError(f"a completion request failed {len(errors)} times on {len(self._servers)} server(s); last errors: "
                          + "; ".join(errors[-3:]))  # fmt: skip

    async def _post_completion(self, server: _Server, body: dict[str, Any], n: int) -> list[tuple[list[int], list[float]]] | str:
        """The samples, or why this server failed (a string: worth retrying elsewhere).
        A 4xx other than a missing model is the request's fault and raises at once."""
        try:
            response = await self._client.post(f"{server.url}/v1/completions", json=body)
        except httpx.TimeoutException:
            return f"timed out after {self.timeout_s:g} s"
        except httpx.TransportError as error:
            return f"{type(error).__name__}: {error}"
        if response.status_code >= 500:
            return f"HTTP {response.status_code}: {_error_message(response)}"
        if response.status_code == 404:  # the server lost (or never loaded) the adapter the request names
            server.version = -1
            return f"HTTP 404: {_error_message(response)}"
        if response.status_code >= 400:
            raise ServerError(f"{server.url} refused a completion request (HTTP {response.status_code}): {_error_message(response)}")
        try:
            return _samples(response.json(), n)
        except (ValueError, KeyError, TypeError) as error:
            return f"unreadable reply ({error})"

    async def _load_everywhere(self, name: str, folder: Path) -> list[str | None]:
        async def load(server: _Server) -> str | None:
            try:
                response = await self._client.post(f"{server.url}/v1/load_lora_adapter", json={"lora_name": name, "lora_path": str(folder)})
            except httpx.HTTPError as error:
                return f"{type(error).__name__}: {error}"
            return None if response.status_code == 200 else f"HTTP {response.status_code}: {_error_message(response)}"

        return list(await asyncio.gather(*(load(s) for s in self._servers)))

    async def _unload_old(self) -> None:
        async def unload(server: _Server, name: str) -> None:
            try:
                response = await self._client.post(f"{server.url}/v1/unload_lora_adapter", json={"lora_name": name})
                if response.status_code != 200:
                    log.warning("inference server %s did not unload adapter %s: %s", server.url, name, _error_message(response))
            except httpx.HTTPError as error:
                log.warning("inference server %s did not unload adapter %s: %s", server.url, name, error)

        jobs = []
        for server in self._servers:
            while len(server.loaded) > self.keep_adapters:
                jobs.append(unload(server, server.loaded.pop(0)))
        await asyncio.gather(*jobs)

    def _remove_old_folders(self) -> None:
        keep = {name for server in self._servers for name in server.loaded} | {self.adapter}
        for folder in self.adapter_dir.glob(f"{self.run_name}-v*"):
            if folder.name not in keep:
                shutil.rmtree(folder, ignore_errors=True)


def _samples(reply: dict[str, Any], n: int) -> list[tuple[list[int], list[float]]]:
    """The (ids, logprobs) of each choice of a completions reply, in sample order."""
    choices = sorted(reply["choices"], key=lambda choice: choice["index"])
    if len(choices) != n:
        raise ValueError(f"{len(choices)} choices for a request with n={n}")
    samples = []
    for choice in choices:
        logprobs = choice.get("logprobs") or {}
        tokens, values = logprobs.get("tokens"), logprobs.get("token_logprobs")
        if tokens is None or values is None:
            raise ValueError("no logprobs in the reply; the request asks for logprobs=0")
        ids = choice.get("token_ids") or [_token_id(token) for token in tokens]
        if len(ids) != len(values) or any(v is None for v in values):
            raise ValueError(f"{len(ids)} tokens but {len(values)} logprobs")
        samples.append(([int(i) for i in ids], [float(v) for v in values]))
    return samples


def _token_id(token: str) -> int:
    if not isinstance(token, str) or not token.startswith(TOKEN_ID_PREFIX):
        raise ValueError(
            f"token {token!r} is not written as an id; the server ignores return_tokens_as_token_ids (judgegym never re-tokenizes "
            "returned text: use vLLM, or a server with vLLM's completions API)"
        )
    return int(token[len(TOKEN_ID_PREFIX) :])


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("message", error))[:300]
        return str(error)[:300]
    return str(body)[:300]


__all__ = ["TOKEN_ID_PREFIX", "AdapterState", "ServerBackend", "ServerError", "prompt_seed"]
