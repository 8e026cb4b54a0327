"""The embedded SmolLM2 model through litellm's ``local`` provider: text, usage counts,
determinism, limits, registration and errors (loads the model once, about 15 s)."""

from __future__ import annotations

import asyncio
import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before anything imports litellm

from judgegym.models import LOCAL_MODELS, load_local_model, register_local_provider  # noqa: E402

pytestmark = pytest.mark.slow  # the module's fixture loads the embedded model (about 6 s)

MODEL = "local/smollm2-135m-instruct"
QUESTION = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]


@pytest.fixture(scope="module")
def litellm():
    register_local_provider()
    load_local_model("smollm2-135m-instruct")  # once for the whole file
    import litellm

    return litellm


def test_completion_returns_text_and_usage(litellm):
    response = litellm.completion(model=MODEL, messages=QUESTION, temperature=0, max_tokens=24)
    text = response.choices[0].message.content
    assert "Paris" in text and response.choices[0].finish_reason == "stop"
    usage = response.usage
    assert usage.prompt_tokens > 10 and 0 < usage.completion_tokens <= 24
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_acompletion_returns_text_and_usage(litellm):
    async def ask():
        return await asyncio.gather(*(litellm.acompletion(model=MODEL, messages=QUESTION, temperature=0, max_tokens=24) for _ in range(2)))

    first, second = asyncio.run(ask())
    assert "Paris" in first.choices[0].message.content
    assert first.choices[0].message.content == second.choices[0].message.content
    assert first.usage.completion_tokens > 0 and first.usage.prompt_tokens == second.usage.prompt_tokens


def test_greedy_is_deterministic_and_seeded_sampling_reproducible(litellm):
    story = [{"role": "user", "content": "Tell me a short story about a robot."}]
    greedy = [litellm.completion(model=MODEL, messages=story, temperature=0, max_tokens=12) for _ in range(2)]
    assert greedy[0].choices[0].message.content == greedy[1].choices[0].message.content
    sampled = [litellm.completion(model=MODEL, messages=story, temperature=1.0, seed=7, n=2, max_tokens=12) for _ in range(2)]
    assert [c.message.content for c in sampled[0].choices] == [c.message.content for c in sampled[1].choices]
    assert len(sampled[0].choices) == 2


def test_max_tokens_and_stop_are_respected(litellm):
    long = [{"role": "user", "content": "Write a long essay about the history of the ocean."}]
    response = litellm.completion(model=MODEL, messages=long, temperature=0, max_tokens=5)
    assert response.usage.completion_tokens == 5 and response.choices[0].finish_reason == "length"
    stopped = litellm.completion(model=MODEL, messages=QUESTION, temperature=0, max_tokens=24, stop=["Paris"])
    assert "Paris" not in stopped.choices[0].message.content and stopped.choices[0].finish_reason == "stop"


def test_json_response_format_and_tool_messages_do_not_crash(litellm):
    messages = [
        {"role": "system", "content": "You are a support assistant."},
        {"role": "user", "content": "What's the price of the Lark 2?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"doc_id": "lark-2"}'}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "The Lark 2 costs $759.99."},
    ]
    response = litellm.completion(model=MODEL, messages=messages, temperature=0, max_tokens=8, response_format={"type": "json_object"})
    assert isinstance(response.choices[0].message.content, str) and response.usage.completion_tokens > 0


def test_registration_is_idempotent_and_keeps_other_providers(litellm):
    other = {"provider": "my-provider", "custom_handler": litellm.CustomLLM()}
    litellm.custom_provider_map.append(other)
    try:
        register_local_provider()
        register_local_provider()
        providers = [e["provider"] for e in litellm.custom_provider_map]
        assert providers.count("local") == 1 and "my-provider" in providers
    finally:
        litellm.custom_provider_map.remove(other)


def test_unknown_local_model_names_the_known_ones(litellm):
    with pytest.raises(litellm.NotFoundError, match="known local models: smollm2-135m-instruct"):
        litellm.completion(model="local/no-such-model", messages=QUESTION)
    with pytest.raises(KeyError, match="^unknown local model 'no-such-model'; known local models: smollm2-135m-instruct$"):
        load_local_model("no-such-model")
    assert "smollm2-135m-instruct" in LOCAL_MODELS


def test_loaded_model_is_cached_on_cpu(litellm):
    model, tokenizer = load_local_model("smollm2-135m-instruct")
    assert load_local_model("local/smollm2-135m-instruct")[0] is model
    assert model.device.type == "cpu" and tokenizer.chat_template


@pytest.mark.slow
def test_a_bf16_copy_keeps_rotary_frequencies_in_float32():
    """Casting the embedded model keeps ``inv_freq`` in float32 (as from_pretrained does):
    bf16 frequencies would rotate every position differently from the float32 model."""
    import torch

    from judgegym.agents.hf import load_model

    model, _ = load_model("smollm2-135m", torch.bfloat16, fresh=True)
    frequencies = {name: b.dtype for name, b in model.named_buffers() if name.endswith("inv_freq")}
    assert frequencies and set(frequencies.values()) == {torch.float32}
    assert next(model.parameters()).dtype == torch.bfloat16
