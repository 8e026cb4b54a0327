"""Model agents: spec strings, the text tool format, batched generation (transformers and a
vLLM stand-in), LoRA adapters, and LiteLLMAgent against a real HTTP endpoint."""

from __future__ import annotations

import asyncio
import json

import gymnasium as gym
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from openai_stub import StubServer
from strategies import examples

import judgegym  # noqa: F401
from judgegym.agents import Agent, make_agent, parse_spec
from judgegym.agents.batching import BatchedAgent, Generation, Sampling
from judgegym.agents.hf import HFAgent
from judgegym.agents.litellm_agent import LiteLLMAgent
from judgegym.chat_format import render_prompt, supports_native_tools, text_messages
from judgegym.evaluation import evaluate
from judgegym.parsing import HermesParser, parse_action
from judgegym.testing import vllm_offline
from judgegym.testing.tiny_models import save_tiny_model, tiny_llama, tiny_tokenizer

# -- spec strings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("search-quote", ("", "search-quote", None, {})),
        ("hf:smollm2-135m", ("hf", "smollm2-135m", None, {})),
        ("hf:smollm2-135m+runs/ckpt-50", ("hf", "smollm2-135m", "runs/ckpt-50", {})),
        ("hf:m?temperature=0.7&max_tokens=64&device=cpu", ("hf", "m", None, {"temperature": 0.7, "max_tokens": 64, "device": "cpu"})),
        ("litellm:openai/gpt-4o", ("litellm", "openai/gpt-4o", None, {})),
        ("litellm:a+b/c?api_base=http://h:1/v1", ("litellm", "a+b/c", None, {"api_base": "http://h:1/v1"})),
        ("vllm:/models/q+/ad", ("vllm", "/models/q", "/ad", {})),
        ("ollama:x", ("", "ollama:x", None, {})),
    ],
)
def test_parse_spec(spec, expected):
    assert parse_spec(spec) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("hf:", "names no model"),
        ("hf:m?temperature", "not KEY=VALUE"),
        ("gpt-17", "known agents: oracle, search-quote, unhelpful, or hf:MODEL"),
        ("hf:m?tempreature=1", "unknown option(s) tempreature"),
        ("litellm:openai/x?colour=red", "litellm agents take"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec, message):
    with pytest.raises(ValueError, match=None) as info:
        make_agent(spec, "RagSupport-v0")
    assert message in str(info.value)


@settings(max_examples=examples(300))
@given(st.text(max_size=60))
def test_parse_spec_never_fails_with_anything_but_value_error(spec):
    try:
        kind, model, adapter, options = parse_spec(spec)
    except ValueError:
        return
    assert isinstance(options, dict) and (kind == "" or model)


def test_vllm_agent_without_vllm_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "vllm", None)
    with pytest.raises(ImportError, match=r"judgegym\[gpu\]"):
        make_agent("vllm:/models/x")


# -- the text tool format ---------------------------------------------------------------------

names = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=20)
json_args = st.dictionaries(st.text(max_size=10), st.none() | st.integers() | st.text(max_size=30) | st.booleans(), max_size=4)


@settings(max_examples=examples(200))
@given(calls=st.lists(st.tuples(names, json_args), min_size=1, max_size=3), content=st.text(max_size=50))
def test_tool_calls_rendered_as_text_parse_back_to_the_same_calls(calls, content):
    message = {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, (n, a) in enumerate(calls)
        ],
    }
    (rendered,) = text_messages([message])
    parsed = parse_action(rendered["content"], HermesParser(), "x")
    assert [(c.name, json.loads(c.arguments)) for c in parsed.calls] == [(n, a) for n, a in calls]
    assert parsed.error is None


def test_text_messages_folds_tool_results_into_one_user_turn_and_describes_tools():
    tools = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
    chat = text_messages(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "function": {"name": "search", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "1", "content": "r1"},
            {"role": "tool", "tool_call_id": "2", "content": "r2"},
        ],
        tools,
    )
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    assert chat[0]["content"].startswith("Be brief.") and '"name": "search"' in chat[0]["content"]
    assert chat[1]["content"] == "hi"
    assert chat[3]["content"] == "<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n</tool_response>"


def test_native_tool_templates_get_structured_messages():
    tokenizer = tiny_tokenizer()
    assert not supports_native_tools(tokenizer)
    tokenizer.chat_template = (
        "{% for m in messages %}{{ m['role'] }}:{{ m['content'] }};{% endfor %}{% if tools %}T{{ tools|length }}{% endif %}"
    )
    assert supports_native_tools(tokenizer)
    prompt = render_prompt(tokenizer, [{"role": "user", "content": "q"}], [{"type": "function", "function": {"name": "f"}}])
    assert prompt == "user:q;T1"


# -- batching -----------------------------------------------------------------------------------


class EchoAgent(BatchedAgent):
    """Answers every prompt with its length; records the batches."""

    name = "echo"

    def __init__(self, max_batch=64, fail=False):
        super().__init__(Sampling(), max_batch)
        self._tok = tiny_tokenizer()
        self.fail = fail

    @property
    def tokenizer(self):
        return self._tok

    def generate_batch(self, prompts, seeds):
        if self.fail:
            raise RuntimeError("CUDA out of memory (simulated)")
        return [Generation(f"prompt of {len(p)} characters", len(p), 4) for p in prompts]


def test_concurrent_episodes_share_batches_and_tokens_are_counted():
    agent = EchoAgent(max_batch=6)
    run = asyncio.run(evaluate("RagSupport-v0", agent, episodes=12, concurrency=12, env_kwargs={"n_products": 20, "n_worlds": 1}))
    assert len(run.trajectories) == 12 and not run.failed
    assert max(agent.batch_sizes) == 6 and sum(agent.batch_sizes) == 12  # one turn each: 12 prompts in 2 batches
    assert all(t.metrics["completion_tokens"] == 4 and t.metrics["prompt_tokens"] > 100 for t in run.trajectories)


def test_a_failing_batch_fails_its_episodes_not_the_run():
    run = asyncio.run(evaluate("RagSupport-v0", EchoAgent(fail=True), episodes=3, env_kwargs={"n_products": 20, "n_worlds": 1}))
    assert run.trajectories == [] and len(run.failed) == 3 and "out of memory" in run.failed[0][2]


# -- HFAgent ------------------------------------------------------------------------------------


def _hf(tokenizer, model, **kwargs) -> HFAgent:
    return HFAgent("tiny", model_obj=model, tokenizer_obj=tokenizer, device="cpu", max_tokens=12, **kwargs)


def _episodes(agent: Agent, n: int, concurrency: int):
    env_kwargs = {"n_products": 20, "n_worlds": 1, "max_turns": 2}
    return asyncio.run(evaluate("RagSupport-v0", agent, episodes=n, concurrency=concurrency, env_kwargs=env_kwargs)).trajectories


def test_hf_agent_batched_greedy_generation_matches_one_at_a_time():
    tokenizer = tiny_tokenizer()
    model = tiny_llama(tokenizer)
    batched, alone = _hf(tokenizer, model, max_batch=8), _hf(tokenizer, model, max_batch=1)
    together = _episodes(batched, 6, concurrency=6)
    one_by_one = _episodes(alone, 6, concurrency=1)
    assert max(batched.batch_sizes) > 1 and set(alone.batch_sizes) == {1}
    assert [t.messages[2:] for t in together] == [t.messages[2:] for t in one_by_one]
    assert all(0 < t.metrics["completion_tokens"] <= 24 for t in together)  # two turns of at most 12 tokens


@pytest.mark.parametrize(
    ("env_id", "env_kwargs"),
    [
        ("RagSupport-v0", {"n_products": 20, "n_worlds": 1}),
        ("CustomerSupport-v0", {}),
        ("Summarize-v0", {}),
    ],
)
def test_hf_agent_keeping_kv_caches_plays_the_same_greedy_episodes(env_id, env_kwargs):
    """Concurrent episodes with each episode's KV cache kept across its turns play exactly what
    re-reading every conversation plays (greedy), on all three envs."""
    tokenizer = tiny_tokenizer()
    model = tiny_llama(tokenizer)
    kwargs = {**env_kwargs, "max_turns": 3}
    runs = {}
    for reuse in (True, False):
        agent = _hf(tokenizer, model, max_batch=8, kv_reuse=reuse)
        runs[reuse] = asyncio.run(evaluate(env_id, agent, episodes=4, concurrency=4, env_kwargs=kwargs)).trajectories
        if reuse:
            stats = agent.prefix_cache.stats
        agent.close()
    assert [t.messages for t in runs[True]] == [t.messages for t in runs[False]]
    assert [t.reward for t in runs[True]] == [t.reward for t in runs[False]]
    # the episodes share their system prompt, and CustomerSupport's take three turns: most is not read again
    assert stats.reused_tokens > stats.prefilled_tokens


def test_hf_agent_reuses_the_longest_common_prefix_of_a_rerendered_prompt():
    """A prompt that shares only part of a kept sequence (the conversation rendered anew)
    reuses that part; what it generates equals a fresh agent's."""
    tokenizer = tiny_tokenizer()
    model = tiny_llama(tokenizer)
    agent, fresh = _hf(tokenizer, model), _hf(tokenizer, model, kv_reuse=False)
    first = "<|im_start|>user\nwhich warranty covers the lamp<|im_end|>\n<|im_start|>assistant\n"
    [one] = agent.generate_batch([first], [0])
    second = first + "another answer<|im_end|>\n<|im_start|>user\nand the battery<|im_end|>\n<|im_start|>assistant\n"
    assert agent.generate_batch([second, first], [0, 0]) == fresh.generate_batch([second, first], [0, 0])
    stats = agent.prefix_cache.stats
    assert stats.reused_tokens >= 2 * len(tokenizer(first)["input_ids"]) - 2 and one.completion_tokens > 0


def test_hf_agent_sampling_is_seeded_by_trial():
    tokenizer = tiny_tokenizer()
    agent = _hf(tokenizer, tiny_llama(tokenizer), temperature=1.0, max_batch=1)
    env = gym.make("RagSupport-v0", n_products=20, n_worlds=1)
    observation, info = env.reset(seed=3)
    first = asyncio.run(agent.act(observation, {**info, "trial": 0}))["content"]
    again = asyncio.run(agent.act(observation, {**info, "trial": 0}))["content"]
    other = [asyncio.run(agent.act(observation, {**info, "trial": t}))["content"] for t in (1, 2, 3)]
    assert first == again and any(o != first for o in other)


def test_hf_agent_loads_a_model_folder_and_a_lora_adapter(tmp_path):
    from peft import LoraConfig, get_peft_model

    from judgegym.models import peft_quietly

    folder = save_tiny_model(tmp_path / "base")
    tokenizer = tiny_tokenizer()
    with peft_quietly():
        peft_model = get_peft_model(tiny_llama(tokenizer), LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    with torch.no_grad():  # a trained adapter: B is no longer zero
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 2.0)
    with peft_quietly():
        peft_model.save_pretrained(tmp_path / "adapter")
    base = make_agent(f"hf:{folder}?device=cpu&max_tokens=12")
    tuned = make_agent(f"hf:{folder}+{tmp_path / 'adapter'}?device=cpu&max_tokens=12")
    assert tuned.name.endswith("/adapter?device=cpu&max_tokens=12")
    assert [t.messages[-1] for t in _episodes(base, 3, 3)] != [t.messages[-1] for t in _episodes(tuned, 3, 3)]
    with pytest.raises(FileNotFoundError, match="not a LoRA adapter folder"):
        make_agent(f"hf:{folder}+{tmp_path}?device=cpu")


def test_hf_agent_unknown_model_names_the_embedded_ones(tmp_path):
    with pytest.raises(ValueError, match="smollm2-135m"):
        make_agent(f"hf:{tmp_path / 'nothing-here'}")


# -- VLLMAgent against the stand-in -------------------------------------------------------------


def test_vllm_agent_contract(monkeypatch, tmp_path):
    vllm_offline.install(monkeypatch)
    (tmp_path / "ad").mkdir()
    (tmp_path / "ad" / "adapter_config.json").write_text("{}")
    agent = make_agent(f"vllm:/models/base+{tmp_path / 'ad'}?max_tokens=32&gpu_memory_utilization=0.5&seed=7")
    (engine,) = vllm_offline.LLM.instances
    assert engine.model == "/models/base"
    assert engine.engine_args["enable_prefix_caching"] is True and engine.engine_args["enable_lora"] is True
    assert engine.engine_args["gpu_memory_utilization"] == 0.5
    run = asyncio.run(evaluate("RagSupport-v0", agent, episodes=8, concurrency=8, env_kwargs={"n_products": 20, "n_worlds": 1}))
    assert len(run.trajectories) == 8 and not run.failed
    assert all(t.metrics["tool_calls"] == 1 and t.messages[-1].content == "The answer is in the articles." for t in run.trajectories)
    first_call = engine.calls[0]
    assert len(first_call["prompts"]) == 8  # eight episodes' first turns in one generate call
    assert len({p.seed for p in first_call["params"]}) == 8 and all(p.max_tokens == 32 for p in first_call["params"])
    first_id = first_call["lora_request"].lora_int_id
    agent.load_adapter(tmp_path / "ad")
    assert agent.lora_request.lora_int_id != first_id  # new weights, new id: vLLM's adapter cache is keyed by id


def test_vllm_agent_rejects_unknown_engine_arguments(monkeypatch):
    vllm_offline.install(monkeypatch)
    with pytest.raises(TypeError, match="unexpected keyword"):
        make_agent('vllm:/m?engine_kwargs={"enable_turbo": true}')


# -- LiteLLMAgent over HTTP ---------------------------------------------------------------------


def _litellm_run(stub: StubServer, spec_options: str, episodes: int = 1, trials: int = 1):
    agent = make_agent(f"litellm:openai/stub-model?api_base={stub.api_base}&api_key=k&retries=2{spec_options}")
    run = asyncio.run(
        evaluate("RagSupport-v0", agent, episodes=episodes, trials=trials, concurrency=1, env_kwargs={"n_products": 20, "n_worlds": 1})
    )
    return agent, run


def test_litellm_agent_native_tool_calls():
    stub = StubServer()
    try:
        call = {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"query": "warranty"}'}}
        stub.script = [{"content": None, "tool_calls": [call]}, "It is covered for 2 years [kb-1]."]
        agent, run = _litellm_run(stub, "&tool_format=native")
        (trajectory,) = run.trajectories
        assert [r.get("tools", [{}])[0].get("function", {}).get("name") for r in stub.requests] == ["search", "search"]
        assert trajectory.metrics["tool_calls"] == 1 and trajectory.messages[-1].content.startswith("It is covered")
        assert stub.requests[1]["messages"][-1]["role"] == "tool"  # the result went back as a native tool message
        assert trajectory.metrics["prompt_tokens"] == 200 and trajectory.metrics["completion_tokens"] == 40
    finally:
        stub.close()


def test_litellm_agent_text_tool_format_retries_and_trial_seeds():
    stub = StubServer()
    try:
        stub.script = [{"status": 503, "content": "busy"}, '<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>']
        stub.default = "No idea, sorry."
        agent, run = _litellm_run(stub, "&tool_format=text", episodes=1, trials=2)
        assert len(run.trajectories) == 2 and not run.failed
        first = stub.requests[1]
        assert "tools" not in first and "<tools>" in first["messages"][0]["content"]
        assert run.trajectories[0].metrics["tool_calls"] == 1
        seeds = {r["seed"] for r in stub.requests[1:]}
        assert len(seeds) == len(stub.requests) - 1  # every turn of every trial has its own seed
    finally:
        stub.close()


def test_litellm_agent_that_keeps_failing_fails_the_episode_loudly():
    stub = StubServer()
    try:
        stub.default = {"status": 500, "content": "boom"}
        agent, run = _litellm_run(stub, "")
        assert run.trajectories == [] and "boom" in run.failed[0][2] and len(stub.requests) == 2
    finally:
        stub.close()


def test_litellm_auto_tool_format_uses_text_for_the_embedded_model():
    assert LiteLLMAgent("local/smollm2-135m-instruct").native_tools is False
    assert LiteLLMAgent("openai/gpt-4o", tool_format="auto").native_tools is True


@pytest.mark.parametrize(("temperature", "top_p"), [(0.0, 1.0), (0.9, 1.0), (1.0, 0.7)])
def test_decoding_loop_draws_what_generate_draws(temperature, top_p):
    """`decode` over a prefilled cache gives the ids `generate` gives on the same left-padded
    batch and seed (greedy, sampling, top-p), with the sampled tokens' log-probabilities, and
    stops rows at any of several EOS ids."""
    from transformers import GenerationConfig

    from judgegym.agents.decoding import decode
    from judgegym.agents.prefix_cache import PrefixCache

    tokenizer = tiny_tokenizer()
    model = tiny_llama(tokenizer)
    prompts = [[5, 6, 7, 8, 9, 10], [11, 12], [13, 14, 15, 16]]
    eos = [3, 4]
    sampled = temperature > 0
    config = GenerationConfig(
        do_sample=sampled,
        temperature=temperature if sampled else None,
        top_p=top_p if sampled else None,
        top_k=0 if sampled else None,
        max_new_tokens=12,
        pad_token_id=0,
        eos_token_id=eos,
        output_logits=True,
        return_dict_in_generate=True,
    )
    cache = PrefixCache(model)
    with torch.no_grad():
        input_ids, mask, prefilled = cache.prefill(prompts, 0, room=12)
        torch.manual_seed(7)
        ids, logprobs = decode(
            model, input_ids, mask, prefilled, max_new_tokens=12, temperature=temperature, top_p=top_p,
            eos_token_id=eos, pad_token_id=0, logprobs=True,
        )  # fmt: skip
        torch.manual_seed(7)
        out = model.generate(input_ids=input_ids, attention_mask=mask, generation_config=config)
    want = out.sequences[:, input_ids.shape[1] :]
    assert ids.tolist() == want.tolist()
    want_logprobs = torch.stack(
        [
            torch.log_softmax(step.float() / max(temperature, 1e-8), -1).gather(-1, want[:, t, None]).squeeze(1)
            for t, step in enumerate(out.logits)
        ],
        dim=1,
    )
    assert torch.allclose(logprobs, want_logprobs, atol=1e-4)
    for row in ids.tolist():  # after an EOS only padding
        ends = [i for i, token in enumerate(row) if token in eos]
        assert not ends or all(token == 0 for token in row[ends[0] + 1 :])
