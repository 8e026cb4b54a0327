"""Prime Intellect's ``verifiers`` (0.4, its ``verifiers.v1`` stack) and judgegym: any judgegym env
as a verifiers environment, scored by any judgegym judge.

`load_environment` builds one. Its pieces are verifiers plug-ins: `JudgegymTaskset` (the env's
scenarios, one task per seed), `JudgegymHarness` (the agent loop: the model, called through the
rollout's interception endpoint, plays the judgegym env itself, so tool results, simulated
customers and limits are judgegym's), `JudgegymTask` (a pointwise judge as the per-rollout
``@vf.reward``) and `JudgegymEnv` (``group_size`` attempts per episode; a relative judge scores
them together in ``finalize``). `to_trajectory` reads a verifiers trace back as the env's own
`Trajectory`. ``verifiers`` is imported only when one of these is used.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from ..judges.base import Judge, JudgeScore
from ..judges.specs import make_judge
from ..trajectory import Group, TerminationReason, Trajectory

if TYPE_CHECKING:
    import verifiers.v1 as vf

TASKSET_ID = "judgegym-verifiers"
"""The id verifiers resolves this module by in-process: `load_environment` registers it as the
top-level module ``judgegym_verifiers`` (verifiers imports tasksets by a top-level name). From the
``vf-eval`` command line, publish a package instead (docs/plugins/verifiers.md)."""

REWARD = "judge"
"""The name of the judge's reward on verifiers traces (``trace.rewards["judge"]``)."""

_TRAJECTORY_KEY = "judgegym_trajectory"  # trace.info: the env's own trajectory (JSON)
_EXPLANATION_KEY = "judge_explanation"  # trace.info: the judge's explanation
_CLASSES = (
    "JudgegymData",
    "JudgegymTaskConfig",
    "JudgegymTask",
    "JudgegymTasksetConfig",
    "JudgegymTaskset",
    "JudgegymHarnessConfig",
    "JudgegymHarness",
    "JudgegymEnvConfig",
    "JudgegymEnv",
)


def load_environment(
    env_id: str = "RagSupport-v0",
    *,
    judge: str = "verifier",
    split: str = "train",
    num_examples: int = 100,
    seed: int = 0,
    max_turns: int | None = None,
    group_size: int = 1,
    judge_options: Mapping[str, Any] | None = None,
    **env_kwargs: Any,
) -> vf.Env:
    """`env_id` as a verifiers environment (a `JudgegymEnv`), ready for ``vf``'s eval and trainers.

    Its taskset holds `num_examples` scenarios, seeds ``seed`` ... ``seed + num_examples - 1``
    (seed s is ``env.reset(seed=s)``), each task's prompt the scenario's opening messages. Each
    rollout plays its own ``gym.make(env_id, defer_judging=True, split=split, max_turns=max_turns,
    **env_kwargs)``; the model sees the env's tools as OpenAI tools.

    `judge` is a `make_judge` spec (``"verifier"``, ``"ruler:MODEL"``, ``"0.7*verifier+0.3*grounding"``
    ...) with `judge_options` for its constructor, or the import path of a judge, ``pkg.module:NAME``
    or ``path/to/file.py:NAME`` (a `Judge`, or a class or function returning one). A pointwise
    judge is the per-rollout reward ``"judge"``; a relative one (``judge.relative``, e.g. RULER)
    scores the `group_size` attempts of each episode together, once per episode. Components of
    the score become trace metrics, the explanation ``trace.info["judge_explanation"]``.

    The env's config (``env.config``) describes all of it, so it can go to ``EvalConfig(env=...)``.
    Agents run in the local subprocess runtime by default (the harness needs no sandbox).
    """
    vf = _import_verifiers()
    classes = _classes()
    _register_taskset_id()
    taskset = classes["JudgegymTasksetConfig"](
        id=TASKSET_ID,
        env_id=env_id,
        split=split,
        num_examples=num_examples,
        seed=seed,
        max_turns=max_turns,
        env_kwargs=env_kwargs,
        task=classes["JudgegymTaskConfig"](judge=judge, judge_options=dict(judge_options or {})),
    )
    _judge(judge, env_id, json.dumps(dict(judge_options or {}), sort_keys=True))  # a bad spec fails here, not mid-eval
    return vf.load_environment(classes["JudgegymEnvConfig"](taskset=taskset, group_size=group_size))


def to_trajectory(trace: vf.Trace) -> Trajectory:
    """The judgegym `Trajectory` of a verifiers trace that `JudgegymHarness` played: the env's own
    record of the episode (messages as the env kept them, tool schemas, termination, counters and
    ``info["task"]``), plus, once the trace is scored, the judge's ``reward``, components (as
    ``metrics``) and ``info["explanation"]``.

    Raises ValueError for a trace without that record: one played by another harness, or one
    that failed before the episode ended (its errors are in the message).
    """
    trajectory = _played(trace)
    reward = trace.rewards.get(REWARD)
    if reward is not None:
        trajectory.reward = reward.score
        trajectory.metrics.update({key: value for key, value in trace.metrics.items() if value is not None})
        trajectory.info["explanation"] = trace.info.get(_EXPLANATION_KEY, "")
    return trajectory


# -- internals ----------------------------------------------------------------------------


def __getattr__(name: str) -> Any:
    # The verifiers plug-in classes subclass verifiers' own, so they exist once verifiers is imported.
    if name in _CLASSES:
        _import_verifiers()
        return _classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _import_verifiers() -> Any:
    try:
        import verifiers.v1 as vf
    except ImportError as exc:
        raise ImportError(
            "judgegym.integrations.verifiers needs Prime Intellect's verifiers 0.4 (the verifiers.v1 API): "
            "pip install 'verifiers==0.4.0' (in its own environment, as scripts/test_verifiers.sh makes one)"
        ) from exc
    return vf


def _register_taskset_id() -> None:
    sys.modules.setdefault(TASKSET_ID.replace("-", "_"), sys.modules[__name__])


@functools.lru_cache(maxsize=16)
def _judge(spec: str, env_id: str, options: str) -> Judge:
    """One judge per (spec, env, options) per process: judges hold models and caches."""
    return make_judge(spec, env_id=env_id, **json.loads(options))


def _task_judge(task: Any) -> Judge:
    return _judge(task.config.judge, task.data.env_id, json.dumps(task.config.judge_options, sort_keys=True))


def _played(trace: Any) -> Trajectory:
    stored = trace.info.get(_TRAJECTORY_KEY)
    if stored is None:
        errors = "; ".join(f"{e.type}: {e.message}" for e in trace.errors)
        why = f"it failed ({errors})" if errors else "it was not played by JudgegymHarness"
        raise ValueError(f"trace {trace.id} has no judgegym trajectory: {why}")
    return Trajectory.model_validate(stored)


def _record(trace: Any, score: JudgeScore) -> None:
    trace.record_metrics(score.components)
    trace.info[_EXPLANATION_KEY] = score.explanation


def _turns(messages: Any) -> list[tuple[str, str]]:
    turns = []
    for message in messages or []:
        data = message if isinstance(message, Mapping) else message.model_dump()
        content = data.get("content")
        turns.append((str(data.get("role")), content if isinstance(content, str) else json.dumps(content)))
    return turns


def _make_env(data: Any) -> gym.Env:
    kwargs = dict(data.env_kwargs)
    if data.max_turns is not None:
        kwargs["max_turns"] = data.max_turns
    return gym.make(data.env_id, defer_judging=True, split=data.split, **kwargs)


@functools.cache
def _classes() -> dict[str, type]:
    vf = _import_verifiers()
    from pydantic import Field

    class JudgegymData(vf.TaskData):
        """One scenario of a judgegym env: ``prompt`` is its opening (system and user messages),
        ``id`` its scenario id; the rest rebuilds the episode."""

        env_id: str
        split: str
        seed: int
        max_turns: int | None = None
        env_kwargs: dict[str, Any] = Field(default_factory=dict)

    class JudgegymTaskConfig(vf.TaskConfig):
        """How rollouts are judged (``--env.taskset.task.judge``)."""

        judge: str = "verifier"
        """A judge spec (``verifier``, ``ruler:MODEL``, ``pkg.module:NAME``, ...: `judgegym.judges.make_judge`)."""
        judge_options: dict[str, Any] = Field(default_factory=dict)
        """Arguments for the judge's constructor (e.g. ``api_base``)."""

    class JudgegymTask(vf.Task[JudgegymData, vf.State, JudgegymTaskConfig]):
        """A scenario; a pointwise judge scores each rollout as the reward ``"judge"``."""

        @vf.reward
        async def judge(self, trace: vf.Trace) -> float:
            judge = _task_judge(self)
            if judge.relative:
                raise ValueError(
                    f"{type(judge).__name__} is a relative judge: it scores whole groups, which JudgegymEnv does "
                    "in finalize; run the taskset with its own env (no --env.id)"
                )
            trajectory = _played(trace)
            [score] = await judge.score_group(Group(scenario_id=trajectory.scenario_id, trajectories=[trajectory]))
            _record(trace, score)
            return score.score

    class JudgegymTasksetConfig(vf.TasksetConfig):
        """Which scenarios (``--env.taskset.*``): seeds ``seed`` ... ``seed + num_examples - 1`` of
        ``env_id``'s ``split``."""

        env_id: str = "RagSupport-v0"
        split: str = "train"
        num_examples: int = Field(100, ge=1)
        seed: int = 0
        max_turns: int | None = Field(None, ge=1)
        """The env's turn limit (None: the env's default)."""
        env_kwargs: dict[str, Any] = Field(default_factory=dict)
        """More ``gym.make`` arguments (e.g. ``n_products``)."""
        task: JudgegymTaskConfig = JudgegymTaskConfig()

    class JudgegymTaskset(vf.Taskset[JudgegymTask, JudgegymTasksetConfig]):
        """The scenarios of a judgegym env, one task per seed, in seed order."""

        def load(self) -> Iterator[JudgegymTask]:
            config = self.config
            fields = {"env_id": config.env_id, "split": config.split, "max_turns": config.max_turns, "env_kwargs": config.env_kwargs}
            env = _make_env(JudgegymData(seed=config.seed, **fields))
            try:
                for seed in range(config.seed, config.seed + config.num_examples):
                    observation, info = env.reset(seed=seed)
                    data = JudgegymData(id=info["scenario_id"], prompt=observation, seed=seed, **fields)
                    yield JudgegymTask(data, config.task)
            finally:
                env.close()

    class JudgegymHarnessConfig(vf.HarnessConfig):
        """No knobs: the env's own limits bound the episode (``--env.taskset.max-turns``)."""

    class JudgegymHarness(vf.Harness[JudgegymHarnessConfig]):
        """The judgegym episode loop, in-process: each model turn is one ``env.step``.

        The model is called through the rollout's interception endpoint (so verifiers records
        every call on the trace) with the env's observation as the messages and its tools as
        OpenAI tools; its reply is the action. The episode ends where the env ends it (a final
        answer, a finished customer, ``max_turns``, ``max_tool_calls``) or where verifiers stops
        the rollout (its own turn or token limits: then it is truncated, ``max_turns``). The
        env's trajectory goes to ``trace.info``, for the judge and `to_trajectory`.
        """

        APPENDS_SYSTEM_PROMPT = True
        EXECUTES_CODE = False
        NEEDS_CONTAINER = False

        async def launch(
            self,
            ctx: vf.ModelContext,
            trace: vf.Trace,
            runtime: vf.Runtime,
            endpoint: str,
            secret: str,
            mcp_urls: dict[str, str],
            data: vf.TaskData,
        ) -> vf.ProgramResult:
            from openai import APIStatusError, AsyncOpenAI

            if not isinstance(data, JudgegymData):
                raise TypeError(f"JudgegymHarness plays JudgegymTaskset tasks, got {type(data).__name__}")
            env = _make_env(data)
            try:
                observation, info = env.reset(seed=data.seed)
                if _turns(observation) != _turns(data.prompt):
                    raise ValueError(
                        f"task {data.id!r} is not the opening of seed {data.seed} of {data.env_id} with "
                        f"{data.env_kwargs}: the task data and the installed env disagree"
                    )
                tools = {"tools": info["tools"]} if info["tools"] else {}
                async with AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0) as client:
                    while True:
                        try:
                            completion = await client.chat.completions.create(model=ctx.model, messages=observation, **tools)
                        except APIStatusError:
                            if trace.stop_condition is None:
                                raise
                            trajectory = env.unwrapped.trajectory(TerminationReason.MAX_TURNS)
                            break
                        action = completion.choices[0].message.model_dump(mode="json", exclude_none=True)
                        observation, _, terminated, truncated, step_info = env.step(action)
                        if terminated or truncated:
                            trajectory = step_info["trajectory"]
                            break
            finally:
                env.close()
            trace.info[_TRAJECTORY_KEY] = trajectory.model_dump(mode="json")
            return vf.ProgramResult(exit_code=0, stdout="", stderr="")

    class JudgegymEnvConfig(vf.EnvConfig):
        """The env (``--env.*``): one agent seat, ``group_size`` attempts per episode."""

        agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
        """The policy's seat; the local subprocess runtime by default (nothing runs in it)."""
        group_size: int = Field(1, ge=1)
        """Attempts per episode. A relative judge scores each episode's attempts together;
        with a pointwise judge, ``-r`` (independent episodes) is the usual way to repeat."""

    class JudgegymEnv(vf.Env[JudgegymEnvConfig]):
        """A judgegym env's episodes: ``group_size`` attempts at one scenario. A pointwise judge
        scores each attempt as it ends (`JudgegymTask`); a relative judge scores the attempts of
        the episode together in `finalize`, with one ``score_group`` call."""

        async def run(self, task: vf.Task, agents: vf.Agents) -> None:
            attempt = task.defer_scoring() if _task_judge(task).relative else task
            async with asyncio.TaskGroup() as attempts:
                for _ in range(self.config.group_size):
                    attempts.create_task(agents.agent.run(attempt))

        async def finalize(self, task: vf.Task, episode: vf.Episode) -> None:
            judge = _task_judge(task)
            if not judge.relative:
                return
            group = Group(scenario_id=task.data.id or "", trajectories=[_played(trace) for trace in episode.traces])
            scores = await judge.score_group(group)
            if len(scores) != len(group):
                raise ValueError(f"{type(judge).__name__} returned {len(scores)} scores for a group of {len(group)}")
            for trace, score in zip(episode.traces, scores, strict=True):
                trace.record_reward(REWARD, score.score)
                _record(trace, score)

    classes: dict[str, type] = {
        "JudgegymData": JudgegymData,
        "JudgegymTaskConfig": JudgegymTaskConfig,
        "JudgegymTask": JudgegymTask,
        "JudgegymTasksetConfig": JudgegymTasksetConfig,
        "JudgegymTaskset": JudgegymTaskset,
        "JudgegymHarnessConfig": JudgegymHarnessConfig,
        "JudgegymHarness": JudgegymHarness,
        "JudgegymEnvConfig": JudgegymEnvConfig,
        "JudgegymEnv": JudgegymEnv,
    }
    for name, cls in classes.items():
        cls.__qualname__ = name  # importable as judgegym.integrations.verifiers:NAME (verifiers' refs)
    return classes


__all__ = ["REWARD", "TASKSET_ID", "load_environment", "to_trajectory", *_CLASSES]
