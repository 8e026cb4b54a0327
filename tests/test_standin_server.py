"""The stand-in vLLM server (judgegym/testing/vllm_server.py) over real HTTP on loopback:
vLLM's shapes, logprobs equal to the model's own, vLLM's per-sample seeds, stopping, refusals
that leave the server serving, LoRA adapters (a reused name serves the weights first loaded
under it) and injected faults; and `spawn` as a child process."""

from __future__ import annotations

import json
import re
import shutil
import threading
import time

import httpx
import pytest
import torch

from judgegym.testing.vllm_server import StandinServer, spawn

A, B = [2, 10, 11, 12], [2, 13, 14]
NAME = "tiny"


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """The tiny model runs fastest on one thread."""


@pytest.fixture(scope="module")
def pair(tiny_model):
    """The tiny model and its tokenizer, loaded once for the module's servers and references."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(tiny_model).eval(), AutoTokenizer.from_pretrained(tiny_model)


@pytest.fixture
def server(pair):
    with StandinServer(pair, served_model_name=NAME, logprobs_mode="processed_logprobs") as running:
        yield running


@pytest.fixture(scope="module")
def adapters(tiny_model, tmp_path_factory):
    """Two different LoRA adapters of the tiny model: name -> (folder, peft model)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from judgegym.models import peft_quietly

    made = {}
    for seed, name in enumerate(("a", "b"), start=1):
        base = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
        with peft_quietly():
            model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for parameter_name, parameter in model.named_parameters():
                if "lora_B" in parameter_name:
                    parameter.normal_(0, 0.5, generator=generator)  # an adapter that changes the outputs
        folder = tmp_path_factory.mktemp(f"adapter-{name}")
        with peft_quietly():
            model.save_pretrained(folder)
        made[name] = (str(folder), model.eval())
    return made


def post(server, path: str, **body) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", json=body, timeout=30)


def complete(server, **body) -> dict:
    response = post(server, "/v1/completions", **{"model": NAME, **body})
    assert response.status_code == 200, response.text
    return response.json()


def refusal(response: httpx.Response, status: int, type_: str, message: str) -> None:
    """`response` is vLLM's error body with this status and type, its message matching `message`."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["code"] == status and error["type"] == type_
    assert re.search(message, error["message"]), error["message"]


def ids_of(choice: dict) -> list[int]:
    return [int(token.removeprefix("token_id:")) for token in choice["logprobs"]["tokens"]]


def samples(reply: dict) -> list[list[int]]:
    return [choice["token_ids"] for choice in reply["choices"]]


def reference(model, prompt: list[int], ids: list[int], temperature: float = 1.0) -> list[float]:
    """log_softmax(logits / temperature) of each of `ids` after `prompt`, in one uncached forward pass."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + ids])).logits[0, len(prompt) - 1 : -1].float()
    return (logits / temperature).log_softmax(-1).gather(-1, torch.tensor(ids)[:, None])[:, 0].tolist()


def stats(server) -> dict:
    return httpx.get(f"{server.url}/standin/stats").json()


# -- shapes -------------------------------------------------------------------------------


def test_health_and_the_model_list(server, pair, tiny_model):
    health = httpx.get(f"{server.url}/health")
    assert health.status_code == 200 and health.content == b""
    listing = httpx.get(f"{server.url}/v1/models").json()
    assert listing["object"] == "list" and len(listing["data"]) == 1
    card = listing["data"][0]
    assert card["id"] == NAME and card["object"] == "model" and card["owned_by"] == "vllm" and card["parent"] is None
    assert isinstance(card["created"], int) and card["max_model_len"] == pair[0].config.max_position_embeddings
    with StandinServer(tiny_model) as from_folder:  # the served name defaults to the model as given
        card = httpx.get(f"{from_folder.url}/v1/models").json()["data"][0]
        assert card["id"] == card["root"] == tiny_model
        assert complete(from_folder, model=tiny_model, prompt=A, max_tokens=2)["model"] == tiny_model


def test_a_completion_has_vllms_shape(server, pair):
    model, tokenizer = pair
    reply = complete(server, prompt=A, n=2, max_tokens=5, seed=0, logprobs=2, return_tokens_as_token_ids=True, return_token_ids=True)
    assert re.fullmatch(r"cmpl-[0-9a-f]+", reply["id"]) and reply["object"] == "text_completion" and reply["model"] == NAME
    assert isinstance(reply["created"], int)
    completion_tokens = sum(len(c["token_ids"]) for c in reply["choices"])
    assert reply["usage"] == {"prompt_tokens": len(A), "completion_tokens": completion_tokens, "total_tokens": len(A) + completion_tokens}
    assert [c["index"] for c in reply["choices"]] == [0, 1]
    for choice in reply["choices"]:
        assert set(choice) >= {"index", "text", "logprobs", "finish_reason", "stop_reason", "prompt_logprobs"}
        assert choice["prompt_logprobs"] is None and choice["prompt_token_ids"] == A
        logprobs = choice["logprobs"]
        assert set(logprobs) == {"text_offset", "token_logprobs", "tokens", "top_logprobs"}
        assert all(re.fullmatch(r"token_id:\d+", token) for token in logprobs["tokens"])
        assert ids_of(choice) == choice["token_ids"]
        kept = choice["token_ids"][:-1] if choice["finish_reason"] == "stop" else choice["token_ids"]
        assert choice["text"] == tokenizer.decode(kept, skip_special_tokens=True)
        assert logprobs["text_offset"] == [sum(len(t) for t in logprobs["tokens"][:i]) for i in range(len(logprobs["tokens"]))]
        with torch.no_grad():
            full = model(input_ids=torch.tensor([A + choice["token_ids"]])).logits[0, len(A) - 1 : -1].log_softmax(-1)
        for position, (token, value, top) in enumerate(
            zip(logprobs["tokens"], logprobs["token_logprobs"], logprobs["top_logprobs"], strict=True)
        ):
            assert top[token] == value  # the sampled token, then the top 2
            best = full[position].topk(2)
            expected = {f"token_id:{i}": v for i, v in zip(best.indices.tolist(), best.values.tolist(), strict=True)}
            assert list(top)[0] == token and top == pytest.approx(expected | {token: value}, abs=1e-4)
    plain = complete(server, prompt=A, max_tokens=3, seed=0, logprobs=0)["choices"][0]
    assert plain["token_ids"] is None
    assert [list(top) for top in plain["logprobs"]["top_logprobs"]] == [[t] for t in plain["logprobs"]["tokens"]]
    assert plain["logprobs"]["tokens"] == [tokenizer.decode([i]) for i in ids_of(reply["choices"][0])[:3]]  # same seed, same sample
    assert complete(server, prompt=A, max_tokens=3)["choices"][0]["logprobs"] is None


@pytest.mark.parametrize("mode", ["processed_logprobs", "raw_logprobs"])
def test_logprobs_are_the_models_own(pair, mode):
    model = pair[0]
    with StandinServer(pair, served_model_name=NAME, logprobs_mode=mode) as server:
        reply = complete(server, prompt=A, n=3, temperature=0.7, max_tokens=8, seed=5, logprobs=0, return_token_ids=True)
    scaled, raw = (0.7, 1.0) if mode == "processed_logprobs" else (1.0, 0.7)
    for choice in reply["choices"]:
        served = choice["logprobs"]["token_logprobs"]
        assert served == pytest.approx(reference(model, A, choice["token_ids"], scaled), abs=1e-4)
        assert served != pytest.approx(reference(model, A, choice["token_ids"], raw), abs=1e-2)


def test_top_k_and_top_p_truncate_what_is_sampled_and_its_logprobs(server, pair):
    model = pair[0]
    reply = complete(server, prompt=A, n=4, temperature=0.7, top_k=3, max_tokens=6, seed=1, logprobs=0, return_token_ids=True)
    for choice in reply["choices"]:
        ids = choice["token_ids"]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([A + ids])).logits[0, len(A) - 1 : -1] / 0.7
        top3 = logits.topk(3, dim=-1)
        assert all(i in row for i, row in zip(ids, top3.indices.tolist(), strict=True))
        expected = top3.values.log_softmax(-1)[top3.indices == torch.tensor(ids)[:, None]]
        assert choice["logprobs"]["token_logprobs"] == pytest.approx(expected.tolist(), abs=1e-4)
    # a tiny nucleus holds one token: the argmax, with all the mass
    nucleus = complete(server, prompt=A, n=2, top_p=0.01, max_tokens=5, seed=2, logprobs=0, return_token_ids=True)
    greedy = complete(server, prompt=A, temperature=0, max_tokens=5, return_token_ids=True)["choices"][0]["token_ids"]
    assert samples(nucleus) == [greedy, greedy]
    assert nucleus["choices"][0]["logprobs"]["token_logprobs"] == pytest.approx([0.0] * len(greedy), abs=1e-6)


def test_seeds_are_vllms_one_per_sample(server, pair):
    three = samples(complete(server, prompt=A, n=3, max_tokens=8, seed=11, return_token_ids=True))
    assert len({tuple(s) for s in three}) == 3
    for j in range(3):  # sample j of a request seeded s is the sample of a request seeded s + j
        assert samples(complete(server, prompt=A, max_tokens=8, seed=11 + j, return_token_ids=True)) == [three[j]]
    assert samples(complete(server, prompt=A, n=3, max_tokens=8, seed=11, return_token_ids=True)) == three
    unseeded = [samples(complete(server, prompt=A, max_tokens=8, return_token_ids=True))[0] for _ in range(2)]
    assert unseeded[0] != unseeded[1]
    # greedy: every sample is the argmax continuation
    model, ids = pair[0], list(A)
    with torch.no_grad():
        for _ in range(6):
            ids.append(int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax()))
    assert samples(complete(server, prompt=A, n=2, temperature=0, max_tokens=6, seed=3, return_token_ids=True)) == [ids[len(A) :]] * 2


def test_eos_is_kept_as_the_last_token_and_stops(server, pair):
    tokenizer = pair[1]
    eos = tokenizer.eos_token_id
    body = {"prompt": A, "n": 16, "max_tokens": 40, "seed": 0, "logprobs": 0, "return_token_ids": True}
    reply = complete(server, **body)
    stopped = [c for c in reply["choices"] if c["finish_reason"] == "stop"]
    assert stopped and len(stopped) < 16
    for choice in reply["choices"]:
        ids = choice["token_ids"]
        assert eos not in ids[:-1] and len(choice["logprobs"]["token_logprobs"]) == len(ids)
        if choice["finish_reason"] == "stop":
            assert ids[-1] == eos and choice["stop_reason"] is None and len(ids) <= 40
        else:
            assert choice["finish_reason"] == "length" and len(ids) == 40 and choice["stop_reason"] is None
    # the EOS is left out of the text unless asked for, as vLLM does
    first = stopped[0]["index"]
    hidden = complete(server, **body, skip_special_tokens=False)["choices"][first]
    shown = complete(server, **body, skip_special_tokens=False, include_stop_str_in_output=True)["choices"][first]
    assert shown["text"].endswith(tokenizer.eos_token) and not hidden["text"].endswith(tokenizer.eos_token)
    assert hidden["text"] == tokenizer.decode(stopped[0]["token_ids"][:-1], skip_special_tokens=False)
    # ignore_eos: the same draws run on past it
    longer = complete(server, **body, ignore_eos=True)["choices"]
    assert all(c["finish_reason"] == "length" and len(c["token_ids"]) == 40 for c in longer)
    assert longer[first]["token_ids"][: len(stopped[0]["token_ids"])] == stopped[0]["token_ids"]


def test_stop_token_ids_stop_with_their_id_and_max_tokens_gives_length(server):
    free = complete(server, prompt=A, n=4, max_tokens=12, seed=4, ignore_eos=True, return_token_ids=True)["choices"]
    stops = sorted({c["token_ids"][5] for c in free})  # a token each sample draws at position 5
    reply = complete(server, prompt=A, n=4, max_tokens=12, seed=4, ignore_eos=True, stop_token_ids=stops, return_token_ids=True)
    for choice, unstopped in zip(reply["choices"], free, strict=True):
        ids = choice["token_ids"]
        assert choice["finish_reason"] == "stop" and choice["stop_reason"] == ids[-1] in stops
        assert not set(ids[:-1]) & set(stops) and len(ids) <= 6 and ids == unstopped["token_ids"][: len(ids)]
    short = complete(server, prompt=A, n=4, max_tokens=3, seed=4, ignore_eos=True, return_token_ids=True)["choices"]
    assert all(c["finish_reason"] == "length" and c["stop_reason"] is None and len(c["token_ids"]) == 3 for c in short)


def test_several_prompts_come_back_prompt_major(server, pair):
    both = complete(server, prompt=[A, B], n=2, max_tokens=5, seed=3, return_token_ids=True)
    assert [c["index"] for c in both["choices"]] == [0, 1, 2, 3]
    assert samples(both)[:2] == samples(complete(server, prompt=A, n=2, max_tokens=5, seed=3, return_token_ids=True))
    assert samples(both)[2:] == samples(complete(server, prompt=B, n=2, max_tokens=5, seed=3, return_token_ids=True))
    assert [c["prompt_token_ids"] for c in both["choices"]] == [A, A, B, B]
    assert both["usage"]["prompt_tokens"] == len(A) + len(B)
    assert both["usage"]["completion_tokens"] == sum(len(s) for s in samples(both))
    texts = complete(server, prompt=["a b c", "the query"], max_tokens=2, return_token_ids=True)
    expected = [pair[1]("a b c")["input_ids"], pair[1]("the query")["input_ids"]]
    assert [c["prompt_token_ids"] for c in texts["choices"]] == expected
    assert texts["usage"]["prompt_tokens"] == 5


def test_concurrent_requests_get_what_they_would_get_alone(server):
    bodies = [{"prompt": prompt, "n": 2, "max_tokens": 6, "seed": seed, "return_token_ids": True} for prompt in (A, B) for seed in (0, 1)]
    alone = [samples(complete(server, **body)) for body in bodies]
    together: list = [None] * len(bodies)

    def run(i: int) -> None:
        together[i] = samples(complete(server, **bodies[i]))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert together == alone


# -- refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"n": 0}, "n must be at least 1"),
        ({"n": "two"}, "`n` must be an integer"),
        ({"temperature": -1}, "temperature must be non-negative"),
        ({"top_p": 0}, r"top_p must be in \(0, 1\]"),
        ({"top_p": 1.5}, r"top_p must be in \(0, 1\]"),
        ({"top_k": -2}, "top_k must be"),
        ({"max_tokens": 0}, "max_tokens must be at least 1"),
        ({"logprobs": 21}, "logprobs must be between 0 and 20"),
        ({"seed": "x"}, "`seed` must be an integer"),
        ({"prompt": []}, "prompt cannot be empty"),
        ({"prompt": [A, []]}, "prompt cannot be empty"),
        ({"prompt": ""}, "prompt or prompt_embeds must be provided"),
        ({"prompt": None}, "prompt or prompt_embeds must be provided"),
        ({"prompt": ["a", 1]}, "prompt must be a string"),
        ({"prompt": [2, 10**6]}, "Token id 1000000 is out of vocabulary"),
        ({"prompt": [2, -1]}, "Token id -1 is out of vocabulary"),
        ({"stream": True}, "stream=true is not supported"),
        ({"stop": ["\n"]}, "does not implement `stop`"),
        ({"presence_penalty": 0.5}, "does not implement `presence_penalty`"),
        ({"stop_token_ids": ["x"]}, "stop_token_ids must be a list of token ids"),
    ],
)
def test_bad_requests_are_400s_and_the_server_keeps_serving(server, body, message):
    refusal(post(server, "/v1/completions", **{"model": NAME, "prompt": A, **body}), 400, "BadRequestError", message)
    assert len(complete(server, prompt=A, max_tokens=2)["choices"]) == 1
    assert stats(server)["bad_requests"] == 1


def test_malformed_bodies_unknown_models_and_routes_are_refused(server):
    url = f"{server.url}/v1/completions"
    refusal(httpx.post(url, content=b"{not json", headers={"Content-Type": "application/json"}), 400, "BadRequestError", "not valid JSON")
    refusal(httpx.post(url, json=[1, 2]), 400, "BadRequestError", "must be a JSON object")
    refusal(post(server, "/v1/completions", model="nope", prompt=A), 404, "NotFoundError", r"^The model `nope` does not exist\.$")
    assert httpx.get(f"{server.url}/v1/chat/completions").status_code == 404
    assert httpx.get(url).status_code == 405
    # fields vLLM knows (or does not) that change nothing are accepted
    assert complete(server, prompt=A, max_tokens=2, priority=0, stop=[], echo=False, repetition_penalty=1.0, extra_field={"x": 1})
    assert complete(server, prompt=A, max_tokens=2, model=None)["model"] == NAME


def test_a_prompt_and_max_tokens_must_fit_the_model_length(pair):
    with StandinServer(pair, served_model_name=NAME, max_model_len=16) as server:
        assert httpx.get(f"{server.url}/v1/models").json()["data"][0]["max_model_len"] == 16
        too_long = post(server, "/v1/completions", model=NAME, prompt=[2] * 10, max_tokens=7)
        refusal(too_long, 400, "BadRequestError", r"'max_tokens' is too large: 7\. .* maximum context length is 16 tokens")
        refusal(post(server, "/v1/completions", model=NAME, prompt=[2] * 16), 400, "BadRequestError", "maximum context length is 16")
        assert len(complete(server, prompt=[2] * 10, max_tokens=6, ignore_eos=True, return_token_ids=True)["choices"][0]["token_ids"]) == 6
    with pytest.raises(ValueError, match="max_model_len must be in"):
        StandinServer(pair, max_model_len=10**6)
    with pytest.raises(ValueError, match="logprobs_mode must be one of"):
        StandinServer(pair, logprobs_mode="logits")
    with pytest.raises(ValueError, match="max_lora_rank must be one of"):
        StandinServer(pair, max_lora_rank=12)


# -- LoRA ---------------------------------------------------------------------------------


def load(server, name: str, path: str) -> httpx.Response:
    return post(server, "/v1/load_lora_adapter", lora_name=name, lora_path=path)


def unload(server, name: str) -> httpx.Response:
    return post(server, "/v1/unload_lora_adapter", lora_name=name)


def sample_under(server, model: str, seed: int = 7) -> dict:
    body = {"model": model, "prompt": A, "n": 2, "temperature": 0.7, "max_tokens": 6, "seed": seed, "logprobs": 0, "return_token_ids": True}
    return complete(server, **body)


def matches(reply: dict, model) -> bool:
    """Whether every choice's logprobs are `model`'s own (temperature 0.7)."""
    return all(
        c["logprobs"]["token_logprobs"] == pytest.approx(reference(model, A, c["token_ids"], 0.7), abs=1e-4) for c in reply["choices"]
    )


def test_an_adapter_samples_with_its_own_weights(server, adapters, pair):
    (a_path, a_model), (b_path, b_model) = adapters["a"], adapters["b"]
    response = load(server, "run.v1", a_path)  # a name with a dot, as clients make them
    assert response.status_code == 200 and response.text == "Success: LoRA adapter 'run.v1' added successfully."
    assert load(server, "other", b_path).status_code == 200
    cards = httpx.get(f"{server.url}/v1/models").json()["data"]
    assert [(c["id"], c["root"], c["parent"]) for c in cards[1:]] == [("run.v1", a_path, NAME), ("other", b_path, NAME)]
    under_a, under_b, base = sample_under(server, "run.v1"), sample_under(server, "other"), sample_under(server, NAME)
    assert under_a["model"] == "run.v1" and matches(under_a, a_model) and not matches(under_a, pair[0])
    assert matches(under_b, b_model) and not matches(under_b, a_model)
    assert matches(base, pair[0]) and samples(base) != samples(under_a)
    counted = stats(server)
    assert counted["completions_by_model"] == {"run.v1": 1, "other": 1, NAME: 1} and counted["lora_loads"] == 2


def test_adapter_names_load_unload_and_are_refused_with_vllms_errors(server, adapters, tmp_path):
    a_path = adapters["a"][0]
    assert load(server, "x", a_path).status_code == 200
    refusal(load(server, "x", a_path), 400, "InvalidUserInput", r"^The lora adapter 'x' has already been loaded\.")
    response = unload(server, "x")
    assert response.status_code == 200 and response.text == "Success: LoRA adapter 'x' removed successfully."
    assert [c["id"] for c in httpx.get(f"{server.url}/v1/models").json()["data"]] == [NAME]
    refusal(post(server, "/v1/completions", model="x", prompt=A), 404, "NotFoundError", "The model `x` does not exist")
    refusal(unload(server, "x"), 404, "NotFoundError", r"^The lora adapter 'x' cannot be found\.$")
    missing = str(tmp_path / "nowhere")
    refusal(load(server, "y", missing), 404, "NotFoundError", f"No adapter found for {re.escape(missing)}")
    refusal(load(server, "y", str(tmp_path)), 404, "NotFoundError", f"No adapter found for {re.escape(str(tmp_path))}")
    refusal(post(server, "/v1/load_lora_adapter", lora_name="y"), 400, "InvalidUserInput", "Both 'lora_name' and 'lora_path'")
    wide = tmp_path / "rank32"
    shutil.copytree(a_path, wide)
    config = json.loads((wide / "adapter_config.json").read_text())
    (wide / "adapter_config.json").write_text(json.dumps(config | {"r": 32}))
    refusal(load(server, "y", str(wide)), 400, "BadRequestError", "LoRA rank 32 is greater than max_lora_rank 16")
    assert [c["id"] for c in httpx.get(f"{server.url}/v1/models").json()["data"]] == [NAME]  # failed loads register nothing
    assert load(server, "y", a_path).status_code == 200  # and leave the name free
    assert (stats(server)["lora_loads"], stats(server)["lora_unloads"]) == (2, 1)


def test_a_reloaded_name_serves_the_weights_first_loaded_under_it(server, adapters):
    (a_path, a_model), (b_path, b_model) = adapters["a"], adapters["b"]
    assert load(server, "reused", a_path).status_code == 200
    first = sample_under(server, "reused")
    assert unload(server, "reused").status_code == 200
    assert load(server, "reused", b_path).status_code == 200  # accepted, as a name-keyed engine cache accepts it
    assert httpx.get(f"{server.url}/v1/models").json()["data"][1]["root"] == b_path
    stale = sample_under(server, "reused")
    assert samples(stale) == samples(first) and matches(stale, a_model) and not matches(stale, b_model)
    assert load(server, "fresh", b_path).status_code == 200  # a fresh name reads the folder
    assert matches(sample_under(server, "fresh"), b_model)


# -- faults -------------------------------------------------------------------------------


def faults(server, **settings) -> dict:
    response = post(server, "/standin/faults", **settings)
    assert response.status_code == 200, response.text
    return response.json()


def test_injected_500s_then_service(server):
    faults(server, fail_completions=2)
    for _ in range(2):
        refusal(post(server, "/v1/completions", model=NAME, prompt=A), 500, "InternalServerError", "injected fault")
    assert complete(server, prompt=A, max_tokens=2)["choices"]
    counted = stats(server)
    assert counted["failures_injected"]["fail_completions"] == 2 and counted["completions"] == 1
    assert counted["faults"]["fail_completions"] == 0


def test_a_dropped_connection_gets_no_response_and_the_next_request_is_served(server):
    with httpx.Client(base_url=server.url, timeout=10) as client:  # a kept-alive connection, as a client pool holds
        body = {"model": NAME, "prompt": A, "max_tokens": 2}
        assert client.post("/v1/completions", json=body).status_code == 200
        faults(server, drop_completions=1)
        with pytest.raises(httpx.RemoteProtocolError):
            client.post("/v1/completions", json=body)
        assert client.post("/v1/completions", json=body).status_code == 200
    assert stats(server)["failures_injected"]["drop_completions"] == 1


def test_a_delay_holds_each_completion_until_cleared(server, pair):
    faults(server, delay_s=0.3)
    started = time.perf_counter()
    complete(server, prompt=A, max_tokens=2)
    assert time.perf_counter() - started >= 0.3
    started = time.perf_counter()
    httpx.get(f"{server.url}/health")  # other endpoints answer at once
    assert time.perf_counter() - started < 0.25
    assert faults(server, delay_s=0)["delay_s"] == 0
    started = time.perf_counter()
    complete(server, prompt=A, max_tokens=2)
    assert time.perf_counter() - started < 0.25
    assert stats(server)["delayed_completions"] == 1
    with StandinServer(pair, served_model_name=NAME, delay_s=0.3) as slow:  # --delay-s
        started = time.perf_counter()
        complete(slow, prompt=A, max_tokens=2)
        assert time.perf_counter() - started >= 0.3


def test_a_failed_adapter_load_registers_nothing_and_the_next_load_works(server, adapters):
    faults(server, fail_lora_loads=1)
    refusal(load(server, "v1", adapters["a"][0]), 500, "InternalServerError", "injected fault")
    assert [c["id"] for c in httpx.get(f"{server.url}/v1/models").json()["data"]] == [NAME]
    assert load(server, "v1", adapters["a"][0]).status_code == 200
    assert matches(sample_under(server, "v1"), adapters["a"][1])


def test_faults_are_validated(server):
    assert post(server, "/standin/faults", fail_everything=1).status_code == 400
    assert post(server, "/standin/faults", fail_completions=-1).status_code == 400
    assert post(server, "/standin/faults", delay_s="slow").status_code == 400
    assert stats(server)["faults"] == {"fail_completions": 0, "drop_completions": 0, "fail_lora_loads": 0, "delay_s": 0.0}


def test_stop_closes_kept_alive_connections(pair):
    server = StandinServer(pair, served_model_name=NAME).start()
    with httpx.Client(base_url=server.url, timeout=5) as client:
        assert client.get("/health").status_code == 200
        server.stop()
        with pytest.raises(httpx.TransportError):
            client.get("/health")
    with pytest.raises(RuntimeError, match="not running"):
        server.url  # noqa: B018


# -- a child process ----------------------------------------------------------------------


@pytest.mark.slow
def test_spawn_serves_the_folder_in_a_child_and_reports_a_failed_start(tiny_model, tmp_path):
    process, url = spawn(tiny_model, extra_args=["--served-model-name", NAME, "--logprobs-mode", "processed_logprobs"])
    try:
        assert [c["id"] for c in httpx.get(f"{url}/v1/models").json()["data"]] == [NAME]
        reply = httpx.post(f"{url}/v1/completions", json={"model": NAME, "prompt": A, "n": 2, "max_tokens": 3, "seed": 0}).json()
        assert len(reply["choices"]) == 2
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0  # SIGTERM is a clean exit
    with pytest.raises(RuntimeError, match=r"exited with code 1 before serving:(.|\n)*cannot load model"):
        spawn(str(tmp_path / "no-model"))
