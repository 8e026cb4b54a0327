"""TRL plug-ins: judgegym judges as ``GRPOTrainer`` reward functions (`JudgeReward`), judgegym
envs as its ``environment_factory`` (`environment_factory`), and datasets of env scenarios to
train on (`env_dataset`). TRL itself is never imported here; ``datasets`` only by `env_dataset`.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import gymnasium as gym

from ..envs.base import ChatEnv
from ..judges.base import Judge, JudgeScore
from ..judges.llm import JudgeError
from ..judges.specs import make_judge
from ..parsing import HermesParser, parse_action
from ..trajectory import Group, Message, TerminationReason, Trajectory

if TYPE_CHECKING:
    from datasets import Dataset

log = logging.getLogger("judgegym.integrations.trl")

RAG_SINGLE_TURN_PROMPT = (
    "You are the customer-support assistant of {company}. "
    "Answer the customer's question using only the articles given with it.\n\n"
    "- Give exact figures (prices, durations, contacts) as the articles state them, "
    "and cite every article you rely on as [doc-id].\n"
    "- If the articles do not answer the question, say so plainly and offer to escalate "
    "to a human support agent. Never guess."
)
"""A RagSupport-v0 system prompt for single-turn prompts (``prefetch_k`` articles in the question,
no tools): pass it as ``system_prompt=`` to `env_dataset`."""


# -- datasets ------------------------------------------------------------------------------


def env_dataset(env_id: str, n: int, *, split: str = "train", first_seed: int = 0, **env_kwargs: Any) -> Dataset:
    """`n` scenarios of `env_id` (seeds ``first_seed`` ... ``first_seed + n - 1``) as a
    ``datasets.Dataset`` for TRL's ``GRPOTrainer``, one row per scenario:

    - ``prompt``: the env's opening messages (``[{"role", "content"}, ...]``, conversational);
    - ``env_id``, ``scenario_id``, ``seed``: which scenario it is (`TRLEnvironment.reset` replays
      it from these);
    - ``info``: JSON text of what a judge needs to grade a completion without the env (the
      trajectory info at reset: ``info["task"]`` with the gold data, plus any env state such
      as Summarize-v0's prefetched sections).

    `env_kwargs` go to ``gym.make`` (e.g. ``prefetch_k=3``, ``system_prompt=...``); pass the same
    ones to `environment_factory` when the rows feed an environment.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    try:
        from datasets import Dataset
    except ImportError as exc:
        raise ImportError("env_dataset needs the datasets library: pip install 'judgegym[trl]'") from exc
    env = gym.make(env_id, split=split, **env_kwargs)
    rows = []
    try:
        for seed in range(first_seed, first_seed + n):
            observation, info = env.reset(seed=seed)
            opening = env.unwrapped.trajectory()
            rows.append(
                {
                    "prompt": [{"role": m["role"], "content": m.get("content") or ""} for m in observation],
                    "env_id": env_id,
                    "scenario_id": info["scenario_id"],
                    "seed": seed,
                    "info": json.dumps(opening.model_dump(mode="json")["info"]),
                }
            )
    finally:
        env.close()
    return Dataset.from_list(rows)


# -- reward functions ----------------------------------------------------------------------


class JudgeReward:
    """A judgegym judge as a TRL reward function: ``GRPOTrainer(reward_funcs=[JudgeReward(judge)])``.

    TRL calls it once per generation batch with ``prompts``, ``completions`` and every dataset
    column as keyword lists (one entry per completion). Each completion becomes a `Trajectory`:

    - with ``environments`` (TRL passes them when training with `environment_factory`): the
      episode the completion played in its `TRLEnvironment`, finished with the completion's
      final text (tool calls, tool results and, for CustomerSupport-v0, the database and the
      customer's replies are the env's own);
    - otherwise: ``prompt + completion`` as messages, ``info`` from the ``info`` column (or a
      ``task`` column, stored as ``info["task"]``), ids from ``scenario_id`` / ``seed`` /
      ``env_id`` (see `env_dataset`). The final answer is the last assistant message.

    Completions are grouped by (scenario id, prompt), not by position, and the judge scores
    each group once (``judge.score_group``), so relative judges (`RulerJudge`, combinations
    containing one) see every completion of a prompt together; pointwise ones take the same
    path. Groups are scored concurrently: the call is async, and TRL runs async reward
    functions on its own event loop, beside any other async ones.

    Failures: with ``on_error="raise"`` (default) a judge error stops training. With
    ``on_error="skip"`` the completions of a failed group get ``None``, which TRL treats as
    "no reward from this function" (NaN: left out of the group's baseline, advantage 0 when no
    other reward function scores it), and a warning is logged. A failure never becomes 0.

    Metrics (TRL's ``log_metric``): the batch mean of each component as ``NAME/COMPONENT`` and
    ``NAME/failed_groups``; the judge's explanations go to TRL's completions table
    (``log_extra``) as ``NAME/explanation``. NAME is `name`, by default the judge's class name;
    TRL logs the reward itself as ``rewards/NAME/mean``.

    Args:
        judge: a `Judge`, or a spec string for `make_judge` (``"verifier"``, ``"ruler:MODEL"``, ...).
        env_id: the env the completions come from: needed by the ``"verifier"`` spec, and
            recorded on trajectories when the dataset has no ``env_id`` column.
        on_error: "raise" or "skip" (see above).
        name: the reward's name in TRL's logs.
        judge_options: more arguments for `make_judge` (e.g. ``api_base``); only with a spec.
    """

    def __init__(
        self,
        judge: Judge | str,
        *,
        env_id: str | None = None,
        on_error: Literal["raise", "skip"] = "raise",
        name: str | None = None,
        **judge_options: Any,
    ):
        if isinstance(judge, str):
            judge = make_judge(judge, env_id=env_id, **judge_options)
        elif judge_options:
            raise TypeError(f"judge options {sorted(judge_options)} apply only to a judge spec string, not to a Judge object")
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
        self.judge = judge
        self.env_id = env_id
        self.on_error = on_error
        self.__name__ = name or type(judge).__name__  # TRL names a reward function by __name__

    async def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        environments: Sequence[Any] | None = None,
        log_metric: Any = None,
        log_extra: Any = None,
        **columns: Any,
    ) -> list[float | None]:
        """One reward per completion, in TRL's order: the judge's score, in [0, 1] (a verifier's
        below 0 for proven harm); None for a skipped failed group."""
        trajectories = self.trajectories(prompts, completions, environments, **columns)
        members: dict[tuple[str, str], list[int]] = {}
        for i, (prompt, trajectory) in enumerate(zip(prompts, trajectories, strict=True)):
            members.setdefault((trajectory.scenario_id, _canonical(prompt)), []).append(i)
        groups = [
            Group(scenario_id=trajectories[idx[0]].scenario_id, trajectories=[trajectories[i] for i in idx]) for idx in members.values()
        ]
        results = await asyncio.gather(*(self._score(group) for group in groups))
        scores: list[JudgeScore | None] = [None] * len(trajectories)
        for indices, result in zip(members.values(), results, strict=True):
            for i, score in zip(indices, result or [None] * len(indices), strict=True):
                scores[i] = score
        failed = sum(result is None for result in results)
        if failed:
            log.warning(
                "%s: the judge failed on %d of %d groups; their %d completions get no reward (None)",
                self.__name__,
                failed,
                len(groups),
                sum(s is None for s in scores),
            )
        self._log(scores, failed, log_metric, log_extra)
        return [None if s is None else s.score for s in scores]

    def trajectories(
        self, prompts: Sequence[Any], completions: Sequence[Any], environments: Sequence[Any] | None = None, **columns: Any
    ) -> list[Trajectory]:
        """The `Trajectory` each completion is judged as (see the class docs), in TRL's order."""
        if len(prompts) != len(completions):
            raise ValueError(f"got {len(prompts)} prompts for {len(completions)} completions")
        if environments is not None and len(environments) != len(completions):
            raise ValueError(f"got {len(environments)} environments for {len(completions)} completions")
        rows = [
            {k: v[i] for k, v in columns.items() if isinstance(v, list) and len(v) == len(completions)} for i in range(len(completions))
        ]
        trajectories = []
        for i, (prompt, completion, row) in enumerate(zip(prompts, completions, rows, strict=True)):
            environment = environments[i] if environments is not None else None
            if isinstance(environment, TRLEnvironment):
                trajectories.append(environment._finish(completion))
            else:
                trajectories.append(self._from_row(prompt, completion, row))
        return trajectories

    def _from_row(self, prompt: Any, completion: Any, row: dict[str, Any]) -> Trajectory:
        messages = _messages(prompt) + _messages(completion, default_role="assistant")
        info = row.get("info")
        if isinstance(info, str):
            info = json.loads(info)
        if info is None and row.get("task") is not None:
            task = row["task"]
            info = {"task": json.loads(task) if isinstance(task, str) else task}
        scenario_id = row.get("scenario_id") or "prompt-" + hashlib.sha256(_canonical(prompt).encode()).hexdigest()[:12]
        ended = bool(messages) and messages[-1].role == "assistant" and not messages[-1].tool_calls
        return Trajectory(
            scenario_id=str(scenario_id),
            env_id=row.get("env_id") or self.env_id,
            seed=row.get("seed"),
            messages=messages,
            termination=TerminationReason.FINAL_ANSWER if ended else None,
            info=dict(info or {}),
        )

    async def _score(self, group: Group) -> list[JudgeScore] | None:
        try:
            scores = await self.judge.score_group(group)
            if len(scores) != len(group):
                raise JudgeError(f"{type(self.judge).__name__} returned {len(scores)} scores for a group of {len(group)} trajectories")
            return scores
        except Exception as exc:
            if self.on_error == "raise":
                raise
            log.warning("%s: judge failed on group %s: %s: %s", self.__name__, group.scenario_id, type(exc).__name__, exc)
            return None

    def _log(self, scores: list[JudgeScore | None], failed: int, log_metric: Any, log_extra: Any) -> None:
        if log_metric is not None:
            values: dict[str, list[float]] = {}
            for score in scores:
                for key, value in (score.components if score else {}).items():
                    values.setdefault(key, []).append(value)
            for key, component in sorted(values.items()):
                log_metric(f"{self.__name__}/{key}", sum(component) / len(component))
            log_metric(f"{self.__name__}/failed_groups", float(failed))
        if log_extra is not None:
            log_extra(f"{self.__name__}/explanation", [s.explanation if s else None for s in scores])


def _canonical(prompt: Any) -> str:
    return json.dumps(prompt, sort_keys=True, ensure_ascii=False, default=str)


def _text(content: Any) -> str:
    """Message content as text; TRL's multimodal content blocks keep their text parts."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _messages(value: Any, default_role: str = "user") -> list[Message]:
    """TRL's prompt or completion (text, or a list of message dicts) as judgegym messages."""
    raw = [{"role": default_role, "content": value}] if isinstance(value, str) else list(value)
    messages = []
    for message in raw:
        role = message.get("role", default_role)
        if role == "assistant":
            parsed = parse_action({**message, "content": _text(message.get("content"))}, HermesParser(), "call_")
            messages.append(
                parsed.assistant_message() if not parsed.error else Message(role="assistant", content=_text(message.get("content")))
            )
        else:
            messages.append(Message(role=role, content=_text(message.get("content")), name=message.get("name")))
    return messages


# -- environments --------------------------------------------------------------------------

_RESERVED = frozenset({"reset", "get_reward", "env", "env_id", "env_kwargs", "tool_names", "scenario_id"})
_PYTHON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}


class TRLEnvironment:
    """A judgegym env as a TRL environment: build the class with `environment_factory` and
    pass it as ``GRPOTrainer(environment_factory=...)``.

    TRL makes one instance per rollout and calls ``reset(**row)`` with the dataset row before
    generating. Every public method is a tool TRL shows the model (with a schema from its type
    hints and docstring): the env's tools, plus ``reply_to_customer(message)`` for envs with a
    simulated customer. A tool call is one env step (``env.step``), so the env's limits,
    argument validation and error messages apply, and its result text is what the model reads.

    There is deliberately no ``get_reward``: TRL calls it without the completion, so the env
    never sees the model's final answer, and a relative judge needs the whole group. Score
    with `JudgeReward`, which TRL hands the ``environments`` and the completions.

    Attributes:
        env: the wrapped judgegym env (made with ``defer_judging=True``: judging is the
            reward function's job).
    """

    env_id: ClassVar[str]
    env_kwargs: ClassVar[dict[str, Any]]
    tool_names: ClassVar[tuple[str, ...]]

    def __init__(self) -> None:
        self.env = gym.make(self.env_id, defer_judging=True, **self.env_kwargs)
        self.scenario_id: str | None = None
        """The current episode's scenario (None before the first `reset`)."""
        self._trajectory: Trajectory | None = None  # set when the episode has ended
        self._calls = 0

    def reset(self, **row: Any) -> None:
        """Start the episode of a dataset row (from `env_dataset`): its ``scenario_id`` and/or
        ``seed`` pick the scenario; its ``prompt`` must be that scenario's opening, which is
        checked. Returns None: the prompt already holds everything the model needs."""
        seed, scenario_id = row.get("seed"), row.get("scenario_id")
        if seed is None and scenario_id is None:
            raise ValueError(
                f"{type(self).__name__}.reset needs a 'seed' or 'scenario_id' in the dataset row "
                f"(build the dataset with env_dataset({self.env_id!r}, ...)); the row has {sorted(row)}"
            )
        options = {"scenario_id": scenario_id} if scenario_id is not None else None
        observation, info = self.env.reset(seed=None if seed is None else int(seed), options=options)
        self.scenario_id, self._trajectory, self._calls = info["scenario_id"], None, 0
        prompt = row.get("prompt")
        if prompt is None or _turns(prompt) != _turns(observation):
            raise ValueError(
                f"the row's prompt is not the opening of {info['scenario_id']!r} in {self.env_id}: build the dataset with "
                f"env_dataset({self.env_id!r}, ...) and the same env kwargs as environment_factory ({self.env_kwargs})"
            )
        names = tuple(schema["function"]["name"] for schema in info["tools"])
        if set(names) - set(self.tool_names):
            raise ValueError(
                f"{info['scenario_id']!r} has tools {list(names)}, but {type(self).__name__} was built with {list(self.tool_names)}"
            )

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        self._calls += 1
        call = {"id": f"call_{self._calls}", "type": "function", "function": {"name": name, "arguments": arguments}}
        return self._step({"role": "assistant", "content": None, "tool_calls": [call]})

    def _step(self, action: dict[str, Any]) -> str:
        if self._trajectory is not None:
            return f"Error: the episode is over ({self._trajectory.termination}); nothing more reaches the env."
        observation, _, terminated, truncated, info = self.env.step(action)
        text = observation[-1].get("content") or ""
        if terminated or truncated:
            self._trajectory = info["trajectory"]
            text += f"\n\n[The episode is over ({info['termination']}).]"
        return text

    def _finish(self, completion: Any) -> Trajectory:
        """The finished episode: the completion's final text (the last assistant message
        without tool calls) is the last turn; a rollout that ends without ending the episode
        (no final text, or a customer still waiting) is truncated (``max_turns``)."""
        if self._trajectory is None:
            last = completion[-1] if isinstance(completion, list) and completion else {"content": completion or ""}
            if last.get("role", "assistant") == "assistant" and not last.get("tool_calls") and _text(last.get("content")).strip():
                self._step({**last, "role": "assistant", "content": _text(last.get("content"))})  # the env parses it as its own turn
            if self._trajectory is None:
                self._trajectory = self.env.unwrapped.trajectory(TerminationReason.MAX_TURNS)
        return self._trajectory


def _say(self, message: str):  # type: ignore[no-untyped-def]  # TRL turns hints into the schema: none on self or the return
    """Send the customer a message and return their reply.

    The customer sees only your messages, never tool results. Use this for every message that
    needs an answer (questions, confirmations, outcomes). Plain text outside a tool call is your
    last message: the customer reads it, but you will not see a reply.

    Args:
        message: Your message to the customer, as plain text.
    """
    return self._step({"role": "assistant", "content": message})


_say.__name__ = _say.__qualname__ = "reply_to_customer"


def environment_factory(env_id: str, *, split: str = "train", **env_kwargs: Any) -> type[TRLEnvironment]:
    """A `TRLEnvironment` class for `env_id` (the factory TRL calls, once per rollout):
    ``GRPOTrainer(environment_factory=environment_factory("RagSupport-v0"), ...)``.

    Its tool methods are generated from the env's tool schemas (names, argument types, defaults
    and descriptions, as a Google-style docstring TRL turns back into the same schema). Envs
    whose customer answers each text turn (CustomerSupport-v0) also get
    ``reply_to_customer(message)``, the only way to talk to the customer mid-rollout. `split`
    and `env_kwargs` go to ``gym.make``; build the dataset with the same ones (`env_dataset`).
    """
    kwargs = {"split": split, **env_kwargs}
    probe = gym.make(env_id, **kwargs)
    try:
        _, info = probe.reset(seed=0)
        env_class = type(probe.unwrapped)
    finally:
        probe.close()
    namespace: dict[str, Any] = {"env_id": env_id, "env_kwargs": kwargs, "__module__": __name__}
    for schema in info["tools"]:
        name = schema["function"]["name"]
        if not name.isidentifier() or name.startswith("_") or name in _RESERVED:
            raise ValueError(f"{env_id} has a tool named {name!r}, which cannot be a method of a TRL environment")
        namespace[name] = _tool_method(schema)
    if env_class._on_text is not ChatEnv._on_text:  # a simulated user answers text turns
        namespace["reply_to_customer"] = _say
    namespace["tool_names"] = tuple(n for n in namespace if n not in ("env_id", "env_kwargs", "__module__"))
    namespace["__doc__"] = f"{env_id} as a TRL environment; tools: {', '.join(namespace['tool_names'])}."
    return type(f"{env_class.__name__}ForTRL", (TRLEnvironment,), namespace)


def _tool_method(schema: dict[str, Any]) -> Any:
    """A method with the tool's signature and docstring that runs the tool as an env step."""
    function = schema["function"]
    name = function["name"]
    parameters = function.get("parameters", {})
    required = set(parameters.get("required", []))
    P = inspect.Parameter
    signature = [P("self", P.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    args_doc = []
    for arg, spec in parameters.get("properties", {}).items():
        annotation = _PYTHON_TYPES.get(spec.get("type"), Any) if isinstance(spec.get("type"), str) else Any
        default = P.empty if arg in required else spec.get("default")
        signature.append(P(arg, P.KEYWORD_ONLY, default=default, annotation=annotation))
        annotations[arg] = annotation
        described = " ".join((spec.get("description") or arg).split())
        if "enum" in spec:
            described += f" (choices: {json.dumps(spec['enum'])})"
        args_doc.append(f"    {arg}: {described}")

    def tool(self, **arguments: Any):  # type: ignore[no-untyped-def]
        return self._call(name, arguments)

    description = (function.get("description") or name).strip()
    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = description + ("\n\nArgs:\n" + "\n".join(args_doc) if args_doc else "")
    tool.__signature__ = inspect.Signature(signature)  # type: ignore[attr-defined]
    tool.__annotations__ = annotations
    return tool


def _turns(messages: Any) -> list[tuple[str, str]]:
    if not isinstance(messages, list):
        return []
    return [(m.get("role", ""), _text(m.get("content"))) for m in messages if isinstance(m, dict)]


__all__ = ["RAG_SINGLE_TURN_PROMPT", "JudgeReward", "TRLEnvironment", "env_dataset", "environment_factory"]
