"""The GRPO loop end to end on a tiny random Llama: one step trains only the adapter and logs
every metric; flat groups are skipped and failed groups dropped and counted; the trainer's
log-probabilities equal the sampler's; and a few dozen steps raise a scripted reward."""

from __future__ import annotations

import importlib.util
import json
import math
import random
import string
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from judgegym.judges.base import JudgeScore, Verifier
from judgegym.judges.llm import JudgeError, Usage
from judgegym.trainers import GRPOConfig, GRPOTrainer, TransformersBackend
from judgegym.trajectory import Trajectory

SMALL_RAG = {"n_products": 20, "n_worlds": 1}


class ScriptedJudge(Verifier):
    """A verifier whose reward is whatever `reward(trajectory)` says (it may raise)."""

    def __init__(self, reward: Callable[[Trajectory], float]):
        self.reward = reward

    def verify(self, trajectory: Trajectory) -> JudgeScore:
        score = self.reward(trajectory)
        return JudgeScore(score=score, components={"scripted": score, "answer_words": float(len(trajectory.final_answer.split()))})


class MeteredJudge(ScriptedJudge):
    """A scripted judge that reports LLM usage the way `RulerJudge` does (a running `usage`)."""

    def __init__(self, reward: Callable[[Trajectory], float]):
        super().__init__(reward)
        self.usage = Usage()

    def verify(self, trajectory: Trajectory) -> JudgeScore:
        self.usage.add(Usage(calls=1, prompt_tokens=100, completion_tokens=10, cost=0.001))
        return super().verify(trajectory)


class RecordingBackend(TransformersBackend):
    """The transformers backend, counting the tokens it sampled."""

    sampled = 0

    def generate(self, prompts, sampling):
        ids, logprobs = super().generate(prompts, sampling)
        self.sampled += sum(len(row) for row in ids)
        return ids, logprobs


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """Every test here runs a tiny model (see conftest.one_thread)."""


def make_config(tmp_path: Path, model: str, **overrides) -> GRPOConfig:
    options = {
        "model": model,
        "env_kwargs": dict(SMALL_RAG),
        "scenarios_per_step": 2,
        "group_size": 2,
        "max_new_tokens": 8,
        "max_turns": 2,
        "max_steps": 1,
        "eval_steps": 0,
        "save_steps": 0,
        "output_dir": str(tmp_path / "run"),
        "mixed_precision": "no",  # exact float32 math; the bf16 update has its own test
        "generation_dtype": "training",  # the sampler is the trainer; the bf16 generation copy has its own test
    }
    return GRPOConfig(**{**options, **overrides})


def text_hash_reward(trajectory: Trajectory) -> float:
    """Distinct answers get distinct rewards, so groups are (almost surely) not flat."""
    return random.Random(f"{trajectory.seed}/{trajectory.final_answer}").random()


def parameters(model) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


STEP_METRICS = [
    "reward",
    "reward_std",
    "frac_reward_zero_std",
    "rewards/scripted/mean",
    "rewards/answer_words/mean",
    "completions/mean_length",
    "completions/clipped_ratio",
    "clip_ratio/low_mean",
    "clip_ratio/high_mean",
    "clip_ratio/region_mean",
    "entropy",
    "tools/call_frequency",
    "tools/failure_frequency",
    "num_failed_groups",
    "num_zero_std_groups",
    "learning_rate",
    "grad_norm",
    "loss",
    "timing/generate_s",
    "timing/judge_s",
    "timing/train_s",
    "step_time_s",
    "sampling/sampling_logp_difference/max",
]


@pytest.mark.slow
def test_one_step_trains_only_the_adapter_and_logs_every_metric(tmp_path, tiny_model):
    config = make_config(tmp_path, tiny_model, eval_steps=1, eval_episodes=2, save_steps=1)
    trainer = GRPOTrainer(config, judge=MeteredJudge(text_hash_reward))
    trainer.backend = backend = RecordingBackend(trainer.model, trainer.tokenizer, trainer.device)
    before = parameters(trainer.model)

    history = trainer.train()

    after = parameters(trainer.model)
    lora = [name for name in before if "lora_" in name]
    assert lora and all(not torch.equal(before[n], after[n]) for n in lora if "lora_B" in n)
    assert all(torch.equal(before[n], after[n]) for n in before if "lora_" not in n), "base weights must stay frozen"

    record = history[-1]
    assert record["step"] == 1
    missing = [k for k in STEP_METRICS if k not in record]
    assert not missing, f"metrics missing: {missing}"
    for key in [*STEP_METRICS, "eval/reward", "eval/success"]:
        assert isinstance(record[key], int | float) and math.isfinite(record[key]), f"{key} = {record[key]!r}"
    assert record["num_trained_sequences"] == 4  # both groups informative
    assert (record["judge/calls"], record["judge/prompt_tokens"], record["judge/cost"]) == (4, 400, pytest.approx(0.004))

    # token bookkeeping: the mask covers exactly what the backend sampled
    episodes = trainer.last_rollout
    assert [e.seed for e in episodes] == [s for s in trainer.scenario_seeds(0, 2) for _ in range(2)]
    assert sum(e.tokens.num_sampled for e in episodes) == backend.sampled == record["num_trained_tokens"]
    assert record["completions/mean_length"] == pytest.approx(backend.sampled / 4)
    for episode in episodes:
        tokens = episode.tokens
        assert all((logprob != 0.0) == bool(m) for logprob, m in zip(tokens.sampler_logprobs, tokens.loss_mask, strict=True))
        assert tokens.num_sampled <= episode.turns * config.max_new_tokens
        assert episode.trajectory.reward is not None

    # files: the log (eval at step 0 and at the end), checkpoint, best and last weights, plot
    lines = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [0, 1]
    assert "eval/reward" in lines[0] and "eval/reward" in lines[1]
    assert {"eval/recall", "eval/citation", "eval/turns"} <= set(lines[1])  # the eval judge's components
    from judgegym.trajectory import read_jsonl

    for step, line in enumerate(lines):
        judged = read_jsonl(tmp_path / "run" / "eval" / f"step-{step}.jsonl")
        assert len(judged) == 2 and line["eval/reward"] == pytest.approx(sum(t.reward for t in judged) / 2)
    for folder in ("best", "last", "checkpoints/step-1/adapter"):
        assert (tmp_path / "run" / folder / "adapter_config.json").is_file(), folder
    assert (tmp_path / "run" / "reward.png").stat().st_size > 0


def test_flat_groups_are_skipped_and_failed_groups_dropped_and_counted(tmp_path, tiny_model):
    trainer = GRPOTrainer(make_config(tmp_path, tiny_model, scenarios_per_step=3, max_steps=3), judge=ScriptedJudge(lambda t: 0.0))
    flat, failing, informative = trainer.scenario_seeds(0, 3)
    next_informative = iter([0.0, 1.0])

    def scripted(trajectory: Trajectory) -> float:
        if trajectory.seed == flat:
            return 0.5
        if trajectory.seed == failing:
            raise JudgeError("scripted failure")
        assert trajectory.seed == informative
        return next(next_informative)

    trainer.judge = ScriptedJudge(scripted)
    before = parameters(trainer.model)
    record = trainer.train_step()
    assert (record["num_failed_groups"], record["num_zero_std_groups"], record["num_trained_sequences"]) == (1, 1, 2)
    assert record["reward"] == pytest.approx(0.5)  # kept rewards 0.5, 0.5, 0, 1: the failed group is not zeros
    assert record["frac_reward_zero_std"] == 0.5
    assert [e.trajectory.reward for e in trainer.last_rollout if e.seed == failing] == [None, None]
    trained = parameters(trainer.model)
    assert any(not torch.equal(before[n], trained[n]) for n in before)

    trainer.judge = ScriptedJudge(lambda t: 0.3)  # every group flat: no update at all
    record = trainer.train_step()
    assert (record["num_zero_std_groups"], record["num_trained_sequences"], record["loss"], record["grad_norm"]) == (3, 0, 0.0, 0.0)
    assert all(torch.equal(trained[n], p) for n, p in parameters(trainer.model).items())

    def always_fails(trajectory: Trajectory) -> float:
        raise JudgeError("judge down")

    trainer.judge = ScriptedJudge(always_fails)
    record = trainer.train_step()
    assert record["num_failed_groups"] == 3 and math.isnan(record["reward"]) and record["num_trained_sequences"] == 0
    assert trainer.state.step == 3 and trainer.state.cursor == 9


def test_a_rollout_frees_the_kv_caches_its_ended_episodes_kept(tmp_path, tiny_model):
    """The update after a rollout does not hold the KV caches kept for turns that never come."""
    trainer = GRPOTrainer(make_config(tmp_path, tiny_model), judge=ScriptedJudge(lambda t: 0.0))
    cache = trainer.backend.prefix_cache
    assert cache is not None
    kept, keep = [], cache.keep
    cache.keep = lambda *args, **kwargs: (keep(*args, **kwargs), kept.append(cache.cached_tokens))
    trainer.rollout(1, 0)
    assert kept and max(kept) > 0 and cache.cached_tokens == 0


def test_oversample_plays_more_groups_and_trains_on_those_with_the_widest_spread(tmp_path, tiny_model):
    config = make_config(tmp_path, tiny_model, scenarios_per_step=1, oversample=2, max_steps=2)
    assert config.played_per_step == 3
    trainer = GRPOTrainer(config, judge=ScriptedJudge(lambda t: 0.0))
    flat, narrow, wide = trainer.scenario_seeds(0, 3)
    rewards = {flat: iter([0.5, 0.5]), narrow: iter([0.4, 0.6]), wide: iter([0.0, 1.0])}
    trainer.judge = ScriptedJudge(lambda t: next(rewards[t.seed]))
    record = trainer.train_step()
    assert {e.seed for e in trainer.last_rollout} == {flat, narrow, wide}  # B + oversample groups played
    assert (record["num_zero_std_groups"], record["num_trained_groups"], record["num_trained_sequences"]) == (1, 1, 2)
    assert record["reward"] == pytest.approx(0.5) and trainer.state.cursor == 3  # the cursor moves past every played group
    trainer.judge = ScriptedJudge(lambda t: 0.3)  # nothing with spread: nothing trained, the step still counts
    record = trainer.train_step()
    assert (record["num_trained_groups"], record["num_trained_sequences"], trainer.state.cursor) == (0, 0, 6)
    with pytest.raises(ValueError, match="oversample must be >= 0"):
        make_config(tmp_path, tiny_model, oversample=-1)


def test_trainer_logprobs_match_the_sampler_at_step_start(tmp_path, tiny_model):
    """Multi-turn episodes (the simulated customer answers every text turn), temperature 0.7,
    micro-batches padded differently from the generation batch: the trainer's forward pass
    must reproduce the sampler's log-probabilities, which checks temperature and shifting."""
    config = make_config(
        tmp_path,
        tiny_model,
        env_id="CustomerSupport-v0",
        env_kwargs={},
        max_turns=3,
        temperature=0.7,
        micro_batch_size=3,
        importance_sampling="truncate",
    )
    trainer = GRPOTrainer(config, judge=ScriptedJudge(text_hash_reward))
    record = trainer.train_step()
    assert any(e.turns >= 2 for e in trainer.last_rollout)
    assert record["num_trained_tokens"] > 10
    assert record["sampling/sampling_logp_difference/max"] < 1e-3
    assert record["is/frac_capped"] == 0.0 and record["is/weight_mean"] == pytest.approx(1.0, abs=1e-3)


def test_a_bf16_update_trains_on_the_same_rollouts_with_nearly_the_same_numbers(tmp_path, tiny_model):
    """mixed_precision='bf16' runs the update's forward and backward under bf16 autocast; the
    rollouts (sampled in float32) are the same, and the loss and the trainer's log-probabilities
    stay close to float32's (the log-softmax runs on float32 logits)."""
    records = {}
    for mode in ("no", "bf16"):
        config = make_config(tmp_path / mode, tiny_model, mixed_precision=mode, temperature=0.7, importance_sampling="truncate")
        trainer = GRPOTrainer(config, judge=ScriptedJudge(text_hash_reward))
        records[mode] = trainer.train_step()
        records[mode]["samples"] = [e.tokens.completion_ids for e in trainer.last_rollout]
    assert records["bf16"]["samples"] == records["no"]["samples"] and records["no"]["num_trained_tokens"] > 10
    assert records["no"]["sampling/sampling_logp_difference/max"] < 1e-3
    assert records["bf16"]["sampling/sampling_logp_difference/max"] < 0.2
    assert records["bf16"]["loss"] == pytest.approx(records["no"]["loss"], abs=0.05)
    assert records["bf16"]["grad_norm"] == pytest.approx(records["no"]["grad_norm"], rel=0.1)
    with pytest.raises(ValueError, match="mixed_precision must be 'auto', 'no' or 'bf16'"):
        GRPOConfig(mixed_precision="fp8")


def test_shared_prompts_are_prefilled_once_with_the_same_samples(tiny_model, monkeypatch):
    """A group's first turn: G rows share a prompt. Reading it once and copying its KV cache
    must sample exactly what reading it per row samples, with the same log-probabilities."""
    from judgegym.agents.batching import Sampling
    from judgegym.agents.hf import load_model

    model, tokenizer = load_model(str(tiny_model), torch.float32)
    backend = TransformersBackend(model, tokenizer, "cpu", kv_reuse=False)
    prompts = [[5, 6, 7, 8, 9]] * 3 + [[11, 12]] * 2 + [[13, 14, 15]]  # uneven lengths: left padding differs
    sampling = Sampling(temperature=0.9, top_p=1.0, max_tokens=6, seed=3)
    calls = []
    prefill = TransformersBackend._prefill

    def counting_prefill(self, unique_ids, *args):
        calls.append(unique_ids.shape[0])
        return prefill(self, unique_ids, *args)

    monkeypatch.setattr(TransformersBackend, "_prefill", counting_prefill)
    shared = backend.generate(prompts, sampling)
    assert calls == [3]  # three distinct prompts read, for six rows
    monkeypatch.setattr(TransformersBackend, "_prefill", lambda self, *args: None)
    separate = backend.generate(prompts, sampling)
    assert shared[0] == separate[0]
    for row_shared, row_separate in zip(shared[1], separate[1], strict=True):
        assert row_shared == pytest.approx(row_separate, abs=1e-4)
    assert shared[0][0] != shared[0][1] or shared[0][1] != shared[0][2]  # the group's members still differ


@pytest.mark.parametrize("max_cached_tokens", [32_768, 40])
def test_kv_reuse_across_turns_samples_what_rereading_samples(tiny_model, max_cached_tokens):
    """Episodes at different lengths over four turns, the env adding a different number of
    tokens to each and one episode ending: keeping each episode's KV cache samples the same ids
    with the same log-probabilities as re-reading every prompt, frees the ended episode's
    cache, and, with a cap too small for the caches, falls back to re-reading."""
    import random

    from judgegym.agents.batching import Sampling
    from judgegym.agents.hf import load_model

    model, tokenizer = load_model(str(tiny_model), torch.float32)
    reuse = TransformersBackend(model, tokenizer, "cpu", max_cached_tokens=max_cached_tokens)
    plain = TransformersBackend(model, tokenizer, "cpu", kv_reuse=False)
    rng = random.Random(0)
    prompts = [[5, 6, 7, 8, 9]] * 2 + [[11, 12]] * 2 + [[13, 14, 15]]
    for turn in range(4):
        sampling = Sampling(temperature=1.0, top_p=1.0, max_tokens=6, seed=turn)
        (ids, logprobs), (plain_ids, plain_logprobs) = reuse.generate(prompts, sampling), plain.generate(prompts, sampling)
        assert ids == plain_ids
        for row, plain_row in zip(logprobs, plain_logprobs, strict=True):
            assert row == pytest.approx(plain_row, abs=1e-4)
        prompts = [p + sample + [rng.randrange(3, 40) for _ in range(rng.randint(1, 9))] for p, sample in zip(prompts, ids, strict=True)]
        if turn == 1:
            prompts.pop(2)  # that episode ended
    stats, cache = reuse.prefix_cache.stats, reuse.prefix_cache
    if max_cached_tokens > 1000:
        assert stats.reused_tokens > 2 * stats.prefilled_tokens and stats.evicted_tokens == 0
        assert len(cache._entries) == len(prompts)  # one per live episode: the ended one's was freed
    else:
        assert stats.evicted_tokens > 0 and cache.cached_tokens <= max_cached_tokens
    reuse.sync_weights(model)
    assert cache.cached_tokens == 0  # new weights: every kept cache is stale


def test_generation_copy_is_the_merged_model_and_follows_each_step(tiny_model):
    """A `GenerationCopy` in float32 computes the training model's logits with LoRA merged in,
    takes the new weights at `refresh`, and never modifies the training model; in bfloat16 it
    stays close."""
    from peft import LoraConfig, get_peft_model

    from judgegym.agents.generation_copy import GenerationCopy
    from judgegym.agents.hf import load_model
    from judgegym.models import peft_quietly

    model, _ = load_model(str(tiny_model), torch.float32)
    with peft_quietly():
        peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"]))
    ids = torch.tensor([[5, 6, 7, 8, 9, 10, 11]])

    def logits(m):
        with torch.no_grad():
            return m(input_ids=ids).logits.float()

    exact, rounded = GenerationCopy(peft_model, torch.float32), GenerationCopy(peft_model, torch.bfloat16)
    for step in range(2):
        with torch.no_grad():  # an optimizer step: the adapter moves
            for name, param in peft_model.named_parameters():
                if "lora_" in name:
                    param.add_(torch.randn_like(param) * 0.5)
        assert not torch.allclose(logits(exact.model), logits(peft_model), atol=1e-3)  # stale until refreshed
        exact.refresh(peft_model)
        rounded.refresh(peft_model)
        assert torch.allclose(logits(exact.model), logits(peft_model), atol=1e-4), step
        assert (logits(rounded.model) - logits(peft_model)).abs().max() < 0.1
    assert rounded.model.dtype == torch.bfloat16 and not hasattr(exact.model, "peft_config")
    assert any("lora_A" in name for name, _ in peft_model.named_parameters())  # the training model keeps its adapter


def test_grpo_samples_with_a_bfloat16_copy_and_corrects_the_difference(tmp_path, tiny_model):
    """generation_dtype='bfloat16': the backend samples with a merged bfloat16 copy, refreshed
    after the step; the sampler's log-probabilities differ a little from the trainer's, so
    truncated importance sampling is on by default."""
    config = make_config(tmp_path, tiny_model, generation_dtype="bfloat16", max_steps=2)
    trainer = GRPOTrainer(config, judge=ScriptedJudge(text_hash_reward))
    backend = trainer.backend
    assert backend.model is not trainer.model and backend.model.dtype == torch.bfloat16
    assert trainer.importance_sampling == "truncate"
    before = {n: p.clone() for n, p in backend.model.named_parameters()}
    record = trainer.train_step()
    assert record["num_trained_tokens"] > 0
    assert 0 < record["sampling/sampling_logp_difference/max"] < 0.5
    assert any(not torch.equal(before[n], p) for n, p in backend.model.named_parameters())  # refreshed after the step


def test_growing_cache_layer_holds_what_concatenation_holds():
    """`GrowingLayer` writes steps into reserved space (and grows past it): its keys and values
    are those `DynamicLayer`'s concatenation gives, also after selecting rows."""
    from transformers.cache_utils import DynamicLayer

    from judgegym.agents.prefix_cache import growing_layer_class

    growing_cls = growing_layer_class()
    first = torch.randn(3, 2, 5, 4), torch.randn(3, 2, 5, 4)
    buffers = [torch.zeros(3, 2, 7, 4), torch.zeros(3, 2, 7, 4)]
    buffers[0][..., :5, :], buffers[1][..., :5, :] = first
    growing, plain = growing_cls(*buffers, 5), DynamicLayer()
    plain.update(*first)
    for length in (1, 1, 3, 1):  # past the 7 reserved positions: the buffers grow
        step = torch.randn(3, 2, length, 4), torch.randn(3, 2, length, 4)
        got, want = growing.update(*step), plain.update(*step)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    assert growing.get_seq_length() == plain.get_seq_length() == 11
    growing.batch_select_indices(torch.tensor([2, 0]))
    plain.batch_select_indices(torch.tensor([2, 0]))
    step = torch.randn(2, 2, 1, 4), torch.randn(2, 2, 1, 4)
    got, want = growing.update(*step), plain.update(*step)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def digit_share(trajectory: Trajectory) -> float:
    words = trajectory.final_answer.split()
    return sum(w in string.digits for w in words) / max(len(words), 1)


@pytest.mark.slow  # about 15 s: dozens of GRPO steps
def test_a_few_dozen_steps_raise_the_reward(tmp_path, tiny_model):
    """A real learning signal: the reward is the share of digits in the answer (about 1 in 10
    tokens at random). The adapter includes the output head: in a tiny random model the
    hidden state is RMS-normalised and the head's weights are tiny, so adapters on the blocks
    alone can move the logits by less than 1."""
    config = make_config(
        tmp_path,
        tiny_model,
        scenarios_per_step=2,
        group_size=4,
        max_new_tokens=6,
        max_turns=1,
        max_steps=16,
        learning_rate=3e-2,
        lora_r=8,
        lora_target_modules=["q_proj", "v_proj", "down_proj", "lm_head"],
    )
    rewards = [record["reward"] for record in GRPOTrainer(config, judge=ScriptedJudge(digit_share)).train()]
    first, last = sum(rewards[:4]) / 4, sum(rewards[-4:]) / 4
    assert last > first + 0.3, f"reward did not rise: {[round(r, 2) for r in rewards]}"


def test_tensorboard_without_the_package_warns_and_training_goes_on(tmp_path, tiny_model):
    if importlib.util.find_spec("tensorboard") is not None:
        pytest.skip("tensorboard is installed; this checks the warning when it is not")
    trainer = GRPOTrainer(make_config(tmp_path, tiny_model, tensorboard=True), judge=ScriptedJudge(text_hash_reward))
    with pytest.warns(UserWarning, match="tensorboard package is not installed"):
        history = trainer.train()
    assert [r["step"] for r in history] == [1]


def test_config_errors_say_what_to_change():
    with pytest.raises(ValueError, match="group_size must be >= 1"):
        GRPOConfig(group_size=0)
    with pytest.raises(ValueError, match="beta > 0 needs use_lora=True"):
        GRPOConfig(beta=0.1, use_lora=False)
    with pytest.raises(ValueError, match="env_kwargs may not set"):
        GRPOConfig(env_kwargs={"max_turns": 3})
    with pytest.raises(ValueError, match="eval_env_kwargs may not set"):
        GRPOConfig(eval_env_kwargs={"defer_judging": False})
    with pytest.raises(ValueError, match="temperature must be > 0"):
        GRPOConfig(temperature=0.0)
    assert GRPOConfig().effective_learning_rate == 1e-4 and GRPOConfig(use_lora=False).effective_learning_rate == 1e-5
    assert all(GRPOConfig.help().values()), "every field has a help text"


def test_auto_mixed_precision_is_bf16_only_where_native_and_the_log_says_which(monkeypatch, caplog):
    from judgegym.trainers import device

    for native, dtype, expected in ((True, torch.float32, "bf16"), (False, torch.float32, "no"), (True, torch.bfloat16, "no")):
        monkeypatch.setattr(device, "native_bf16", lambda device, native=native: native)
        with caplog.at_level("INFO", logger="judgegym.trainers"):
            assert device.resolve_mixed_precision("auto", "cpu", dtype) == expected
        assert f"mixed precision: {expected}" in caplog.text
        caplog.clear()
        line = device.precision_line(expected, "cpu", dtype)
        assert ("bf16 autocast" in line) == (expected == "bf16")
        if not native:
            assert "has no native bfloat16" in line
    assert GRPOConfig().mixed_precision == "auto"


def test_a_curriculum_trains_on_some_scenarios_and_is_judged_on_all():
    from judgegym.trainers.loop import held_out_env_kwargs
    from judgegym.trainers.sft import SFTConfig

    curriculum = GRPOConfig(env_kwargs={"kinds": ["multi_hop"], "prefetch_k": 1}, eval_env_kwargs={"prefetch_k": 1})
    assert held_out_env_kwargs(curriculum) == {"prefetch_k": 1}
    assert held_out_env_kwargs(GRPOConfig(env_kwargs={"kinds": ["multi_hop"]})) == {"kinds": ["multi_hop"]}
    assert held_out_env_kwargs(GRPOConfig(env_kwargs={"kinds": ["multi_hop"]}, eval_env_kwargs={})) == {}
    assert held_out_env_kwargs(SFTConfig(env_kwargs={"prefetch_k": 2})) == {"prefetch_k": 2}
