"""A stand-in for vLLM's OpenAI-compatible server: the part an RL trainer's rollouts use, over
real HTTP, with vLLM's request and response shapes, sampling a real transformers causal LM (so
the logprobs are real), LoRA adapters loaded at runtime, and fault injection for tests.

Endpoints (JSON bodies; errors as vLLM's ``{"error": {"message", "type", "param", "code"}}``):

- ``GET /health``: 200, empty body.
- ``GET /v1/models``: the served model, then one card per loaded LoRA adapter
  (``parent`` = the served name, ``root`` = the adapter's folder).
- ``POST /v1/completions``: vLLM's ``CompletionRequest`` subset: ``model`` (the served name or
  a loaded adapter's), ``prompt`` (token ids, a list of token-id lists, a string or a list of
  strings), ``n``, ``temperature`` (0 = greedy), ``top_p``, ``top_k``, ``max_tokens``,
  ``seed``, ``logprobs`` (0 to 20), ``return_tokens_as_token_ids``, ``return_token_ids``,
  ``stop_token_ids``, ``ignore_eos``, ``skip_special_tokens``,
  ``include_stop_str_in_output``, ``add_special_tokens``. Unknown fields are ignored, as vLLM
  ignores them; vLLM fields this server does not implement (``stop`` strings, penalties,
  ``echo``, beam search, ...) are refused with a 400 unless left at their defaults, so a
  request never silently samples from another distribution than it asked for. Choices are
  prompt-major (choice ``i * n + j`` is sample ``j`` of prompt ``i``).
- ``POST /v1/load_lora_adapter`` ``{"lora_name", "lora_path"}`` and
  ``POST /v1/unload_lora_adapter`` ``{"lora_name"}``: plain-text ``Success: ...`` bodies.
- ``POST /standin/faults`` (any of ``fail_completions``, ``drop_completions``,
  ``fail_lora_loads``: how many of the next such requests answer 500 / lose their connection;
  ``delay_s``: a sleep before answering each completion request; answers the settings now) and
  ``GET /standin/stats``: ``completions`` (requests answered), ``completions_by_model``,
  ``samples``, ``prompt_tokens``, ``tokens`` (generated), ``lora_loads``, ``lora_unloads``,
  ``bad_requests`` (4xx), ``internal_errors``, ``delayed_completions``, ``failures_injected``
  (per fault) and ``faults`` (the settings). Test hooks, not part of vLLM.

Sampling follows vLLM: the ``n`` samples of a request seeded ``s`` use seeds ``s .. s+n-1``,
one ``torch.Generator`` each, drawn as vLLM draws (``argmax(probs / q)``, ``q ~ Exp(1)``), so a
sample depends on its own seed only, never on ``n`` or its neighbours; temperature, then
top-k, then top-p; generation stops at the tokenizer's EOS (stop_reason null) or a stop token
(stop_reason = its id), which is kept as the last token (and left out of ``text``). Logprobs per
``logprobs_mode``: ``raw_logprobs`` (vLLM's default, ``log_softmax(logits)``) or
``processed_logprobs`` (``log_softmax(logits / T)`` after top-k/top-p; greedy requests are not
divided by T), and ``raw_logits`` / ``processed_logits``. One engine: model calls are
serialized by a lock; a prompt's ``n`` samples share one KV-cached batch.

LoRA adapters emulate an engine whose weight cache is keyed by adapter name and outlives
unloading: a name loaded, unloaded and loaded again (from any path) serves the weights first
loaded under it. A client must use a fresh name for new weights.

Python API::

    with StandinServer(folder, logprobs_mode="processed_logprobs") as server:  # or .start() ... .stop()
        httpx.post(f"{server.url}/v1/completions", json={"model": folder, "prompt": [2, 10], "logprobs": 0})
    server = StandinServer((model, tokenizer), served_model_name="policy")  # in memory: no reload
    process, url = spawn("smollm2-135m", threads=1)  # a child process, once /health answers

Command line (runs until SIGTERM or SIGINT)::

    python -m judgegym.testing.vllm_server --model smollm2-135m --port 8000 [--threads 1]
        [--served-model-name NAME] [--logprobs-mode raw_logprobs|processed_logprobs]
        [--max-lora-rank 16] [--max-model-len N] [--delay-s 0] [--host 127.0.0.1]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import inspect
import itertools
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

logger = logging.getLogger(__name__)

LOGPROBS_MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The ``--max-lora-rank`` values vLLM accepts."""
MAX_LOGPROBS = 20
"""vLLM's default ``--max-logprobs``: the most alternatives a request may ask for."""
_SAMPLING_EPS = 1e-5  # vLLM: a temperature below this is greedy
_LOGPROB_FLOOR = -9999.0  # vLLM sends -inf as this (JSON has no infinity)
_FAULTS = ("fail_completions", "drop_completions", "fail_lora_loads")
# vLLM request fields this server does not implement; refused unless left at a neutral value
# (None, False, 0, "", [], {}, or 1 for the multiplicative ones).
_UNSUPPORTED = (
    "echo", "suffix", "stop", "use_beam_search", "best_of", "min_tokens", "presence_penalty", "frequency_penalty",
    "repetition_penalty", "length_penalty", "min_p", "logit_bias", "prompt_logprobs", "logprob_token_ids", "allowed_token_ids",
    "bad_words", "prompt_embeds", "response_format", "structured_outputs", "truncate_prompt_tokens", "load_inplace",
)  # fmt: skip
_NEUTRAL_AT_ONE = {"repetition_penalty", "length_penalty", "best_of"}


class _APIError(Exception):
    """An error answered in vLLM's shape: ``{"error": {"message", "type", "param", "code"}}``."""

    def __init__(self, status: int, message: str, type_: str = "BadRequestError"):
        super().__init__(message)
        self.status, self.message, self.type = status, message, type_

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": None, "code": self.status}}


@dataclass(frozen=True)
class _Sampling:
    """One request's sampling parameters, validated."""

    n: int
    temperature: float
    top_p: float
    top_k: int
    max_tokens: int
    seed: int | None
    logprobs: int | None
    stop_token_ids: frozenset[int]
    ignore_eos: bool

    @property
    def greedy(self) -> bool:
        return self.temperature < _SAMPLING_EPS


@dataclass
class _Sample:
    """One sampled continuation: its ids (a stop token last, if it stopped on one), per position
    ``{token id: value}`` with the sampled token first then the top-k (when asked), and why it
    ended."""

    token_ids: list[int]
    logprobs: list[dict[int, float]] | None
    finish_reason: str
    stop_reason: int | None


class _Engine:
    """The model, its LoRA adapters and sampling; one request at a time (``lock``)."""

    def __init__(self, model: Any, tokenizer: Any, *, logprobs_mode: str, max_lora_rank: int, max_model_len: int | None):
        self.base, self.tokenizer = model.eval(), tokenizer
        self.logprobs_mode, self.max_lora_rank = logprobs_mode, max_lora_rank
        limit = getattr(model.config, "max_position_embeddings", None)
        if max_model_len is None and limit is None:
            raise ValueError("the model's config has no max_position_embeddings: give max_model_len")
        if max_model_len is not None and (max_model_len < 1 or (limit is not None and max_model_len > limit)):
            raise ValueError(f"max_model_len must be in [1, {limit}] (the model's max_position_embeddings), got {max_model_len}")
        self.max_model_len = int(max_model_len or limit)
        self.vocab_size = min(len(tokenizer), int(model.config.vocab_size))
        self.eos = tokenizer.eos_token_id
        # vLLM stops on the generation config's other EOS ids too, as stop tokens (stop_reason = id)
        extra = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        self.extra_stops = frozenset({extra} if isinstance(extra, int) else set(extra or ())) - {self.eos}
        parameters = inspect.signature(model.forward).parameters
        self.cache_argument = "cache" if "cache" in parameters else "past_key_values"  # renamed in transformers 5
        self.lock = threading.Lock()
        self.loaded: dict[str, str] = {}
        """Adapter name -> folder, of the adapters loaded now."""
        self._cache: dict[str, str] = {}
        """Adapter name -> its key in `_peft`, for every name ever loaded (survives unloading)."""
        self._peft: Any = None  # one PeftModel over a copy of the base, holding every cached adapter
        self._keys = itertools.count()

    # -- LoRA -------------------------------------------------------------------------------

    def load_adapter(self, name: str, path: str) -> None:
        """Serve the adapter in folder `path` under `name`; a name seen before, even unloaded
        since, keeps the weights first loaded under it (the folder is not read again)."""
        with self.lock:
            if name in self.loaded:
                raise _APIError(400, f"The lora adapter '{name}' has already been loaded.", "InvalidUserInput")
            if name not in self._cache:
                self._read_adapter(name, path)
            self.loaded[name] = path

    def _read_adapter(self, name: str, path: str) -> None:
        from peft import PeftModel

        from judgegym.models import peft_quietly

        config_path = Path(path) / "adapter_config.json"
        if not config_path.is_file():
            raise _APIError(404, f"Loading lora {name} failed: No adapter found for {path}", "NotFoundError")
        try:
            config = json.loads(config_path.read_text(encoding="utf-8"))
            rank = max([int(config.get("r", 0)), *(int(r) for r in (config.get("rank_pattern") or {}).values())])
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise _APIError(400, f"Loading lora {name} failed: cannot read {config_path}: {exc}") from None
        if rank > self.max_lora_rank:
            raise _APIError(400, f"LoRA rank {rank} is greater than max_lora_rank {self.max_lora_rank}.")
        key = f"adapter{next(self._keys)}"  # peft's keys cannot hold dots; adapter names can
        try:
            with peft_quietly():
                if self._peft is None:
                    self._peft = PeftModel.from_pretrained(copy.deepcopy(self.base), path, adapter_name=key).eval()
                else:
                    self._peft.load_adapter(path, adapter_name=key)
        except Exception as exc:  # a corrupt or mismatched adapter is the caller's to fix
            raise _APIError(400, f"Loading lora {name} failed: {type(exc).__name__}: {exc}") from None
        self._cache[name] = key

    def unload_adapter(self, name: str) -> None:
        """Stop serving `name` (its weights stay cached under the name)."""
        with self.lock:
            if name not in self.loaded:
                raise _APIError(404, f"The lora adapter '{name}' cannot be found.", "NotFoundError")
            del self.loaded[name]

    # -- sampling ---------------------------------------------------------------------------

    def sample(self, prompt: list[int], sampling: _Sampling, adapter: str | None) -> list[_Sample]:
        """The ``sampling.n`` samples of one prompt, through one KV-cached batch."""
        import torch

        with self.lock:
            model = self.base if adapter is None else self._peft
            if adapter is not None:
                model.set_adapter(self._cache[adapter])
            with torch.inference_mode():
                return self._sample(model, prompt, sampling)

    def _sample(self, model: Any, prompt: list[int], sampling: _Sampling) -> list[_Sample]:
        import torch

        # The prompt is read once; its KV cache is copied to the n rows, and a row leaves the
        # batch once it stops (all rows have the same length: no padding, no attention mask).

        generators = [_generator(None if sampling.seed is None else sampling.seed + j) for j in range(sampling.n)]
        out = model(input_ids=torch.tensor([prompt]), use_cache=True, logits_to_keep=1)
        cache = _cache_of(out)
        logits = out.logits[:, -1].float().expand(sampling.n, -1)
        if sampling.n > 1:
            cache.batch_repeat_interleave(sampling.n)
        samples = [_Sample([], [] if sampling.logprobs is not None else None, "length", None) for _ in range(sampling.n)]
        active = list(range(sampling.n))  # batch row -> sample index
        for step in range(sampling.max_tokens):
            tokens, alternatives = self._pick(logits, sampling, [generators[j] for j in active])
            still = []
            for row, j in enumerate(active):
                token = tokens[row]
                samples[j].token_ids.append(token)
                if alternatives is not None:
                    samples[j].logprobs.append(alternatives[row])
                if token == self.eos and not sampling.ignore_eos:
                    samples[j].finish_reason = "stop"
                elif token in sampling.stop_token_ids:
                    samples[j].finish_reason, samples[j].stop_reason = "stop", token
                else:
                    still.append(row)
            if not still or step == sampling.max_tokens - 1:
                break
            if len(still) < len(active):
                cache.batch_select_indices(torch.tensor(still))
            active = [active[row] for row in still]
            next_ids = torch.tensor([[samples[j].token_ids[-1]] for j in active])
            out = model(input_ids=next_ids, use_cache=True, **{self.cache_argument: cache})
            cache = _cache_of(out)
            logits = out.logits[:, -1].float()
        return samples

    def _pick(self, logits: Any, sampling: _Sampling, generators: list[Any]) -> tuple[list[int], list[dict[int, float]] | None]:
        """One token per row (rows are independent: a row's draw uses its own generator only)
        and, when logprobs are asked for, ``{sampled: value, top-k...}`` per row."""
        import torch

        if sampling.greedy:
            processed = logits
            tokens = logits.argmax(-1)
        else:
            processed = logits / sampling.temperature
            if 0 < sampling.top_k < processed.shape[-1]:
                kth = processed.topk(sampling.top_k, dim=-1).values[:, -1:]
                processed = processed.masked_fill(processed < kth, -float("inf"))
            if sampling.top_p < 1:  # vLLM's order: drop the least likely tokens holding 1 - p of the mass
                ascending, order = processed.sort(dim=-1)
                drop = ascending.softmax(-1).cumsum(-1) <= 1 - sampling.top_p
                drop[:, -1] = False
                processed = processed.scatter(-1, order, ascending.masked_fill(drop, -float("inf")))
            probs = processed.softmax(-1)
            q = torch.stack([torch.empty(probs.shape[-1]).exponential_(generator=g) for g in generators])
            tokens = (probs / q).argmax(-1)
        if sampling.logprobs is None:
            return tokens.tolist(), None
        values = {
            "raw_logprobs": lambda: logits.log_softmax(-1),
            "raw_logits": lambda: logits,
            "processed_logprobs": lambda: processed.log_softmax(-1),
            "processed_logits": lambda: processed,
        }[self.logprobs_mode]()
        chosen = values.gather(-1, tokens[:, None])[:, 0].tolist()
        top_values, top_ids = values.topk(sampling.logprobs, dim=-1)
        rows = []
        for token, value, ids, vals in zip(tokens.tolist(), chosen, top_ids.tolist(), top_values.tolist(), strict=True):
            row = {token: max(value, _LOGPROB_FLOOR)}  # vLLM's order: the sampled token, then the top k
            row.update((i, max(v, _LOGPROB_FLOOR)) for i, v in zip(ids, vals, strict=True) if i != token)
            rows.append(row)
        return tokens.tolist(), rows


def _generator(seed: int | None) -> Any:
    import torch

    generator = torch.Generator()
    if seed is None:
        generator.seed()  # unseeded: random, as vLLM's unseeded requests are
    else:
        generator.manual_seed(seed % 2**64)
    return generator


def _cache_of(out: Any) -> Any:
    return out.cache if hasattr(out, "cache") else out.past_key_values  # renamed in transformers 5


class StandinServer:
    """A vLLM-compatible completions server over a transformers model (see the module docs).

    Args:
        model: a transformers folder, an embedded model name (``smollm2-135m``), or an
            in-memory ``(model, tokenizer)`` pair (left unmodified; adapters wrap a copy).
        host, port: where to listen; port 0 picks a free one (read it from `url`).
        served_model_name: the name requests use; defaults to `model` as given (for a pair,
            the model's ``name_or_path``).
        logprobs_mode: one of `LOGPROBS_MODES`, as vLLM's ``--logprobs-mode``.
        max_lora_rank: adapters of a higher rank are refused (one of `LORA_RANKS`).
        max_model_len: prompt + max_tokens limit; the model's max_position_embeddings by default.
        threads: ``torch.set_num_threads`` for this process, when given (it is process-wide).
        delay_s: the initial ``delay_s`` fault (seconds slept before each completion answer).
    """

    def __init__(
        self,
        model: str | tuple[Any, Any],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        served_model_name: str | None = None,
        logprobs_mode: str = "raw_logprobs",
        max_lora_rank: int = 16,
        max_model_len: int | None = None,
        threads: int | None = None,
        delay_s: float = 0.0,
    ):
        if logprobs_mode not in LOGPROBS_MODES:
            raise ValueError(f"logprobs_mode must be one of {LOGPROBS_MODES}, got {logprobs_mode!r}")
        if max_lora_rank not in LORA_RANKS:
            raise ValueError(f"max_lora_rank must be one of {LORA_RANKS} (as vLLM's), got {max_lora_rank}")
        if delay_s < 0:
            raise ValueError(f"delay_s must be >= 0, got {delay_s}")
        import torch

        if threads is not None:
            torch.set_num_threads(threads)
        if isinstance(model, str):
            from judgegym.models import load_model, unmark_quantized

            network, tokenizer = load_model(model, torch.float32, fresh=True)
            unmark_quantized(network)
            self.root = model
        else:
            network, tokenizer = model
            self.root = str(getattr(network, "name_or_path", "") or "model")
        self.served_model_name = served_model_name or self.root
        self._engine = _Engine(network, tokenizer, logprobs_mode=logprobs_mode, max_lora_rank=max_lora_rank, max_model_len=max_model_len)
        self._address = (host, port)
        self._state = threading.Lock()  # guards the faults and counters
        self._faults: dict[str, float] = {name: 0 for name in _FAULTS} | {"delay_s": float(delay_s)}
        self._stats: dict[str, Any] = {
            "completions": 0,
            "completions_by_model": {},
            "samples": 0,
            "prompt_tokens": 0,
            "tokens": 0,
            "lora_loads": 0,
            "lora_unloads": 0,
            "bad_requests": 0,
            "internal_errors": 0,
            "delayed_completions": 0,
            "failures_injected": dict.fromkeys(_FAULTS, 0),
        }
        self._http: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server."""
        if self._http is None:
            raise RuntimeError("the server is not running: call start() first")
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> StandinServer:
        """Listen and serve in a daemon thread; returns self."""
        if self._http is not None:
            raise RuntimeError("the server is already running")
        self._http = _HTTPServer(self._address, self)
        serve = functools.partial(self._http.serve_forever, poll_interval=0.05)  # stop() waits up to one interval
        self._thread = threading.Thread(target=serve, name=f"standin-server-{self.url}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close the listening socket and every open connection."""
        if self._http is None:
            return
        self._http.shutdown()
        self._http.server_close()
        self._http.close_connections()
        if self._thread is not None:
            self._thread.join()
        self._http, self._thread = None, None

    def __enter__(self) -> StandinServer:
        return self if self._http is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- endpoints (HTTP-free: a dict in, a status and a body out) ---------------------------

    def _models(self) -> dict[str, Any]:
        created = int(time.time())

        def card(name: str, root: str, parent: str | None, max_model_len: int | None) -> dict[str, Any]:
            return {"id": name, "object": "model", "created": created, "owned_by": "vllm", "root": root, "parent": parent,
                    "max_model_len": max_model_len}  # fmt: skip

        data = [card(self.served_model_name, self.root, None, self._engine.max_model_len)]
        data += [card(name, path, self.served_model_name, None) for name, path in list(self._engine.loaded.items())]
        return {"object": "list", "data": data}

    def _completions(self, body: dict[str, Any]) -> dict[str, Any]:
        model = body.get("model")
        if model is None or model == self.served_model_name:
            adapter = None
        elif isinstance(model, str) and model in self._engine.loaded:
            adapter = model
        else:
            raise _APIError(404, f"The model `{model}` does not exist.", "NotFoundError")
        if body.get("stream"):
            raise _APIError(400, "stream=true is not supported by the stand-in server; send stream=false")
        for name in _UNSUPPORTED:
            value = body.get(name)
            if not (value in (None, False, 0, "", [], {}) or (name in _NEUTRAL_AT_ONE and value == 1)):
                raise _APIError(400, f"the stand-in server does not implement `{name}` (got {value!r}); leave it unset")
        sampling = self._sampling(body)
        prompts = self._prompts(body, sampling.max_tokens)
        samples = [self._engine.sample(prompt, sampling, adapter) for prompt in prompts]
        flags = {name: bool(body.get(name)) for name in ("return_tokens_as_token_ids", "return_token_ids", "include_stop_str_in_output")}
        skip_special = _boolean(body, "skip_special_tokens", True)
        choices = []
        for prompt, group in zip(prompts, samples, strict=True):
            for sample in group:
                choices.append(self._choice(len(choices), prompt, sample, skip_special, **flags))
        completion_tokens = sum(len(c["_ids"]) for c in choices)
        prompt_tokens = sum(len(p) for p in prompts)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}
        name = adapter or self.served_model_name
        with self._state:
            self._stats["completions"] += 1
            self._stats["completions_by_model"][name] = self._stats["completions_by_model"].get(name, 0) + 1
            self._stats["samples"] += len(choices)
            self._stats["prompt_tokens"] += prompt_tokens
            self._stats["tokens"] += completion_tokens
        for choice in choices:
            del choice["_ids"]
        return {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": name,
            "choices": choices,
            "usage": usage,
        }

    def _sampling(self, body: dict[str, Any]) -> _Sampling:
        n = _integer(body, "n", 1)
        temperature = _number(body, "temperature", 1.0)
        top_p = _number(body, "top_p", 1.0)
        top_k = _integer(body, "top_k", 0)
        max_tokens = _integer(body, "max_tokens", 16)
        seed = _integer(body, "seed", None)
        logprobs = _integer(body, "logprobs", None)
        stops = body.get("stop_token_ids") or []
        if n < 1:
            raise _APIError(400, f"n must be at least 1, got {n}.")
        if temperature < 0:
            raise _APIError(400, f"temperature must be non-negative, got {temperature}.")
        if not 0 < top_p <= 1:
            raise _APIError(400, f"top_p must be in (0, 1], got {top_p}.")
        if top_k < -1:
            raise _APIError(400, f"top_k must be 0 or -1 (disable), or at least 1, got {top_k}.")
        if max_tokens < 1:
            raise _APIError(400, f"max_tokens must be at least 1, got {max_tokens}.")
        if seed is not None and not -(2**63) <= seed < 2**63:
            raise _APIError(400, f"seed must be a 64-bit integer, got {seed}.")
        if logprobs is not None and not 0 <= logprobs <= MAX_LOGPROBS:
            raise _APIError(400, f"logprobs must be between 0 and {MAX_LOGPROBS} (vLLM's default --max-logprobs), got {logprobs}.")
        if not isinstance(stops, list) or not all(_is_int(t) for t in stops):
            raise _APIError(400, f"stop_token_ids must be a list of token ids, got {stops!r}.")
        ignore_eos = _boolean(body, "ignore_eos", False)
        stop_ids = frozenset(stops) | (frozenset() if ignore_eos else self._engine.extra_stops)
        return _Sampling(n, temperature, top_p, max(top_k, 0), max_tokens, seed, logprobs, stop_ids, ignore_eos)

    def _prompts(self, body: dict[str, Any], max_tokens: int) -> list[list[int]]:
        prompt = body.get("prompt")
        if prompt is None or prompt == "":
            raise _APIError(400, "Either prompt or prompt_embeds must be provided and non-empty.")
        add_special = _boolean(body, "add_special_tokens", True)
        if isinstance(prompt, str):
            prompts = [self._encode(prompt, add_special)]
        elif isinstance(prompt, list) and all(_is_int(t) for t in prompt):
            prompts = [prompt]
        elif isinstance(prompt, list) and all(isinstance(p, str) for p in prompt):
            prompts = [self._encode(p, add_special) for p in prompt]
        elif isinstance(prompt, list) and all(isinstance(p, list) and all(_is_int(t) for t in p) for p in prompt):
            prompts = prompt
        else:
            raise _APIError(400, "prompt must be a string, a list of strings, a list of token ids or a list of lists of token ids.")
        limit = self._engine.max_model_len
        for ids in prompts:
            if not ids:
                raise _APIError(400, "The decoder prompt cannot be empty.")
            bad = [t for t in ids if not 0 <= t < self._engine.vocab_size]
            if bad:
                raise _APIError(400, f"Token id {bad[0]} is out of vocabulary (the vocabulary has {self._engine.vocab_size} tokens).")
            if len(ids) >= limit:
                raise _APIError(
                    400,
                    f"This model's maximum context length is {limit} tokens. However, your request has {len(ids)} input tokens. "
                    "Please reduce the length of the input messages.",
                )
            if len(ids) + max_tokens > limit:
                raise _APIError(
                    400,
                    f"'max_tokens' is too large: {max_tokens}. This model's maximum context length is {limit} tokens and your "
                    f"request has {len(ids)} input tokens ({max_tokens} > {limit} - {len(ids)}).",
                )
        return [list(ids) for ids in prompts]

    def _encode(self, text: str, add_special_tokens: bool) -> list[int]:
        return list(self._engine.tokenizer(text, add_special_tokens=add_special_tokens)["input_ids"])

    def _choice(
        self,
        index: int,
        prompt: list[int],
        sample: _Sample,
        skip_special_tokens: bool,
        *,
        return_tokens_as_token_ids: bool,
        return_token_ids: bool,
        include_stop_str_in_output: bool,
    ) -> dict[str, Any]:
        tokenizer = self._engine.tokenizer
        ids = sample.token_ids
        stopped_on_token = sample.finish_reason == "stop"
        text_ids = ids[:-1] if stopped_on_token and not include_stop_str_in_output else ids  # vLLM leaves the stop token out
        text = tokenizer.decode(text_ids, skip_special_tokens=skip_special_tokens)
        logprobs = None
        if sample.logprobs is not None:

            def token(i: int) -> str:
                return f"token_id:{i}" if return_tokens_as_token_ids else tokenizer.decode([i])

            tokens = [token(i) for i in ids]
            offsets, offset = [], 0
            for name in tokens:  # vLLM's text_offset: the running length of the token strings
                offsets.append(offset)
                offset += len(name)
            logprobs = {
                "text_offset": offsets,
                "token_logprobs": [position[i] for position, i in zip(sample.logprobs, ids, strict=True)],
                "tokens": tokens,
                "top_logprobs": [{token(i): value for i, value in position.items()} for position in sample.logprobs],
            }
        return {
            "index": index,
            "text": text,
            "logprobs": logprobs,
            "finish_reason": sample.finish_reason,
            "stop_reason": sample.stop_reason,
            "token_ids": list(ids) if return_token_ids else None,
            "prompt_logprobs": None,
            "prompt_token_ids": list(prompt) if return_token_ids else None,
            "_ids": ids,
        }

    def _load_lora(self, body: dict[str, Any]) -> str:
        name, path = body.get("lora_name"), body.get("lora_path")
        if self._take_fault("fail_lora_loads"):
            raise _APIError(500, f"injected fault: loading lora adapter '{name}' failed", "InternalServerError")
        if not name or not path or not isinstance(name, str) or not isinstance(path, str):
            raise _APIError(400, "Both 'lora_name' and 'lora_path' must be provided.", "InvalidUserInput")
        self._engine.load_adapter(name, path)
        with self._state:
            self._stats["lora_loads"] += 1
        return f"Success: LoRA adapter '{name}' added successfully."

    def _unload_lora(self, body: dict[str, Any]) -> str:
        name = body.get("lora_name")
        if not name or not isinstance(name, str):
            raise _APIError(400, "'lora_name' needs to be provided to unload a LoRA adapter.", "InvalidUserInput")
        self._engine.unload_adapter(name)
        with self._state:
            self._stats["lora_unloads"] += 1
        return f"Success: LoRA adapter '{name}' removed successfully."

    def _set_faults(self, body: dict[str, Any]) -> dict[str, Any]:
        unknown = set(body) - {*_FAULTS, "delay_s"}
        if unknown:
            raise _APIError(400, f"unknown faults {sorted(unknown)}; known: {[*_FAULTS, 'delay_s']}")
        for name in _FAULTS:
            if name in body and not (_is_int(body[name]) and body[name] >= 0):
                raise _APIError(400, f"{name} must be a count >= 0, got {body[name]!r}")
        delay = body.get("delay_s", 0)
        if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
            raise _APIError(400, f"delay_s must be a number of seconds >= 0, got {delay!r}")
        with self._state:
            self._faults.update(body)
            return dict(self._faults)

    def _take_fault(self, name: str) -> bool:
        with self._state:
            if self._faults[name] <= 0:
                return False
            self._faults[name] -= 1
            self._stats["failures_injected"][name] += 1
            return True

    def _snapshot(self) -> dict[str, Any]:
        with self._state:
            return json.loads(json.dumps(self._stats)) | {"faults": dict(self._faults)}

    def _count(self, status: int) -> None:
        with self._state:
            self._stats["bad_requests" if status < 500 else "internal_errors"] += 1

    def _delay(self) -> None:
        with self._state:
            delay = float(self._faults["delay_s"])
            self._stats["delayed_completions"] += int(delay > 0)
        if delay > 0:
            time.sleep(delay)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _integer(body: dict[str, Any], name: str, default: int | None) -> Any:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not _is_int(value):
        raise _APIError(400, f"`{name}` must be an integer, got {value!r}.")
    return value


def _number(body: dict[str, Any], name: str, default: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _APIError(400, f"`{name}` must be a number, got {value!r}.")
    return float(value)


def _boolean(body: dict[str, Any], name: str, default: bool) -> bool:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _APIError(400, f"`{name}` must be a boolean, got {value!r}.")
    return value


_DROP = object()  # a handler's answer meaning: close the connection without a response


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], standin: StandinServer):
        self.standin = standin
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def close_connections(self) -> None:
        """Shut every kept-alive connection, so no request is answered after `stop`."""
        with self.connections_lock:
            for connection in list(self.connections):
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # the client went away: its business
        logger.exception("standin server: error serving %s", client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as uvicorn serves vLLM
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("standin server: " + format, *args)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        standin = self.server.standin
        path = urlsplit(self.path).path.rstrip("/") or "/"
        routes = {
            "/health": ("GET", lambda body: ""),
            "/v1/models": ("GET", lambda body: standin._models()),
            "/v1/completions": ("POST", self._complete),
            "/v1/load_lora_adapter": ("POST", standin._load_lora),
            "/v1/unload_lora_adapter": ("POST", standin._unload_lora),
            "/standin/faults": ("POST", standin._set_faults),
            "/standin/stats": ("GET", lambda body: standin._snapshot()),
        }
        try:
            body = self._read_body()
            if path not in routes:
                self._send(404, {"detail": "Not Found"})  # FastAPI's answer to an unknown route
                return
            allowed, endpoint = routes[path]
            if method != allowed:
                self._send(405, {"detail": "Method Not Allowed"})
                return
            answer = endpoint(self._json(body) if method == "POST" else {})
        except _APIError as exc:
            standin._count(exc.status)
            self._send(exc.status, exc.body())
            return
        except Exception as exc:  # the server keeps serving; the caller learns what broke
            logger.exception("standin server: %s %s failed", method, path)
            standin._count(500)
            self._send(500, _APIError(500, f"{type(exc).__name__}: {exc}", "InternalServerError").body())
            return
        if answer is _DROP:
            self.close_connection = True
            return
        self._send(200, answer)

    def _complete(self, body: dict[str, Any]) -> Any:
        standin = self.server.standin
        standin._delay()
        if standin._take_fault("drop_completions"):
            return _DROP
        if standin._take_fault("fail_completions"):
            raise _APIError(500, "injected fault: the completion request failed", "InternalServerError")
        return standin._completions(body)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    @staticmethod
    def _json(raw: bytes) -> dict[str, Any]:
        try:
            body = json.loads(raw or b"{}")
        except ValueError as exc:
            raise _APIError(400, f"the request body is not valid JSON: {exc}") from None
        if not isinstance(body, dict):
            raise _APIError(400, f"the request body must be a JSON object, got {type(body).__name__}")
        return body

    def _send(self, status: int, payload: Any) -> None:
        if isinstance(payload, str):
            data, content_type = payload.encode("utf-8"), "text/plain; charset=utf-8"
        else:
            data, content_type = json.dumps(payload, allow_nan=False).encode("utf-8"), "application/json"
        try:
            self.send_response(status)
            if data:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting
            self.close_connection = True


def spawn(
    model: str,
    *,
    port: int | None = None,
    threads: int = 1,
    extra_args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    timeout_s: float = 120,
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``python -m judgegym.testing.vllm_server`` as a child process serving
    `model` on `threads` torch threads (``OMP_NUM_THREADS`` too) and wait until its /health
    answers.

    Returns:
        ``(process, url)``; stop it with ``process.terminate()`` (it exits on SIGTERM).

    Raises:
        RuntimeError: the child exited first, or did not answer within `timeout_s` (then it is
            killed); the message holds its output. (Its output after startup is discarded.)
    """
    if port is None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", __name__, "--model", model, "--port", str(port), "--threads", str(threads), *extra_args]
    child_env = {**os.environ, **(env or {}), "OMP_NUM_THREADS": str(threads)}
    with tempfile.TemporaryFile() as log:  # the child's output, for the error message
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=child_env)
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                log.seek(0)
                output = log.read().decode("utf-8", "replace")
                raise RuntimeError(f"the stand-in server exited with code {process.returncode} before serving:\n{output[-4000:]}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{url}/health", timeout=1) as response:
                    if response.status == 200:
                        return process, url
            if time.monotonic() > deadline:
                process.kill()
                process.wait()
                log.seek(0)
                output = log.read().decode("utf-8", "replace")
                raise RuntimeError(f"the stand-in server did not answer {url}/health within {timeout_s} s:\n{output[-4000:]}")
            time.sleep(0.1)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a transformers folder or an embedded model name (smollm2-135m)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--served-model-name", default=None, help="the name requests use (default: --model as given)")
    parser.add_argument("--logprobs-mode", choices=LOGPROBS_MODES, default="raw_logprobs")
    parser.add_argument("--max-lora-rank", type=int, choices=LORA_RANKS, default=16)
    parser.add_argument("--max-model-len", type=int, default=None, help="default: the model's max_position_embeddings")
    parser.add_argument("--delay-s", type=float, default=0.0, help="sleep this long before answering each completion request")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    server = StandinServer(
        args.model,
        host=args.host,
        port=args.port,
        served_model_name=args.served_model_name,
        logprobs_mode=args.logprobs_mode,
        max_lora_rank=args.max_lora_rank,
        max_model_len=args.max_model_len,
        threads=args.threads,
        delay_s=args.delay_s,
    ).start()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    print(f"standin server: serving {server.served_model_name} at {server.url}", flush=True)
    while not stop.wait(1.0):
        pass
    server.stop()


__all__ = ["LOGPROBS_MODES", "LORA_RANKS", "MAX_LOGPROBS", "StandinServer", "spawn"]


if __name__ == "__main__":
    main()
