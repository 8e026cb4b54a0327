"""The tools demo: the standard recipe, supervised warm start then RL, on the real RagSupport-v0
(the env's own prompt, tools and verifier; no prefetched articles, no answer-only shaping).

SmolLM2-135M-Instruct does not call tools zero-shot, so GRPO from it has nothing to learn
from. The demo:

1. plays the scripted `oracle` (it searches, reads the supporting articles and answers citing
   them) on train-split scenarios, keeps the episodes the verifier scores 1.0 (rejection
   sampling), and writes them to ``sft-data.jsonl``;
2. fine-tunes a LoRA adapter on them (`SFTTrainer`: loss on the assistant tokens only, the
   same token sequences GRPO samples);
3. continues that adapter with GRPO (`GRPOTrainer` with ``init_adapter``) on other
   train-split scenarios;
4. the control (``control=True``): the same SFT adapter trained on by SFT for GRPO's training
   time instead (the first SFT's data plus as many new oracle episodes, more epochs), so that a
   gain of GRPO over SFT is not only the gain of more training: the claim is that the judge's
   reward adds what imitation does not;
5. evaluates the same held-out test scenarios greedily before, after SFT, after GRPO and after
   the control, and reports reward (the verifier alone), tool-call rate, tool error rate,
   recall, citation and abstention, with paired bootstrap intervals of each change.

`run_tools_demo` does it all; ``judgegym demo --task tools`` prints it.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..trajectory import Trajectory, read_jsonl, write_jsonl

TOOLS_DEMO_ENV = "RagSupport-v0"
STAGES = ("before", "sft", "grpo", "sft_more")
"""The held-out evals: the base model, after SFT, after GRPO from the SFT adapter, and the
control: after SFT continued for GRPO's training time (with ``control=True``). Each of
``compare_judges`` adds a stage ``grpo[SPEC]``."""

STAGE_METRICS = ("reward", "tool_call_rate", "tool_error_rate", "recall", "citation", "abstained")
"""What each stage reports (`stage_metrics`)."""

SFT_SEED_OFFSET = 500_000
"""SFT data plays train-split seeds from here: GRPO's scenarios (from 0) are others."""

CONTROL_SEED_OFFSET = 600_000
"""The control's new oracle episodes play train-split seeds from here."""


@dataclass
class ToolsDemoConfig:
    """The demo's sizes; the defaults fit the CPU budget of docs/trainer.md#the-tools-demo."""

    output_dir: str = "runs/demo-tools"
    model: str = "smollm2-135m"
    sft_episodes: int = 32
    """Oracle episodes played for the SFT data (those scoring below `min_reward` are dropped)."""
    min_reward: float = 1.0
    sft_epochs: int = 3
    sft_learning_rate: float = 1e-3
    grpo_steps: int = 3
    grpo_judge: str = "0.8*verifier+0.2*grounding"
    """The GRPO training reward; the held-out figure is always the verifier alone."""
    scenarios_per_step: int = 2
    group_size: int = 4
    grpo_learning_rate: float = 1e-4
    temperature: float = 0.8
    eval_episodes: int = 16
    max_new_tokens: int = 128
    max_turns: int = 4
    seed: int = 0
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra RagSupport-v0 keyword arguments for every stage (none: the env as registered)."""
    control: bool = True
    """Also continue the SFT adapter with SFT for GRPO's training time (stage ``sft_more``)."""
    compare_judges: list[str] = field(default_factory=list)
    """More GRPO runs from the same SFT adapter, same steps and seeds, each with one of these
    judge specs as the only training reward (stage ``grpo[SPEC]``, folder ``grpo-SPEC``), all
    evaluated by the verifier: e.g. ``["learned"]``, the gold-free judge against `grpo_judge`."""
    epsilon_high: float | None = None
    """GRPO's upper clip range (clip-higher, e.g. 0.28); None: the lower one (0.2)."""


@dataclass
class Change:
    """A paired change of one metric between two stages, over the same scenarios."""

    metric: str
    before: float
    after: float
    difference: float
    ci_low: float
    ci_high: float


@dataclass
class ToolsDemoResult:
    """The three stages' held-out metrics, the changes between them, and where the files are."""

    stages: dict[str, dict[str, float]]
    """stage -> `stage_metrics` of its held-out episodes."""
    changes: dict[str, list[Change]]
    """``"sft"``: SFT against before; ``"grpo"``: GRPO against SFT; ``"total"``: GRPO against
    before; with the control, ``"control"``: continued SFT against SFT, and ``"grpo_vs_control"``:
    GRPO against continued SFT."""
    episodes: dict[str, list[Trajectory]]
    sft_data: dict[str, Any]
    timings: dict[str, float]
    peak_rss_gb: float
    plot: Path | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "stages": self.stages,
            "changes": {k: [asdict(c) for c in v] for k, v in self.changes.items()},
            "sft_data": self.sft_data,
            "timings": self.timings,
            "peak_rss_gb": self.peak_rss_gb,
        }


def stage_metrics(trajectories: list[Trajectory]) -> dict[str, float]:
    """Held-out figures of one stage: mean reward; tool-call rate (share of episodes with at
    least one tool call); tool error rate (failed calls / calls, NaN without calls); mean
    recall (answerable questions), citation and abstention (the verifier's components);
    tool calls and turns per episode."""
    calls = sum(t.metrics.get("tool_calls", 0.0) for t in trajectories)
    errors = sum(t.metrics.get("tool_errors", 0.0) for t in trajectories)
    return {
        "reward": _mean(_per_episode(trajectories, "reward")),
        "tool_call_rate": _mean(_per_episode(trajectories, "tool_call_rate")),
        "tool_error_rate": errors / calls if calls else math.nan,
        "recall": _mean(_per_episode(trajectories, "recall")),
        "citation": _mean(_per_episode(trajectories, "citation")),
        "abstained": _mean(_per_episode(trajectories, "abstained")),
        "tool_calls": calls / max(len(trajectories), 1),
        "turns": _mean([t.metrics.get("turns", math.nan) for t in trajectories]),
        "episodes": float(len(trajectories)),
    }


def paired_changes(before: list[Trajectory], after: list[Trajectory]) -> list[Change]:
    """Per metric, the mean change over the scenarios both stages played and its 95% paired
    bootstrap interval (tool error rate has no per-episode pairing and is left out)."""
    from ..evaluation import bootstrap_ci

    keys = [(t.scenario_id, t.seed) for t in before]
    if keys != [(t.scenario_id, t.seed) for t in after]:
        raise RuntimeError("the two stages played different held-out scenarios; compare evals of the same seeds")
    changes = []
    for metric in STAGE_METRICS:
        if metric == "tool_error_rate":
            continue
        values = zip(_per_episode(before, metric), _per_episode(after, metric), strict=True)
        pairs = [(b, a) for b, a in values if not (math.isnan(b) or math.isnan(a))]
        if not pairs:
            continue
        deltas = [a - b for b, a in pairs]
        low, high = bootstrap_ci(deltas)
        changes.append(Change(metric, _mean([b for b, _ in pairs]), _mean([a for _, a in pairs]), float(np.mean(deltas)), low, high))
    return changes


def _per_episode(trajectories: list[Trajectory], metric: str) -> list[float]:
    if metric == "reward":
        return [t.reward if t.reward is not None else 0.0 for t in trajectories]
    if metric == "tool_call_rate":
        return [float(t.metrics.get("tool_calls", 0.0) > 0) for t in trajectories]
    return [float(t.metrics[metric]) if metric in t.metrics else math.nan for t in trajectories]


def _mean(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return float(np.mean(finite)) if finite else math.nan


def sft_data(path: Path, config: ToolsDemoConfig, *, seed: int = SFT_SEED_OFFSET) -> dict[str, Any]:
    """Play the oracle on `config.sft_episodes` train-split scenarios (seeds from `seed`), judge
    them with the verifier, and write them all to `path`; returns how many scored at least
    `config.min_reward` (what SFT keeps)."""
    from ..agents import make_agent
    from ..evaluation import evaluate

    agent = make_agent("oracle", env_id=TOOLS_DEMO_ENV)
    run = asyncio.run(
        evaluate(
            TOOLS_DEMO_ENV,
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


def run_tools_demo(config: ToolsDemoConfig | None = None, *, log: Any = print) -> ToolsDemoResult:
    """Run the stages (see the module docstring) in ``config.output_dir``: ``sft-data.jsonl``,
    ``sft/`` (an `SFTTrainer` run: its ``eval/step-0.jsonl`` is the before stage),
    ``grpo/`` (a `GRPOTrainer` run from ``sft/last``), with the control ``sft-more-data.jsonl``
    and ``sft-more/`` (an `SFTTrainer` run from ``sft/last``), ``stages.png`` and
    ``result.json``. `log` receives a line per stage."""
    import resource
    import time
    from dataclasses import replace

    from .device import release_memory
    from .grpo import GRPOConfig, GRPOTrainer
    from .sft import SFTConfig, SFTTrainer

    config = config or ToolsDemoConfig()
    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    started = time.perf_counter()

    data_path = out / "sft-data.jsonl"
    data = sft_data(data_path, config)
    timings["data_s"] = time.perf_counter() - started
    log(
        f"SFT data: the oracle played {data['played']} train scenarios, {data['kept']} scored >= {config.min_reward} "
        f"({timings['data_s']:.0f} s)"
    )

    shared = {"eval_episodes": config.eval_episodes, "max_new_tokens": config.max_new_tokens, "max_turns": config.max_turns}
    sft_config = SFTConfig(
        data=[str(data_path)],
        model=config.model,
        min_reward=config.min_reward,
        env_id=TOOLS_DEMO_ENV,
        env_kwargs=dict(config.env_kwargs),
        epochs=config.sft_epochs,
        learning_rate=config.sft_learning_rate,
        warmup_steps=2,
        micro_batch_tokens=1600,  # one episode per pass: with bf16 autocast and no recomputation it peaks near 4 GB
        gradient_accumulation_steps=2,
        mixed_precision="auto",  # bf16 where native: about 2.3x the float32 + checkpointing throughput on a 2-core AVX-512 CPU
        save_steps=0,
        seed=config.seed,
        output_dir=str(out / "sft"),
        **shared,
    )
    mark = time.perf_counter()
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

    def run_grpo(judge: str, folder: Path) -> tuple[float, float]:
        """GRPO from the SFT adapter with `judge` as the training reward: (seconds with its
        eval, seconds of its steps)."""
        grpo_config = GRPOConfig(
            env_id=TOOLS_DEMO_ENV,
            model=config.model,
            env_kwargs=dict(config.env_kwargs),
            judge=judge,
            eval_judge="verifier",
            init_adapter=str(out / "sft" / "last"),
            scenarios_per_step=config.scenarios_per_step,
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
            output_dir=str(folder),
            **shared,
        )
        mark = time.perf_counter()
        grpo = GRPOTrainer(grpo_config)
        try:
            grpo.train()
        finally:
            grpo.close()
        seconds, train_s = time.perf_counter() - mark, sum(r["step_time_s"] for r in grpo.history if "step_time_s" in r)
        del grpo
        release_memory()
        return seconds, train_s

    timings["grpo_s"], timings["grpo_train_s"] = run_grpo(config.grpo_judge, out / "grpo")
    folders = {"grpo": out / "grpo"}
    for judge in config.compare_judges:
        stage = f"grpo[{judge}]"
        folders[stage] = out / ("grpo-" + re.sub(r"[^a-z0-9.]+", "-", judge.lower()).strip("-"))
        log(f"{stage}: GRPO from the same SFT adapter with {judge} as the training reward")
        timings[f"{stage}_s"], _ = run_grpo(judge, folders[stage])

    control_step = None
    if config.control:
        mark = time.perf_counter()
        more_path = out / "sft-more-data.jsonl"
        more = sft_data(more_path, config, seed=CONTROL_SEED_OFFSET)
        control_step = max(1, round(timings["grpo_train_s"] / sft_step_s))
        log(
            f"control: SFT continued from the SFT adapter for GRPO's {timings['grpo_train_s']:.0f} s of training: "
            f"{control_step} steps of about {sft_step_s:.1f} s on {data['kept'] + more['kept']} oracle episodes"
        )
        control = SFTTrainer(
            replace(
                sft_config,
                data=[str(data_path), str(more_path)],
                init_adapter=str(out / "sft" / "last"),
                epochs=control_step,  # at least one step an epoch: max_steps ends it
                max_steps=control_step,
                output_dir=str(out / "sft-more"),
            )
        )
        control.train()
        control_step = control.state.step
        del control
        release_memory()
        timings["control_s"] = time.perf_counter() - mark
    timings["total_s"] = time.perf_counter() - started

    episodes = {
        "before": read_jsonl(out / "sft" / "eval" / "step-0.jsonl"),
        "sft": read_jsonl(out / "sft" / "eval" / f"step-{sft_step}.jsonl"),
        **{stage: read_jsonl(folder / "eval" / f"step-{config.grpo_steps}.jsonl") for stage, folder in folders.items()},
    }
    if control_step is not None:
        episodes["sft_more"] = read_jsonl(out / "sft-more" / "eval" / f"step-{control_step}.jsonl")
    stages = {stage: stage_metrics(trajectories) for stage, trajectories in episodes.items()}
    changes = {
        "sft": paired_changes(episodes["before"], episodes["sft"]),
        "grpo": paired_changes(episodes["sft"], episodes["grpo"]),
        "total": paired_changes(episodes["before"], episodes["grpo"]),
    }
    if "sft_more" in episodes:
        changes["control"] = paired_changes(episodes["sft"], episodes["sft_more"])
        changes["grpo_vs_control"] = paired_changes(episodes["sft_more"], episodes["grpo"])
    for stage in folders:
        if stage != "grpo":  # another training reward: against SFT, and against the first reward's GRPO
            changes[f"{stage}_vs_sft"] = paired_changes(episodes["sft"], episodes[stage])
            changes[f"{stage}_vs_grpo"] = paired_changes(episodes["grpo"], episodes[stage])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    plot = plot_stages(episodes, out / "stages.png")
    (out / "episodes.md").write_text(episodes_page(episodes), encoding="utf-8")
    result = ToolsDemoResult(stages, changes, episodes, data, timings, peak, plot)
    (out / "result.json").write_text(json.dumps(result.to_dict(), indent=2), encoding="utf-8")
    return result


def plot_stages(episodes: dict[str, list[Trajectory]], out: Path) -> Path | None:
    """Bars of each stage's held-out metrics with 95% bootstrap intervals of the mean."""
    import matplotlib

    from ..evaluation import bootstrap_ci

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [m for m in STAGE_METRICS if m != "tool_error_rate"]
    figure, axes = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(episodes)
    labels = {"before": "before (SmolLM2-135M)", "sft": "after SFT", "grpo": "after SFT + GRPO", "sft_more": "SFT continued (control)"}
    for index, (stage, trajectories) in enumerate(episodes.items()):
        means, low, high = [], [], []
        for metric in metrics:
            values = [v for v in _per_episode(trajectories, metric) if not math.isnan(v)]
            mean = float(np.mean(values)) if values else 0.0
            lo, hi = bootstrap_ci(values) if values else (0.0, 0.0)
            means.append(mean)
            low.append(max(0.0, mean - lo))
            high.append(max(0.0, hi - mean))
        x = np.arange(len(metrics)) + (index - (len(episodes) - 1) / 2) * width
        axes.bar(x, means, width, yerr=[low, high], capsize=3, label=labels.get(stage, stage))
    axes.set_xticks(np.arange(len(metrics)), [m.replace("_", " ") for m in metrics])
    axes.set_ylim(0, 1.05)
    axes.set_ylabel("held-out mean (test split, greedy)")
    axes.set_title("RagSupport-v0 with tools: before, after SFT, after GRPO (reward: verifier)", fontsize="medium")
    axes.legend(fontsize="small")
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    figure.savefig(out, dpi=120)
    plt.close(figure)
    return out


def describe_episode(trajectory: Trajectory, width: int = 160) -> str:
    """One line per assistant turn: its tool calls, or its answer (shortened)."""
    lines = []
    for message in trajectory.messages:
        if message.role != "assistant":
            continue
        if message.tool_calls:
            calls = ", ".join(f"{c.function.name}({_short_args(c.function.arguments)})" for c in message.tool_calls)
            lines.append(f"calls {calls}")
        else:
            text = " ".join((message.content or "").split())
            lines.append(f"answers {text[:width]!r}" + ("..." if len(text) > width else ""))
    return "\n".join(lines) or "(no assistant turn)"


def episodes_page(episodes: dict[str, list[Trajectory]], *, count: int = 6, title: str = "Held-out episodes by stage") -> str:
    """A Markdown page of real held-out episodes, stage beside stage: for the `count` test
    scenarios whose reward differs most between the stages (ties: the lowest seed first),
    the question, the gold facts, and each stage's turns (`describe_episode`), reward and
    verifier note. Every stage must have played the same scenarios (`paired_changes`)."""
    names = list(episodes)
    first = episodes[names[0]]
    for name in names[1:]:
        if [(t.scenario_id, t.seed) for t in episodes[name]] != [(t.scenario_id, t.seed) for t in first]:
            raise RuntimeError(f"stage {name!r} played other held-out scenarios than {names[0]!r}")
    rewards = [[t.reward or 0.0 for t in episodes[name]] for name in names]
    spread = [max(column) - min(column) for column in zip(*rewards, strict=True)]
    chosen = sorted(range(len(first)), key=lambda i: (-spread[i], first[i].seed or 0))[:count]
    intro = f"{len(chosen)} of {len(first)} held-out scenarios (those where the stages' rewards differ most), greedy."
    lines = [f"# {title}", "", intro, ""]
    for i in chosen:
        task = first[i].info.get("task", {})
        lines += [f"## Test scenario {first[i].seed}: {task.get('question', first[i].scenario_id)}", ""]
        gold = task.get("gold_facts")
        answerable = task.get("answerable", True)
        lines += [f"Gold facts: {', '.join(map(str, gold))}" if gold and answerable else "Unanswerable: the right answer says so.", ""]
        for name in names:
            trajectory = episodes[name][i]
            note = str(trajectory.info.get("explanation", "")).split("; ")[:3]
            lines += [f"**{name}**: reward {trajectory.reward or 0.0:.2f} ({'; '.join(note)})", "", "```text"]
            lines += [describe_episode(trajectory, width=400), "```", ""]
    return "\n".join(lines)


def _short_args(arguments: str, width: int = 60) -> str:
    text = " ".join(str(arguments).split())
    return text if len(text) <= width else text[:width] + "..."


__all__ = [
    "episodes_page",
    "STAGES",
    "STAGE_METRICS",
    "ToolsDemoConfig",
    "ToolsDemoResult",
    "describe_episode",
    "paired_changes",
    "run_tools_demo",
    "stage_metrics",
]
