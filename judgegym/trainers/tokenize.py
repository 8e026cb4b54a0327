"""Token-level episodes for training: the ids the policy was conditioned on and sampled, with a
loss mask that is 1 only on sampled tokens, built by concatenation as the episode is played.

Each assistant turn contributes the ids the model generated, as they were generated; each
env turn (tool results, user messages) contributes the ids of its text as the chat template
renders it, tokenized on its own. The whole conversation is never re-tokenized: a BPE
tokenizer may merge characters across a turn boundary differently when it sees the whole
text, and the ids the model actually saw and sampled are the ones to train on. So decoding
the ids gives the rendered conversation text, but the ids need not equal a fresh tokenization
of that text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from judgegym.chat_format import render_prompt

_SENTINEL = "JUDGEGYM_ASSISTANT_TURN_7f3a"
"""Stand-in assistant content used to find where the template closes an assistant turn."""


class TemplateError(ValueError):
    """The tokenizer's chat template cannot be used for token-level episodes (see the message)."""


@dataclass
class TokenTrajectory:
    """One episode as token ids, ready for the loss.

    `prompt_ids` is the first prompt (system, first user turn, tool descriptions, generation
    prompt); `completion_ids` is everything after it: sampled assistant tokens interleaved with
    env-turn and template tokens. `loss_mask` and `sampler_logprobs` line up with
    `completion_ids`; the mask is 1 exactly on sampled tokens and the logprobs are 0.0 where it
    is 0.
    """

    prompt_ids: list[int]
    completion_ids: list[int]
    loss_mask: list[int]
    sampler_logprobs: list[float]

    def __post_init__(self) -> None:
        n = len(self.completion_ids)
        if len(self.loss_mask) != n or len(self.sampler_logprobs) != n:
            raise ValueError(
                f"completion_ids ({n}), loss_mask ({len(self.loss_mask)}) and sampler_logprobs "
                f"({len(self.sampler_logprobs)}) must have the same length"
            )
        if any(m not in (0, 1) for m in self.loss_mask):
            raise ValueError("loss_mask must hold only 0 and 1")

    @property
    def input_ids(self) -> list[int]:
        """Prompt then completion: the sequence a forward pass runs on."""
        return self.prompt_ids + self.completion_ids

    @property
    def num_sampled(self) -> int:
        """How many tokens the policy sampled (the loss's active tokens)."""
        return sum(self.loss_mask)


class EpisodeTokenizer:
    """Builds a `TokenTrajectory` turn by turn while an episode is played.

    Usage::

        episode = EpisodeTokenizer(tokenizer, tools)
        ids = episode.start(observation)                  # the first prompt
        while True:
            new_ids, logprobs = sample(ids)               # the policy's tokens for one turn
            text = episode.add_generated(new_ids, logprobs)
            observation, ..., done = env.step(text)
            if done:
                break
            episode.add_env_messages(env_turns(previous_observation, observation))
            ids = episode.prompt_for_next_turn()
        trajectory = episode.trajectory()

    The model sees the same first prompt as `judgegym.agents.hf.HFAgent` (`render_prompt`:
    native ``tools=`` when the template takes them, the Hermes text convention otherwise).

    Raises:
        TemplateError: at construction, if the chat template does not extend its own
            renderings turn by turn on a sample tool-using conversation (for example a
            template that drops the reasoning of earlier assistant turns); later, if the
            actual conversation breaks that property.
    """

    def __init__(self, tokenizer: Any, tools: Sequence[dict[str, Any]] | None = None):
        self.tokenizer = tokenizer
        self.tools = list(tools or [])
        self.messages: list[dict[str, Any]] = []
        """The conversation so far; assistant turns hold the decoded sampled text."""
        self._prompt_ids: list[int] | None = None
        self._completion_ids: list[int] = []
        self._loss_mask: list[int] = []
        self._logprobs: list[float] = []
        self._awaiting_generation = False
        check_prefix_extending(tokenizer, self.tools)

    def start(self, messages: Sequence[Any]) -> list[int]:
        """Begin the episode with its first messages (system, user); returns the prompt ids,
        ending with the template's generation prompt."""
        if self._prompt_ids is not None:
            raise RuntimeError("start() was already called; use a new EpisodeTokenizer per episode")
        self.messages = [_as_dict(m) for m in messages]
        self._prompt_ids = self._encode(self._render(self.messages, generation_prompt=True))
        self._awaiting_generation = True
        return list(self._prompt_ids)

    def add_generated(self, ids: Sequence[int], logprobs: Sequence[float]) -> str:
        """Record one assistant turn: the sampled `ids` (without padding; ending with the
        end-of-turn token if the model stopped by itself) and their sampler `logprobs`.

        The ids get mask 1. If the turn does not end with the token the template closes an
        assistant turn with (the model hit the token limit, or stopped on another EOS), the
        template's closing text is appended with mask 0; whatever the template puts after that
        token (ChatML's newline) is appended with mask 0 too. Returns the turn's text (special
        tokens skipped), what the env should receive as the action.
        """
        if not self._awaiting_generation:
            raise RuntimeError("add_generated() needs a prompt: call start() first, and add_env_messages() between turns")
        ids, logprobs = [int(i) for i in ids], [float(x) for x in logprobs]
        if len(ids) != len(logprobs):
            raise ValueError(f"got {len(ids)} ids but {len(logprobs)} logprobs; they must line up")
        closing = self._assistant_closing()
        if ids and self._is_end_token(ids[-1]):
            end_text = self.tokenizer.decode(ids[-1:], skip_special_tokens=False)
            if end_text and closing.startswith(end_text):
                closing = closing[len(end_text) :]
        self._extend(ids, [1] * len(ids), logprobs)
        closing_ids = self._encode(closing)
        self._extend(closing_ids, [0] * len(closing_ids), [0.0] * len(closing_ids))
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        self.messages.append({"role": "assistant", "content": text})
        self._awaiting_generation = False
        return text

    def add_assistant_message(self, message: Any) -> list[int]:
        """Record an assistant turn given as a message, not as sampled ids (supervised
        fine-tuning on a stored episode); returns the ids that get mask 1.

        The ids are the turn's text as the chat template renders it (tool calls included, in
        the template's own convention), tokenized on its own, then the end-of-turn token: what
        the policy would have sampled to produce this turn, so `add_generated` records them
        exactly as a GRPO rollout records a sampled turn (the template's closing after the end
        token gets mask 0). Their sampler log-probabilities are 0.0.
        """
        if not self._awaiting_generation:
            raise RuntimeError("add_assistant_message() needs a prompt: call start() first, and add_env_messages() between turns")
        turn = _as_dict(message)
        if turn.get("role") != "assistant":
            raise ValueError(f"add_assistant_message() takes an assistant message, got role {turn.get('role')!r}")
        before = self._render(self.messages, generation_prompt=True)
        after = self._render([*self.messages, turn], generation_prompt=False)
        _require_prefix(before, after, "the generation prompt", "the same conversation with the assistant turn")
        closing = self._assistant_closing()
        rendered = after[len(before) :]
        if not rendered.endswith(closing):
            raise TemplateError(f"the chat template closes this assistant turn with {rendered[-40:]!r}, not with {closing!r}")
        ids = self._encode(rendered[: len(rendered) - len(closing)])
        closing_ids = self._encode(closing)
        if closing_ids and self._is_end_token(closing_ids[0]):
            ids.append(closing_ids[0])  # the policy ends its turn by sampling this token
        self.add_generated(ids, [0.0] * len(ids))
        return ids

    def add_env_messages(self, messages: Sequence[Any]) -> list[int]:
        """Record the env's new turns (tool results, user messages; not its copy of the
        assistant turn) and the generation prompt after them; returns the ids added (mask 0).

        The ids are those of the text that rendering the conversation with these turns adds
        to rendering it without them, tokenized on their own.
        """
        if self._prompt_ids is None or self._awaiting_generation:
            raise RuntimeError("add_env_messages() follows an assistant turn: call add_generated() first")
        new = [_as_dict(m) for m in messages]
        if not new:
            raise ValueError("no env messages given; the next turn needs at least one (a tool result or a user message)")
        if any(m.get("role") == "assistant" for m in new):
            raise ValueError(
                "pass only the env's new turns (tool, user), not assistant messages: the assistant turn is already "
                "recorded from its sampled ids (env_turns() filters an observation for you)"
            )
        before = self._render(self.messages, generation_prompt=False)
        after = self._render(self.messages + new, generation_prompt=True)
        _require_prefix(before, after, "the conversation after the last assistant turn", "the same conversation plus the env's turns")
        delta = self._encode(after[len(before) :])
        self._extend(delta, [0] * len(delta), [0.0] * len(delta))
        self.messages.extend(new)
        self._awaiting_generation = True
        return delta

    def prompt_for_next_turn(self) -> list[int]:
        """All ids so far: what the model is conditioned on for its next turn."""
        if self._prompt_ids is None:
            raise RuntimeError("call start() first")
        return self._prompt_ids + self._completion_ids

    def trajectory(self) -> TokenTrajectory:
        """The episode's ids so far as a `TokenTrajectory` (copies)."""
        if self._prompt_ids is None:
            raise RuntimeError("call start() first")
        return TokenTrajectory(list(self._prompt_ids), list(self._completion_ids), list(self._loss_mask), list(self._logprobs))

    def render(self, *, generation_prompt: bool = False) -> str:
        """The conversation so far as the chat template renders it. The ids decode to exactly
        this when every assistant turn ended with the end-of-turn token and its text had no
        leading or trailing whitespace (the text convention strips it from the rendering, while
        the ids keep what was sampled)."""
        return self._render(self.messages, generation_prompt=generation_prompt)

    # -- internals ----------------------------------------------------------------------

    def _render(self, messages: list[dict[str, Any]], *, generation_prompt: bool) -> str:
        return render_chat(self.tokenizer, messages, self.tools, generation_prompt=generation_prompt)

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []

    def _extend(self, ids: list[int], mask: list[int], logprobs: list[float]) -> None:
        self._completion_ids += ids
        self._loss_mask += mask
        self._logprobs += logprobs

    def _assistant_closing(self) -> str:
        """The text the template puts after an assistant turn's content (ChatML: ``<|im_end|>\\n``)."""
        before = self._render(self.messages, generation_prompt=True)
        after = self._render([*self.messages, {"role": "assistant", "content": _SENTINEL}], generation_prompt=False)
        _require_prefix(before, after, "the generation prompt", "the same conversation with the assistant turn")
        turn = after[len(before) :]
        if _SENTINEL not in turn:
            raise TemplateError("the chat template does not render the assistant's content verbatim; token-level episodes need it to")
        return turn[turn.index(_SENTINEL) + len(_SENTINEL) :]

    def _is_end_token(self, token_id: int) -> bool:
        special = set(getattr(self.tokenizer, "all_special_ids", []) or [])
        return token_id == self.tokenizer.eos_token_id or token_id in special


def render_chat(tokenizer: Any, messages: list[dict[str, Any]], tools: Sequence[dict[str, Any]] | None, *, generation_prompt: bool) -> str:
    """`judgegym.chat_format.render_prompt`, with chat template failures as `TemplateError`."""
    try:
        return render_prompt(tokenizer, messages, list(tools or []) or None, generation_prompt=generation_prompt)
    except Exception as exc:  # jinja raises whatever the template author chose
        raise TemplateError(f"the chat template failed to render the conversation: {type(exc).__name__}: {exc}") from exc


def check_prefix_extending(tokenizer: Any, tools: Sequence[dict[str, Any]] | None = None) -> None:
    """Raise `TemplateError` unless the chat template only ever appends, turn by turn.

    On a sample conversation with reasoning, tool calls, two tool results and a follow-up
    user turn, for every assistant turn: the prompt before it must be a prefix of the
    rendering that includes it, and that rendering must be a prefix of the next prompt.
    (Individual messages inside one env turn may be merged, as consecutive tool results are.)
    """
    conversation = _sample_conversation(tools)
    assistant_at = [i for i, m in enumerate(conversation) if m["role"] == "assistant"]
    for n, k in enumerate(assistant_at):
        prompt = render_chat(tokenizer, conversation[:k], tools, generation_prompt=True)
        turn = render_chat(tokenizer, conversation[: k + 1], tools, generation_prompt=False)
        _require_prefix(prompt, turn, f"the prompt before message {k}", f"the conversation through message {k} (an assistant turn)")
        if n + 1 < len(assistant_at):
            j = assistant_at[n + 1]
            following = render_chat(tokenizer, conversation[:j], tools, generation_prompt=True)
            _require_prefix(turn, following, f"the conversation through message {k}", f"the prompt before message {j}")


def env_turns(previous_observation: Sequence[Any], observation: Sequence[Any]) -> list[dict[str, Any]]:
    """The env's new turns between two observations, without its copy of the assistant turn
    (which the env may have reformatted, or dropped after a format error)."""
    new = [_as_dict(m) for m in observation[len(previous_observation) :]]
    return [m for m in new if m.get("role") != "assistant"]


def _require_prefix(shorter: str, longer: str, shorter_name: str, longer_name: str) -> None:
    if longer.startswith(shorter):
        return
    at = next((i for i, (a, b) in enumerate(zip(shorter, longer, strict=False)) if a != b), min(len(shorter), len(longer)))
    raise TemplateError(
        f"the chat template does not extend its own renderings: {shorter_name} is not a prefix of {longer_name}; "
        f"they differ at character {at}: {shorter[at : at + 40]!r} vs {longer[at : at + 40]!r}. Token-level episodes "
        "concatenate the ids of each turn, so the template must only append to earlier turns, never rewrite them. "
        "Templates that drop the reasoning of earlier assistant turns (Qwen3, DeepSeek-R1 style) or otherwise render "
        "history differently from the latest turn need a patched chat_template that keeps history verbatim."
    )


def _sample_conversation(tools: Sequence[dict[str, Any]] | None) -> list[dict[str, Any]]:
    name = "search"
    if tools:
        name = str(tools[0].get("function", tools[0]).get("name", name))
    call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": '{"query": "refund policy"}'}}
    return [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": "What is the refund policy?"},
        {"role": "assistant", "content": "<think>\nI should look it up.\n</think>\nLet me check.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "name": name, "content": "Refunds within 30 days."},
        {"role": "tool", "tool_call_id": "call_1", "name": name, "content": "Store credit after that."},
        {"role": "assistant", "content": "<think>\nFound it.\n</think>\nRefunds are possible within 30 days."},
        {"role": "user", "content": "And after that?"},
        {"role": "assistant", "content": "<think>\nThe second result.\n</think>\nStore credit."},
    ]


def _as_dict(message: Any) -> dict[str, Any]:
    if isinstance(message, dict):
        return dict(message)
    if hasattr(message, "to_openai"):
        return message.to_openai()
    raise TypeError(f"messages must be dicts or judgegym Message objects, got {type(message).__name__}")


__all__ = ["EpisodeTokenizer", "TemplateError", "TokenTrajectory", "check_prefix_extending", "env_turns", "render_chat"]
