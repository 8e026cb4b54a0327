"""Token-level episodes: the loss mask covers exactly the sampled ids, the concatenated ids
decode to the rendered conversation, the first prompt is HFAgent's, templates that rewrite
history are refused, and a tiny model's sampling log-probabilities are recovered by a forward
pass over the episode (tiny word-level tokenizer and the real SmolLM2 one)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import examples

from judgegym.chat_format import render_prompt, text_messages
from judgegym.testing.tiny_models import CHAT_TEMPLATE, tiny_llama, tiny_tokenizer
from judgegym.trainers.tokenize import EpisodeTokenizer, TemplateError, TokenTrajectory, env_turns
from judgegym.trajectory import Message

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the docs.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    }
]
START = [{"role": "system", "content": "you are a b"}, {"role": "user", "content": "what is the doc ?"}]
CALL = '<tool_call>{"name": "search", "arguments": {"query": "a"}}</tool_call>'

# (assistant text, stopped with EOS?, env turns that follow or None at the end)
SCRIPT = [
    (
        f"let me search . {CALL}",
        True,
        [
            {"role": "tool", "tool_call_id": "c1", "content": "doc 1 : a b c"},
            {"role": "tool", "tool_call_id": "c2", "content": "doc 2 : d"},
        ],
    ),
    ("it is doc 1 .", False, [{"role": "user", "content": "and 2 ?"}]),  # cut off by the token limit
    ("doc 2 is d .", True, None),
]


@pytest.fixture(scope="module")
def tiny():
    return tiny_tokenizer()


@pytest.fixture(scope="module")
def smol():
    from judgegym.models import load_local_tokenizer

    return load_local_tokenizer("smollm2-135m-instruct")


def _encode(tokenizer, text):
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def _decode(tokenizer, ids):
    return tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


def _play(tokenizer, script, start=START, tools=TOOLS):
    """Play a scripted episode; returns the episode, each turn's (offset, ids, logprobs), and
    the conversation as the test itself would write it (for an independent rendering)."""
    episode = EpisodeTokenizer(tokenizer, tools)
    prompt = episode.start(start)
    conversation = list(start)
    sampled = []
    for turn, (text, stops, env) in enumerate(script):
        ids = _encode(tokenizer, text) + ([tokenizer.eos_token_id] if stops else [])
        logprobs = [-(turn + 1) - i / 100 for i in range(len(ids))]
        offset = len(episode.prompt_for_next_turn()) - len(prompt)
        returned = episode.add_generated(ids, logprobs)
        assert returned == tokenizer.decode(ids, skip_special_tokens=True)
        sampled.append((offset, ids, logprobs))
        conversation.append({"role": "assistant", "content": text})
        if env is not None:
            episode.add_env_messages(env)
            conversation += env
    return episode, sampled, conversation


@pytest.mark.parametrize("name", ["tiny", "smol"])
def test_the_mask_covers_exactly_the_sampled_ids(name, request):
    tokenizer = request.getfixturevalue(name)
    episode, sampled, _ = _play(tokenizer, SCRIPT)
    trajectory = episode.trajectory()
    expected_mask = [0] * len(trajectory.completion_ids)
    expected_logprobs = [0.0] * len(trajectory.completion_ids)
    for offset, ids, logprobs in sampled:
        assert trajectory.completion_ids[offset : offset + len(ids)] == ids
        expected_mask[offset : offset + len(ids)] = [1] * len(ids)
        expected_logprobs[offset : offset + len(ids)] = logprobs
    assert trajectory.loss_mask == expected_mask
    assert trajectory.sampler_logprobs == expected_logprobs
    assert trajectory.num_sampled == sum(len(ids) for _, ids, _ in sampled)
    assert episode.prompt_for_next_turn() == trajectory.input_ids
    # the turn cut off by the token limit is closed by the template's end-of-turn token, unmasked
    offset, ids, _ = sampled[1]
    after = offset + len(ids)
    assert trajectory.completion_ids[after] == tokenizer.eos_token_id and trajectory.loss_mask[after] == 0


@pytest.mark.parametrize("name", ["tiny", "smol"])
def test_the_first_prompt_is_what_hf_agent_sees(name, request):
    tokenizer = request.getfixturevalue(name)
    episode = EpisodeTokenizer(tokenizer, TOOLS)
    assert episode.start(START) == _encode(tokenizer, render_prompt(tokenizer, START, TOOLS))


def test_smollm2_ids_decode_to_the_rendered_conversation(smol):
    episode, _, conversation = _play(smol, SCRIPT)
    rendered = smol.apply_chat_template(text_messages(conversation, TOOLS), tokenize=False)
    assert _decode(smol, episode.trajectory().input_ids) == rendered
    # and mid-episode, the conditioning ids decode to the next generation prompt
    episode, _, conversation = _play(smol, SCRIPT[:2])
    assert _decode(smol, episode.prompt_for_next_turn()) == render_prompt(smol, conversation, TOOLS)


def test_word_level_ids_equal_a_fresh_tokenization(tiny):
    """A word-level tokenizer has no merges across turn boundaries, so here concatenation must
    give exactly the ids of tokenizing the whole rendered conversation."""
    episode, _, conversation = _play(tiny, SCRIPT)
    assert episode.trajectory().input_ids == _encode(tiny, tiny.apply_chat_template(text_messages(conversation, TOOLS), tokenize=False))


NATIVE_TEMPLATE = (
    "{% if tools %}<|im_start|>system\n{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}<|im_end|>\n{% endif %}"
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "{% for call in message.tool_calls or [] %}<tool_call>{{ call.function | tojson }}</tool_call>{% endfor %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_templates_that_take_tools_get_structured_messages():
    tokenizer = tiny_tokenizer()
    tokenizer.chat_template = NATIVE_TEMPLATE
    episode, sampled, conversation = _play(tokenizer, SCRIPT)
    rendered = tokenizer.apply_chat_template(conversation, tools=TOOLS, tokenize=False)
    assert '"name": "search"' in rendered and "<|im_start|>tool" in rendered
    assert episode.trajectory().input_ids == _encode(tokenizer, rendered)
    assert episode.trajectory().num_sampled == sum(len(ids) for _, ids, _ in sampled)


STRIPS_REASONING = CHAT_TEMPLATE.replace(
    "{{ message['content'] }}",
    "{% if message['role'] == 'assistant' and not loop.last %}{{ message['content'].split('</think>')[-1] }}"
    "{% else %}{{ message['content'] }}{% endif %}",
)


@pytest.mark.parametrize(
    ("template", "match"),
    [
        (STRIPS_REASONING, "not a prefix"),  # drops the reasoning of earlier assistant turns
        (CHAT_TEMPLATE.replace("{% for message in messages %}", "{% for message in messages[-3:] %}"), "not a prefix"),
        ("{{ raise_exception('System role not supported') }}", "System role not supported"),
    ],
)
def test_templates_that_rewrite_history_are_refused(template, match):
    tokenizer = tiny_tokenizer()
    tokenizer.chat_template = template
    with pytest.raises(TemplateError, match=match):
        EpisodeTokenizer(tokenizer, TOOLS)


def test_turns_must_come_in_order_and_env_turns_exclude_the_assistant(tiny):
    episode = EpisodeTokenizer(tiny)
    with pytest.raises(RuntimeError, match="start"):
        episode.add_generated([4], [-1.0])
    episode.start([Message(role="user", content="a")])
    with pytest.raises(RuntimeError, match="add_generated"):
        episode.add_env_messages([{"role": "user", "content": "b"}])
    with pytest.raises(ValueError, match="line up"):
        episode.add_generated([4, 5], [-1.0])
    episode.add_generated([4, tiny.eos_token_id], [-1.0, -2.0])
    with pytest.raises(RuntimeError, match="add_env_messages"):
        episode.add_generated([4], [-1.0])
    with pytest.raises(ValueError, match="not assistant messages"):
        episode.add_env_messages([{"role": "assistant", "content": "a"}])
    before = [{"role": "user", "content": "a"}]
    after = [*before, {"role": "assistant", "content": "a", "tool_calls": []}, {"role": "tool", "content": "x"}]
    assert env_turns(before, after) == [{"role": "tool", "content": "x"}]
    with pytest.raises(ValueError, match="same length"):
        TokenTrajectory([1], [2, 3], [1], [0.0, 0.0])


safe_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=30).map(str.strip)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    user=safe_text,
    turns=st.lists(st.tuples(safe_text, safe_text, st.sampled_from(["tool", "user"])), min_size=1, max_size=3),
    last=safe_text,
)
def test_any_unicode_conversation_decodes_to_its_rendering(smol, user, turns, last):
    script = [
        (said, True, [{"role": role, "content": reply, **({"tool_call_id": "c"} if role == "tool" else {})}]) for said, reply, role in turns
    ]
    script.append((last, True, None))
    episode, sampled, conversation = _play(smol, script, start=[{"role": "user", "content": user}])
    rendered = smol.apply_chat_template(text_messages(conversation, TOOLS), tokenize=False)
    trajectory = episode.trajectory()
    # compare with the tokenizer's own round trip: this GGUF vocabulary lacks a few raw bytes
    # (e.g. the UTF-8 lead byte of U+40000), which no way of tokenizing can bring back
    assert _decode(smol, trajectory.input_ids) == _decode(smol, _encode(smol, rendered))
    assert [i for i, m in zip(trajectory.completion_ids, trajectory.loss_mask, strict=True) if m] == [
        i for _, ids, _ in sampled for i in ids
    ]


def test_a_forward_pass_over_the_episode_recovers_the_sampling_logprobs(tiny):
    """What the trainer does: sample turns with `generate`, build the episode, then score it
    in one forward pass; on sampled tokens the two log-probabilities agree."""
    import torch

    from judgegym.trainers.loss import selective_log_softmax

    model = tiny_llama(tiny, seed=1)
    temperature = 0.7
    episode = EpisodeTokenizer(tiny, TOOLS)
    episode.start(START)
    torch.manual_seed(0)
    for turn in range(3):
        prompt = torch.tensor([episode.prompt_for_next_turn()])
        with torch.no_grad():
            out = model.generate(
                prompt,
                attention_mask=torch.ones_like(prompt),
                do_sample=True,
                temperature=temperature,
                top_k=0,
                top_p=1.0,
                max_new_tokens=6,
                output_scores=True,
                return_dict_in_generate=True,
                pad_token_id=tiny.pad_token_id,
                eos_token_id=tiny.eos_token_id,
            )
        ids = out.sequences[0, prompt.shape[1] :].tolist()
        logprobs = [torch.log_softmax(score[0], dim=-1)[i].item() for score, i in zip(out.scores, ids, strict=True)]
        episode.add_generated(ids, logprobs)
        if turn < 2:
            episode.add_env_messages([{"role": "tool", "tool_call_id": "c", "content": json.dumps({"doc_id": turn})}])

    trajectory = episode.trajectory()
    input_ids = torch.tensor([trajectory.input_ids])
    with torch.no_grad():
        logits = model(input_ids).logits
    trainer = selective_log_softmax(logits[:, :-1], input_ids[:, 1:], temperature)[0, len(trajectory.prompt_ids) - 1 :]
    mask = torch.tensor(trajectory.loss_mask, dtype=torch.bool)
    assert mask.sum() >= 3
    torch.testing.assert_close(trainer[mask], torch.tensor(trajectory.sampler_logprobs)[mask], atol=1e-4, rtol=1e-4)
