"""The vLLM rollout backend against the vLLM stand-in (judgegym/testing/vllm_offline.py), which samples
the tiny random Llama the way vLLM does: a group's identical prompts go as one ``n=G``
request, samples come back in prompt order with the sampled tokens' temperature-scaled
log-probabilities, seeds reproduce, the trained adapter is hot-swapped under fresh ids, and
a GRPO run with ``backend="vllm"`` trains on what the engine sampled. No GPU, no vLLM."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
import torch

from judgegym.agents.batching import Sampling
from judgegym.judges.base import JudgeScore, Verifier
from judgegym.testing import vllm_offline
from judgegym.testing.vllm_offline import CompletionOutput, Logprob, RequestOutput
from judgegym.trainers import GRPOConfig, GRPOTrainer, VLLMBackend, make_envs, play_groups, selective_log_softmax
from judgegym.trainers.vllm_rollout import LOGPROBS_MODE
from judgegym.trajectory import Trajectory

A, B, C = [2, 10, 11, 12], [2, 13, 14], [2, 10, 11, 12, 15]  # token-id prompts; C extends A


@pytest.fixture
def standin(monkeypatch, one_thread):
    """``import vllm`` gives the stand-in; the tiny model runs on one thread."""
    return vllm_offline.install(monkeypatch)


def make_backend(tiny_model: str, tmp_path: Path, **kwargs) -> VLLMBackend:
    return VLLMBackend(tiny_model, work_dir=tmp_path / "vllm", lora_rank=8, dtype="float32", **kwargs)


def engine() -> vllm_offline.LLM:
    (llm,) = vllm_offline.LLM.instances
    return llm


def trainer_logprobs(model, prompt: list[int], ids: list[int], temperature: float) -> list[float]:
    """What the trainer computes for a sample: log softmax(logits / temperature) of each id."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + ids])).logits[0, len(prompt) - 1 : -1]
    return selective_log_softmax(logits, torch.tensor(ids), temperature).tolist()


def peft_model(folder: str):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from judgegym.models import peft_quietly

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(folder).eval()
    with peft_quietly():
        return get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))


# -- requests -----------------------------------------------------------------------------


def test_identical_prompts_go_as_one_request_and_samples_come_back_in_prompt_order(standin, tiny_model, tmp_path):
    backend = make_backend(tiny_model, tmp_path, gpu_memory_utilization=0.25, max_model_len=512)
    llm = engine()
    assert llm.model == tiny_model
    assert llm.engine_args["logprobs_mode"] == LOGPROBS_MODE == "processed_logprobs"
    assert llm.engine_args["enable_prefix_caching"] and llm.engine_args["enable_lora"] and llm.engine_args["max_lora_rank"] == 8
    assert (llm.engine_args["gpu_memory_utilization"], llm.engine_args["max_model_len"]) == (0.25, 512)

    prompts = [A, A, A, B, A, B, C]
    ids, logprobs = backend.generate(prompts, Sampling(temperature=1.0, max_tokens=6, seed=3))

    (call,) = llm.calls  # one generate call for the whole round
    assert call["prompts"] == [{"prompt_token_ids": A}, {"prompt_token_ids": B}, {"prompt_token_ids": C}]
    assert [p.n for p in call["params"]] == [4, 2, 1]
    assert all(p.logprobs == 0 and p.top_k == -1 and p.max_tokens == 6 and p.temperature == 1.0 for p in call["params"])
    # the engine is deterministic per seed: replay the call and check where each sample went
    replay = llm.generate(call["prompts"], call["params"], use_tqdm=False)
    expected = {0: (0, 0), 1: (0, 1), 2: (0, 2), 4: (0, 3), 3: (1, 0), 5: (1, 1), 6: (2, 0)}
    for row, (request, sample) in expected.items():
        assert ids[row] == replay[request].outputs[sample].token_ids, row
    assert len({tuple(ids[row]) for row in (0, 1, 2, 4)}) > 1, "the n samples of a request differ"
    assert [len(x) for x in logprobs] == [len(x) for x in ids]


def test_a_rollout_round_is_one_generate_call_with_n_equal_group_size_first(standin, tiny_model, tmp_path):
    from transformers import AutoTokenizer

    backend = make_backend(tiny_model, tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    envs = make_envs("RagSupport-v0", 6, {"n_products": 20, "n_worlds": 1}, max_turns=3)
    episodes = play_groups(backend, tokenizer, envs, [11, 12], Sampling(temperature=1.0, max_tokens=8, seed=5))

    calls = engine().calls
    assert len(calls) == max(e.turns for e in episodes)  # one generate call per round
    assert [p.n for p in calls[0]["params"]] == [3, 3]  # the members of a group share their first prompt
    assert all(p.n == 1 for call in calls[1:] for p in call["params"])  # later turns have diverged
    assert sum(p.n for call in calls for p in call["params"]) == sum(e.turns for e in episodes)
    for episode in episodes:
        sampled = [lp for lp, m in zip(episode.tokens.sampler_logprobs, episode.tokens.loss_mask, strict=True) if m]
        assert len(sampled) == episode.tokens.num_sampled and all(lp < 0 for lp in sampled)


# -- what comes back ----------------------------------------------------------------------


def test_logprobs_are_the_sampled_tokens_under_the_temperature_and_eos_ends_a_sample(standin, tiny_model, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    backend = make_backend(tiny_model, tmp_path)
    model = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
    eos = AutoTokenizer.from_pretrained(tiny_model).eos_token_id

    ids, logprobs = backend.generate([A, B], Sampling(temperature=0.7, max_tokens=12, seed=1))
    for prompt, sample, sample_logprobs in zip([A, B], ids, logprobs, strict=True):
        assert len(sample) == 12 or sample[-1] == eos
        assert sample_logprobs == pytest.approx(trainer_logprobs(model, prompt, sample, 0.7), abs=1e-5)

    # near-uniform sampling (temperature 30): the model emits EOS by itself, which ends the sample
    ids, logprobs = backend.generate([A] * 4, Sampling(temperature=30.0, max_tokens=40, seed=0))
    assert any(sample[-1] == eos for sample in ids)
    for sample, sample_logprobs in zip(ids, logprobs, strict=True):
        assert eos not in sample[:-1] and len(sample) <= 40
        assert (sample[-1] == eos) or len(sample) == 40
        assert sample_logprobs == pytest.approx(trainer_logprobs(model, A, sample, 30.0), abs=1e-5)


def test_the_sampled_tokens_entry_is_read_from_each_positions_dict(standin, tiny_model, tmp_path):
    """vLLM's position dicts can hold top-k entries besides the sampled token, and a request's
    n samples are matched by their ``index``."""
    backend = make_backend(tiny_model, tmp_path)

    def completion(index: int, ids: list[int]) -> CompletionOutput:
        # each position: the sampled token (rank 3) and two likelier tokens
        positions = [{t: Logprob(-0.1 * t, 3), 40: Logprob(-0.01, 1), 41: Logprob(-0.02, 2)} for t in ids]
        return CompletionOutput(index, "", ids, logprobs=positions, finish_reason="stop")

    def scripted(prompts, params, **kwargs):
        return [RequestOutput("0", None, A, [completion(1, [7, 8, 3]), completion(0, [5, 3])])]

    backend.llm.generate = scripted
    ids, logprobs = backend.generate([A, A], Sampling(temperature=1.0, max_tokens=8))
    assert ids == [[5, 3], [7, 8, 3]]
    assert logprobs == [pytest.approx([-0.5, -0.3]), pytest.approx([-0.7, -0.8, -0.3])]

    def missing(prompts, params, **kwargs):
        return [RequestOutput("0", None, A, [CompletionOutput(0, "", [5, 3], logprobs=[{5: Logprob(-1.0)}, {4: Logprob(-2.0)}])])]

    backend.llm.generate = missing
    with pytest.raises(RuntimeError, match="lack the sampled token 3"):
        backend.generate([A], Sampling(temperature=1.0, max_tokens=8))


def test_same_seed_same_samples_and_every_request_has_its_own_seed(standin, tiny_model, tmp_path):
    backend = make_backend(tiny_model, tmp_path)
    prompts = [A, A, B, B, C]
    first = backend.generate(prompts, Sampling(temperature=1.0, max_tokens=10, seed=42))
    again = backend.generate(prompts, Sampling(temperature=1.0, max_tokens=10, seed=42))
    other = backend.generate(prompts, Sampling(temperature=1.0, max_tokens=10, seed=43))
    assert first == again
    assert first[0] != other[0]

    params = engine().calls[0]["params"]
    assert [p.seed for p in params] == [p.seed for p in engine().calls[1]["params"]]
    # vLLM seeds the n samples of a request seed, seed + 1, ...: no two requests may overlap
    spans = [set(range(p.seed, p.seed + p.n)) for p in params]
    assert all(not (spans[i] & spans[j]) for i in range(3) for j in range(i + 1, 3))

    with pytest.raises(ValueError, match="temperature must be > 0"):
        backend.generate(prompts, Sampling(temperature=0.0, max_tokens=4))


# -- weights ------------------------------------------------------------------------------


def test_sync_weights_serves_each_adapter_under_a_fresh_id(standin, tiny_model, tmp_path):
    backend = make_backend(tiny_model, tmp_path)
    model = peft_model(tiny_model)
    sampling = Sampling(temperature=1.0, max_tokens=6, seed=0)

    backend.sync_weights(model)
    first = backend.lora_request
    before = backend.generate([A], sampling)
    with torch.no_grad():  # an optimizer step, as far as the adapter is concerned
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.add_(torch.randn_like(parameter) * 5)
    backend.sync_weights(model)
    second = backend.lora_request
    after = backend.generate([A], sampling)

    assert (first.lora_int_id, second.lora_int_id) == (1, 2)
    assert [path.name for path in backend.adapters_dir.iterdir()] == ["adapter-2"]  # the old folder is gone
    assert (Path(second.lora_path) / "adapter_config.json").is_file()
    llm = engine()
    assert llm.prefix_cache_resets == 2
    assert [call["lora_request"] for call in llm.calls] == [first, second]
    assert [adapter_id for adapter_id, _ in llm.loaded_adapters] == [1, 2]
    assert before[1] != after[1], "the engine samples with the new adapter's weights"
    assert after[1][0] == pytest.approx(trainer_logprobs(model, A, after[0][0], 1.0), abs=1e-5)

    from transformers import AutoModelForCausalLM

    with pytest.raises(ValueError, match="LoRA adapter"):
        backend.sync_weights(AutoModelForCausalLM.from_pretrained(tiny_model))


# -- the trainer --------------------------------------------------------------------------


class HashJudge(Verifier):
    """Distinct answers get distinct rewards, so groups are (almost surely) not flat."""

    def verify(self, trajectory: Trajectory) -> JudgeScore:
        return JudgeScore(score=random.Random(f"{trajectory.seed}/{trajectory.final_answer}").random())


def vllm_config(tmp_path: Path, model: str, **overrides) -> GRPOConfig:
    options = {
        "model": model,
        "backend": "vllm",
        "importance_sampling": "truncate",
        "env_kwargs": {"n_products": 20, "n_worlds": 1},
        "scenarios_per_step": 2,
        "group_size": 2,
        "max_new_tokens": 8,
        "max_turns": 2,
        "max_steps": 2,
        "eval_steps": 0,
        "save_steps": 0,
        "output_dir": str(tmp_path / "run"),
        "mixed_precision": "no",
    }
    return GRPOConfig(**{**options, **overrides})


def test_grpo_trains_two_steps_on_vllm_samples_with_the_hot_swapped_adapter(standin, tiny_model, tmp_path):
    config = vllm_config(tmp_path, tiny_model, temperature=0.7, learning_rate=5e-2)
    trainer = GRPOTrainer(config, judge=HashJudge())
    assert isinstance(trainer.backend, VLLMBackend)
    llm = engine()
    assert llm.engine_args["gpu_memory_utilization"] == 0.3 and llm.engine_args["dtype"] == "float32"
    assert llm.engine_args["max_lora_rank"] == 16 and "max_model_len" not in llm.engine_args
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_B" in n}

    history = trainer.train()

    assert [r["step"] for r in history] == [1, 2]
    for record in history:
        assert record["num_trained_tokens"] > 0 and record["grad_norm"] > 0
        # the engine sampled with the adapter the trainer had at that step (a stale adapter
        # after step 1 shows up here as a difference of about 0.5)
        assert record["sampling/sampling_logp_difference/max"] < 1e-3
        assert record["is/frac_capped"] == 0.0 and record["is/weight_mean"] == pytest.approx(1.0, abs=1e-3)
    assert any(not torch.equal(before[n], p) for n, p in trainer.model.named_parameters() if n in before)
    # adapter 1 at start, 2 after step 1, 3 after step 2; each step's rollouts used the newest
    assert [adapter_id for adapter_id, _ in llm.loaded_adapters] == [1, 2]
    assert llm.prefix_cache_resets == 3 and [p.name for p in trainer.backend.adapters_dir.iterdir()] == ["adapter-3"]
    firsts = [call for call in llm.calls if all(p.n == 2 for p in call["params"])]
    assert len(firsts) >= 2  # each step's first round: one n=G request per scenario


def test_a_resumed_run_samples_with_the_checkpointed_adapter(standin, tiny_model, tmp_path):
    options = {"temperature": 0.7, "learning_rate": 5e-2, "save_steps": 1}
    GRPOTrainer(vllm_config(tmp_path, tiny_model, max_steps=1, **options), judge=HashJudge()).train()
    resumed = GRPOTrainer(vllm_config(tmp_path, tiny_model, max_steps=2, resume=True, **options), judge=HashJudge())
    (record,) = resumed.train()
    assert record["step"] == 2
    assert record["sampling/sampling_logp_difference/max"] < 1e-3  # not the base model: the adapter of step 1


def test_vllm_without_importance_sampling_warns(standin, tiny_model, tmp_path):
    with pytest.warns(UserWarning, match="importance_sampling='truncate'"):
        GRPOTrainer(vllm_config(tmp_path, tiny_model, importance_sampling=None), judge=HashJudge())


def test_without_vllm_the_trainer_says_which_extra_to_install(monkeypatch, tmp_path, tiny_model):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm raises ImportError
    config = vllm_config(tmp_path, tiny_model)  # a config alone needs no vLLM
    with pytest.raises(ImportError, match=r"judgegym\[gpu\]"):
        GRPOTrainer(config, judge=HashJudge())
    assert not (tmp_path / "run").exists(), "nothing is loaded or written before the check"


def test_config_errors_for_the_backend():
    with pytest.raises(ValueError, match="backend must be 'transformers', 'vllm' or 'server', got 'sglang'"):
        GRPOConfig(backend="sglang")
    for value in (0.0, 1.5):
        with pytest.raises(ValueError, match=r"gpu_memory_utilization must be in \(0, 1\]"):
            GRPOConfig(gpu_memory_utilization=value)
    with pytest.raises(ValueError, match="max_model_len must be >= 1"):
        GRPOConfig(max_model_len=0)
    with pytest.raises(ValueError, match="backend='vllm' needs use_lora=True") as problems:
        GRPOConfig(backend="vllm", use_lora=False, gpu_memory_utilization=2.0)
    assert "gpu_memory_utilization" in str(problems.value)  # every problem at once
    with pytest.raises(ValueError, match="LoRA ranks up to 512"):
        GRPOConfig(backend="vllm", lora_r=1024)
    assert GRPOConfig(backend="vllm", gpu_memory_utilization=1.0, max_model_len=4096).backend == "vllm"
    help_texts = GRPOConfig.help()
    assert all(help_texts[name] for name in ("backend", "gpu_memory_utilization", "max_model_len"))


@pytest.mark.slow
def test_the_embedded_model_is_written_once_as_a_folder_vllm_loads(standin, tmp_path):
    backend = VLLMBackend("smollm2-135m", work_dir=tmp_path / "vllm", lora_rank=16, dtype="bfloat16")
    folder = tmp_path / "vllm" / "base"
    assert backend.model_path == str(folder) == engine().model
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in folder.iterdir()}
    written = (folder / "model.safetensors").stat().st_mtime_ns
    VLLMBackend("smollm2-135m", work_dir=tmp_path / "vllm", lora_rank=16, dtype="bfloat16")
    assert (folder / "model.safetensors").stat().st_mtime_ns == written  # reused, e.g. on resume
