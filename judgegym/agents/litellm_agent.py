"""`LiteLLMAgent`: any model litellm reaches (OpenAI, Anthropic, a vLLM or Ollama server, the
embedded ``local/...`` model) as an agent, with native tool calls where the provider has them
and the ``<tool_call>`` text format otherwise."""

from __future__ import annotations

from typing import Any, Literal

from ..chat_format import text_messages
from ..judges.llm import JudgeLLM, import_litellm
from .base import Action, Agent, sampling_seed

ToolFormat = Literal["auto", "native", "text"]


class LiteLLMAgent(Agent):
    """A chat model behind litellm.

    Args:
        model: a litellm model name, e.g. ``openai/gpt-4o-mini``, ``anthropic/claude-...``,
            ``hosted_vllm/NAME`` (with `api_base`), ``ollama/NAME``, ``local/smollm2-135m-instruct``.
        tool_format: ``native`` sends the tool schemas and reads ``tool_calls``; ``text``
            describes the tools in the system message and lets the env parse
            ``<tool_call>`` blocks; ``auto`` (default) asks litellm whether the model supports
            function calling (``local/`` models use text).
        temperature, top_p, max_tokens, seed: sampling; the seed sent with each call is
            derived from `seed`, the scenario, the trial and the turn (`sampling_seed`).
        api_base, api_key, timeout, retries, max_concurrency: as for judges (`JudgeLLM`):
            retries with backoff on connection errors, timeouts, 429 and 5xx.
        cache: reuse replies from the disk cache (off by default for agents).
        extra: more litellm parameters.
    """

    def __init__(
        self,
        model: str,
        *,
        tool_format: ToolFormat = "auto",
        temperature: float = 0.0,
        top_p: float | None = None,
        max_tokens: int = 1024,
        seed: int = 0,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        retries: int = 3,
        max_concurrency: int = 8,
        cache: bool = False,
        extra: dict[str, Any] | None = None,
        name: str | None = None,
    ):
        if tool_format not in ("auto", "native", "text"):
            raise ValueError(f"tool_format must be 'auto', 'native' or 'text', got {tool_format!r}")
        self.name = name or f"litellm:{model}"
        self.tool_format = tool_format
        self.seed = seed
        self.client = JudgeLLM(
            model,
            api_base=api_base,
            api_key=api_key,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=None,
            timeout=timeout,
            retries=retries,
            max_concurrency=max_concurrency,
            cache=cache,
            extra={**({"top_p": top_p} if top_p is not None else {}), **(extra or {})},
        )
        self._native: bool | None = None

    @property
    def native_tools(self) -> bool:
        """Whether tool schemas are sent natively (resolved once for ``auto``)."""
        if self._native is None:
            if self.tool_format != "auto":
                self._native = self.tool_format == "native"
            elif self.client.model.startswith("local/"):
                self._native = False
            else:
                try:
                    self._native = bool(import_litellm().supports_function_calling(model=self.client.model))
                except Exception:  # litellm raises for models it has no entry for
                    self._native = False
        return self._native

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Action:
        tools = info.get("tools") or None
        seed = sampling_seed(self.seed, observation, info)
        if self.native_tools:
            message, usage = await self.client.complete_message(observation, tools=tools, seed=seed)
        else:
            message, usage = await self.client.complete_message(text_messages(observation, tools), seed=seed)
        return {**message, "usage": {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}}


__all__ = ["LiteLLMAgent", "ToolFormat"]
