"""The HTTP rollout backend (`backend="server"`) against the stand-in inference server
(judgegym/testing/vllm_server.py), over real HTTP on loopback: token ids in and out,
a group's shared prompt as one ``n=G`` request, logprobs that match the trainer's, the LoRA
adapter loaded under a fresh name every step, routing to the least busy server, and faults:
a dead server, a slow one, 500s, a failed adapter load, every server gone."""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

import httpx
import pytest
import torch

from judgegym.agents.batching import Sampling
from judgegym.judges.base import JudgeScore, Verifier
from judgegym.testing.vllm_server import StandinServer
from judgegym.trainers import GRPOConfig, GRPOTrainer, selective_log_softmax
from judgegym.trainers.server_rollout import ServerBackend, ServerError, prompt_seed

A, B, C = [2, 10, 11, 12], [2, 13, 14], [2, 10, 11, 12, 15]


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """The tiny model runs fastest on one thread."""


@pytest.fixture
def servers(tiny_model):
    """Two stand-in servers of the tiny model (temperature-scaled logprobs, as the docs tell
    users to start vLLM)."""
    started = [StandinServer(tiny_model, logprobs_mode="processed_logprobs").start() for _ in range(2)]
    yield started
    for server in started:
        server.stop()


def backend_for(urls, model, tmp_path: Path, **kwargs) -> ServerBackend:
    return ServerBackend(urls, model=model, adapter_dir=tmp_path / "adapters", cooldown_s=0.2, **kwargs)


def faults(server, **settings) -> None:
    httpx.post(f"{server.url}/standin/faults", json=settings).raise_for_status()


def stats(server) -> dict:
    return httpx.get(f"{server.url}/standin/stats").json()


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens once the socket closes


def trainer_logprobs(model, prompt, ids, temperature):
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([list(prompt) + list(ids)])).logits[0, len(prompt) - 1 : -1]
    return selective_log_softmax(logits, torch.tensor(ids), temperature).tolist()


def peft_model(folder: str, seed: int = 0):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from judgegym.models import peft_quietly

    torch.manual_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(folder).eval()
    with peft_quietly():
        model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.5)  # an adapter that changes the outputs
    return model.eval()


# -- requests -----------------------------------------------------------------------------


def test_samples_come_as_token_ids_with_the_trainers_logprobs(servers, tiny_model, tmp_path):
    from transformers import AutoModelForCausalLM

    backend = backend_for([servers[0].url], tiny_model, tmp_path)
    assert stats(servers[0])["completions"] == 1  # the start-up probe
    prompts = [A, A, A, B, C]
    ids, logprobs = backend.generate(prompts, Sampling(temperature=0.7, max_tokens=6, seed=3))
    assert stats(servers[0])["completions"] == 1 + 3  # A once with n=3, B, C
    assert len(ids) == 5 and all(1 <= len(row) <= 6 for row in ids)
    assert len({tuple(row) for row in ids[:3]}) > 1  # the n samples of one request differ
    model = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
    for prompt, row, row_logprobs in zip(prompts, ids, logprobs, strict=True):
        assert row_logprobs == pytest.approx(trainer_logprobs(model, prompt, row, 0.7), abs=1e-4)
    # a prompt's samples depend on the prompt and the call's seed, not on its neighbours
    again, _ = backend.generate([C, B], Sampling(temperature=0.7, max_tokens=6, seed=3))
    assert again == [ids[4], ids[3]]
    assert backend.metrics()["server/samples"] == 7 and backend.metrics()["server/retries"] == 0
    backend.close()


def test_prompt_seeds_are_stable_and_differ_by_prompt_and_seed():
    assert prompt_seed(1, A) == prompt_seed(1, list(A))
    assert len({prompt_seed(1, A), prompt_seed(2, A), prompt_seed(1, B), prompt_seed(1, C)}) == 4


def test_requests_go_to_the_server_with_fewest_outstanding(servers, tiny_model, tmp_path):
    backend = backend_for([s.url for s in servers], tiny_model, tmp_path, max_concurrent_requests=2)
    faults(servers[0], delay_s=0.5)  # a slow server: it holds its requests longer
    prompts = [[2, 10 + i % 20, 11 + i // 20] for i in range(24)]
    backend.generate(prompts, Sampling(temperature=1.0, max_tokens=2, seed=0))
    slow, fast = stats(servers[0])["completions"] - 1, stats(servers[1])["completions"] - 1  # less the start-up probes
    assert slow + fast == 24 and fast > slow >= 1
    backend.close()


def test_the_startup_check_names_the_server_and_the_model(servers, tiny_model, tmp_path):
    with pytest.raises(ServerError, match=r"serves \[.*\], not 'other-model'.*served_model_name|serves .*not 'other-model'"):
        backend_for([servers[0].url], "other-model", tmp_path)
    with pytest.raises(ServerError, match="cannot list its models"):
        backend_for([servers[0].url, dead_url()], tiny_model, tmp_path)
    with pytest.raises(ValueError, match="at least one server URL"):
        backend_for([" "], tiny_model, tmp_path)


# -- faults -------------------------------------------------------------------------------


def test_a_dead_server_a_500_and_a_timeout_are_retried_elsewhere_and_counted(servers, tiny_model, tmp_path):
    dead = dead_url()
    backend = backend_for([dead, servers[0].url], tiny_model, tmp_path, check=False, timeout_s=1.0)
    ids, _ = backend.generate([A, B, C], Sampling(temperature=1.0, max_tokens=3, seed=1))
    assert len(ids) == 3 and backend.metrics()["server/retries"] >= 1
    assert backend.server_stats()[0]["failures"] >= 1 and backend.server_stats()[1]["requests"] == 3
    backend.close()

    backend = backend_for([s.url for s in servers], tiny_model, tmp_path, timeout_s=1.0)
    faults(servers[0], fail_completions=2)
    faults(servers[1], delay_s=3.0)  # slower than the time limit
    ids, _ = backend.generate([A, B], Sampling(temperature=1.0, max_tokens=3, seed=1))
    assert len(ids) == 2
    assert backend.metrics()["server/failures"] >= 2
    faults(servers[1], delay_s=0)
    backend.close()


def test_a_dropped_connection_is_retried(servers, tiny_model, tmp_path):
    backend = backend_for([servers[0].url, servers[1].url], tiny_model, tmp_path)
    faults(servers[0], drop_completions=1)
    faults(servers[1], drop_completions=1)
    ids, _ = backend.generate([A], Sampling(temperature=1.0, max_tokens=3, seed=1))
    assert len(ids[0]) >= 1 and backend.metrics()["server/retries"] == 2
    backend.close()


def test_every_server_gone_is_a_clear_error(servers, tiny_model, tmp_path):
    backend = backend_for([servers[0].url], tiny_model, tmp_path, max_attempts=3)
    faults(servers[0], fail_completions=10)
    with pytest.raises(ServerError, match="failed 3 times on 1 server"):
        backend.generate([A], Sampling(temperature=1.0, max_tokens=3, seed=1))
    backend.close()


def test_a_bad_request_is_not_retried(servers, tiny_model, tmp_path):
    backend = backend_for([servers[0].url], tiny_model, tmp_path)
    with pytest.raises(ServerError, match="refused a completion request"):
        backend.generate([[10**6]], Sampling(temperature=1.0, max_tokens=3, seed=1))  # an id outside the vocabulary
    backend.close()


# -- LoRA ---------------------------------------------------------------------------------


def test_each_sync_loads_a_fresh_adapter_name_and_unloads_the_old(servers, tiny_model, tmp_path):
    backend = backend_for([s.url for s in servers], tiny_model, tmp_path)
    first, second = peft_model(tiny_model, 0), peft_model(tiny_model, 1)
    backend.sync_weights(first)
    name1 = backend.adapter
    backend.sync_weights(second)
    name2 = backend.adapter
    assert name1 != name2 and name1.startswith(backend.run_name)
    for server in servers:
        served = [m["id"] for m in httpx.get(f"{server.url}/v1/models").json()["data"]]
        assert name2 in served and name1 not in served
    assert [p.name for p in (tmp_path / "adapters").iterdir()] == [name2]
    # samples now come from the second adapter: its own forward pass gives their logprobs
    ids, logprobs = backend.generate([A, B], Sampling(temperature=1.0, max_tokens=5, seed=2))
    for prompt, row, row_logprobs in zip([A, B], ids, logprobs, strict=True):
        assert row_logprobs == pytest.approx(trainer_logprobs(second, prompt, row, 1.0), abs=1e-4)
        assert row_logprobs != pytest.approx(trainer_logprobs(first, prompt, row, 1.0), abs=1e-3)
    assert stats(servers[0])["completions_by_model"].get(name2, 0) + stats(servers[1])["completions_by_model"].get(name2, 0) == 2
    backend.close()


def test_a_reused_adapter_name_would_serve_stale_weights_so_names_are_never_reused(servers, tiny_model, tmp_path):
    """The stand-in, like engines that cache adapters by name, serves the weights first loaded
    under a name; a backend restarted on the same servers still picks new names."""
    first, second = peft_model(tiny_model, 0), peft_model(tiny_model, 1)
    first.save_pretrained(tmp_path / "a")
    second.save_pretrained(tmp_path / "b")
    url = servers[0].url
    for folder in ("a", "b"):
        httpx.post(f"{url}/v1/load_lora_adapter", json={"lora_name": "reused", "lora_path": str(tmp_path / folder)}).raise_for_status()
        reply = httpx.post(f"{url}/v1/completions", json={"model": "reused", "prompt": A, "max_tokens": 4, "seed": 0, "logprobs": 0,
                                                          "return_tokens_as_token_ids": True}).json()  # fmt: skip
        httpx.post(f"{url}/v1/unload_lora_adapter", json={"lora_name": "reused"}).raise_for_status()
        ids = [int(t.split(":")[1]) for t in reply["choices"][0]["logprobs"]["tokens"]]
        stale = trainer_logprobs(first, A, ids, 1.0)
        assert reply["choices"][0]["logprobs"]["token_logprobs"] == pytest.approx(stale, abs=1e-4)  # "b" served "a"'s weights
    names = {backend_for([url], tiny_model, tmp_path).run_name for _ in range(3)}
    assert len(names) == 3


def test_a_server_that_fails_to_load_the_adapter_gets_no_more_requests(servers, tiny_model, tmp_path, caplog):
    backend = backend_for([s.url for s in servers], tiny_model, tmp_path)
    faults(servers[0], fail_lora_loads=1)
    backend.sync_weights(peft_model(tiny_model, 0))
    assert backend.metrics()["server/stale_servers"] == 1 and backend.metrics()["server/adapter_load_failures"] == 1
    assert "did not load adapter" in caplog.text
    before = stats(servers[0])["completions"]
    backend.generate([[2, 10 + i, 11] for i in range(8)], Sampling(temperature=1.0, max_tokens=2, seed=0))
    assert stats(servers[0])["completions"] == before  # never sampled with the old weights
    backend.sync_weights(peft_model(tiny_model, 1))  # it loads the next one: back in the rotation
    assert backend.metrics()["server/stale_servers"] == 0
    faults(servers[0], fail_lora_loads=1)
    faults(servers[1], fail_lora_loads=1)
    with pytest.raises(ServerError, match="no inference server loaded adapter"):
        backend.sync_weights(peft_model(tiny_model, 2))
    backend.close()


def test_full_fine_tuning_with_servers_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="needs use_lora=True: the trained weights reach the servers as a LoRA adapter"):
        GRPOConfig(backend="server", server_urls=["http://localhost:8000"], use_lora=False)
    with pytest.raises(ValueError, match="needs the servers' URLs"):
        GRPOConfig(backend="server")
    with pytest.raises(ValueError, match="max_off_policy_steps > 0 needs a sampler that runs beside the trainer"):
        GRPOConfig(max_off_policy_steps=1)


def test_server_urls_come_from_a_file_too(tmp_path):
    (tmp_path / "servers.txt").write_text("# the fleet\nhttp://a:8000\n\nhttp://b:8000  # second\n")
    config = GRPOConfig(backend="server", server_urls=["http://c:8000"], server_urls_file=str(tmp_path / "servers.txt"))
    assert config.server_url_list() == ["http://c:8000", "http://a:8000", "http://b:8000"]


# -- GRPO over HTTP -----------------------------------------------------------------------


class HashJudge(Verifier):
    def verify(self, trajectory):
        import random

        score = random.Random(f"{trajectory.seed}/{trajectory.final_answer}").random()
        return JudgeScore(score=score, components={"hash": score})


def server_config(tmp_path: Path, model: str, urls: list[str], **overrides) -> GRPOConfig:
    options = {
        "model": model,
        "backend": "server",
        "server_urls": urls,
        "env_kwargs": {"n_products": 20, "n_worlds": 1},
        "scenarios_per_step": 2,
        "group_size": 2,
        "max_new_tokens": 8,
        "max_turns": 2,
        "max_steps": 2,
        "eval_steps": 0,
        "save_steps": 0,
        "temperature": 0.7,
        "learning_rate": 1e-3,
        "output_dir": str(tmp_path / "run"),
        "mixed_precision": "no",
    }
    return GRPOConfig(**{**options, **overrides})


def test_grpo_over_http_trains_on_what_the_servers_sampled(servers, tiny_model, tmp_path):
    config = server_config(tmp_path, tiny_model, [s.url for s in servers], importance_sampling="truncate")
    trainer = GRPOTrainer(config, judge=HashJudge())
    records = trainer.train()
    trainer.close()
    assert [r["step"] for r in records] == [1, 2]
    for record in records:
        assert record["num_trained_tokens"] > 0
        assert record["sampling/sampling_logp_difference/max"] < 1e-3  # the trainer reproduces the servers' logprobs
        assert record["server/retries"] == 0 and record["server/stale_servers"] == 0
    assert records[-1]["server/policy_version"] == 3  # loaded at start and after each step
    served = {name for s in servers for name, count in stats(s)["completions_by_model"].items() if count}
    assert sum(name.startswith(trainer.backend.run_name) for name in served) == 2  # steps 1 and 2 sampled with v1, v2
    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert "server/requests" in metrics[0]


class VersionRecorder(ServerBackend):
    """Records the thread and the adapter version of each generate call."""

    seen: list[tuple[int, int]] = []

    def generate(self, prompts, sampling):
        VersionRecorder.seen.append((threading.get_ident(), self.version))
        return super().generate(prompts, sampling)


def test_asynchronous_steps_never_train_on_samples_more_than_k_versions_old(servers, tiny_model, tmp_path):
    config = server_config(tmp_path, tiny_model, [s.url for s in servers], max_steps=5, max_off_policy_steps=1)
    assert config.importance_sampling_mode == "truncate"  # on by default off-policy

    class Trainer(GRPOTrainer):
        def _make_backend(self):
            return VersionRecorder([s.url for s in servers], model=tiny_model, adapter_dir=tmp_path / "adapters", keep_adapters=2)

    trainer = Trainer(config, judge=HashJudge())
    records = trainer.train()
    trainer.close()
    assert [r["step"] for r in records] == [1, 2, 3, 4, 5]
    assert all(0 <= r["async/staleness"] <= 1 for r in records)
    assert any(r["async/staleness"] == 1 for r in records)  # it did run ahead
    assert all(r["async/dropped_stale_groups"] == 0 for r in records)
    assert all(r["timing/trainer_idle_s"] >= 0 and r["timing/sampler_idle_s"] >= 0 for r in records)
    assert {"is/weight_mean", "is/frac_capped"} <= set(records[-1])
    assert all(r["num_trained_tokens"] > 0 for r in records)
    threads = {thread for thread, _ in VersionRecorder.seen}
    assert threading.get_ident() not in threads  # sampled by the pipeline's thread, beside the updates


def test_a_pipeline_that_hands_over_stale_groups_is_not_trained_on(servers, tiny_model, tmp_path):
    config = server_config(tmp_path, tiny_model, [servers[0].url], max_steps=3, max_off_policy_steps=1)
    trainer = GRPOTrainer(config, judge=HashJudge())
    old = trainer.rollout(1, 0)  # sampled by version 0
    trainer.train_step(trainer.rollout(1, 0))
    old.step, old.waited_s = 3, 0.0
    trainer.train_step(trainer.rollout(2, 2))
    record = trainer.train_step(old)  # made two versions ago
    trainer.close()
    assert record["async/staleness"] == 2 and record["async/dropped_stale_groups"] == 2
    assert record["num_trained_tokens"] == 0


@pytest.mark.skipif(not os.environ.get("JUDGEGYM_TEST_OPENAI_URL"), reason="set JUDGEGYM_TEST_OPENAI_URL to a running server")
def test_a_real_openai_compatible_server_is_checked_at_start():
    """Against a real OpenAI-compatible server (e.g. ``python -m llama_cpp.server --model
    GGUF``): the model check reads its /v1/models, and a server without vLLM's token-level
    completions is refused at start with the reason (it would answer text, which judgegym
    never re-tokenizes), or, if it has them, one round of samples comes back as ids."""
    url = os.environ["JUDGEGYM_TEST_OPENAI_URL"]
    (served,) = [m["id"] for m in httpx.get(f"{url}/v1/models").json()["data"]][:1]
    with pytest.raises(ServerError, match="serves .* not 'no-such-model'"):
        ServerBackend([url], model="no-such-model", adapter_dir="unused")
    try:
        backend = ServerBackend([url], model=served, adapter_dir="unused")
    except ServerError as error:
        assert "does not answer vLLM's token-level completions" in str(error)
        return
    ids, logprobs = backend.generate([A, A, B], Sampling(temperature=1.0, max_tokens=4, seed=0))
    assert [len(row) for row in ids] == [len(row) for row in logprobs] and all(ids)
    backend.close()


def test_a_resumed_asynchronous_run_is_consistent(servers, tiny_model, tmp_path):
    """k = 1: a run stopped after step 2 and resumed trains steps 3 and 4 on the scenarios a
    straight run would (the rollouts made ahead are re-played), each exactly once."""
    urls = [s.url for s in servers]
    first = GRPOTrainer(server_config(tmp_path, tiny_model, urls, max_steps=2, save_steps=1, max_off_policy_steps=1), judge=HashJudge())
    first.train()
    first.close()
    resumed = GRPOTrainer(
        server_config(tmp_path, tiny_model, urls, max_steps=4, save_steps=1, max_off_policy_steps=1, resume=True), judge=HashJudge()
    )
    assert resumed.state.step == 2
    played: list[list[int]] = []
    original = resumed.rollout

    def recording(step, cursor):
        rollout = original(step, cursor)
        played.append(sorted({e.seed for e in rollout.episodes}))
        return rollout

    resumed.rollout = recording
    records = resumed.train()
    resumed.close()
    assert [r["step"] for r in records] == [3, 4]
    assert records[0]["async/staleness"] == 0  # the first step after a resume is sampled by the checkpoint's weights
    assert played == [sorted(resumed.scenario_seeds(4, 2)), sorted(resumed.scenario_seeds(6, 2))]
    assert resumed.state.cursor == 8
    logged = [json.loads(line)["step"] for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert logged == [1, 2, 3, 4]


def test_the_train_command_reports_an_unreachable_server_in_one_line(tiny_model, tmp_path):
    from typer.testing import CliRunner

    from judgegym.cli import app

    url = dead_url()
    result = CliRunner().invoke(app, ["train", "--model", tiny_model, "--env-arg", "n_products=20", "--output-dir", str(tmp_path / "run"),
                                      "--set", "backend=server", "--set", f'server_urls=["{url}"]'])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert f"error: inference server check failed: {url}: cannot list its models" in result.output
    assert "Traceback" not in result.output
