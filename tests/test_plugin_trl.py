"""The TRL plug-ins (`judgegym.integrations.trl`): grouping and failure handling of
`JudgeReward`, `env_dataset`, the `environment_factory` adapter against the envs themselves,
and real `trl.GRPOTrainer` runs through each adapter."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import random
import re
import runpy
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

pytest.importorskip("trl")
pytest.importorskip("datasets")

# TRL's GRPOTrainer itself calls transformers 5's deprecated names (gradient_checkpointing_enable/
# _disable, and is_gradient_checkpointing through its own get_peft_model and generation unwrap).
# judgegym's code and examples use the current names; these come from TRL's internals, not ours.
pytestmark = [
    pytest.mark.filterwarnings(f"ignore:`{name}` is deprecated:FutureWarning")
    for name in ("gradient_checkpointing_enable", "gradient_checkpointing_disable", "is_gradient_checkpointing")
]

from judgegym.agents.base import Agent  # noqa: E402
from judgegym.envs.rag import RagVerifier  # noqa: E402
from judgegym.envs.rag.baselines import OracleAgent as RagOracle  # noqa: E402
from judgegym.envs.rag.baselines import SearchQuoteAgent, UnhelpfulAgent  # noqa: E402
from judgegym.envs.support.baselines import OracleAgent as SupportOracle  # noqa: E402
from judgegym.envs.support.baselines import PolicySupportAgent  # noqa: E402
from judgegym.integrations.trl import JudgeReward, TRLEnvironment, env_dataset, environment_factory  # noqa: E402
from judgegym.judges import JudgeError, WeightedSum  # noqa: E402
from judgegym.judges.base import Judge, JudgeScore  # noqa: E402
from judgegym.testing.tiny_models import tiny_llama_config  # noqa: E402
from judgegym.trajectory import Group, TerminationReason  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RAG = {"n_products": 20, "n_worlds": 2}
"""Small RagSupport worlds (built in milliseconds)."""


class ScoreInAnswer(Judge):
    """A relative judge for tests: the score is the number written in the final answer; it
    records every group it is given."""

    relative = True

    def __init__(self, fail_on: str | None = None, drop_one: bool = False):
        self.groups: list[Group] = []
        self.fail_on, self.drop_one = fail_on, drop_one

    async def score_group(self, group: Group) -> list[JudgeScore]:
        self.groups.append(group)
        if group.scenario_id == self.fail_on:
            raise JudgeError(f"no scores for {group.scenario_id}")
        scores = [JudgeScore(score=float(t.final_answer.split()[-1]), components={"size": float(len(group))}) for t in group]
        return scores[:-1] if self.drop_one else scores


def reward(judge: Any, **kwargs: Any) -> list[float | None]:
    return asyncio.run(JudgeReward(judge).__call__(**kwargs))


# -- JudgeReward --------------------------------------------------------------------------


def test_groups_by_prompt_whatever_the_order_and_sizes():
    prompts = {"a": 3, "b": 2, "c": 1}  # uneven groups, as when a dataset repeats a row
    items = [
        ([{"role": "user", "content": p}], [{"role": "assistant", "content": f"{p} {i / 10}"}])
        for p, n in prompts.items()
        for i in range(n)
    ]
    random.Random(3).shuffle(items)
    judge = ScoreInAnswer()
    rewards = reward(judge, prompts=[p for p, _ in items], completions=[c for _, c in items])
    assert rewards == [float(c[0]["content"].split()[-1]) for _, c in items]  # mapped back to TRL's order
    assert sorted(len(g) for g in judge.groups) == [1, 2, 3]  # one call per prompt, each with the whole group
    for group in judge.groups:
        assert len({t.messages[0].content for t in group}) == 1
        assert {t.final_answer.split()[0] for t in group} == {group.trajectories[0].messages[0].content}


def test_scenario_id_splits_groups_that_share_a_prompt():
    prompts = [[{"role": "user", "content": "same"}]] * 4
    completions = [[{"role": "assistant", "content": f"x {i / 10}"}] for i in range(4)]
    judge = ScoreInAnswer()
    reward(judge, prompts=prompts, completions=completions, scenario_id=["s1", "s2", "s1", "s2"])
    assert sorted((g.scenario_id, len(g)) for g in judge.groups) == [("s1", 2), ("s2", 2)]


def test_text_prompts_and_completions():
    judge = ScoreInAnswer()
    rewards = reward(judge, prompts=["q", "q"], completions=["a 0.25", "<think>hm 0.9</think> b 0.75"])
    assert rewards == [0.25, 0.75]  # the reasoning is not part of the answer
    assert [m.role for m in judge.groups[0].trajectories[0].messages] == ["user", "assistant"]
    assert judge.groups[0].trajectories[0].termination is TerminationReason.FINAL_ANSWER


def test_a_failed_judge_stops_training_by_default():
    with pytest.raises(JudgeError, match="no scores for b"):
        reward(ScoreInAnswer(fail_on="b"), prompts=["a", "b"], completions=["0.5", "0.5"], scenario_id=["a", "b"])
    with pytest.raises(JudgeError, match="returned 1 scores for a group of 2"):
        reward(ScoreInAnswer(drop_one=True), prompts=["a", "a"], completions=["0.5", "0.5"])


def test_skipped_failures_are_none_never_zero(caplog):
    metrics: dict[str, float] = {}
    reward_func = JudgeReward(ScoreInAnswer(fail_on="b"), on_error="skip", name="score")
    with caplog.at_level(logging.WARNING, logger="judgegym.integrations.trl"):
        rewards = asyncio.run(
            reward_func(
                prompts=["a", "b", "a", "b"],
                completions=["0.5", "0.25", "0.75", "1.0"],
                scenario_id=["a", "b", "a", "b"],
                log_metric=metrics.__setitem__,
            )
        )
    assert rewards == [0.5, None, 0.75, None]
    assert metrics["score/failed_groups"] == 1.0 and metrics["score/size"] == 2.0
    assert "failed on 1 of 2 groups" in caplog.text and "no scores for b" in caplog.text


@pytest.mark.slow  # imports litellm
def test_ruler_spec_makes_one_request_per_group(tmp_path):
    from openai_stub import StubServer

    server = StubServer()
    scores = [0.9, 0.5, 0.1]
    server.default = json.dumps({"scores": [{"id": str(i + 1), "explanation": "ok", "score": s} for i, s in enumerate(scores)]})
    items = [(q, f"answer {q}{i}") for q in ("QA", "QB") for i in range(3)]
    random.Random(1).shuffle(items)
    options = {"api_base": server.api_base, "api_key": "test", "cache_dir": tmp_path, "timeout": 2.0, "retries": 1}
    try:
        reward_of = JudgeReward("ruler:openai/judge-model", **options)
        rewards = asyncio.run(reward_of(prompts=[[{"role": "user", "content": q}] for q, _ in items], completions=[a for _, a in items]))
    finally:
        server.close()
    assert reward_of.judge.relative and len(server.requests) == 2
    for request in server.requests:  # each request holds exactly one prompt's three answers
        sent = json.dumps(request["messages"])
        assert len({q for q, _ in items if f"answer {q}" in sent}) == 1 and sent.count("answer Q") == 3
    position = {answer: [a for p, a in items if p == q].index(answer) for q, answer in items}
    assert rewards == [scores[position[a]] for _, a in items]


def _rag_rows(n: int = 2, **kwargs: Any) -> list[dict[str, Any]]:
    return list(env_dataset("RagSupport-v0", n, split="test", **{**RAG, **kwargs}))


@pytest.mark.parametrize(
    ("env_id", "kwargs", "reference"),
    [("RagSupport-v0", {"prefetch_k": 2, **RAG}, "reference_answer"), ("Summarize-v0", {"prefetch": True}, "reference_summary")],
)
def test_verifier_reward_equals_a_single_turn_episode(env_id, kwargs, reference):
    rows = list(env_dataset(env_id, 3, split="test", **kwargs))
    env = gym.make(env_id, split="test", **kwargs)
    prompts, completions, expected = [], [], []
    for row in rows:
        for answer in (json.loads(row["info"])["task"][reference], "Thanks for reaching out! Please check our website."):
            env.reset(seed=row["seed"])
            *_, info = env.step(answer)
            prompts.append(row["prompt"])
            completions.append([{"role": "assistant", "content": answer}])
            expected.append(info["judge_score"].score)
    columns = {k: [row[k] for row in rows for _ in range(2)] for k in ("scenario_id", "seed", "env_id", "info")}
    by_object = reward(type(env.unwrapped).default_judge(), prompts=prompts, completions=completions, **columns)
    by_spec = asyncio.run(JudgeReward("verifier", env_id=env_id)(prompts=prompts, completions=completions, **columns))
    assert by_object == by_spec == pytest.approx(expected)
    assert max(expected) > min(expected)


def test_combination_with_a_relative_part_logs_components():
    rows = _rag_rows(2, prefetch_k=1)
    prompts = [row["prompt"] for row in rows for _ in range(3)]
    completions = [[{"role": "assistant", "content": f"I am not sure {i / 5}"}] for i in range(6)]
    columns = {k: [row[k] for row in rows for _ in range(3)] for k in ("scenario_id", "info")}
    part = ScoreInAnswer()
    metrics: dict[str, float] = {}
    extra: dict[str, list[Any]] = {}
    judge = WeightedSum({"verifier": (RagVerifier(), 1.0), "rank": (part, 1.0)})
    func = JudgeReward(judge)
    rewards = asyncio.run(
        func(prompts=prompts, completions=completions, log_metric=metrics.__setitem__, log_extra=extra.__setitem__, **columns)
    )
    assert func.__name__ == "WeightedSum" and len(rewards) == 6
    assert sorted(len(g) for g in part.groups) == [3, 3]
    assert {"WeightedSum/verifier/recall", "WeightedSum/rank/score", "WeightedSum/failed_groups"} <= set(metrics)
    assert len(extra["WeightedSum/explanation"]) == 6 and "weighted sum" in extra["WeightedSum/explanation"][0]


def test_reward_rejects_mismatched_inputs():
    with pytest.raises(ValueError, match="2 prompts for 1 completions"):
        reward(ScoreInAnswer(), prompts=["a", "b"], completions=["0.5"])
    with pytest.raises(TypeError, match="only to a judge spec"):
        JudgeReward(RagVerifier(), api_base="http://x")
    with pytest.raises(ValueError, match="on_error"):
        JudgeReward(RagVerifier(), on_error="zero")  # type: ignore[arg-type]


# -- env_dataset --------------------------------------------------------------------------


def test_env_dataset_rows_replay_their_scenarios():
    dataset = env_dataset("CustomerSupport-v0", 3, split="test", first_seed=5)
    assert dataset.column_names == ["prompt", "env_id", "scenario_id", "seed", "info"]
    env = gym.make("CustomerSupport-v0", split="test")
    for seed, row in zip(range(5, 8), dataset, strict=True):
        observation, info = env.reset(seed=seed)
        assert row["seed"] == seed and row["scenario_id"] == info["scenario_id"] and row["env_id"] == "CustomerSupport-v0"
        assert row["prompt"] == [{"role": m["role"], "content": m["content"]} for m in observation]
        assert json.loads(row["info"])["task"] == json.loads(json.dumps(info["task"]))
    with pytest.raises(ValueError, match="n must be"):
        env_dataset("RagSupport-v0", 0)


# -- environment_factory ------------------------------------------------------------------


def _trl_tools(environment_class: type) -> list[str]:
    """The methods TRL exposes as tools (its own rule, grpo_trainer.py)."""
    return [
        name
        for name, _ in inspect.getmembers(environment_class, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


@pytest.mark.parametrize(("env_id", "kwargs"), [("RagSupport-v0", RAG), ("CustomerSupport-v0", {})])
def test_tools_carry_the_env_schemas(env_id, kwargs):
    from transformers.utils import get_json_schema

    environment_class = environment_factory(env_id, split="test", **kwargs)
    environment = environment_class()
    _, info = gym.make(env_id, split="test", **kwargs).reset(seed=0)
    native = {s["function"]["name"]: s["function"] for s in info["tools"]}
    extra = ["reply_to_customer"] if env_id == "CustomerSupport-v0" else []
    assert sorted(_trl_tools(environment_class)) == sorted([*native, *extra]) == sorted(environment_class.tool_names)
    assert not hasattr(environment_class, "get_reward")
    for name, function in native.items():
        schema = get_json_schema(getattr(environment, name))["function"]  # what TRL shows the model
        assert schema["name"] == name and schema["description"] == function["description"]
        assert schema["parameters"].get("required", []) == function["parameters"].get("required", [])
        for arg, spec in function["parameters"]["properties"].items():
            assert schema["parameters"]["properties"][arg]["type"] == spec["type"]
            assert schema["parameters"]["properties"][arg]["description"] == " ".join(spec["description"].split())
    if extra:
        schema = get_json_schema(environment.reply_to_customer)["function"]
        assert schema["parameters"]["required"] == ["message"] and "reply" in schema["description"]


def test_reset_checks_the_row():
    environment = environment_factory("RagSupport-v0", split="test", **RAG)()
    row = _rag_rows(1)[0]
    assert environment.reset(**row) is None and environment.scenario_id == row["scenario_id"]
    with pytest.raises(ValueError, match="needs a 'seed' or 'scenario_id'"):
        environment.reset(prompt=row["prompt"])
    other = _rag_rows(1, prefetch_k=1)[0]  # built with other env kwargs than the factory's
    with pytest.raises(ValueError, match="not the opening of 'test-0'"):
        environment.reset(**other)


async def _play(environment: TRLEnvironment, agent: Agent, row: dict[str, Any]) -> list[dict[str, Any]]:
    """Play `agent` through the adapter the way TRL would, returning TRL's completion messages."""
    environment.reset(**row)
    info = {"task": json.loads(row["info"])["task"], "seed": row["seed"]}
    completion: list[dict[str, Any]] = []

    def call(name: str, arguments: dict[str, Any]) -> None:
        completion.append(
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": name, "arguments": arguments}}]}
        )
        completion.append({"role": "tool", "name": name, "content": getattr(environment, name)(**arguments)})

    for _ in range(40):
        observation = [m.to_openai() for m in environment.env.unwrapped.trajectory().messages]
        action = await agent.act(observation, info)
        if isinstance(action, dict) and action.get("tool_calls"):
            for tool_call in action["tool_calls"]:
                call(tool_call["function"]["name"], json.loads(tool_call["function"]["arguments"]))
            continue
        text = action if isinstance(action, str) else action["content"]
        if "reply_to_customer" not in environment.tool_names:
            return [*completion, {"role": "assistant", "content": text}]
        call("reply_to_customer", {"message": text})
        if "[The episode is over" in completion[-1]["content"]:
            return [*completion, {"role": "assistant", "content": "Goodbye!"}]  # the customer has left: not seen
    raise AssertionError("the episode did not end")


def _native(env_id: str, agent: Agent, seed: int, kwargs: dict[str, Any]) -> tuple[float, str]:
    async def run() -> tuple[float, str]:
        env = gym.make(env_id, split="test", **kwargs)
        observation, info = env.reset(seed=seed)
        while True:
            observation, score, terminated, truncated, step_info = env.step(await agent.act(observation, info))
            if terminated or truncated:
                return float(score), step_info["termination"]

    return asyncio.run(run())


@pytest.mark.parametrize(
    ("env_id", "agent", "kwargs"),
    [
        ("RagSupport-v0", RagOracle(), RAG),
        ("RagSupport-v0", SearchQuoteAgent(), RAG),
        ("RagSupport-v0", UnhelpfulAgent(), RAG),
        ("CustomerSupport-v0", SupportOracle(), {}),
        ("CustomerSupport-v0", PolicySupportAgent(), {}),
    ],
    ids=lambda value: getattr(value, "name", None),
)
def test_an_episode_through_the_adapter_scores_as_in_the_env(env_id, agent, kwargs):
    environment_class = environment_factory(env_id, split="test", **kwargs)
    rows = list(env_dataset(env_id, 4, split="test", **kwargs))
    environments = [environment_class() for _ in rows]
    completions = [asyncio.run(_play(e, agent, row)) for e, row in zip(environments, rows, strict=True)]
    columns = {k: [row[k] for row in rows] for k in ("scenario_id", "seed", "env_id", "info")}
    rewards = asyncio.run(
        JudgeReward("verifier", env_id=env_id)(
            prompts=[row["prompt"] for row in rows], completions=completions, environments=environments, **columns
        )
    )
    expected = [_native(env_id, agent, row["seed"], kwargs) for row in rows]
    assert rewards == pytest.approx([score for score, _ in expected])
    assert [e._finish([]).termination.value for e in environments] == [reason for _, reason in expected]


def test_tool_errors_limits_and_unfinished_rollouts():
    environment = environment_factory("RagSupport-v0", split="test", max_tool_calls=2, **RAG)()
    row = _rag_rows(1)[0]
    environment.reset(**row)
    assert environment.search(query="warranty", k=99).startswith("Error: invalid arguments for 'search'")
    assert "unexpected argument 'limit'" in environment.read(doc_id="x", limit=3)
    assert environment.search(query="warranty").endswith("[The episode is over (max_tool_calls).]")
    assert environment.search(query="again").startswith("Error: the episode is over")
    trajectory = environment._finish([{"role": "assistant", "content": "Too late."}])
    assert trajectory.termination is TerminationReason.MAX_TOOL_CALLS and trajectory.final_answer == ""

    environment.reset(**row)  # a rollout cut off after a tool call: no answer, truncated
    environment.search(query="warranty")
    cut = environment._finish(
        [{"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "read", "arguments": {}}}]}]
    )
    assert cut.termination is TerminationReason.MAX_TURNS and RagVerifier().verify(cut).score == 0.0
    assert environment._finish([]) is cut  # finishing is idempotent: two reward functions see one episode


def test_customer_replies_come_back_as_tool_results():
    environment = environment_factory("CustomerSupport-v0", split="test")()
    row = next(iter(env_dataset("CustomerSupport-v0", 1, split="test")))
    environment.reset(**row)
    reply = environment.reply_to_customer(message="Could you give me your email address and the order id?")
    assert "@" in reply and re.search(r"\d{3,}", reply)
    messages = environment.env.unwrapped.trajectory().messages
    assert [m.role for m in messages[-2:]] == ["assistant", "user"] and messages[-1].content == reply
    assert environment.reply_to_customer(message="").startswith("[format error]")


# -- real GRPOTrainer runs ----------------------------------------------------------------


def byte_tokenizer() -> Any:
    """A byte-level tokenizer (every text round-trips exactly) with Qwen2.5's ChatML template,
    which renders tools and whose <tool_call> blocks TRL parses."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template

    backend = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>", additional_special_tokens=["<|im_start|>"]
    )
    tokenizer.chat_template = qwen2_5_chat_template
    return tokenizer


_ARTICLE = re.compile(r"\[([^\[\]\s]+)\] [^\n]*\n+([^\n]+)")


def script(prompt: str, row: int) -> str:
    """A fixed policy over the rendered prompt: quote the first article it was given (after a
    tool call always, else on even rows), search on even rows when tools are offered, and
    otherwise give up. Odd and even rows differ, so every group has reward variance."""
    turn = prompt.rsplit("<|im_start|>user\n", 1)[-1].split("<|im_end|>", 1)[0]
    after_tool = "<tool_response>" in turn
    found = _ARTICLE.search(turn.split("Articles that may help:", 1)[-1]) if after_tool or "Articles that may help:" in turn else None
    if found and (after_tool or row % 2 == 0):
        return f"{found.group(2)[:200]} [{found.group(1)}]"
    if "<tools>" in prompt and row % 2 == 0:
        return "<tool_call>\n" + json.dumps({"name": "search", "arguments": {"query": turn.strip()[:200], "k": 2}}) + "\n</tool_call>"
    return "I do not know."


def scripted_llama(tokenizer: Any) -> Any:
    """A tiny random Llama whose sampling is replaced by `script`, so rollouts make real tool
    calls; everything else (log-probabilities, loss, optimizer step) is the model's and TRL's."""
    import torch
    from transformers import LlamaForCausalLM

    class ScriptedLlama(LlamaForCausalLM):
        def generate(self, input_ids: Any, attention_mask: Any = None, generation_config: Any = None, **kwargs: Any) -> Any:
            rows = []
            for r, (ids, mask) in enumerate(zip(input_ids, attention_mask, strict=True)):
                text = script(tokenizer.decode(ids[mask.bool()]), r)
                rows.append(
                    (tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id])[: generation_config.max_new_tokens]
                )
            width = max(map(len, rows))
            return torch.cat([input_ids, torch.tensor([r + [tokenizer.pad_token_id] * (width - len(r)) for r in rows])], dim=1)

    torch.manual_seed(0)
    config = tiny_llama_config(tokenizer, max_position_embeddings=8192)
    return ScriptedLlama(config)


class Recording(Judge):
    """Delegates to `inner` and records the groups it was given."""

    def __init__(self, inner: Judge):
        self.inner, self.groups = inner, []

    @property
    def relative(self) -> bool:  # type: ignore[override]
        return self.inner.relative

    async def score_group(self, group: Group) -> list[JudgeScore]:
        self.groups.append(group)
        return await self.inner.score_group(group)


class LengthRank(Judge):
    """A relative judge: the longer answer of a group scores higher."""

    relative = True

    async def score_group(self, group: Group) -> list[JudgeScore]:
        lengths = sorted(len(t.final_answer) for t in group)
        return [JudgeScore(score=lengths.index(len(t.final_answer)) / max(1, len(group) - 1)) for t in group]


def _train(tmp_path: Path, tokenizer: Any, **trainer_kwargs: Any) -> tuple[Any, bool]:
    import torch
    from trl import GRPOConfig, GRPOTrainer

    model = scripted_llama(tokenizer)
    before = [p.detach().clone() for p in model.parameters()]
    config = trainer_kwargs.pop("config")
    args = GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=2,
        steps_per_generation=2,  # one generation batch of 2 prompts x 2 completions serves both steps
        num_generations=2,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,  # transformers 5 name; the old one warns
        seed=0,
        **config,
    )
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=args, **trainer_kwargs)
    trainer.train()
    changed = any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    return trainer, changed


SHORT_PROMPT = "Answer from the {company} knowledge base and cite [doc-id]."


@pytest.mark.slow
def test_grpo_trainer_with_reward_funcs(tmp_path, one_thread):
    dataset = env_dataset("RagSupport-v0", 4, split="test", prefetch_k=1, max_tool_output_chars=400, system_prompt=SHORT_PROMPT, **RAG)
    relative = Recording(LengthRank())
    judge = Recording(WeightedSum({"verifier": (RagVerifier(), 1.0), "rank": (relative, 1.0)}))
    trainer, changed = _train(
        tmp_path,
        byte_tokenizer(),
        reward_funcs=[JudgeReward(judge, name="judge")],
        train_dataset=dataset,
        config={"max_completion_length": 300},
    )
    assert trainer.state.global_step == 2 and changed
    assert len(judge.groups) == 2  # one generation batch: 2 prompts x 2 completions, one judge call per prompt
    for group in judge.groups + relative.groups:
        assert len(group) == 2 and len({t.scenario_id for t in group}) == 1
        assert {t.final_answer == "I do not know." for t in group} == {True, False}  # the script's two rows
    assert {g.scenario_id for g in judge.groups} <= set(dataset["scenario_id"])
    logged = trainer.state.log_history[0]
    assert {"rewards/judge/mean", "judge/verifier/citation", "judge/rank/score", "judge/failed_groups"} <= set(logged)
    assert logged["judge/failed_groups"] == 0 and logged["reward_std"] > 0


@pytest.mark.slow
def test_grpo_trainer_with_environment_factory(tmp_path, one_thread, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    kwargs = {"split": "test", "system_prompt": SHORT_PROMPT, **RAG}
    # the script quotes the top search hit, often a sibling product's article that the verifier
    # rightly scores 0, so a length ranking gives every group reward variance to train on
    judge = Recording(WeightedSum({"verifier": (RagVerifier(), 1.0), "rank": (LengthRank(), 1.0)}))
    trainer, changed = _train(
        tmp_path,
        byte_tokenizer(),
        reward_funcs=[JudgeReward(judge, name="judge")],
        train_dataset=env_dataset("RagSupport-v0", 2, **kwargs),
        environment_factory=environment_factory("RagSupport-v0", **kwargs),
        config={"max_completion_length": 1024, "max_tool_calling_iterations": 2},
    )
    assert trainer.state.global_step == 2 and changed
    assert len(judge.groups) == 2 and all(len(g) == 2 and len({t.scenario_id for t in g}) == 1 for g in judge.groups)
    searched = [t for g in judge.groups for t in g if any(m.role == "tool" for m in t.messages)]
    assert searched, "the script searches on even rows"
    for trajectory in searched:  # the env ran the tool and recorded the episode, answer included
        assert trajectory.messages[2].tool_calls[0].function.name == "search"
        assert trajectory.messages[3].content.startswith("[")
        assert trajectory.termination is TerminationReason.FINAL_ANSWER and trajectory.final_answer.endswith("]")
    logged = trainer.state.log_history[0]
    assert logged["tools/call_frequency"] > 0 and "judge/verifier/citation" in logged and "rewards/judge/mean" in logged
    assert logged["reward_std"] > 0


# -- the examples and the docs page -------------------------------------------------------


@pytest.mark.parametrize("name", ["trl_reward_funcs.py", "trl_environment.py"])
def test_docs_page_shows_the_examples(name):
    page = (ROOT / "docs" / "plugins" / "trl.md").read_text()
    assert f"```python\n{(ROOT / 'examples' / name).read_text()}```" in page


@pytest.mark.slow
@pytest.mark.parametrize("name", ["trl_reward_funcs.py", "trl_environment.py"])
def test_examples_run(name, tiny_model, tmp_path, one_thread, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    main = runpy.run_path(str(ROOT / "examples" / name), run_name="example")["main"]
    argv = ["--model", tiny_model, "--steps", "1", "--scenarios", "2", "--max-completion-length", "8", "--output-dir", str(tmp_path)]
    trainer = main(argv)
    assert trainer.state.global_step == 1
    assert "rewards/RagVerifier/mean" in trainer.state.log_history[0]
