"""The embedded models as the litellm custom provider ``local``: after `register_local_provider`,
``litellm.completion(model="local/smollm2-135m-instruct", ...)`` runs SmolLM2-135M-Instruct on
CPU with transformers, offline (`judgegym.models.embedded` loads it).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid
from typing import Any

from ..chat_format import text_messages
from .embedded import PROVIDER, UnknownLocalModelError, known_model, load_local_model

DEFAULT_MAX_TOKENS = 512
"""Completion tokens when the caller gives no ``max_tokens``."""

JSON_INSTRUCTION = "Reply with a single valid JSON object and nothing else."
"""Added to the system message when ``response_format`` asks for JSON (no constrained decoding)."""

_SUPPORTED = {"temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed", "n", "response_format"}


_generate_lock = threading.Lock()  # one model instance per process: one generation at a time
_registered: Any = None  # our handler, once registered


def register_local_provider() -> None:
    """Register the ``local`` provider with litellm. Idempotent: it replaces only an earlier
    ``local`` entry of ``litellm.custom_provider_map`` and keeps the others. Imports litellm
    (several seconds) without its network cost-map fetch; models load on their first call."""
    global _registered
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    if _registered is None:
        _registered = _make_handler(litellm)
    providers = litellm.custom_provider_map
    if any(e.get("provider") == PROVIDER and e.get("custom_handler") is _registered for e in providers):
        return
    providers[:] = [e for e in providers if e.get("provider") != PROVIDER]
    providers.append({"provider": PROVIDER, "custom_handler": _registered})


# -- generation -----------------------------------------------------------------------------


def generate(name: str, messages: list[dict[str, Any]], **params: Any) -> tuple[list[tuple[str, str]], int, int]:
    """Chat completion with embedded model `name`: ``([(text, finish_reason), ...] (n of them),
    prompt_tokens, completion_tokens)``. Blocking; serialised across threads.

    Parameters (OpenAI meaning): ``temperature`` (default 1.0; 0 = greedy), ``top_p``,
    ``max_tokens`` / ``max_completion_tokens`` (default 512), ``stop`` (a string or list; cut
    from the text), ``seed`` (sampling is reproducible; the global torch RNG is left as it
    was), ``n`` (completions; greedy ones are computed once), ``response_format`` (a JSON
    type adds `JSON_INSTRUCTION` to the system message). Others (``tools``, ...) are ignored.
    """
    import torch

    model, tokenizer = load_local_model(name)
    temperature = float(params.get("temperature") if params.get("temperature") is not None else 1.0)
    top_p = params.get("top_p")
    max_tokens = params.get("max_tokens") or params.get("max_completion_tokens") or DEFAULT_MAX_TOKENS
    stop = params.get("stop") or []
    stop = [stop] if isinstance(stop, str) else [s for s in stop if s]
    n = int(params.get("n") or 1)
    if n < 1 or int(max_tokens) < 1 or temperature < 0:
        raise ValueError(f"need n >= 1, max_tokens >= 1 and temperature >= 0, got {n}, {max_tokens} and {temperature}")
    greedy = temperature == 0
    chat = _chat_messages(messages, json_mode=_wants_json(params.get("response_format")))
    inputs = tokenizer.apply_chat_template(chat, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    prompt_len = int(inputs["input_ids"].shape[1])
    options: dict[str, Any] = {"max_new_tokens": int(max_tokens), "pad_token_id": tokenizer.eos_token_id}
    if greedy:
        options.update(do_sample=False, top_p=None, top_k=None, temperature=None)
    else:
        options.update(do_sample=True, temperature=temperature, top_p=top_p if top_p is not None else 1.0, top_k=0)
        options["num_return_sequences"] = n
    if stop:
        options.update(stop_strings=stop, tokenizer=tokenizer)
    with _generate_lock, torch.inference_mode(), torch.random.fork_rng(devices=[]):
        if params.get("seed") is not None:
            torch.manual_seed(int(params["seed"]))
        output = model.generate(**inputs, **options)
    choices, completion_tokens = [], 0
    for row in output[:, prompt_len:]:
        tokens = row.tolist()
        ended = tokenizer.eos_token_id in tokens
        if ended:
            tokens = tokens[: tokens.index(tokenizer.eos_token_id) + 1]
        completion_tokens += len(tokens)
        text, stopped = _cut_at_stop(tokenizer.decode(tokens, skip_special_tokens=True), stop)
        choices.append((text, "stop" if ended or stopped else "length"))
    if greedy:
        choices, completion_tokens = choices * n, completion_tokens * n
    return choices, prompt_len, completion_tokens


def _chat_messages(messages: list[dict[str, Any]], *, json_mode: bool) -> list[dict[str, str]]:
    """`text_messages` plus `JSON_INSTRUCTION` in the system message when JSON is asked for."""
    chat = text_messages(messages)
    if json_mode:
        if chat and chat[0]["role"] == "system":
            chat[0] = {"role": "system", "content": f"{chat[0]['content']}\n\n{JSON_INSTRUCTION}".strip()}
        else:
            chat.insert(0, {"role": "system", "content": JSON_INSTRUCTION})
    return chat


def _wants_json(response_format: Any) -> bool:
    if response_format is None:
        return False
    kind = response_format.get("type") if isinstance(response_format, dict) else getattr(response_format, "type", None)
    return kind in ("json_object", "json_schema")


def _cut_at_stop(text: str, stop: list[str]) -> tuple[str, bool]:
    cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


# -- the litellm handler ------------------------------------------------------------------------


def _make_handler(litellm: Any) -> Any:
    """A `litellm.CustomLLM` whose completion / acompletion run `generate`."""
    from litellm.llms.custom_llm import CustomLLMError

    def respond(model: str, messages: list, model_response: Any, optional_params: dict) -> Any:
        try:
            known_model(model)
        except UnknownLocalModelError as exc:
            raise CustomLLMError(status_code=404, message=str(exc)) from None
        params = {k: v for k, v in (optional_params or {}).items() if k in _SUPPORTED}
        try:
            choices, prompt_tokens, completion_tokens = generate(model, messages, **params)
        except (ValueError, TypeError) as exc:
            raise CustomLLMError(status_code=400, message=f"local model {model!r}: {exc}") from None
        model_response.choices = [
            litellm.Choices(index=i, finish_reason=reason, message=litellm.Message(role="assistant", content=text))
            for i, (text, reason) in enumerate(choices)
        ]
        model_response.model = f"{PROVIDER}/{model}"
        model_response.created = int(time.time())
        model_response.id = f"chatcmpl-local-{uuid.uuid4().hex}"
        usage = litellm.Usage(
            prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, total_tokens=prompt_tokens + completion_tokens
        )
        setattr(model_response, "usage", usage)  # noqa: B010  (ModelResponse keeps usage as an extra field)
        return model_response

    class LocalLLM(litellm.CustomLLM):
        """Runs ``local/NAME`` chat completions on the embedded models (`LOCAL_MODELS`)."""

        def completion(
            self,
            model: str,
            messages: list,
            *args: Any,
            model_response: Any = None,
            optional_params: dict | None = None,
            **kwargs: Any,
        ) -> Any:
            return respond(model, messages, model_response, optional_params or {})

        async def acompletion(
            self,
            model: str,
            messages: list,
            *args: Any,
            model_response: Any = None,
            optional_params: dict | None = None,
            **kwargs: Any,
        ) -> Any:
            return await asyncio.to_thread(respond, model, messages, model_response, optional_params or {})

    return LocalLLM()


__all__ = ["DEFAULT_MAX_TOKENS", "JSON_INSTRUCTION", "PROVIDER", "generate", "register_local_provider"]
