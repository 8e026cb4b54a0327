"""The tools demo: the standard recipe, supervised warm start then RL, on a real multi-turn env with
its tools: RagSupport-v0 (``judgegym demo --task tools``) or CustomerSupport-v0 (``--task
support``), the env's own prompt, tools and verifier; no prefetched articles, no answer-only
shaping.

SmolLM2-135M-Instruct does not call tools zero-shot, so GRPO from it has nothing to learn
from. The demo:

1. plays the env's scripted teacher (`DEMO_ENVS`: on RagSupport the `oracle`, which searches,
   reads the supporting articles and answers citing them; on CustomerSupport the rule-based
   `policy` agent, which identifies the customer, looks the order up and acts by the policy)
   on train-split scenarios, keeps the episodes the verifier scores 1.0 (rejection sampling),
   and writes them to ``sft-data.jsonl``;
2. fine-tunes a LoRA adapter on them (`SFTTrainer`: loss on the assistant tokens only, the
   same token sequences GRPO samples);
3. continues that adapter with GRPO (`GRPOTrainer` with ``init_adapter``) on other
   train-split scenarios;
4. the control (``control=True``): the same SFT adapter trained on by SFT for GRPO's training
   time instead (the first SFT's data plus as many new teacher episodes, more epochs), so that a
   gain of GRPO over SFT is not only the gain of more training: the claim is that the judge's
   reward adds what imitation does not;
5. evaluates the same held-out test scenarios greedily before, after SFT, after GRPO and after
   the control, and reports reward (the verifier alone), tool-call rate, tool error rate and
   the env's own figures (`DEMO_ENVS`: recall, citation and abstention; or success,
   policy-violation and false-claim rates), with paired bootstrap intervals of each change;
6. with ``pass_trials=k``, plays each stage's policy k times more on the same scenarios,
   sampling, for tau-bench's pass^1 .. pass^k with intervals (a policy that succeeds only
   sometimes loses pass^k).

`run_tools_demo` does it all; ``judgegym demo --task tools`` prints it.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..evaluation.compare import Change, episodes_page, paired_changes, per_episode
from ..trajectory import Trajectory, read_jsonl, write_jsonl

TOOLS_DEMO_ENV = "RagSupport-v0"
STAGES = ("before", "sft", "grpo", "sft_more")
"""The held-out evals: the base model, after SFT, after GRPO from the SFT adapter, and the
control: after SFT continued for GRPO's training time (with ``control=True``). Each of
``compare_judges`` adds a stage ``grpo[SPEC]``."""


@dataclass(frozen=True)
class DemoEnv:
    """What the demo needs to know of an env: who teaches it and what it reports."""

    teacher: str
    """The scripted agent whose verified episodes are the SFT data."""
    reward: str
    """GRPO's default training reward (a judge spec)."""
    metrics: tuple[str, ...]
    """The env's figures each stage reports besides reward and tool use: a verifier component's
    mean, or ``X_rate`` for the share of episodes whose component ``X`` is above 0
    (``policy_violations_rate``: episodes that broke a policy rule at least once)."""
    sft_checkpointing: bool = False
    """Whether SFT recomputes activations in the backward pass. Worth it where the teacher's
    episodes are long: on the six longest of 24 verified support episodes (about 2,900 tokens)
    SFT peaks at 2.88 GB with it and 5.68 GB without, in the same time (53.9 s and 55.5 s for 3
    steps); on RagSupport's (about 1,300 tokens) at 2.25 GB against 3.75 GB, but 15% slower
    (33.8 s against 29.4 s), where SFT does not set the demo's peak
    (`python -m judgegym.benchmarks.train_memory`, 2 cores, 2026-12-06)."""


DEMO_ENVS = {
    "RagSupport-v0": DemoEnv("oracle", "0.8*verifier+0.2*grounding", ("recall", "citation", "abstained")),
    "CustomerSupport-v0": DemoEnv(
        "policy",
        "verifier",
        ("success", "db_match", "identified", "policy_violations_rate", "false_claims_rate"),
        sft_checkpointing=True,
    ),
}
"""The envs the demo trains on. RagSupport's training reward adds a dense grounding term to the
verifier; CustomerSupport's verifier is graded already (failures ordered by severity,
docs/customersupport.md), and its answers are short reports of tool results."""

STAGE_METRICS = ("reward", "tool_call_rate", "tool_error_rate", *DEMO_ENVS[TOOLS_DEMO_ENV].metrics)
"""What each stage reports on RagSupport-v0 (`stage_metrics`; `stage_metric_names` for any env)."""


def stage_metric_names(env_id: str = TOOLS_DEMO_ENV) -> tuple[str, ...]:
    """The figures each stage reports on `env_id`: reward, tool-call rate, tool error rate and
    the env's own (`DEMO_ENVS`)."""
    if env_id not in DEMO_ENVS:
        raise ValueError(f"the tools demo trains on {', '.join(DEMO_ENVS)}, not {env_id!r}")
    return ("reward", "tool_call_rate", "tool_error_rate", *DEMO_ENVS[env_id].metrics)


SFT_SEED_OFFSET = 500_000
"""SFT data plays train-split seeds from here: GRPO's scenarios (from 0) are others."""

CONTROL_SEED_OFFSET = 600_000
"""The control's new teacher episodes play train-split seeds from here."""


@dataclass
class ToolsDemoConfig:
    """The demo's sizes; the defaults fit the CPU budget of docs/trainer.md#the-tools-demo."""

    output_dir: str = "runs/demo-tools"
    env_id: str = TOOLS_DEMO_ENV
    """The env trained and evaluated on (one of `DEMO_ENVS`)."""
    model: str = "smollm2-135m"
    sft_episodes: int = 32
    """Teacher episodes played for the SFT data (those scoring below `min_reward` are dropped)."""
    min_reward: float = 1.0
    sft_epochs: int = 3
    sft_learning_rate: float = 1e-3
    sft_checkpointing: bool | None = None
    """Recompute activations in SFT's backward pass (None: the env's choice, `DemoEnv`)."""
    grpo_steps: int = 3
    grpo_judge: str | None = None
    """The GRPO training reward (None: the env's, `DEMO_ENVS`); the held-out figure is always
    the verifier alone."""
    scenarios_per_step: int = 2
    oversample: int = 0
    """Extra scenarios GRPO plays each step, training on the `scenarios_per_step` of widest
    reward spread (`GRPOConfig.oversample`)."""
    group_size: int = 4
    grpo_learning_rate: float = 1e-4
    temperature: float = 0.8
    eval_episodes: int = 16
    max_new_tokens: int = 128
    max_turns: int = 4
    seed: int = 0
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra env keyword arguments for every stage (none: the env as registered)."""
    control: bool = True
    """Also continue the SFT adapter with SFT for GRPO's training time (stage ``sft_more``)."""
    compare_judges: list[str] = field(default_factory=list)
    """More GRPO runs from the same SFT adapter, same steps and seeds, each with one of these
    judge specs as the only training reward (stage ``grpo[SPEC]``, folder ``grpo-SPEC``), all
    evaluated by the verifier: e.g. ``["learned"]``, the gold-free judge against `grpo_judge`."""
    epsilon_high: float | None = None
    """GRPO's upper clip range (clip-higher, e.g. 0.28); None: the lower one (0.2)."""
    pass_trials: int = 0
    """Sampled attempts per held-out scenario for pass^1 .. pass^k at every stage (0: none;
    the greedy evals give one answer per scenario, so pass^k needs its own samples)."""
    pass_temperature: float = 0.7
    """The sampling temperature of those attempts."""
    resume: bool = False
    """Keep the stages an interrupted demo in `output_dir` finished (``progress.json`` lists
    them) and run the rest with this config: an unfinished stage starts over."""

    def __post_init__(self) -> None:
        stage_metric_names(self.env_id)  # an env the demo knows
        if self.grpo_judge is None:
            self.grpo_judge = DEMO_ENVS[self.env_id].reward
        if self.pass_trials < 0 or (self.pass_trials and self.pass_temperature <= 0):
            raise ValueError(f"pass_trials must be >= 0 with pass_temperature > 0, got {self.pass_trials} and {self.pass_temperature}")

    @property
    def teacher(self) -> str:
        """The scripted agent whose episodes are the SFT data (`DEMO_ENVS`)."""
        return DEMO_ENVS[self.env_id].teacher


@dataclass
class ToolsDemoResult:
    """The three stages' held-out metrics, the changes between them, and where the files are."""

    stages: dict[str, dict[str, float]]
    """stage -> `stage_metrics` of its held-out episodes."""
    changes: dict[str, list[Change]]
    """``"sft"``: SFT against before; ``"grpo"``: GRPO against SFT; ``"total"``: GRPO against
    before; with the control, ``"control"``: continued SFT against SFT, and ``"grpo_vs_control"``:
    GRPO against continued SFT. With ``pass_trials``, each also holds ``pass^k`` (paired over
    scenarios)."""
    episodes: dict[str, list[Trajectory]]
    sft_data: dict[str, Any]
    timings: dict[str, float]
    peak_rss_gb: float
    plot: Path | None
    env_id: str = TOOLS_DEMO_ENV
    pass_k: dict[str, dict[str, tuple[float, float, float]]] = field(default_factory=dict)
    """With ``pass_trials``: stage -> ``"pass^k"`` -> (estimate, 95% low, 95% high) over the
    sampled attempts (`sampled_episodes`)."""
    sampled_episodes: dict[str, list[Trajectory]] = field(default_factory=dict)
    sampled: dict[str, dict[str, tuple[float, float, float]]] = field(default_factory=dict)
    """With ``pass_trials``: stage -> ``"reward"`` and each sign of harm the env counts
    (`sampled_metric_names`) -> (mean, 95% low, 95% high) over the sampled attempts, each scenario
    weighing once: the distribution GRPO trains on, where greedy shows one answer per scenario."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "env_id": self.env_id,
            "stages": self.stages,
            "pass_k": self.pass_k,
            "sampled": self.sampled,
            "changes": {k: [asdict(c) for c in v] for k, v in self.changes.items()},
            "sft_data": self.sft_data,
            "timings": self.timings,
            "peak_rss_gb": self.peak_rss_gb,
        }


def stage_metrics(trajectories: list[Trajectory], env_id: str = TOOLS_DEMO_ENV) -> dict[str, float]:
    """Held-out figures of one stage on `env_id`: mean reward; tool-call rate (share of
    episodes with at least one tool call); tool error rate (failed calls / calls, NaN without
    calls); the env's own figures (`DEMO_ENVS`; on RagSupport recall is over answerable
    questions); tool calls and turns per episode."""
    calls = sum(t.metrics.get("tool_calls", 0.0) for t in trajectories)
    errors = sum(t.metrics.get("tool_errors", 0.0) for t in trajectories)
    figures = {name: _mean(per_episode(trajectories, name)) for name in stage_metric_names(env_id) if name != "tool_error_rate"}
    return {
        **figures,
        "tool_error_rate": errors / calls if calls else math.nan,
        "tool_calls": calls / max(len(trajectories), 1),
        "turns": _mean([t.metrics.get("turns", math.nan) for t in trajectories]),
        "episodes": float(len(trajectories)),
    }


def stage_changes(before: list[Trajectory], after: list[Trajectory], env_id: str = TOOLS_DEMO_ENV) -> list[Change]:
    """Per figure of `env_id` (`stage_metric_names`), the mean change over the scenarios both
    stages played and its 95% paired bootstrap interval (`paired_changes`; tool error rate has
    no per-episode pairing and is left out)."""
    return paired_changes(before, after, [m for m in stage_metric_names(env_id) if m != "tool_error_rate"])


def pass_k_changes(before: list[Trajectory], after: list[Trajectory], k_max: int) -> list[Change]:
    """pass^1 .. pass^`k_max` of two stages' sampled attempts at the same scenarios, each with
    the 95% paired bootstrap interval of its change over scenarios."""
    from ..evaluation import bootstrap_ci
    from ..evaluation.stats import pass_k_per_task

    changes = []
    for k in range(1, k_max + 1):
        b, a = pass_k_per_task(before, k), pass_k_per_task(after, k)
        if list(b) != list(a):
            raise RuntimeError("the two stages' sampled attempts are at different scenarios")
        deltas = [a[key] - b[key] for key in b]
        low, high = bootstrap_ci(deltas)
        changes.append(Change(f"pass^{k}", _mean(list(b.values())), _mean(list(a.values())), float(np.mean(deltas)), low, high))
    return changes


def sampled_metric_names(env_id: str) -> list[str]:
    """What the sampled attempts report besides pass^k: the reward, and the env's per-episode
    rates (a policy violation, a false claim: the harm a trained agent must not learn)."""
    return ["reward", *(m for m in stage_metric_names(env_id) if m.endswith("_rate") and m not in ("tool_call_rate", "tool_error_rate"))]


def _per_scenario(trajectories: list[Trajectory], metric: str) -> dict[str, float]:
    """`metric`'s mean over each scenario's attempts (NaN values left out), by scenario id."""
    values: dict[str, list[float]] = {}
    for trajectory, value in zip(trajectories, per_episode(trajectories, metric), strict=True):
        values.setdefault(str(trajectory.scenario_id), []).append(value)
    return {key: _mean([v for v in vs if not math.isnan(v)]) for key, vs in values.items()}


def sampled_figures(trajectories: list[Trajectory], env_id: str) -> dict[str, tuple[float, float, float]]:
    """Each of `sampled_metric_names` over sampled attempts: (mean, 95% bootstrap interval),
    resampling scenarios (a scenario's attempts are not independent of one another)."""
    from ..evaluation import bootstrap_ci

    figures = {}
    for metric in sampled_metric_names(env_id):
        values = [v for v in _per_scenario(trajectories, metric).values() if not math.isnan(v)]
        if values:
            figures[metric] = (_mean(values), *bootstrap_ci(values))
    return figures


def sampled_changes(before: list[Trajectory], after: list[Trajectory], env_id: str) -> list[Change]:
    """The change of each of `sampled_metric_names` between two stages' sampled attempts at
    the same scenarios (``"<metric> (sampled)"``), paired over scenarios."""
    from ..evaluation import bootstrap_ci

    changes = []
    for metric in sampled_metric_names(env_id):
        b, a = _per_scenario(before, metric), _per_scenario(after, metric)
        if set(b) != set(a):
            raise RuntimeError("the two stages' sampled attempts are at different scenarios")
        pairs = [(b[key], a[key]) for key in b if not (math.isnan(b[key]) or math.isnan(a[key]))]
        if pairs:
            deltas = [y - x for x, y in pairs]
            low, high = bootstrap_ci(deltas)
            before_mean, after_mean = _mean([x for x, _ in pairs]), _mean([y for _, y in pairs])
            changes.append(Change(f"{metric} (sampled)", before_mean, after_mean, float(np.mean(deltas)), low, high))
    return changes


def sampled_attempts(config: ToolsDemoConfig, adapter: Path | None, path: Path) -> list[Trajectory]:
    """Play the policy (the base model with `adapter`, or without one) ``config.pass_trials``
    times on each of the ``config.eval_episodes`` held-out scenarios, sampling at
    ``config.pass_temperature`` (trial t of a scenario draws its own seed, so attempts differ
    and a rerun repeats them), judged by the verifier; written to `path`."""
    from ..agents import make_agent
    from ..evaluation import evaluate

    target = config.model + (f"+{adapter}" if adapter is not None else "")
    spec = f"hf:{target}?max_tokens={config.max_new_tokens}&temperature={config.pass_temperature}&seed={config.seed}"
    run = asyncio.run(
        evaluate(
            config.env_id,
            make_agent(spec, env_id=config.env_id),
            episodes=config.eval_episodes,
            trials=config.pass_trials,
            env_kwargs={**config.env_kwargs, "split": "test", "max_turns": config.max_turns},
            concurrency=min(16, config.eval_episodes * config.pass_trials),
        )
    )
    if run.failed:
        raise RuntimeError(f"{len(run.failed)} sampled episodes failed; the first: {run.failed[0][2]}")
    write_jsonl(path, run.trajectories)
    return run.trajectories


def _mean(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return float(np.mean(finite)) if finite else math.nan


def sft_data(path: Path, config: ToolsDemoConfig, *, seed: int = SFT_SEED_OFFSET) -> dict[str, Any]:
    """Play the env's teacher (`DEMO_ENVS`) on `config.sft_episodes` train-split scenarios
    (seeds from `seed`), judge them with the verifier, and write them all to `path`; returns
    how many scored at least `config.min_reward` (what SFT keeps)."""
    from ..agents import make_agent
    from ..evaluation import evaluate

    agent = make_agent(config.teacher, env_id=config.env_id)
    run = asyncio.run(
        evaluate(
            config.env_id,
            agent,
            episodes=config.sft_episodes,
            seed=seed,
            env_kwargs={**config.env_kwargs, "split": "train", "max_turns": config.max_turns},
            concurrency=8,
        )
    )
    write_jsonl(path, run.trajectories)
    kept = [t for t in run.trajectories if (t.reward or 0.0) >= config.min_reward]
    return {"played": len(run.trajectories), "kept": len(kept), "failed": len(run.failed), "file": str(path)}


def _shared(config: ToolsDemoConfig) -> dict[str, Any]:
    return {"eval_episodes": config.eval_episodes, "max_new_tokens": config.max_new_tokens, "max_turns": config.max_turns}


def demo_sft_config(config: ToolsDemoConfig, data_path: Path, output_dir: Path) -> Any:
    """The demo's `SFTConfig`: SFT on the teacher's episodes in `data_path` (those scoring at
    least ``config.min_reward``), LoRA, one episode per micro-batch, bf16 autocast where native."""
    from .sft import SFTConfig

    return SFTConfig(
        data=[str(data_path)],
        model=config.model,
        min_reward=config.min_reward,
        env_id=config.env_id,
        env_kwargs=dict(config.env_kwargs),
        epochs=config.sft_epochs,
        learning_rate=config.sft_learning_rate,
        warmup_steps=2,
        micro_batch_tokens=1600,  # one episode per pass
        gradient_accumulation_steps=2,
        mixed_precision="auto",  # bf16 where native: about 2.3x the float32 + checkpointing throughput on a 2-core AVX-512 CPU
        gradient_checkpointing=DEMO_ENVS[config.env_id].sft_checkpointing if config.sft_checkpointing is None else config.sft_checkpointing,
        save_steps=0,
        seed=config.seed,
        output_dir=str(output_dir),
        **_shared(config),
    )


def demo_grpo_config(config: ToolsDemoConfig, judge: str, init_adapter: Path, output_dir: Path) -> Any:
    """The demo's `GRPOConfig`: GRPO from the SFT adapter `init_adapter` with `judge` as the
    training reward, held out by the verifier after the last step."""
    from .grpo import GRPOConfig

    return GRPOConfig(
        env_id=config.env_id,
        model=config.model,
        env_kwargs=dict(config.env_kwargs),
        judge=judge,
        eval_judge="verifier",
        init_adapter=str(init_adapter),
        scenarios_per_step=config.scenarios_per_step,
        oversample=config.oversample,
        group_size=config.group_size,
        micro_batch_size=1,  # one episode per pass: a 1,400-token episode's logits alone are 0.3 GB
        gradient_checkpointing=True,  # 5.2 GB against 7.3 GB without, for an update about 11% slower
        temperature=config.temperature,
        epsilon_high=config.epsilon_high,
        learning_rate=config.grpo_learning_rate,
        max_steps=config.grpo_steps,
        eval_steps=config.grpo_steps,
        eval_on_start=False,  # the SFT run's last eval is this policy's
        save_steps=config.grpo_steps,
        seed=config.seed,
        output_dir=str(output_dir),
        **_shared(config),
    )


def run_tools_demo(config: ToolsDemoConfig | None = None, *, log: Any = print) -> ToolsDemoResult:
    """Run the stages (see the module docstring) in ``config.output_dir``: ``sft-data.jsonl``,
    ``sft/`` (an `SFTTrainer` run: its ``eval/step-0.jsonl`` is the before stage),
    ``grpo/`` (a `GRPOTrainer` run from ``sft/last``), with the control ``sft-more-data.jsonl``
    and ``sft-more/`` (an `SFTTrainer` run from ``sft/last``), ``stages.png`` and
    ``result.json``. `log` receives a line per stage."""
    import resource
    import time
    from dataclasses import replace

    from ..progress import peak_rss_mb
    from .device import release_memory
    from .grpo import GRPOTrainer
    from .sft import SFTTrainer

    config = config or ToolsDemoConfig()
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    progress_path = out / "progress.json"
    done: dict[str, dict[str, Any]] = json.loads(progress_path.read_text()) if config.resume and progress_path.is_file() else {}

    def finished(stage: str, **facts: Any) -> None:
        """Record a finished stage, so that a resumed demo keeps it, with this process's peak
        memory so far (which stage sets the demo's peak)."""
        done[stage] = {**facts, "peak_rss_gb": round(peak_rss_mb() / 1024, 2)}
        log(f"{stage} done; peak memory so far {done[stage]['peak_rss_gb']} GB")
        progress_path.write_text(json.dumps(done, indent=1), encoding="utf-8")

    def fresh(folder: Path) -> Path:
        """An unfinished stage's folder, emptied (a resumed demo reruns the stage)."""
        if folder.exists():
            shutil.rmtree(folder)
        return folder

    data_path = out / "sft-data.jsonl"
    if "data" in done:
        data, timings["data_s"] = done["data"]["report"], done["data"]["seconds"]
        log(f"SFT data: kept from the interrupted run ({data['kept']} of {data['played']} episodes)")
    else:
        data = sft_data(data_path, config)
        timings["data_s"] = time.perf_counter() - started
        finished("data", report=data, seconds=timings["data_s"])
        log(
            f"SFT data: the {config.teacher} agent played {data['played']} train scenarios, {data['kept']} scored >= "
            f"{config.min_reward} ({timings['data_s']:.0f} s)"
        )

    sft_config = demo_sft_config(config, data_path, out / "sft")
    if "sft" in done:
        sft_step, sft_step_s = done["sft"]["step"], done["sft"]["step_s"]
        timings |= {k: done["sft"][k] for k in ("eval_before_s", "sft_s")}
        log(f"SFT: kept from the interrupted run ({sft_step} steps)")
    else:
        mark = time.perf_counter()
        fresh(out / "sft")
        sft = SFTTrainer(sft_config)
        log(
            f"before: evaluating SmolLM2-135M-Instruct on {config.eval_episodes} held-out test scenarios "
            f"({sft.data_report['trained']} SFT episodes, {sft.data_report['input_tokens']} tokens, {sft.total_steps} steps to train)"
        )
        before = sft.evaluate()
        timings["eval_before_s"] = time.perf_counter() - mark
        log(f"before: held-out reward {before['eval/reward']:.3f} ({timings['eval_before_s']:.0f} s)")
        mark = time.perf_counter()
        sft.train()
        timings["sft_s"] = time.perf_counter() - mark
        sft_step = sft.state.step
        sft_step_s = sum(r["step_time_s"] for r in sft.history if "step_time_s" in r) / max(sft_step, 1)
        del sft
        release_memory()
        finished("sft", step=sft_step, step_s=sft_step_s, eval_before_s=timings["eval_before_s"], sft_s=timings["sft_s"])

    def run_grpo(judge: str, folder: Path) -> tuple[float, float]:
        """GRPO from the SFT adapter with `judge` as the training reward: (seconds with its
        eval, seconds of its steps)."""
        if folder.name in done:
            log(f"{folder.name}: kept from the interrupted run")
            return done[folder.name]["seconds"], done[folder.name]["train_s"]
        grpo_config = demo_grpo_config(config, judge, out / "sft" / "last", fresh(folder))
        mark = time.perf_counter()
        grpo = GRPOTrainer(grpo_config)
        try:
            grpo.train()
        finally:
            grpo.close()
        seconds, train_s = time.perf_counter() - mark, sum(r["step_time_s"] for r in grpo.history if "step_time_s" in r)
        del grpo
        release_memory()
        finished(folder.name, seconds=seconds, train_s=train_s)
        return seconds, train_s

    timings["grpo_s"], timings["grpo_train_s"] = run_grpo(config.grpo_judge or DEMO_ENVS[config.env_id].reward, out / "grpo")
    folders = {"grpo": out / "grpo"}
    for judge in config.compare_judges:
        stage = f"grpo[{judge}]"
        folders[stage] = out / ("grpo-" + re.sub(r"[^a-z0-9.]+", "-", judge.lower()).strip("-"))
        log(f"{stage}: GRPO from the same SFT adapter with {judge} as the training reward")
        timings[f"{stage}_s"], _ = run_grpo(judge, folders[stage])

    control_step = None
    if config.control and "sft-more" in done:
        control_step, timings["control_s"] = done["sft-more"]["step"], done["sft-more"]["seconds"]
        log(f"control: kept from the interrupted run ({control_step} steps)")
    elif config.control:
        mark = time.perf_counter()
        more_path = out / "sft-more-data.jsonl"
        more = sft_data(more_path, config, seed=CONTROL_SEED_OFFSET)
        control_step = max(1, round(timings["grpo_train_s"] / sft_step_s))
        log(
            f"control: SFT continued from the SFT adapter for GRPO's {timings['grpo_train_s']:.0f} s of training: "
            f"{control_step} steps of about {sft_step_s:.1f} s on {data['kept'] + more['kept']} {config.teacher} episodes"
        )
        control = SFTTrainer(
            replace(
                sft_config,
                data=[str(data_path), str(more_path)],
                init_adapter=str(out / "sft" / "last"),
                epochs=control_step,  # at least one step an epoch: max_steps ends it
                max_steps=control_step,
                output_dir=str(fresh(out / "sft-more")),
            )
        )
        control.train()
        control_step = control.state.step
        del control
        release_memory()
        timings["control_s"] = time.perf_counter() - mark
        finished("sft-more", step=control_step, seconds=timings["control_s"])
    timings["total_s"] = time.perf_counter() - started

    episodes = {
        "before": read_jsonl(out / "sft" / "eval" / "step-0.jsonl"),
        "sft": read_jsonl(out / "sft" / "eval" / f"step-{sft_step}.jsonl"),
        **{stage: read_jsonl(folder / "eval" / f"step-{config.grpo_steps}.jsonl") for stage, folder in folders.items()},
    }
    if control_step is not None:
        episodes["sft_more"] = read_jsonl(out / "sft-more" / "eval" / f"step-{control_step}.jsonl")
    stages = {stage: stage_metrics(trajectories, config.env_id) for stage, trajectories in episodes.items()}
    pairs = {"sft": ("before", "sft"), "grpo": ("sft", "grpo"), "total": ("before", "grpo")}
    if "sft_more" in episodes:
        pairs |= {"control": ("sft", "sft_more"), "grpo_vs_control": ("sft_more", "grpo")}
    for stage in folders:
        if stage != "grpo":  # another training reward: against SFT, and against the first reward's GRPO
            pairs |= {f"{stage}_vs_sft": ("sft", stage), f"{stage}_vs_grpo": ("grpo", stage)}
    changes = {key: stage_changes(episodes[a], episodes[b], config.env_id) for key, (a, b) in pairs.items()}

    sampled: dict[str, list[Trajectory]] = {}
    pass_k: dict[str, dict[str, tuple[float, float, float]]] = {}
    sampled_stages: dict[str, dict[str, tuple[float, float, float]]] = {}
    if config.pass_trials:
        from ..evaluation import bootstrap_ci
        from ..evaluation.stats import pass_k_per_task

        mark = time.perf_counter()
        adapters = {"before": None, "sft": out / "sft" / "last", **{stage: folder / "last" for stage, folder in folders.items()}}
        if control_step is not None:
            adapters["sft_more"] = out / "sft-more" / "last"
        (out / "sampled").mkdir(exist_ok=True)
        for stage, adapter in adapters.items():
            path = out / "sampled" / f"{stage}.jsonl"
            if f"sampled/{stage}" in done:
                sampled[stage] = read_jsonl(path)
            else:
                log(f"{stage}: {config.pass_trials} sampled attempts at each held-out scenario (temperature {config.pass_temperature})")
                sampled[stage] = sampled_attempts(config, adapter, path)
                release_memory()
                finished(f"sampled/{stage}")
            pass_k[stage] = {}
            for k in range(1, config.pass_trials + 1):
                values = list(pass_k_per_task(sampled[stage], k).values())
                pass_k[stage][f"pass^{k}"] = (_mean(values), *bootstrap_ci(values))
            sampled_stages[stage] = sampled_figures(sampled[stage], config.env_id)
        for key, (a, b) in pairs.items():
            changes[key] += pass_k_changes(sampled[a], sampled[b], config.pass_trials)
            changes[key] += sampled_changes(sampled[a], sampled[b], config.env_id)
        timings["pass_k_s"] = time.perf_counter() - mark
        timings["total_s"] = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    plot = plot_stages(episodes, out / "stages.png", config.env_id)
    (out / "episodes.md").write_text(episodes_page(episodes), encoding="utf-8")
    result = ToolsDemoResult(stages, changes, episodes, data, timings, peak, plot, config.env_id, pass_k, sampled, sampled_stages)
    (out / "result.json").write_text(json.dumps(result.to_dict(), indent=2), encoding="utf-8")
    return result


def plot_stages(episodes: dict[str, list[Trajectory]], out: Path, env_id: str = TOOLS_DEMO_ENV) -> Path | None:
    """Bars of each stage's held-out metrics on `env_id` with 95% bootstrap intervals of the mean."""
    import matplotlib

    from ..evaluation import bootstrap_ci

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.container import BarContainer

    metrics = [m for m in stage_metric_names(env_id) if m != "tool_error_rate"]
    figure, axes = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(episodes)
    labels = {"before": "before (SmolLM2-135M)", "sft": "after SFT", "grpo": "after SFT + GRPO", "sft_more": "SFT continued (control)"}
    for index, (stage, trajectories) in enumerate(episodes.items()):
        means, low, high = [], [], []
        for metric in metrics:
            values = [v for v in per_episode(trajectories, metric) if not math.isnan(v)]
            mean = float(np.mean(values)) if values else 0.0
            lo, hi = bootstrap_ci(values) if values else (0.0, 0.0)
            means.append(mean)
            low.append(max(0.0, mean - lo))
            high.append(max(0.0, hi - mean))
        x = np.arange(len(metrics)) + (index - (len(episodes) - 1) / 2) * width
        axes.bar(x, means, width, yerr=[low, high], capsize=3, label=labels.get(stage, stage))
    axes.set_xticks(np.arange(len(metrics)), [m.replace("_", " ") for m in metrics], fontsize="small")
    bars = [bar.get_height() for container in axes.containers if isinstance(container, BarContainer) for bar in container]
    axes.set_ylim(min(0.0, np.nanmin(bars, initial=0.0)) - 0.05, 1.05)  # a verifier's penalties go below 0
    axes.set_ylabel("held-out mean (test split, greedy)")
    axes.set_title(f"{env_id} with tools: before, after SFT, after GRPO (reward: verifier)", fontsize="medium")
    axes.legend(fontsize="small")
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    figure.savefig(out, dpi=120)
    plt.close(figure)
    return out


__all__ = [
    "DEMO_ENVS",
    "STAGES",
    "STAGE_METRICS",
    "DemoEnv",
    "pass_k_changes",
    "sampled_attempts",
    "sampled_changes",
    "sampled_figures",
    "sampled_metric_names",
    "stage_metric_names",
    "ToolsDemoConfig",
    "ToolsDemoResult",
    "stage_changes",
    "run_tools_demo",
    "stage_metrics",
]
