"""The `judgegym` command line: a thin layer over the Python API."""

from __future__ import annotations

import asyncio
import json
import math
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import envs
from .agents import DEFAULT_AGENTS, make_agent
from .evaluation import SUCCESS_THRESHOLD, EvalSummary, evaluate, summarize
from .progress import RunProgress, peak_memory_line
from .trajectory import Trajectory

app = typer.Typer(
    help="Gymnasium environments and judges for training LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: rich's would show "<bool>" on every flag and eat "[default: ...]" as markup
)
console = Console()
if not console.is_terminal:  # piped or captured output: don't squash the table into 80 columns
    console = Console(width=200)

# Components worth a column, in this order, when present.
_COLUMNS = ("recall", "grounding", "citation", "abstained", "format_errors")


def _fail(message: str) -> typer.Exit:
    console.print(f"[bold red]error:[/] {escape(message)}")  # messages hold literal brackets: 'judgegym[gpu]'
    return typer.Exit(code=2)


def _count(n: int, noun: str) -> str:
    """``1 scenario``, ``2 scenarios``, ``2 trajectories``."""
    if n == 1:
        return f"{n} {noun}"
    return f"{n} {noun[:-1]}ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else f"{n} {noun}s"


def _parse_env_args(pairs: list[str], option: str = "--env-arg") -> dict[str, Any]:
    """KEY=VALUE pairs as a dict, each value parsed as JSON where it is JSON, else kept as text."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise _fail(f"{option} expects KEY=VALUE, got {pair!r}")
        try:
            kwargs[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key.strip()] = value
    return kwargs


def _check_env(env_id: str, env_kwargs: dict[str, Any]) -> int:
    """Make the env once to check its options; returns how many user scenarios it loaded (0: generated)."""
    import gymnasium as gym

    from .jsonl import ScenarioFileError

    if env_id.removeprefix("judgegym:") not in envs.ENVIRONMENTS:
        raise _fail(f"unknown env {env_id!r}; judgegym envs: {', '.join(envs.ENVIRONMENTS)}")
    try:
        envs.check_env_options(env_id.removeprefix("judgegym:"), env_kwargs)
    except ValueError as exc:
        raise _fail(f"{exc} (set them with --env-arg KEY=VALUE)") from None
    try:
        env = gym.make(env_id, **env_kwargs)
    except ScenarioFileError as exc:
        raise _fail(f"bad scenario file: {exc}") from None
    except (TypeError, ValueError, FileNotFoundError) as exc:
        options = ", ".join(f"{k}={v!r}" for k, v in env_kwargs.items())
        raise _fail(f"cannot make {env_id}" + (f" with {options}" if options else "") + f": {exc}") from None
    loaded = len(getattr(env.unwrapped, "user_scenarios", None) or [])
    env.close()
    return loaded


def _check_remote(env_id: str, env_url: str, env_kwargs: dict[str, Any]) -> int:
    """Reach each server once: it must serve `env_id` and accept `env_kwargs` per session."""
    from .envs import env_urls
    from .envs.remote import RemoteEnv, RemoteEnvError

    try:
        for url in env_urls(env_url):
            RemoteEnv(url, env_id, connect_timeout_s=5.0, **{k: v for k, v in env_kwargs.items() if k != "judge"}).close()
    except (ValueError, RemoteEnvError) as exc:
        raise _fail(str(exc)) from None
    return 0


def _env_of_run(path: Path, env_id: str | None) -> tuple[str, dict[str, Any]]:
    """(env id, held-out env options) of the training run at `path` (its folder or config.json); `env_id`
    is the --env given, if any, which must agree."""
    config_path = path / "config.json" if path.is_dir() else path
    if not config_path.is_file():
        raise _fail(f"{path} is not a training run (no config.json; runs written by judgegym train or demo have one)")
    try:
        config = json.loads(config_path.read_text())
    except json.JSONDecodeError as exc:
        raise _fail(f"{config_path} is not valid JSON: {exc}") from None
    run_env = str(config.get("env_id") or env_id or "RagSupport-v0")
    if env_id is not None and run_env != env_id.removeprefix("judgegym:"):
        raise _fail(f"--env {env_id} contradicts the run's env {run_env} ({config_path}); drop one")
    held_out = config.get("eval_env_kwargs")  # a curriculum's eval env differs from its training env
    env_kwargs = dict((config.get("env_kwargs") if held_out is None else held_out) or {})
    if "max_turns" in config:
        env_kwargs.setdefault("max_turns", config["max_turns"])
    return run_env, env_kwargs


@app.command("eval", short_help="Play agents on an env; reward with CI, success, pass^k.")
def eval_command(
    env: Annotated[str | None, typer.Option("--env", metavar="ID", help="Environment id [default: RagSupport-v0].")] = None,
    agent: Annotated[
        list[str] | None,
        typer.Option(
            "--agent",
            metavar="SPEC",
            help="Agent spec (a baseline name, hf:MODEL[+ADAPTER], vllm:MODEL, litellm:MODEL); repeatable. "
            "[default: the env's scripted baseline: " + ", ".join(f"{a} on {e}" for e, a in DEFAULT_AGENTS.items()) + "]",
        ),
    ] = None,
    episodes: Annotated[int, typer.Option(metavar="N", min=1, help="Scenarios per agent (seeds SEED .. SEED+N-1).")] = 50,
    trials: Annotated[int, typer.Option(metavar="K", min=1, help="Attempts per scenario (pass^k is reported for k up to this).")] = 1,
    split: Annotated[str | None, typer.Option(metavar="NAME", help="Scenario split: train or test [default: test].")] = None,
    seed: Annotated[int, typer.Option(metavar="INT", help="First seed.")] = 0,
    judge: Annotated[
        str, typer.Option(metavar="SPEC", help="Pointwise judge spec: verifier (the env's), grounding, rubric:MODEL.")
    ] = "verifier",
    scenarios: Annotated[
        Path | None, typer.Option(metavar="FILE", help="JSONL file of your own scenarios (replaces the split; seed s plays line s mod N).")
    ] = None,
    from_run: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="A training run's folder (or its config.json): play its env with its env options, e.g. the demo's shaped task.",
        ),
    ] = None,
    env_arg: Annotated[
        list[str] | None, typer.Option("--env-arg", metavar="KEY=VALUE", help="Extra env keyword KEY=VALUE (JSON values), repeatable.")
    ] = None,
    concurrency: Annotated[int, typer.Option(metavar="N", min=1, help="Episodes played at once (a model agent batches their turns).")] = 8,
    success_threshold: Annotated[
        float, typer.Option(metavar="X", min=0.0, max=1.0, help="Reward counted as a success.")
    ] = SUCCESS_THRESHOLD,
    out: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Append trajectories here (JSONL) as they finish; a rerun skips the episodes already in it."),
    ] = None,
    json_out: Annotated[Path | None, typer.Option("--json", metavar="FILE", help="Also write the summaries as JSON.")] = None,
    env_url: Annotated[
        str | None,
        typer.Option(
            metavar="URL", help="Play on the env served there (judgegym serve; several URLs comma-separated); the judge runs here."
        ),
    ] = None,
) -> None:
    """Play agents on an env; print reward (95% bootstrap CI), success, pass^k, turns, tools, tokens."""
    env_kwargs: dict[str, Any] = {}
    if from_run is not None:
        env, env_kwargs = _env_of_run(from_run, env)
    env = env or "RagSupport-v0"
    if scenarios is not None:
        if not scenarios.exists():
            raise _fail(f"scenario file {scenarios} does not exist")
        env_kwargs["scenarios"] = str(scenarios)
    if scenarios is None or split is not None:
        env_kwargs["split"] = split or "test"
    env_kwargs.update(_parse_env_args(env_arg or []))
    loaded = _check_env(env, env_kwargs) if env_url is None else _check_remote(env, env_url, env_kwargs)
    source = f"{env_kwargs.get('split', 'test')} split"
    if scenarios is not None:
        source = f"{scenarios}: {_count(loaded, 'scenario')}"
        if episodes > loaded:
            console.print(
                f"[yellow]{scenarios} holds {_count(loaded, 'scenario')}: {episodes} episodes replay them "
                f"(seed s plays scenario s mod {loaded}); use --trials for repeated attempts[/]"
            )
    if judge != "verifier":
        _check_judge(env, judge, env_kwargs)
    try:
        agents = [make_agent(spec, env) for spec in agent or [DEFAULT_AGENTS.get(env.removeprefix("judgegym:"), "search-quote")]]
    except (ValueError, ImportError, FileNotFoundError) as exc:
        raise _fail(str(exc)) from None
    summaries: list[EvalSummary] = []
    for player in agents:
        total, rewards = episodes * trials, [0.0, 0]
        with RunProgress(total, label=f"{player.name} on {env}", console=console) as progress:
            progress.phase("episodes")

            def advance(
                t: Trajectory, progress: RunProgress = progress, rewards: list[Any] = rewards, total: int = total, name: str = player.name
            ) -> None:
                rewards[0] += t.reward or 0.0
                rewards[1] += 1
                done = rewards[1]
                progress.update(done, note=f"reward {rewards[0] / done:.3f}")
                if not progress.live and (done == total or done % max(1, total // 4) == 0):
                    progress.line(f"{name} on {env}: {done}/{total} episodes, mean reward {rewards[0] / done:.3f}")

            def read_back(
                done: list[Trajectory], progress: RunProgress = progress, rewards: list[Any] = rewards, name: str = player.name
            ) -> None:
                rewards[0], rewards[1] = sum(t.reward or 0.0 for t in done), len(done)
                progress.update(len(done), note=f"reward {rewards[0] / len(done):.3f}")
                progress.line(f"{name}: {_count(len(done), 'episode')} taken from {out}, mean reward {rewards[0] / len(done):.3f}")

            try:
                run = asyncio.run(
                    evaluate(
                        env,
                        player,
                        episodes=episodes,
                        trials=trials,
                        seed=seed,
                        concurrency=concurrency,
                        env_kwargs=env_kwargs,
                        judge=judge,
                        out=out,
                        on_episode=advance,
                        on_resumed=read_back,
                        env_url=env_url,
                    )
                )
            except ValueError as exc:  # e.g. an output file that is not trajectories
                raise _fail(str(exc)) from None
            finally:
                player.close()
        for s, trial, error in run.failed[:5]:
            console.print(f"[yellow]{player.name}: episode seed={s} trial={trial} failed: {escape(error)}[/]")
        if not run.trajectories:
            raise _fail(f"{player.name}: every episode failed ({len(run.failed)}); nothing to summarise")
        summaries.append(summarize(run.trajectories, success_threshold=success_threshold, failed=len(run.failed)))
    console.print(summary_table(summaries, source=source))
    breakdown = breakdown_table(summaries)
    if breakdown is not None:
        console.print(breakdown)
    if out is not None:
        console.print(f"trajectories in {out} (rerun the same command to finish interrupted episodes)")
    if json_out is not None:
        json_out.write_text(json.dumps([s.to_dict() for s in summaries], indent=2))
    if any(s.failed for s in summaries):
        raise typer.Exit(code=1)


def _check_judge(env_id: str, spec: str, env_kwargs: dict[str, Any]) -> None:
    from .judges.specs import make_judge

    try:
        judge = make_judge(spec, env_id=env_id)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if judge.relative:
        raise _fail(
            f"{spec} is a relative judge: its scores rank attempts within a group and do not compare across agents. "
            "Evaluate with a pointwise judge (verifier, learned, grounding, rubric:MODEL); use relative judges for training."
        )


def summary_table(summaries: list[EvalSummary], source: str | None = None) -> Table:
    """A rich table: one row per agent, reward with CI, success, pass^k, tool use, tokens.
    `source` names where the scenarios came from (default: the split)."""
    first = summaries[0]
    max_k = max(s.trials for s in summaries)
    pass_columns = sorted({1, max_k}) if max_k > 1 else []
    trials = f" x {first.trials} trials" if first.trials > 1 else ""
    played = f"{_count(first.scenarios, 'scenario')}{trials}, {_count(first.episodes, 'episode')} per agent"
    table = Table(title=f"{first.env_id} ({source or first.split + ' split'}; {played})")
    success = f"success (>={first.success_threshold:g})"
    for header in ["agent", "reward (95% CI)", success, *[f"pass^{k}" for k in pass_columns], "turns", "tool calls", "tool err", "tokens"]:
        table.add_column(header, justify="left" if header == "agent" else "right", no_wrap=True)
    for s in summaries:
        table.add_row(
            s.agent,
            f"{s.mean_reward:.3f} [{s.ci_low:.3f}, {s.ci_high:.3f}]",
            f"{s.success_rate:.2f}",
            *[f"{s.pass_k[k]:.2f}" if k in s.pass_k else "-" for k in pass_columns],
            f"{s.mean_turns:.1f}",
            f"{s.mean_tool_calls:.1f}",
            f"{s.tool_error_rate:.2f}",
            f"{s.mean_tokens:.0f}" if s.mean_tokens is not None else "-",
        )
    return table


def breakdown_table(summaries: list[EvalSummary]) -> Table | None:
    """Mean reward per scenario kind and the main verifier components, one row per agent."""
    kinds = sorted({k for s in summaries for k in s.by_kind} - {"all"})
    columns = [c for c in _COLUMNS if any(c in s.components for s in summaries)]
    if not kinds and not columns:
        return None
    table = Table(title="reward by scenario kind, and verifier components")
    for header in ["agent", *kinds, *columns]:
        table.add_column(header, justify="left" if header == "agent" else "right", no_wrap=True)
    for s in summaries:
        table.add_row(
            s.agent,
            *[f"{s.by_kind[k]:.3f}" if k in s.by_kind else "-" for k in kinds],
            *[f"{s.components[c]:.2f}" if c in s.components else "-" for c in columns],
        )
    return table


@app.command("leaderboard", short_help="Build a Markdown leaderboard and chart from eval runs.")
def leaderboard_command(
    runs: Annotated[
        list[Path], typer.Argument(metavar="RUNS...", help="Trajectory JSONL files written by judgegym eval --out.", show_default=False)
    ],
    out: Annotated[Path, typer.Option(metavar="FILE", help="Markdown file to write.")] = Path("leaderboard.md"),
    chart: Annotated[Path | None, typer.Option(metavar="FILE", help="PNG chart to write (default: OUT with .png).")] = None,
    title: Annotated[str, typer.Option(metavar="TEXT", help="Title of the table and chart.")] = "judgegym leaderboard",
    preamble: Annotated[str, typer.Option(metavar="TEXT", help="Markdown put under the title (e.g. how to regenerate).")] = "",
    success_threshold: Annotated[
        float, typer.Option(metavar="X", min=0.0, max=1.0, help="Reward counted as a success.")
    ] = SUCCESS_THRESHOLD,
    rejudge: Annotated[
        bool, typer.Option("--rejudge", help="Grade the stored episodes again with the envs' verifiers as they are now.")
    ] = False,
    keep: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Summaries JSON of an earlier leaderboard: its rows that RUNS do not replay are kept (as they were graded then).",
        ),
    ] = None,
) -> None:
    """Build a Markdown leaderboard (agents x envs) and a PNG chart from eval runs; the rows'
    summaries go to OUT with .json, which --keep reads back."""
    from .evaluation.leaderboard import (
        leaderboard_chart,
        leaderboard_markdown,
        load_summaries,
        merge_summaries,
        save_summaries,
        summarize_runs,
    )

    missing = [str(p) for p in [*runs, *([keep] if keep else [])] if not p.is_file()]
    if missing:
        raise _fail(f"no such file: {', '.join(missing)}")
    try:
        summaries = summarize_runs(runs, success_threshold=success_threshold, rejudge=rejudge)
        summaries, carried = merge_summaries(summaries, load_summaries(keep) if keep else [])
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if carried:
        rows = "; ".join(f"`{s.agent}` on {s.env_id}" for s in carried)
        preamble += f"\n\nRows kept from an earlier regeneration (`--keep`; not played or graded again this time): {rows}."
    chart = chart or out.with_suffix(".png")
    leaderboard_chart(summaries, chart, title=title)
    figure = f"![{title}]({os.path.relpath(chart, out.parent)})"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(leaderboard_markdown(summaries, title=title, preamble=f"{preamble}\n\n{figure}".strip()))
    save_summaries(summaries, out.with_suffix(".json"))
    console.print(f"{len(summaries)} runs ({len(carried)} kept) -> {out}, {chart} and {out.with_suffix('.json')}")


@app.command("compare", short_help="Paired changes between eval runs on the same scenarios, with 95% intervals.")
def compare_command(
    runs: Annotated[
        list[str],
        typer.Argument(
            metavar="[NAME=]FILE.jsonl...",
            help="Eval runs: judgegym eval --out files (one run per agent) or a training run's eval/step-N.jsonl. The first is the base.",
            show_default=False,
        ),
    ],
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", metavar="NAME", help="A figure to compare (repeatable): reward, a component, NAME_rate [default: all they share]."
        ),
    ] = None,
    by_kind: Annotated[bool, typer.Option("--by-kind", help="Also the mean reward per scenario kind.")] = False,
    episodes: Annotated[
        Path | None, typer.Option(metavar="PAGE.md", help="Write a page of the episodes where the runs' rewards differ most.")
    ] = None,
    count: Annotated[int, typer.Option(metavar="N", min=1, help="Scenarios on the --episodes page.")] = 6,
    out: Annotated[Path | None, typer.Option(metavar="FILE.json", help="Write the changes (and --by-kind) as JSON.")] = None,
) -> None:
    """Compare eval runs played on the same scenarios: for each figure, the base run's mean and
    each other run's change from it, averaged over the scenarios both played, with a 95% paired
    bootstrap interval (an interval that excludes 0 is a measurable change)."""
    from dataclasses import asdict

    from .evaluation.compare import align_runs, paired_changes, read_runs, reward_by_kind, shared_metrics

    try:
        played = read_runs(runs)
        aligned = align_runs(played)
    except (FileNotFoundError, ValueError) as exc:
        raise _fail(str(exc)) from None
    if len(aligned) < 2:
        raise _fail(f"one run to compare ({next(iter(aligned))!r}); give two or more")
    names = list(aligned)
    base, paired = names[0], len(aligned[names[0]])
    dropped = {n: len(played[n]) - paired for n in names if len(played[n]) > paired}
    if dropped:
        console.print(
            f"[yellow]note:[/] compared on the {_count(paired, 'scenario')} every run played; left out: "
            + ", ".join(f"{escape(n)} {k}" for n, k in dropped.items())
        )
    metrics = metric or shared_metrics(aligned)
    changes = {name: paired_changes(aligned[base], aligned[name], metrics) for name in names[1:]}
    found = {c.metric for cs in changes.values() for c in cs}
    unknown = [m for m in metrics if m not in found]
    if metric and unknown:
        raise _fail(f"no run reports {', '.join(map(repr, unknown))}; figures they share: {', '.join(shared_metrics(aligned))}")
    table = Table(title=f"{_count(paired, 'paired scenario')}; change from {base} [95% paired interval]")
    table.add_column("figure")
    table.add_column(escape(base), justify="right", overflow="fold")
    for name in names[1:]:
        table.add_column(escape(name), justify="right", overflow="fold")
    for m in metrics:
        by_run = {name: next((c for c in changes[name] if c.metric == m), None) for name in names[1:]}
        first = next((c for c in by_run.values() if c), None)
        if first is None:
            continue
        cells = []
        for c in by_run.values():
            mark = "" if c is None or c.ci_low <= 0 <= c.ci_high else "*"
            cells.append("-" if c is None else f"{c.after:.3f}  {c.difference:+.3f} [{c.ci_low:+.3f}, {c.ci_high:+.3f}]{mark}")
        table.add_row(m, f"{first.before:.3f}", *cells)
    console.print(table)
    console.print("* the interval excludes 0", highlight=False)
    kinds = reward_by_kind(aligned) if by_kind else {}
    if kinds:
        kind_table = Table(title="reward by scenario kind (no intervals)")
        kind_table.add_column("kind")
        kind_table.add_column("scenarios", justify="right")
        for name in names:
            kind_table.add_column(escape(name), justify="right", overflow="fold")
        for kind, cells in kinds.items():
            kind_table.add_row(kind, str(cells[base][0]), *(f"{cells[n][1]:.3f}" for n in names))
        console.print(kind_table)
    if episodes is not None:
        from .evaluation.compare import episodes_page

        episodes.parent.mkdir(parents=True, exist_ok=True)
        episodes.write_text(episodes_page(aligned, count=min(count, paired), title="Held-out episodes by run"), encoding="utf-8")
        console.print(f"episodes: {episodes}", markup=False, highlight=False, soft_wrap=True)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "base": base,
            "scenarios": paired,
            "changes": {name: [asdict(c) for c in cs] for name, cs in changes.items()},
            "by_kind": {kind: {n: {"scenarios": k, "reward": r} for n, (k, r) in cells.items()} for kind, cells in kinds.items()},
        }
        out.write_text(json.dumps(record, indent=1), encoding="utf-8")
        console.print(f"changes: {out}", markup=False, highlight=False, soft_wrap=True)


@app.command("train", short_help="Train a policy with GRPO, rewarded by a judge.")
def train_command(
    env: Annotated[str | None, typer.Option("--env", metavar="ID", help="Environment id to train on [default: RagSupport-v0].")] = None,
    model: Annotated[
        str | None,
        typer.Option(metavar="MODEL", help="Policy: smollm2-135m (embedded), a transformers folder, or a hub id [default: smollm2-135m]."),
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(
            metavar="SPEC",
            help="Training judge spec: verifier, grounding, learned, retrieval (RagSupport-v0), auto, ruler:MODEL, rubric:MODEL, "
            "or a weighted sum such as 0.8*verifier+0.2*retrieval [default: verifier].",
        ),
    ] = None,
    steps: Annotated[int | None, typer.Option(metavar="N", min=1, help="Optimizer steps [default: 100].")] = None,
    output_dir: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Metrics, checkpoints, best/ and last/ adapters, reward.png [default: runs/grpo].")
    ] = None,
    env_arg: Annotated[
        list[str] | None, typer.Option("--env-arg", metavar="KEY=VALUE", help="Env keyword KEY=VALUE (JSON values), repeatable.")
    ] = None,
    config: Annotated[
        Path | None, typer.Option(metavar="FILE", help="JSON file of GRPOConfig fields (options given here override it).")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", metavar="KEY=VALUE", help="Any GRPOConfig field as KEY=VALUE (JSON values), e.g. --set group_size=4."),
    ] = None,
    init_adapter: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Start from this LoRA adapter (an SFT run's last/ or best/); also --model MODEL+DIR."),
    ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from the newest checkpoint in OUTPUT_DIR.")] = False,
    env_url: Annotated[
        str | None,
        typer.Option(
            metavar="URL", help="Roll out on the env served there (judgegym serve; several URLs comma-separated); the judge runs here."
        ),
    ] = None,
    show_config: Annotated[bool, typer.Option("--show-config", help="Print every GRPOConfig field with its help and exit.")] = False,
) -> None:
    """Train a policy with GRPO on an env, rewarded by a judge (docs/trainer.md)."""
    from .trainers import GRPOConfig

    if show_config:
        _show_config(GRPOConfig)
        return
    if model is not None and "+" in model:  # MODEL+ADAPTER, as in agent specs: start from that adapter
        model, adapter = model.split("+", 1)
        init_adapter = init_adapter or Path(adapter)
    given = {
        "env_id": env,
        "model": model,
        "judge": judge,
        "max_steps": steps,
        "output_dir": output_dir and str(output_dir),
        "init_adapter": init_adapter and str(init_adapter),
        "env_url": env_url,
    }
    train_config = _make_config(GRPOConfig, "train", config, given, resume, env_arg, set_)
    if train_config.env_url is None:
        _check_env(train_config.env_id, dict(train_config.env_kwargs))
        if train_config.eval_env_kwargs is not None:
            _check_env(train_config.env_id, dict(train_config.eval_env_kwargs))
    else:
        _check_remote(train_config.env_id, train_config.env_url, dict(train_config.env_kwargs))
    from .envs.remote import RemoteEnvError
    from .trainers.distributed import DistributedError
    from .trainers.server_rollout import ServerError

    try:
        trainer = _load_trainer(train_config)
    except (ValueError, TypeError, FileNotFoundError, FileExistsError, ImportError, ServerError, DistributedError, RemoteEnvError) as exc:
        raise _fail(str(exc)) from None
    from .trainers.device import precision_line

    if trainer.ranks.is_main:
        console.print(precision_line(trainer.mixed_precision, trainer.device, trainer.dtype), markup=False, highlight=False)
    try:
        records = trainer.train()
    finally:
        trainer.close()
    if not trainer.ranks.is_main:  # under torchrun rank 0 reports
        return
    last = next((r for r in reversed(records) if r.get("reward") is not None), None)
    evals = [r for r in records if r.get("eval/reward") is not None]
    if last is not None:
        console.print(f"step {last['step']}: train reward {last['reward']:.3f}")
    if evals:
        console.print(f"held-out reward: first {evals[0]['eval/reward']:.3f}, last {evals[-1]['eval/reward']:.3f}")
    console.print(f"metrics, checkpoints and adapters in {train_config.output_dir}")
    console.print(peak_memory_line())


@app.command("sft", short_help="Supervised fine-tuning on judged trajectories (the warm start before GRPO).")
def sft_command(
    data: Annotated[
        list[Path] | None,
        typer.Argument(metavar="DATA...", help="JSONL files: judgegym trajectories or groups (eval --out), or OpenAI chat lines."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(metavar="MODEL", help="Policy: smollm2-135m (embedded), a transformers folder, or a hub id [default: smollm2-135m]."),
    ] = None,
    env: Annotated[
        str | None, typer.Option("--env", metavar="ID", help="Env of the held-out eval [default: the one the data names].")
    ] = None,
    min_reward: Annotated[float | None, typer.Option(metavar="X", help="Keep trajectories whose reward is at least X.")] = None,
    best_of_group: Annotated[bool, typer.Option("--best-of-group", help="Keep only the best trajectory of each scenario.")] = False,
    min_component: Annotated[
        list[str] | None,
        typer.Option("--min-component", metavar="NAME=X", help="Keep trajectories whose judge component NAME is at least X, repeatable."),
    ] = None,
    epochs: Annotated[int | None, typer.Option(metavar="N", min=1, help="Passes over the selected data [default: 1].")] = None,
    output_dir: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Metrics, checkpoints, best/ and last/ weights, loss.png [default: runs/sft].")
    ] = None,
    env_arg: Annotated[
        list[str] | None, typer.Option("--env-arg", metavar="KEY=VALUE", help="Eval env keyword KEY=VALUE (JSON values), repeatable.")
    ] = None,
    config: Annotated[
        Path | None, typer.Option(metavar="FILE", help="JSON file of SFTConfig fields (options given here override it).")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", metavar="KEY=VALUE", help="Any SFTConfig field as KEY=VALUE (JSON values), e.g. --set learning_rate=5e-4."),
    ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from the newest checkpoint in OUTPUT_DIR.")] = False,
    show_config: Annotated[bool, typer.Option("--show-config", help="Print every SFTConfig field with its help and exit.")] = False,
) -> None:
    """Fine-tune a policy on the assistant turns of selected trajectories (rejection sampling:
    --min-reward, --best-of-group, --min-component), then continue it with GRPO:
    judgegym train --init-adapter OUTPUT_DIR/last (docs/trainer.md#sft-then-grpo)."""
    from .trainers import SFTConfig, SFTTrainer

    if show_config:
        _show_config(SFTConfig)
        return
    minima: dict[str, float] = {}
    for pair in min_component or []:
        name, _, value = pair.partition("=")
        try:
            minima[name.strip()] = float(value)
        except ValueError:
            raise _fail(f"--min-component expects NAME=NUMBER, e.g. recall=1, got {pair!r}") from None
    given = {
        "data": [str(path) for path in data] if data else None,
        "model": model,
        "env_id": env,
        "min_reward": min_reward,
        "best_of_group": best_of_group or None,
        "min_components": minima or None,
        "epochs": epochs,
        "output_dir": output_dir and str(output_dir),
    }
    sft_config = _make_config(SFTConfig, "sft", config, given, resume, env_arg, set_)
    if not sft_config.data:
        raise _fail("no data: give JSONL files of trajectories (judgegym eval --out FILE writes them), or set data in --config")
    if sft_config.env_id is not None:
        _check_env(sft_config.env_id, dict(sft_config.env_kwargs))
    what = f"loading {sft_config.model} and {len(sft_config.data)} data file(s)"
    console.print(f"{what} ...", markup=False, highlight=False)
    try:
        trainer = SFTTrainer(sft_config)
    except (ValueError, TypeError, FileNotFoundError, FileExistsError, ImportError) as exc:
        raise _fail(str(exc)) from None
    from .trainers.device import precision_line

    report = trainer.data_report
    console.print(precision_line(trainer.mixed_precision, trainer.device, trainer.dtype), markup=False, highlight=False)
    console.print(
        f"{report['read']} trajectories read, {report['selected']} selected, {report['trained']} trained on "
        f"({report['too_long']} too long, {report['untrainable']} untrainable): {report['target_tokens']} assistant tokens of "
        f"{report['input_tokens']}; {trainer.total_steps} steps" + (f"; held-out eval on {trainer.env_id}" if trainer.env_id else ""),
        markup=False,
        highlight=False,
    )
    records = trainer.train()
    last = records[-1] if records else None
    if last is not None:
        console.print(f"step {last['step']}: loss {last['loss']:.3f}, token accuracy {last['token_accuracy']:.3f}")
        if last.get("eval/reward") is not None:
            console.print(f"held-out reward {last['eval/reward']:.3f} ({sft_config.eval_judge})")
    out = sft_config.output_dir
    console.print(
        f"weights in {out}/last (and {out}/best); continue with GRPO: judgegym train --init-adapter {out}/last",
        markup=False,
        highlight=False,
    )
    console.print(peak_memory_line())


@app.command("demo", short_help="GRPO on the embedded model on CPU: held-out reward before and after.")
def demo_command(
    task: Annotated[
        str,
        typer.Option(
            metavar="NAME",
            help="answer: GRPO on the shaped answer-only task; tools: SFT then GRPO on the full RagSupport-v0 with its tools; "
            "support: SFT then GRPO on CustomerSupport-v0.",
        ),
    ] = "answer",
    steps: Annotated[
        int | None,
        typer.Option(metavar="N", min=1, help="GRPO steps [default: 10 for answer (B=4 x G=4), 3 for tools and support (B=2 x G=4)]."),
    ] = None,
    eval_episodes: Annotated[
        int | None, typer.Option(metavar="N", min=2, help="Held-out test scenarios of every eval [default: 32 for answer, 16 for tools].")
    ] = None,
    sft_episodes: Annotated[
        int, typer.Option(metavar="N", min=1, help="tools, support: teacher episodes played for the SFT data (oracle; policy).")
    ] = 32,
    output_dir: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Metrics, episodes, adapters, plots [default: runs/demo, runs/demo-tools, runs/demo-support]."),
    ] = None,
    seed: Annotated[int, typer.Option(metavar="INT", help="LoRA init, scenario order and sampling.")] = 0,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="answer: continue an interrupted demo from its newest checkpoint; tools, support: keep the stages it finished.",
        ),
    ] = False,
    compare_judge: Annotated[
        list[str] | None,
        typer.Option(
            metavar="SPEC",
            help="tools: one more GRPO run from the same SFT adapter with this judge as the only training reward (repeatable), "
            "e.g. learned; every run is evaluated by the verifier.",
        ),
    ] = None,
    control: Annotated[
        bool,
        typer.Option(
            "--control/--no-control",
            help="tools, support: also continue the SFT adapter with SFT for GRPO's training time, the control GRPO is compared with.",
        ),
    ] = True,
    pass_trials: Annotated[
        int | None,
        typer.Option(
            metavar="K",
            min=0,
            help="tools, support: sampled attempts per held-out scenario at every stage, for pass^1..pass^K "
            "[default: 0 for tools, 2 for support].",
        ),
    ] = None,
    oversample: Annotated[
        int,
        typer.Option(
            metavar="N", min=0, help="tools, support: GRPO plays N more scenarios a step and trains on those of widest reward spread."
        ),
    ] = 0,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="tools, support: any ToolsDemoConfig field as KEY=VALUE (JSON values), e.g. --set temperature=0.7 "
            "--set grpo_judge=learned; the fields and their meaning: docs/trainer.md#the-tools-demo.",
        ),
    ] = None,
) -> None:
    """Train the embedded SmolLM2-135M on RagSupport-v0 on CPU and show the held-out reward
    before and after: --task answer (GRPO + LoRA on a shaped answer-only task,
    docs/trainer.md#the-cpu-demo), --task tools (SFT on oracle episodes, then GRPO, on the
    real task with search and read; docs/trainer.md#the-tools-demo) or --task support (the
    same on CustomerSupport-v0 from the policy agent's episodes, with pass^k;
    docs/trainer.md#customersupport)."""
    from dataclasses import replace

    from .trainers.demo import DEMO_COMPONENTS, demo_config, run_demo

    if task not in ("answer", "tools", "support"):
        raise _fail(f"--task must be 'answer', 'tools' or 'support', got {task!r}")
    if task in ("tools", "support"):
        support = task == "support"
        _tools_demo(
            steps or 3,
            eval_episodes or 16,
            sft_episodes,
            output_dir or Path("runs/demo-support" if support else "runs/demo-tools"),
            seed,
            control,
            compare_judge or [],
            env_id="CustomerSupport-v0" if support else "RagSupport-v0",
            pass_trials=(2 if support else 0) if pass_trials is None else pass_trials,
            oversample=oversample,
            resume=resume,
            overrides=_parse_env_args(set_ or [], option="--set"),
        )
        return
    if set_:
        raise _fail("--set applies to --task tools and support")
    steps, eval_episodes, output_dir = steps or 10, eval_episodes or 32, output_dir or Path("runs/demo")
    if steps < 2:
        raise _fail("--steps must be at least 2 for --task answer (it evaluates halfway)")
    config = replace(demo_config(output_dir, steps=steps, eval_episodes=eval_episodes, seed=seed), resume=resume)
    console.print(
        f"GRPO on RagSupport-v0 (answer from the prefetched article, single-fact questions): SmolLM2-135M-Instruct + LoRA, "
        f"{steps} steps x {config.scenarios_per_step} scenarios x {config.group_size} answers, train reward {config.judge}; "
        f"held-out: {config.eval_episodes} test scenarios, greedy, reward {config.eval_judge}.",
        soft_wrap=True,
    )
    try:
        trainer = _load_trainer(config)
        result = run_demo(trainer=trainer)
    except (ValueError, ImportError, FileNotFoundError, FileExistsError) as exc:
        raise _fail(str(exc)) from None
    table = Table(title=f"Held-out RagSupport-v0 ({config.eval_episodes} test scenarios)")
    table.add_column("")
    table.add_column("before (step 0)", justify="right")
    table.add_column(f"after (step {result.after.step})", justify="right")
    table.add_row(f"reward ({config.eval_judge})", f"{result.before.reward:.3f}", f"{result.after.reward:.3f}")
    for name in DEMO_COMPONENTS:
        table.add_row(f"  {name}", f"{result.before.components[name]:.3f}", f"{result.after.components[name]:.3f}")
    console.print(table)
    console.print(
        f"change in reward: {result.difference:+.3f}, 95% paired bootstrap interval [{result.ci_low:+.3f}, {result.ci_high:+.3f}]; "
        f"{result.improved} scenarios better, {result.worse} worse"
    )
    for question, before, after in result.examples():
        console.print(f"\n{question}", markup=False, highlight=False, style="bold")
        console.print(f"  before ({before.reward:.2f}): {before.final_answer!r}", markup=False, highlight=False)
        console.print(f"  after  ({after.reward:.2f}): {after.final_answer!r}", markup=False, highlight=False)
    out = config.output_dir
    console.print(
        f"\nplot: {result.plot} (train reward: {config.judge}; held-out reward: {config.eval_judge})\n"
        f"adapters: {out}/best (best held-out reward), {out}/last\n"
        f"re-evaluate an adapter on this shaped task: judgegym eval --from-run {out} "
        f"--agent 'hf:smollm2-135m+{out}/last?max_tokens={config.max_new_tokens}' --episodes {config.eval_episodes} --concurrency 16",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    console.print(peak_memory_line())


SUPPORT_DEMO_MAX_TURNS = 10
"""Turns of a CustomerSupport-v0 demo episode: the policy agent's episodes take 4 to 11."""


def _tools_demo(
    steps: int,
    eval_episodes: int,
    sft_episodes: int,
    output_dir: Path,
    seed: int,
    control: bool = True,
    compare: list[str] | None = None,
    *,
    env_id: str = "RagSupport-v0",
    pass_trials: int = 0,
    oversample: int = 0,
    resume: bool = False,
    overrides: dict[str, Any] | None = None,
) -> None:
    from dataclasses import fields

    from .evaluation.compare import describe_episode
    from .trainers.tools_demo import (
        ToolsDemoConfig,
        demo_grpo_config,
        demo_sft_config,
        run_tools_demo,
        stage_metric_names,
    )

    support = env_id == "CustomerSupport-v0"
    given: dict[str, Any] = {
        "output_dir": str(output_dir),
        "env_id": env_id,
        "sft_episodes": sft_episodes,
        "grpo_steps": steps,
        "eval_episodes": eval_episodes,
        "seed": seed,
        "control": control,
        "compare_judges": list(compare or []),
        "pass_trials": pass_trials,
        "oversample": oversample,
        "resume": resume,
    }
    overrides = overrides or {}
    defaults = ToolsDemoConfig()
    unknown = sorted(set(overrides) - {f.name for f in fields(ToolsDemoConfig)})
    if unknown:
        raise _fail(f"unknown ToolsDemoConfig field(s) {', '.join(unknown)}; see docs/trainer.md#the-tools-demo")
    if clash := sorted(set(overrides) & set(given)):
        raise _fail(f"set {', '.join(clash)} with the demo's own options, not --set")
    for key, value in overrides.items():
        default = getattr(defaults, key)
        expected = float if isinstance(default, float) else type(default)
        if default is not None and not (isinstance(value, expected) or (expected is float and type(value) is int)):
            raise _fail(f"--set {key} expects a {expected.__name__} (the default is {default!r}), got {value!r}")
    if not resume and output_dir.exists() and any(output_dir.iterdir()):
        raise _fail(f"{output_dir} is not empty; the demo writes a new run there (choose another --output-dir, or --resume)")
    try:
        config = ToolsDemoConfig(**given | ({"max_turns": SUPPORT_DEMO_MAX_TURNS} if support else {}) | overrides)
        # the stages' own configs check their values now, not after minutes of SFT
        demo_sft_config(config, output_dir / "sft-data.jsonl", output_dir / "sft")
        demo_grpo_config(config, config.grpo_judge or "", output_dir / "sft" / "last", output_dir / "grpo")
    except (ValueError, TypeError) as exc:
        raise _fail(str(exc)) from None
    control_text = "control: the SFT adapter continued with SFT for GRPO's training time; " if control else ""
    tools = "look-ups and changes of orders" if support else "search, read"
    pass_text = f"; pass^k from {pass_trials} sampled attempts each (temperature {config.pass_temperature})" if pass_trials else ""
    console.print(
        f"{env_id} with its tools ({tools}; the env's prompt and verifier): SmolLM2-135M-Instruct + LoRA; SFT on the "
        f"{config.teacher} agent's verified episodes of {sft_episodes} train scenarios ({config.sft_epochs} epochs), then GRPO "
        f"from the SFT adapter ({steps} steps x {config.scenarios_per_step} scenarios x {config.group_size} episodes"
        + (f", {oversample} more scenarios played a step and the widest-spread kept" if oversample else "")
        + ", train reward "
        f"{config.grpo_judge}"
        + "".join(f", {key} {value}" for key, value in overrides.items() if key != "grpo_judge")
        + f"); {control_text}"
        f"held-out: {eval_episodes} test scenarios, greedy, reward verifier{pass_text}.",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    try:
        result = run_tools_demo(config, log=lambda line: console.print(line, markup=False, highlight=False))
    except (ValueError, ImportError, FileNotFoundError, FileExistsError) as exc:
        raise _fail(str(exc)) from None
    table = Table(title=f"Held-out {env_id} with tools ({eval_episodes} test scenarios, greedy)")
    table.add_column("")
    labels = {"before": "before", "sft": "after SFT", "grpo": "after SFT + GRPO", "sft_more": "SFT continued (control)"}
    labels |= {stage: f"GRPO, reward {stage[5:-1]}" for stage in result.stages if stage.startswith("grpo[")}
    stages = [stage for stage in labels if stage in result.stages]
    for stage in stages:
        table.add_column(labels[stage], justify="right")
    for metric in stage_metric_names(env_id):
        name = "reward (verifier)" if metric == "reward" else metric.replace("_", " ")
        values = (result.stages[stage][metric] for stage in stages)
        table.add_row(name, *("-" if math.isnan(value) else f"{value:.3f}" for value in values))  # no tool calls: no error rate
    table.add_row("tool calls / episode", *(f"{result.stages[stage]['tool_calls']:.2f}" for stage in stages))
    for k in range(1, pass_trials + 1):
        cells = (result.pass_k[stage][f"pass^{k}"] for stage in stages)
        table.add_row(f"pass^{k} (sampled) [95% CI]", *(f"{v:.2f} [{lo:.2f}, {hi:.2f}]" for v, lo, hi in cells))
    for metric in dict.fromkeys(m for stage in stages for m in result.sampled.get(stage, {})):
        name = metric.replace("_", " ") + " (sampled) [95% CI]"
        figures = (result.sampled[stage].get(metric) for stage in stages)
        table.add_row(name, *(f"{f[0]:.3f} [{f[1]:.3f}, {f[2]:.3f}]" if f else "-" for f in figures))
    console.print(table)
    comparisons = (
        ("sft", "SFT vs before"),
        ("grpo", "GRPO vs SFT"),
        ("total", "SFT + GRPO vs before"),
        ("control", "SFT continued vs SFT"),
        ("grpo_vs_control", "GRPO vs SFT continued (the control)"),
        *((f"{stage}_vs_sft", f"{labels[stage]} vs SFT") for stage in stages if stage.startswith("grpo[")),
        *((f"{stage}_vs_grpo", f"{labels[stage]} vs GRPO with {config.grpo_judge}") for stage in stages if stage.startswith("grpo[")),
    )
    for key, label in comparisons:
        if key not in result.changes:
            continue
        shown = ", ".join(f"{c.metric} {c.difference:+.3f} [{c.ci_low:+.3f}, {c.ci_high:+.3f}]" for c in result.changes[key])
        console.print(f"{label} (paired 95% intervals): {shown}", markup=False, highlight=False)
    sft, grpo = result.episodes["sft"], result.episodes["grpo"]
    for before, after_sft, after_grpo in list(zip(result.episodes["before"], sft, grpo, strict=True))[:2]:
        task_text = before.info.get("task", {})
        question = task_text.get("goal") or next((m.content or "" for m in before.messages if m.role == "user"), "")
        console.print(f"\n{question}", markup=False, highlight=False, style="bold")
        for label, trajectory in (("before", before), ("after SFT", after_sft), ("after GRPO", after_grpo)):
            lines = describe_episode(trajectory).replace("\n", "\n    ")
            console.print(f"  {label} ({trajectory.reward:.2f}):\n    {lines}", markup=False, highlight=False)
    minutes = result.timings["total_s"] / 60
    console.print(
        f"\nplot: {result.plot}; figures: {output_dir}/result.json; adapters: {output_dir}/sft/last, {output_dir}/grpo/last\n"
        f"time {minutes:.1f} min (SFT data {result.timings['data_s']:.0f} s, eval before {result.timings['eval_before_s']:.0f} s, "
        f"SFT with its eval {result.timings['sft_s']:.0f} s, GRPO with its eval {result.timings['grpo_s']:.0f} s"
        + (f", control with its data and eval {result.timings['control_s']:.0f} s" if "control_s" in result.timings else "")
        + (f", sampled attempts for pass^k {result.timings['pass_k_s']:.0f} s" if "pass_k_s" in result.timings else "")
        + "); "
        f"peak memory {result.peak_rss_gb:.1f} GB",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def _show_config(cls: Any) -> None:
    defaults = cls()
    for name, text in cls.help().items():
        console.print(f"[bold]{name}[/] = {getattr(defaults, name)!r}\n    {escape(text)}")


def _make_config(
    cls: Any, command: str, file: Path | None, given: dict[str, Any], resume: bool, env_arg: list[str] | None, set_: list[str] | None
) -> Any:
    """A config dataclass from a JSON file, then the options given (None: not given), then --env-arg and --set."""
    from dataclasses import fields

    values: dict[str, Any] = {}
    if file is not None:
        if not file.is_file():
            raise _fail(f"config file {file} does not exist")
        try:
            values.update(json.loads(file.read_text()))
        except json.JSONDecodeError as exc:
            raise _fail(f"{file} is not valid JSON: {exc}") from None
    values.update({key: value for key, value in given.items() if value is not None})
    if resume:
        values["resume"] = True
    if env_arg:
        values["env_kwargs"] = {**values.get("env_kwargs", {}), **_parse_env_args(env_arg)}
    values.update(_parse_env_args(set_ or [], option="--set"))
    unknown = sorted(set(values) - {f.name for f in fields(cls)})
    if unknown:
        raise _fail(f"unknown {cls.__name__} field(s) {', '.join(unknown)}; see judgegym {command} --show-config")
    try:
        return cls(**values)
    except (ValueError, TypeError) as exc:
        raise _fail(str(exc)) from None


def _load_trainer(config: Any) -> Any:
    """A `GRPOTrainer` for `config`, loading under a spinner in a terminal, after a line elsewhere."""
    from .trainers import GRPOTrainer

    what = f"loading {config.model}, the envs and the judge"
    if console.is_terminal:
        with console.status(what):
            return GRPOTrainer(config)
    console.print(f"{what} ...", markup=False, highlight=False)
    console.file.flush()
    return GRPOTrainer(config)


@app.command("serve", short_help="Serve an env over HTTP and WebSocket (OpenEnv's protocol), judged here.")
def serve_command(
    env: Annotated[str, typer.Argument(metavar="ENV_ID", help="The env to serve, e.g. RagSupport-v0.")],
    judge: Annotated[
        str, typer.Option(metavar="SPEC", help="Judge of the episodes: verifier, grounding, learned, ruler:MODEL (groups), ...")
    ] = "verifier",
    env_arg: Annotated[
        list[str] | None, typer.Option("--env-arg", metavar="KEY=VALUE", help="Env keyword for every session (JSON values), repeatable.")
    ] = None,
    host: Annotated[str, typer.Option(metavar="ADDR", help="Address to bind; anything but loopback should have a --token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(metavar="PORT", min=0, max=65535)] = 8000,
    max_concurrent_envs: Annotated[int, typer.Option(metavar="N", min=1, help="Open sessions (env instances) at most.")] = 64,
    session_timeout: Annotated[float, typer.Option(metavar="SECONDS", min=1, help="Close a session idle this long.")] = 300.0,
    group_timeout: Annotated[
        float, typer.Option(metavar="SECONDS", min=1, help="Fail a group not finished this long after it opened.")
    ] = 600.0,
    token: Annotated[
        str | None,
        typer.Option(
            metavar="TOKEN",
            envvar="JUDGEGYM_SERVE_TOKEN",
            help="Require 'Authorization: Bearer TOKEN' (env: JUDGEGYM_SERVE_TOKEN, which --env-url clients send too).",
        ),
    ] = None,
    workers: Annotated[int, typer.Option(metavar="N", min=1, help="Threads stepping envs.")] = 8,
    log_level: Annotated[str, typer.Option(metavar="LEVEL", help="uvicorn's log level: info logs every request and connection.")] = "info",
    ssl_certfile: Annotated[str | None, typer.Option(metavar="PEM", help="TLS certificate: serve https:// and wss://.")] = None,
    ssl_keyfile: Annotated[str | None, typer.Option(metavar="PEM", help="The TLS certificate's private key.")] = None,
) -> None:
    """Serve ENV_ID: one env per session over WebSocket (/ws) or HTTP (/reset, /step, /state),
    group sessions for relative judges (docs/plugins/openenv.md)."""
    from .serving.server import ServeConfig, serve

    env_kwargs = _parse_env_args(env_arg or [])
    config = ServeConfig(
        env_id=env,
        judge=judge,
        env_args=env_kwargs,
        max_concurrent_envs=max_concurrent_envs,
        session_timeout_s=session_timeout,
        group_timeout_s=group_timeout,
        token=token,
        workers=workers,
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
    )
    problems = config.problems()
    if problems:
        raise _fail("; ".join(problems))
    _check_env(env, env_kwargs)
    from .judges.specs import make_judge

    try:
        make_judge(judge, env_id=env)  # a bad spec fails here, before the banner
    except (ValueError, ImportError) as exc:
        raise _fail(str(exc)) from None
    scheme = "https" if ssl_certfile else "http"
    console.print(
        f"serving {env} (judge: {judge}) on {scheme}://{host}:{port}  {scheme.replace('http', 'ws')}://{host}:{port}/ws",
        markup=False,
        highlight=False,
    )
    try:
        serve(config, host=host, port=port, log_level=log_level)
    except (ValueError, ImportError) as exc:
        raise _fail(str(exc)) from None


@app.command("envs", short_help="List the registered environments.")
def envs_command() -> None:
    """List the registered environments."""
    for env_id, entry_point in envs.ENVIRONMENTS.items():
        console.print(f"{env_id}\t{entry_point}")


@app.command("bench", short_help="Time env reset and step: medians and p99.")
def bench_command(
    env: Annotated[str, typer.Option("--env", metavar="ID", help="Environment id.")] = "RagSupport-v0",
    n_products: Annotated[
        int, typer.Option(metavar="N", help="RagSupport-v0: products per world (2000 gives over 10,000 documents).")
    ] = 2000,
    episodes: Annotated[int, typer.Option(metavar="N", min=10, help="Timed episodes.")] = 1000,
    agent: Annotated[str, typer.Option(metavar="SPEC", help="Other envs: the scripted baseline that plays.")] = "oracle",
    json_out: Annotated[Path | None, typer.Option("--json", metavar="FILE", help="Also write the figures as JSON.")] = None,
) -> None:
    """Time reset and step: medians and p99 (RagSupport-v0 also times the rank-bm25 peer)."""
    from .benchmarks.throughput import bench_env, bench_steps

    env_id = env.removeprefix("judgegym:")
    if env_id not in envs.ENVIRONMENTS:
        raise _fail(f"unknown env {env!r}; judgegym envs: {', '.join(envs.ENVIRONMENTS)}")
    if env_id == "RagSupport-v0":
        result = bench_env(n_products=n_products, episodes=episodes)
        title = f"{env}: {result['documents']} documents, {episodes} episodes"
        rows = ("reset", "step_search", "step_read", "step_answer", "peer_rank_bm25_search")
    else:
        try:
            result = bench_steps(env_id, agent, episodes)
        except ValueError as exc:
            raise _fail(str(exc)) from None
        title = f"{env}: {episodes} episodes played by {agent}"
        rows = ("reset", "step", "step_final")
    table = Table(title=title)
    for header in ("operation", "median (ms)", "p99 (ms)"):
        table.add_column(header, justify="right")
    for name in rows:
        if name in result:
            table.add_row(name, f"{result[name]['median_ms']:.3f}", f"{result[name]['p99_ms']:.3f}")
    console.print(table)
    if "cold_reset_s" in result:
        console.print(f"first reset (world generation + BM25 index): {result['cold_reset_s']:.2f} s")
    if "search_speedup_vs_rank_bm25" in result:
        console.print(f"search step vs rank-bm25 search alone (median): {result['search_speedup_vs_rank_bm25']:.0f}x faster")
    if json_out:
        json_out.write_text(json.dumps(result, indent=2))


@app.command("judge-bench", short_help="Measure how well a judge ranks answers of known quality.")
def judge_bench_command(
    groups: Annotated[
        Path | None, typer.Option("--groups", metavar="FILE", help="JSONL file of labelled groups (format: docs/judge-bench.md).")
    ] = None,
    generate: Annotated[
        int | None, typer.Option("--generate", metavar="N", min=1, help="Generate N labelled groups from the env's test scenarios.")
    ] = None,
    env: Annotated[str, typer.Option("--env", metavar="ID", help="Environment id (scenarios, and the verifier's env).")] = "RagSupport-v0",
    judge: Annotated[
        str, typer.Option("--judge", metavar="SPEC", help="Judge spec: verifier, grounding, learned, auto, ruler:MODEL, rubric:MODEL.")
    ] = ("verifier"),
    model: Annotated[str | None, typer.Option("--model", metavar="MODEL", help="Model of an LLM judge: --judge ruler --model M.")] = None,
    api_base: Annotated[
        str | None, typer.Option("--api-base", metavar="URL", help="Endpoint of an LLM judge's model (several: comma-separated).")
    ] = None,
    schema: Annotated[
        str,
        typer.Option(
            "--schema",
            metavar="MODE",
            help=(
                "RULER's reply format: auto (a JSON schema where litellm says the model supports one), json_schema (OpenAI's form: "
                "vLLM, SGLang, llama-server), json_object (llama-cpp-python's server), off (the prompt alone)."
            ),
        ),
    ] = "auto",
    group_size: Annotated[
        int | None, typer.Option("--group-size", metavar="G", min=2, max=8, help="Responses per generated group (default: all 8).")
    ] = None,
    seed: Annotated[int, typer.Option(metavar="INT", help="First scenario seed; also seeds subsets and shuffles.")] = 0,
    concurrency: Annotated[int, typer.Option(metavar="N", min=1, help="Groups scored at once.")] = 8,
    save: Annotated[Path | None, typer.Option("--save", metavar="FILE", help="Write the groups here (JSONL, external format).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="FILE", help="Write the report as JSON here and its calibration plot beside it (FILE.png)."),
    ] = None,
) -> None:
    """Measure how well a judge orders responses of known quality: pairwise accuracy, Kendall
    tau, top-1 accuracy, position and length bias, mean score per tier and label."""
    from .evaluation.judge_bench import (
        GroupFileError,
        GroupScores,
        calibration_plot,
        generate_groups,
        load_labelled_groups,
        run_judge_bench,
        save_labelled_groups,
    )
    from .judges.specs import make_judge

    if (groups is None) == (generate is None):
        raise _fail("give exactly one of --groups FILE (labelled groups) or --generate N (groups from the env)")
    kind, _, named_model = judge.strip().partition(":")
    spec = judge.strip()
    if model is not None:
        if kind not in ("ruler", "rubric"):
            raise _fail(f"--model goes with an LLM judge (--judge ruler or rubric), not {judge!r}")
        if named_model and named_model != model:
            raise _fail(f"--judge {judge!r} already names a model; drop --model {model!r} or the ':MODEL' part")
        spec = f"{kind}:{model}"
    if api_base is not None and kind not in ("ruler", "rubric"):
        raise _fail(f"--api-base goes with an LLM judge (ruler, rubric), not {judge!r}")
    modes: dict[str, Any] = {"auto": None, "json_schema": "json_schema", "json_object": "json_object", "off": False}
    if schema not in modes:
        raise _fail(f"--schema takes {', '.join(modes)}, not {schema!r}")
    if schema != "auto" and kind != "ruler":
        raise _fail(f"--schema goes with --judge ruler, not {judge!r}")
    options: dict[str, Any] = {"api_base": api_base} if api_base else {}
    if modes[schema] is not None:
        options["structured"] = modes[schema]
    _check_env(env, {})
    try:
        the_judge = make_judge(spec, env_id=env, **options)
    except (ValueError, TypeError, ImportError) as exc:
        raise _fail(f"cannot make judge {spec!r}: {exc}") from None
    if groups is not None:
        if group_size is not None:
            raise _fail("--group-size applies to --generate; a groups file fixes its own groups")
        try:
            labelled = load_labelled_groups(groups)
        except FileNotFoundError:
            raise _fail(f"groups file {groups} does not exist") from None
        except GroupFileError as exc:
            raise _fail(str(exc)) from None
        if kind == "verifier":
            ungraded = [g.scenario_id for g in labelled if "gold_facts" not in g.trajectories[0].info.get("task", {})]
            if ungraded:
                raise _fail(
                    f"the verifier grades against gold data, but group {ungraded[0]!r} ({len(ungraded)} in all) has no "
                    "'task' with 'gold_facts'; use a judge that needs no gold data (learned, grounding, ruler:MODEL)"
                )
    else:
        try:
            labelled = generate_groups(generate or 0, env_id=env, seed=seed, group_size=group_size)
        except ValueError as exc:
            raise _fail(str(exc)) from None
    if save is not None:
        save_labelled_groups(save, labelled)
        if not json_out:
            console.print(f"{len(labelled)} groups written to {save}")
    if json_out:
        report = asyncio.run(run_judge_bench(the_judge, labelled, judge_name=spec, concurrency=concurrency, seed=seed))
        typer.echo(json.dumps(report.model_dump()))
    else:
        with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
        ) as progress:
            task = progress.add_task(f"{spec} on {len(labelled)} groups", total=len(labelled))

            def advance(_: GroupScores) -> None:
                progress.update(task, advance=1)

            report = asyncio.run(
                run_judge_bench(the_judge, labelled, judge_name=spec, concurrency=concurrency, seed=seed, on_group=advance)
            )
        source = str(groups) if groups is not None else f"{env}, seeds from {seed}"
        table = Table(title=f"judge-bench: {spec} ({source})")
        table.add_column("metric")
        table.add_column("value", justify="right")
        for name in ("pairwise_accuracy", "kendall_tau", "top1_accuracy", "position_bias", "length_bias"):
            value = getattr(report, name)
            table.add_row(name, "-" if value is None else f"{value:.3f}")
        for name in ("n_groups", "n_pairs", "n_failed"):
            table.add_row(name, str(getattr(report, name)))
        console.print(table)
        if report.by_label:
            labels = Table(title="mean score per response kind")
            for header in ("label", "tier", "responses", "mean score", "95% interval"):
                labels.add_column(header, justify="left" if header == "label" else "right")
            for row in report.by_label:
                labels.add_row(row.label, str(row.tier), str(row.n), f"{row.mean_score:.3f}", f"[{row.ci_low:.3f}, {row.ci_high:.3f}]")
            console.print(labels)
        if report.failures:
            group_id, error = next(iter(report.failures.items()))
            console.print(f"[bold red]{report.n_failed} groups failed[/]; first ({escape(group_id)}): {escape(error)}")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report.model_dump(), indent=2) + "\n")
        plot = calibration_plot(report, out.with_suffix(".png"), title=f"judge-bench: {spec} ({len(labelled)} groups)")
        if not json_out:
            console.print(f"report: {out}; calibration plot: {plot}", markup=False, highlight=False, soft_wrap=True)
    if report.n_groups == 0:
        raise typer.Exit(code=1)


@app.command(
    "learned-judge",
    short_help="Train or evaluate the learned judge's heads (train | eval; --help for each).",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
    add_help_option=False,
)
def learned_judge_command(ctx: typer.Context) -> None:
    """Train the learned judge's heads on verifier-labelled episodes of the envs' train splits
    (``train``), or measure them with judge-bench on held-out groups (``eval``); the arguments
    are `judgegym.judges.learned.training`'s (``judgegym learned-judge train --help``)."""
    from .judges.learned.training import main

    raise typer.Exit(code=main(ctx.args))


@app.command("judge", short_help="Score your own trajectories (OpenAI chat JSONL) with any judge.")
def judge_command(
    file: Annotated[Path, typer.Argument(metavar="FILE.jsonl", help="Trajectories: OpenAI chat records, judgegym trajectories or groups.")],
    judge: Annotated[
        str,
        typer.Option("--judge", metavar="SPEC", help="Judge spec: learned, grounding, verifier, auto, ruler:MODEL, rubric:MODEL."),
    ] = "learned",
    env: Annotated[
        str | None,
        typer.Option("--env", metavar="ID", help="Env whose verifier grades (verifier, auto) [default: each line's own]."),
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", metavar="FILE", help="Write a JSON line per input: score, components, why.")] = None,
    api_base: Annotated[
        str | None, typer.Option("--api-base", metavar="URL", help="Endpoint of an LLM judge's model (several: comma-separated).")
    ] = None,
    concurrency: Annotated[int, typer.Option(metavar="N", min=1, help="Groups an LLM judge scores at once.")] = 8,
    show: Annotated[int, typer.Option(metavar="N", min=0, help="Rows of the table printed (all: --out FILE).")] = 20,
) -> None:
    """Score trajectories from a JSONL file: one per line, as OpenAI chat records
    ({"messages": [...], "tools": [...], "id": ..., "group": ...}), judgegym trajectories
    (judgegym eval --out) or groups. Lines sharing a "group" are ranked together by relative
    judges (ruler:MODEL). Bad lines are reported by number and skipped (exit status 1)."""
    from .judges.files import judge_inputs, read_trajectory_file
    from .judges.specs import make_judge

    try:
        found = read_trajectory_file(file)
    except FileNotFoundError:
        raise _fail(f"{file} does not exist") from None
    except (UnicodeDecodeError, IsADirectoryError) as exc:
        raise _fail(f"cannot read {file}: {exc}") from None
    for bad in found.errors:
        console.print(f"[yellow]skipped[/] {escape(str(file))}, line {bad.line}: {escape(bad.error or '')}", soft_wrap=True)
    if not found.inputs:
        raise _fail(
            f"{file}: no trajectory to judge" + (f" ({_count(len(found.errors), 'bad line')})" if found.errors else " (the file is empty)")
        )
    kind = judge.strip().partition(":")[0]
    if api_base is not None and kind not in ("ruler", "rubric"):
        raise _fail(f"--api-base goes with an LLM judge (ruler, rubric), not {judge!r}")
    env_ids = {i.trajectory.env_id for i in found.inputs if i.trajectory.env_id}
    env_id = env or (env_ids.pop() if len(env_ids) == 1 else None)
    if env_id is not None and env_id.removeprefix("judgegym:") not in envs.ENVIRONMENTS:
        raise _fail(f"unknown env {env_id!r}; judgegym envs: {', '.join(envs.ENVIRONMENTS)}")
    try:
        the_judge = make_judge(judge, env_id=env_id, **({"api_base": api_base} if api_base else {}))
    except (ValueError, TypeError, ImportError) as exc:
        raise _fail(f"cannot make judge {judge!r}: {exc}") from None
    if kind == "verifier":
        ungraded = [i for i in found.inputs if not i.trajectory.info.get("task")]
        if ungraded:
            raise _fail(
                f"the verifier grades against gold data, but line {ungraded[0].line} ({_count(len(ungraded), 'trajectory')} in all) "
                "has no 'task'; use a judge that needs no gold data (learned, grounding, ruler:MODEL) or --judge auto"
            )
    alone = sum(i.group is None for i in found.inputs)
    if the_judge.relative and alone:
        console.print(f"[yellow]note:[/] {_count(alone, 'line')} without a 'group': a relative judge ranks each of them against nothing")
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console) as progress:
        task = progress.add_task(f"{judge} on {_count(len(found.inputs), 'trajectory')}", total=len(found.inputs))
        judged = asyncio.run(
            judge_inputs(the_judge, found.inputs, concurrency=concurrency, on_scored=lambda n: progress.update(task, advance=n))
        )
    scored = [j for j in judged if j.score is not None]
    failed = [j for j in judged if j.score is None]
    table = Table(title=f"{judge} on {file}" + (f" (first {show} of {len(judged)})" if len(judged) > show else ""))
    for header in ("line", "id", "group", "score", "why"):
        table.add_column(header, justify="right" if header in ("line", "score") else "left", overflow="fold")
    for j in judged[:show]:
        verdict = f"{j.score.score:.3f}" if j.score else "failed"
        why = j.score.explanation if j.score else j.error or ""
        table.add_row(str(j.line), escape(j.id), escape(j.group or "-"), verdict, escape(why))
    if show:
        console.print(table)
    if scored:
        mean = sum(j.score.score for j in scored if j.score) / len(scored)
        console.print(f"{_count(len(scored), 'trajectory')} scored, mean {mean:.3f}", highlight=False)
    if failed:
        console.print(
            f"[bold red]{_count(len(failed), 'trajectory')} not scored[/]; first (line {failed[0].line}): {escape(failed[0].error or '')}"
        )
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", encoding="utf-8") as handle:
            for j in sorted([*judged, *found.errors], key=lambda j: j.line):
                handle.write(json.dumps(j.record()) + "\n")
        console.print(f"scores: {out}", markup=False, highlight=False, soft_wrap=True)
    if found.errors or failed:
        raise typer.Exit(code=1)


def main() -> None:
    """Entry point of the `judgegym` script."""
    app()


if __name__ == "__main__":
    main()
