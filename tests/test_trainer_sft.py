"""Supervised fine-tuning: the loss covers exactly the assistant turns; a stored episode becomes
the very ids a GRPO rollout records when the policy samples those turns; data of both formats
load, with errors naming the line; the selection filters; length-grouped micro-batches; resume;
GRPO from an SFT adapter; and a tiny model that SFT teaches to call the search tool."""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import replace
from pathlib import Path

import gymnasium as gym
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import examples

import judgegym  # noqa: F401
from judgegym.agents import make_agent
from judgegym.agents.batching import Sampling
from judgegym.evaluation import evaluate, select_trajectories
from judgegym.evaluation.runner import play_episode
from judgegym.integrations.export import write_chat_jsonl
from judgegym.testing.tiny_models import tiny_llama_config
from judgegym.trainers import GRPOConfig, GRPOTrainer, SFTConfig, SFTTrainer, make_envs, play_groups, read_sft_records
from judgegym.trainers.sft import length_grouped_batches, tokenize_trajectory
from judgegym.trajectory import Group, Message, Trajectory, write_jsonl

SMALL_RAG = {"n_products": 20, "n_worlds": 1}


@pytest.fixture(scope="module")
def smol():
    from judgegym.models import load_local_tokenizer

    return load_local_tokenizer("smollm2-135m-instruct")


@pytest.fixture(scope="module")
def oracle_episodes() -> list[Trajectory]:
    env = gym.make("RagSupport-v0", split="train", **SMALL_RAG)
    agent = make_agent("oracle", env_id="RagSupport-v0")
    return [asyncio.run(play_episode(env, agent, seed)) for seed in range(6)]


@pytest.fixture(scope="module")
def smol_tiny_model(tmp_path_factory, smol) -> str:
    """A tiny random Llama over SmolLM2's real tokenizer (so tool calls decode as text)."""
    from transformers import LlamaForCausalLM

    folder = tmp_path_factory.mktemp("smol-tiny")
    config = tiny_llama_config(smol)
    config.hidden_size, config.intermediate_size, config.num_hidden_layers = 64, 128, 3  # enough to learn a 25-token call
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    smol.save_pretrained(folder)
    return str(folder)


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """Tiny models run fastest on one thread."""


def _runs(tokens) -> list[list[int]]:
    """The maximal runs of mask-1 completion ids."""
    runs, current = [], []
    for token, mask in zip(tokens.completion_ids, tokens.loss_mask, strict=True):
        if mask:
            current.append(token)
        elif current:
            runs.append(current)
            current = []
    return runs + ([current] if current else [])


# -- masks and agreement with GRPO ----------------------------------------------------------


def test_the_loss_covers_each_assistant_turn_and_its_end_token_only(smol, oracle_episodes):
    for trajectory in oracle_episodes:
        tokens = tokenize_trajectory(smol, trajectory)
        assistant = [m for m in trajectory.messages if m.role == "assistant"]
        runs = _runs(tokens)
        assert len(runs) == len(assistant)
        for run, message in zip(runs, assistant, strict=True):
            text = smol.decode(run, skip_special_tokens=False)
            assert text.endswith("<|im_end|>")
            body = text.removesuffix("<|im_end|>")
            if message.tool_calls:
                for call in message.tool_calls:
                    assert f'"name": "{call.function.name}"' in body and body.count("<tool_call>") == len(message.tool_calls)
            else:
                assert body == message.content.strip()
        # nothing the env wrote is trained on: the system prompt, the question and the tool results
        trained = smol.decode([t for run in runs for t in run])
        assert "<tool_response>" not in trained and "Use the `search` tool" not in trained and "<tools>" not in trained
        assert tokens.num_sampled == sum(len(r) for r in runs)


class TeacherForcing:
    """A rollout backend that 'samples' the next assistant turn of known token sequences: for a
    prompt that is a prefix of one of them, the mask-1 run that follows it. A prompt that is no
    such prefix (the rollout built different ids) fails the test."""

    def __init__(self, sequences):
        self.sequences = sequences

    def generate(self, prompts, sampling):
        ids, logprobs = [], []
        for prompt in prompts:
            match = [t for t in self.sequences if t.input_ids[: len(prompt)] == list(prompt)]
            assert match, "the rollout conditioned on ids that SFT's tokenization does not have"
            tokens = match[0]
            offset = len(prompt) - len(tokens.prompt_ids)
            end = offset
            while end < len(tokens.loss_mask) and tokens.loss_mask[end]:
                end += 1
            assert end > offset, "the rollout asked for a turn where SFT has none"
            ids.append(tokens.completion_ids[offset:end])
            logprobs.append([-0.5] * (end - offset))
        return ids, logprobs

    def sync_weights(self, model):
        pass


@pytest.mark.parametrize("env_id", ["RagSupport-v0", "CustomerSupport-v0", "Summarize-v0"])
def test_sft_tokenization_is_what_a_grpo_rollout_records(smol, env_id):
    """Replaying SFT's assistant ids of the oracle's episodes (search, read, cite; identify, look
    up, act after a yes; list and read sections, summarise) through GRPO's rollout loop and the
    real env gives the same episode, token for token and mask for mask: what SFT teaches is what
    RL samples and scores."""
    env_kwargs = {"split": "train", **(SMALL_RAG if env_id == "RagSupport-v0" else {})}
    env = gym.make(env_id, **env_kwargs)
    agent = make_agent("oracle", env_id=env_id)
    episodes = [asyncio.run(play_episode(env, agent, seed)) for seed in range(3)]
    assert all(t.reward == 1.0 and t.metrics["tool_calls"] > 0 for t in episodes)
    sft = [tokenize_trajectory(smol, t) for t in episodes]
    envs = make_envs(env_id, 3, env_kwargs, max_turns=env.unwrapped.max_turns)
    played = play_groups(TeacherForcing(sft), smol, envs, [t.seed for t in episodes], Sampling(1.0, 1.0, 1024, 0))
    for episode, expected, trajectory in zip(played, sft, episodes, strict=True):
        assert episode.tokens.prompt_ids == expected.prompt_ids
        assert episode.tokens.completion_ids == expected.completion_ids
        assert episode.tokens.loss_mask == expected.loss_mask
        assert episode.trajectory.final_answer == trajectory.final_answer
        assert episode.trajectory.metrics["tool_calls"] == trajectory.metrics["tool_calls"]


def test_episodes_that_cannot_be_learned_are_refused(smol):
    system = {"role": "system", "content": "s"}
    with pytest.raises(ValueError, match="no assistant turn"):
        tokenize_trajectory(smol, Trajectory(scenario_id="x", messages=[system, {"role": "user", "content": "q"}]))
    with pytest.raises(ValueError, match="starts with an assistant"):
        tokenize_trajectory(smol, Trajectory(scenario_id="x", messages=[{"role": "assistant", "content": "a"}]))
    two = [system, {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]
    with pytest.raises(ValueError, match="two assistant turns in a row"):
        tokenize_trajectory(smol, Trajectory(scenario_id="x", messages=two))


# -- data --------------------------------------------------------------------------------------


def test_judgegym_groups_and_openai_chat_files_load_alike(tmp_path, oracle_episodes, smol):
    write_jsonl(tmp_path / "eval.jsonl", oracle_episodes[:2])
    write_jsonl(tmp_path / "groups.jsonl", [Group(scenario_id="g", trajectories=oracle_episodes[2:4])])
    write_chat_jsonl(tmp_path / "chat.jsonl", oracle_episodes[4:], metadata=False)
    records = read_sft_records([tmp_path / "eval.jsonl", tmp_path / "groups.jsonl", tmp_path / "chat.jsonl"])
    assert [type(r).__name__ for r in records] == ["Trajectory", "Trajectory", "Group", "Trajectory", "Trajectory"]
    assert records[3].scenario_id == "chat.jsonl:1" and records[3].reward is None  # no metadata: named by file and line
    # the same episode gives the same ids from either format
    assert tokenize_trajectory(smol, records[3]).input_ids == tokenize_trajectory(smol, oracle_episodes[4]).input_ids


def test_chat_lines_with_content_parts_and_metadata(tmp_path, smol):
    line = {
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "be brief"}]},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
        ],
        "scenario_id": "s1",
        "reward": 0.5,
        "metrics": {"recall": 1.0},
    }
    (tmp_path / "d.jsonl").write_text(json.dumps(line) + "\n\n")
    (record,) = read_sft_records([tmp_path / "d.jsonl"])
    assert record.scenario_id == "s1" and record.reward == 0.5 and record.messages[2].content == "hello"
    assert smol.decode(_runs(tokenize_trajectory(smol, record))[0]) == "hello<|im_end|>"


@pytest.mark.parametrize(
    ("line", "message"),
    [("not json", "line 2: not a trajectory"), ("[1, 2]", "expected a JSON object"), ('{"messages": []}', "no 'messages' list")],
)
def test_a_bad_line_names_the_file_and_line(tmp_path, line, message):
    good = json.dumps({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})
    (tmp_path / "d.jsonl").write_text(good + "\n" + line + "\n")
    with pytest.raises(ValueError, match=message):
        read_sft_records([tmp_path / "d.jsonl"])
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_sft_records([tmp_path / "missing.jsonl"])


def _scored(scenario: str, reward: float | None, **metrics: float) -> Trajectory:
    return Trajectory(scenario_id=scenario, env_id="E", reward=reward, metrics=metrics)


def test_selection_by_reward_best_of_group_and_components():
    records = [
        _scored("a", 0.2, recall=0.0),
        _scored("a", 0.9, recall=1.0, citation=0.0),
        _scored("a", 0.8, recall=1.0, citation=1.0),
        _scored("b", None, recall=1.0, citation=1.0),
        Group(scenario_id="c", trajectories=[_scored("c", 1.0, recall=1.0, citation=1.0)], failed=True, error="judge down"),
    ]
    rewards = lambda kept: [t.reward for t in kept]  # noqa: E731
    assert rewards(select_trajectories(records)) == [0.2, 0.9, 0.8, None, 1.0]
    assert rewards(select_trajectories(records, min_reward=0.8)) == [0.9, 0.8]  # unscored and failed groups go
    assert rewards(select_trajectories(records, best_of_group=True)) == [0.9]
    assert rewards(select_trajectories(records, min_components={"citation": 1.0})) == [0.8, None]
    # best of group among what the component filter keeps
    assert rewards(select_trajectories(records, best_of_group=True, min_components={"citation": 1.0})) == [0.8]
    with pytest.raises(ValueError, match=r"component\(s\) \['recal'\]"):
        select_trajectories(records, min_components={"recal": 1.0})


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.integers(1, 300), max_size=200), st.integers(1, 1000), st.integers(0, 5))
def test_length_grouped_batches_use_each_episode_once_within_the_budget(lengths, budget, seed):
    batches = length_grouped_batches(lengths, budget, seed)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) == 1 or max(lengths[i] for i in batch) * len(batch) <= budget
    assert batches == length_grouped_batches(lengths, budget, seed)


# -- training -----------------------------------------------------------------------------------


def _sft_config(tmp_path: Path, model: str, data: Path, **overrides) -> SFTConfig:
    options = {
        "data": [str(data)],
        "model": model,
        "use_lora": False,
        "learning_rate": 3e-3,
        "lr_scheduler": "constant",
        "epochs": 8,
        "micro_batch_tokens": 2048,
        "gradient_accumulation_steps": 2,
        "eval_episodes": 0,
        "save_steps": 0,
        "output_dir": str(tmp_path / "sft"),
        "mixed_precision": "no",  # exact float32 math; bf16 has its own test
    }
    return SFTConfig(**{**options, **overrides})


class SearchThenGiveUp:
    """A scripted agent: one search for 'warranty', then an abstention."""

    name = "search-then-give-up"

    async def act(self, observation, info):
        if not any(m["role"] == "tool" for m in observation):
            return '<tool_call>{"name": "search", "arguments": {"query": "warranty"}}</tool_call>'
        return "I could not find this in the knowledge base."


@pytest.fixture(scope="module")
def search_episodes(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sft-data") / "episodes.jsonl"
    run = asyncio.run(evaluate("RagSupport-v0", SearchThenGiveUp(), episodes=12, env_kwargs={"split": "train", **SMALL_RAG}))
    write_jsonl(path, run.trajectories)
    return path


@pytest.mark.slow
def test_a_tiny_model_learns_to_call_the_tool_it_was_taught(tmp_path, smol_tiny_model, search_episodes):
    def first_turns(model, tokenizer):
        from judgegym.agents.hf import HFAgent

        agent = HFAgent(smol_tiny_model, model_obj=model, tokenizer_obj=tokenizer, max_tokens=40, device="cpu")
        env_kwargs = {"split": "test", "max_turns": 2, **SMALL_RAG}
        return asyncio.run(evaluate("RagSupport-v0", agent, episodes=3, env_kwargs=env_kwargs)).trajectories

    trainer = SFTTrainer(
        _sft_config(tmp_path, smol_tiny_model, search_episodes, epochs=30, gradient_accumulation_steps=1, learning_rate=3e-3)
    )
    before = first_turns(trainer.model, trainer.tokenizer)
    assert all(t.metrics["tool_calls"] == 0 for t in before)  # a random model writes no tool call
    history = trainer.train()
    losses = [r["loss"] for r in history]
    assert losses[-1] < 0.25 * losses[0]
    after = first_turns(trainer.model, trainer.tokenizer)  # unseen test-split scenarios
    for trajectory in after:
        first = next(m for m in trajectory.messages if m.role == "assistant")
        assert first.tool_calls and first.tool_calls[0].function.name == "search"
        assert json.loads(first.tool_calls[0].function.arguments) == {"query": "warranty"}
        assert trajectory.metrics["tool_errors"] == 0
    assert (tmp_path / "sft" / "last" / "model.safetensors").is_file() and (tmp_path / "sft" / "loss.png").is_file()
    report = json.loads((tmp_path / "sft" / "data.json").read_text())
    assert report["trained"] == 12 and report["target_tokens"] > 0


@pytest.mark.filterwarnings(r"ignore:Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`")
def test_micro_batches_sum_to_the_full_batch_gradient(tmp_path, smol_tiny_model, search_episodes):
    """The loss is the token mean over the whole step: four micro-batches of one episode give the
    gradient of one micro-batch of four. Plain SGD at learning rate 1 without clipping makes the
    weight change the negative gradient."""
    changes = []
    for plan in ([[0, 1, 2, 3]], [[0], [1], [2], [3]]):
        config = _sft_config(tmp_path, smol_tiny_model, search_episodes, max_grad_norm=0.0, gradient_accumulation_steps=len(plan))
        config.output_dir = str(tmp_path / f"sft-{len(plan)}")
        trainer = SFTTrainer(config)
        trainer.plan = plan
        trainer.optimizer = torch.optim.SGD(trainer.trainable, lr=1.0)
        before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
        record = trainer.train_step()
        changes.append((record["loss"], {n: p.detach() - before[n] for n, p in trainer.model.named_parameters()}))
    (loss_one, one), (loss_many, many) = changes
    assert loss_one == pytest.approx(loss_many, rel=1e-5)
    assert any(float(delta.abs().max()) > 0 for delta in one.values())
    for name in one:
        torch.testing.assert_close(one[name], many[name], rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_a_resumed_sft_run_continues_like_an_uninterrupted_one(tmp_path, smol_tiny_model, search_episodes):
    def run(folder: str, steps: int, resume: bool = False) -> SFTTrainer:
        config = _sft_config(
            tmp_path, smol_tiny_model, search_episodes, use_lora=True, epochs=2, max_steps=steps, save_steps=1, output_dir=folder
        )
        config.resume = resume
        trainer = SFTTrainer(config)
        trainer.train()
        return trainer

    straight = run(str(tmp_path / "straight"), 4)
    run(str(tmp_path / "cut"), 2)
    resumed = run(str(tmp_path / "cut"), 4, resume=True)
    assert resumed.resumed_from is not None and resumed.state.step == 4
    keys = ("step", "loss", "num_sequences", "num_target_tokens", "learning_rate")
    straight_log = [{k: r[k] for k in keys} for r in map(json.loads, (tmp_path / "straight" / "metrics.jsonl").read_text().splitlines())]
    resumed_log = [{k: r[k] for k in keys} for r in map(json.loads, (tmp_path / "cut" / "metrics.jsonl").read_text().splitlines())]
    assert [r["step"] for r in resumed_log] == [1, 2, 3, 4]
    for a, b in zip(straight_log, resumed_log, strict=True):
        assert a["num_target_tokens"] == b["num_target_tokens"] and a["loss"] == pytest.approx(b["loss"], rel=1e-5)
    for (name, a), (_, b) in zip(straight.model.named_parameters(), resumed.model.named_parameters(), strict=True):
        if a.requires_grad:
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7, msg=name)


@pytest.mark.slow
def test_grpo_starts_from_the_sft_adapter(tmp_path, smol_tiny_model, search_episodes):
    config = _sft_config(tmp_path, smol_tiny_model, search_episodes, use_lora=True, epochs=1)
    sft = SFTTrainer(config)
    sft.train()
    adapter = tmp_path / "sft" / "last"
    grpo_options = {
        "model": smol_tiny_model,
        "env_kwargs": dict(SMALL_RAG),
        "scenarios_per_step": 1,
        "group_size": 2,
        "max_new_tokens": 4,
        "max_turns": 1,
        "max_steps": 1,
        "eval_steps": 0,
        "save_steps": 0,
        "init_adapter": str(adapter),
        "output_dir": str(tmp_path / "grpo"),
        "mixed_precision": "no",
    }
    grpo = GRPOTrainer(GRPOConfig(**grpo_options))
    trained = {n: p for n, p in sft.model.named_parameters() if p.requires_grad}
    loaded = {n: p for n, p in grpo.model.named_parameters() if p.requires_grad}
    assert trained.keys() == loaded.keys() and trained
    for name, weight in trained.items():
        torch.testing.assert_close(loaded[name], weight, msg=name)
    assert any(float(w.detach().abs().sum()) > 0 for n, w in loaded.items() if "lora_B" in n)  # not a fresh (zero) adapter
    grpo.close()
    with pytest.raises(ValueError, match="another LoRA config: r 16"):
        GRPOTrainer(GRPOConfig(**{**grpo_options, "lora_r": 8, "output_dir": str(tmp_path / "grpo-8")}))
    with pytest.raises(FileNotFoundError, match="not a LoRA adapter folder"):
        GRPOTrainer(GRPOConfig(**{**grpo_options, "init_adapter": str(tmp_path), "output_dir": str(tmp_path / "grpo-x")}))
    with pytest.raises(ValueError, match="init_adapter needs use_lora"):
        GRPOConfig(**{**grpo_options, "use_lora": False})


def test_nothing_to_train_on_is_a_clear_error(tmp_path, smol_tiny_model, search_episodes):
    with pytest.raises(ValueError, match="nothing to train on: 12 trajectories read, 0 selected"):
        SFTTrainer(_sft_config(tmp_path, smol_tiny_model, search_episodes, min_reward=1.01))
    with pytest.raises(ValueError, match="invalid SFTConfig: epochs must be >= 1"):
        SFTConfig(epochs=0)
    with pytest.raises(ValueError, match="SFT needs data"):
        SFTTrainer(SFTConfig(model=smol_tiny_model, output_dir=str(tmp_path / "none")))


def test_bf16_autocast_gives_nearly_the_float32_loss(tmp_path, smol_tiny_model, search_episodes):
    losses = {}
    for mode in ("no", "bf16"):
        config = _sft_config(tmp_path, smol_tiny_model, search_episodes, mixed_precision=mode, output_dir=str(tmp_path / mode))
        losses[mode] = SFTTrainer(config).train_step()["loss"]
    assert losses["bf16"] == pytest.approx(losses["no"], rel=2e-2)
    with pytest.raises(ValueError, match="mixed_precision must be 'auto', 'no' or 'bf16'"):
        SFTConfig(mixed_precision="fp8")


def test_stage_metrics_and_paired_changes():
    from judgegym.trainers.tools_demo import stage_changes, stage_metrics

    def episode(seed, reward, calls, errors, **components):
        return Trajectory(
            scenario_id=f"s{seed}", seed=seed, reward=reward, metrics={"tool_calls": calls, "tool_errors": errors, **components}
        )

    before = [episode(0, 0.0, 0, 0, recall=0.0, citation=0.0, abstained=0.0), episode(1, 0.0, 0, 0, abstained=1.0)]
    after = [episode(0, 1.0, 3, 1, recall=1.0, citation=1.0, abstained=0.0), episode(1, 0.5, 1, 0, abstained=1.0)]
    metrics = stage_metrics(after)
    assert metrics["reward"] == 0.75 and metrics["tool_call_rate"] == 1.0 and metrics["tool_error_rate"] == 0.25
    assert metrics["recall"] == 1.0 and metrics["tool_calls"] == 2.0  # recall: answerable questions only
    assert math.isnan(stage_metrics(before)["tool_error_rate"])  # no calls, no rate
    changes = {c.metric: c for c in stage_changes(before, after)}
    assert changes["reward"].difference == 0.75 and changes["tool_call_rate"].difference == 1.0
    assert changes["recall"].before == 0.0 and changes["recall"].after == 1.0  # paired on scenario 0 only
    with pytest.raises(RuntimeError, match="different held-out scenarios"):
        stage_changes(before, after[::-1])


def test_the_episodes_page_shows_the_scenarios_where_the_stages_differ_most():
    from judgegym.evaluation.compare import episodes_page

    def episode(seed, reward, answer):
        task = {"question": f"question {seed}?", "gold_facts": [f"fact {seed}"], "answerable": seed != 2}
        messages = [Message(role="user", content=f"question {seed}?"), Message(role="assistant", content=answer)]
        return Trajectory(scenario_id=f"s{seed}", seed=seed, reward=reward, messages=messages, info={"task": task, "explanation": "a; b"})

    sft = [episode(0, 0.5, "half"), episode(1, 0.0, "none"), episode(2, 1.0, "not covered")]
    grpo = [episode(0, 0.5, "half again"), episode(1, 1.0, "all of it"), episode(2, 0.0, "a guess")]
    page = episodes_page({"sft": sft, "grpo": grpo}, count=2, title="T")
    assert page.startswith("# T\n") and "2 of 3 held-out scenarios" in page
    assert page.index("scenario 1: question 1?") < page.index("scenario 2: question 2?") and "scenario 0" not in page
    assert "Gold facts: fact 1" in page and "Unanswerable" in page
    assert "**grpo**: reward 1.00 (a; b)" in page and "answers 'all of it'" in page
    with pytest.raises(RuntimeError, match="other held-out scenarios"):
        episodes_page({"sft": sft, "grpo": grpo[::-1]})


@pytest.mark.slow
def test_the_tools_demo_runs_its_stages_and_the_control(tmp_path, smol_tiny_model):
    from judgegym.trainers.tools_demo import ToolsDemoConfig, run_tools_demo

    config = ToolsDemoConfig(
        output_dir=str(tmp_path / "demo"),
        model=smol_tiny_model,
        sft_episodes=3,
        sft_epochs=1,
        grpo_steps=1,
        scenarios_per_step=1,
        group_size=2,
        eval_episodes=2,
        max_new_tokens=8,
        max_turns=4,  # the oracle searches, reads, answers
        env_kwargs=dict(SMALL_RAG),
        compare_judges=["grounding"],
    )
    lines = []
    result = run_tools_demo(config, log=lines.append)
    assert set(result.stages) == {"before", "sft", "grpo", "sft_more", "grpo[grounding]"} and all(
        len(e) == 2 for e in result.episodes.values()
    )
    assert result.sft_data == {"played": 3, "kept": 3, "failed": 0, "file": str(tmp_path / "demo" / "sft-data.jsonl")}
    assert {c.metric for c in result.changes["total"]} >= {"reward", "tool_call_rate"}
    saved = json.loads((tmp_path / "demo" / "result.json").read_text())
    assert saved["stages"]["grpo"]["episodes"] == 2 and (tmp_path / "demo" / "stages.png").is_file()
    assert (tmp_path / "demo" / "episodes.md").read_text().startswith("# Held-out episodes by stage")
    grpo_config = json.loads((tmp_path / "demo" / "grpo" / "config.json").read_text())
    assert grpo_config["init_adapter"] == str(tmp_path / "demo" / "sft" / "last") and grpo_config["eval_judge"] == "verifier"
    assert any(line.startswith("before: held-out reward") for line in lines)
    # the control: SFT continued from the SFT adapter, on the first data and as many new oracle episodes
    control_config = json.loads((tmp_path / "demo" / "sft-more" / "config.json").read_text())
    assert control_config["init_adapter"] == str(tmp_path / "demo" / "sft" / "last")
    assert control_config["data"] == [str(tmp_path / "demo" / "sft-data.jsonl"), str(tmp_path / "demo" / "sft-more-data.jsonl")]
    assert {c.metric for c in result.changes["grpo_vs_control"]} >= {"reward"} and result.timings["control_s"] > 0
    assert any(line.startswith("control: SFT continued") for line in lines)
    # another training reward from the same SFT adapter, evaluated by the verifier on the same scenarios
    other = json.loads((tmp_path / "demo" / "grpo-grounding" / "config.json").read_text())
    assert other["judge"] == "grounding" and other["init_adapter"] == grpo_config["init_adapter"] and other["eval_judge"] == "verifier"
    assert {"grpo[grounding]_vs_sft", "grpo[grounding]_vs_grpo"} <= set(result.changes)


@pytest.mark.slow
def test_the_support_demo_learns_from_the_policy_agent_and_reports_pass_k(tmp_path, smol_tiny_model):
    from judgegym.trainers.tools_demo import ToolsDemoConfig, run_tools_demo

    config = ToolsDemoConfig(
        output_dir=str(tmp_path / "demo"),
        env_id="CustomerSupport-v0",
        model=smol_tiny_model,
        sft_episodes=3,
        sft_epochs=1,
        grpo_steps=1,
        scenarios_per_step=1,
        group_size=2,
        eval_episodes=2,
        max_new_tokens=8,
        max_turns=10,
        control=False,
        pass_trials=2,
    )
    lines = []
    result = run_tools_demo(config, log=lines.append)
    assert config.teacher == "policy" and any(line.startswith("SFT data: the policy agent played 3") for line in lines)
    assert set(result.stages) == {"before", "sft", "grpo"} and result.env_id == "CustomerSupport-v0"
    assert {"success", "policy_violations_rate", "false_claims_rate"} <= set(result.stages["sft"])
    # pass^k from two sampled attempts at each of the two held-out scenarios, at every stage
    assert set(result.pass_k) == {"before", "sft", "grpo"} and all(len(e) == 4 for e in result.sampled_episodes.values())
    for stage in result.pass_k.values():
        assert set(stage) == {"pass^1", "pass^2"} and stage["pass^2"][0] <= stage["pass^1"][0]
        assert all(low <= value <= high for value, low, high in stage.values())
    assert {"pass^1", "pass^2", "reward (sampled)", "policy_violations_rate (sampled)"} <= {c.metric for c in result.changes["grpo"]}
    # the sampled attempts' reward and signs of harm, each scenario weighing once
    assert set(result.sampled["sft"]) == {"reward", "policy_violations_rate", "false_claims_rate"}
    for stage, figures in result.sampled.items():
        rewards = [t.reward for t in result.sampled_episodes[stage]]
        assert figures["reward"][0] == pytest.approx(sum(rewards) / len(rewards))  # two attempts at each scenario
        assert all(low <= value <= high for value, low, high in figures.values())
    saved = json.loads((tmp_path / "demo" / "result.json").read_text())
    assert saved["env_id"] == "CustomerSupport-v0" and set(saved["pass_k"]["sft"]) == {"pass^1", "pass^2"}
    assert (tmp_path / "demo" / "sampled" / "grpo.jsonl").is_file()
    assert "Gold actions:" in (tmp_path / "demo" / "episodes.md").read_text()
    # resumed: the finished stages are kept as they are, and an unfinished one starts over
    progress = json.loads((tmp_path / "demo" / "progress.json").read_text())
    assert set(progress) == {"data", "sft", "grpo", "sampled/before", "sampled/sft", "sampled/grpo"}
    del progress["grpo"], progress["sampled/grpo"]
    (tmp_path / "demo" / "progress.json").write_text(json.dumps(progress))
    lines.clear()
    again = run_tools_demo(replace(config, resume=True, oversample=1), log=lines.append)
    assert [line.split(":")[0] for line in lines if "kept from the interrupted run" in line] == ["SFT data", "SFT"]
    assert json.loads((tmp_path / "demo" / "grpo" / "config.json").read_text())["oversample"] == 1
    assert again.stages["sft"] == result.stages["sft"] and set(again.pass_k) == set(result.pass_k)


def test_stage_metrics_of_customer_support_count_episodes_with_violations():
    from judgegym.evaluation.stats import pass_k_per_task
    from judgegym.trainers.tools_demo import ToolsDemoConfig, pass_k_changes, stage_metrics

    def episode(seed, reward, violations=0.0, trial=0):
        metrics = {"tool_calls": 1, "tool_errors": 0, "success": float(reward == 1), "policy_violations": violations, "false_claims": 0}
        return Trajectory(scenario_id=f"s{seed}", seed=seed, reward=reward, metrics=metrics, info={"trial": trial})

    metrics = stage_metrics([episode(0, 1.0), episode(1, 0.0, violations=2.0)], "CustomerSupport-v0")
    assert metrics["policy_violations_rate"] == 0.5 and metrics["success"] == 0.5 and "recall" not in metrics
    sampled = [episode(0, 1.0), episode(0, 0.9, trial=1), episode(1, 1.0), episode(1, 0.0, trial=1)]
    assert pass_k_per_task(sampled, 1) == {"s0": 1.0, "s1": 0.5} and pass_k_per_task(sampled, 2) == {"s0": 1.0, "s1": 0.0}
    worse = [episode(0, 0.0), episode(0, 0.0, trial=1), episode(1, 1.0), episode(1, 0.0, trial=1)]
    changes = {c.metric: c for c in pass_k_changes(sampled, worse, 2)}
    assert changes["pass^2"].before == 0.5 and changes["pass^2"].after == 0.0 and changes["pass^1"].difference == -0.5
    with pytest.raises(ValueError, match="trains on"):
        ToolsDemoConfig(env_id="Summarize-v0")
