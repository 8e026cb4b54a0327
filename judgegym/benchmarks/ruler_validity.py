"""How often a RULER judge's replies are valid, with and without a JSON schema.

Generates labelled judge-bench groups (`judge_bench.generate_groups`) and scores each once,
in its given order, with `RulerJudge` under each reply format: ``off`` (the prompt alone),
``json_object`` (llama-cpp-python's ``{"type": "json_object", "schema": ...}``) and
``json_schema`` (OpenAI's form, also vLLM, SGLang and llama.cpp's ``llama-server``). Per
format it reports the share of groups whose first reply was valid, the share valid after
the corrective retry, the groups that failed, the median seconds per group and the pairwise
accuracy of the groups that were scored (`judge_bench.summarize_agreement`). The judge's
disk cache is off, so every reply is a real call.

    python -m llama_cpp.server --model SmolLM2-135M-Instruct.Q4_1.gguf --port 8011 --n_threads 1 --n_ctx 8192
    python -m judgegym.benchmarks.ruler_validity --api-base http://127.0.0.1:8011/v1 \\
        --model openai/smollm2 --groups 20 --group-size 4 --json runs/ruler-validity.json

Groups are scored one at a time (a CPU server decodes one request at a time anyway, and
the seconds per group stay meaningful).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..evaluation.judge_bench import GroupScores, generate_groups, summarize_agreement
from ..judges.llm import JudgeError
from ..judges.ruler import RulerJudge, SchemaStyle
from ..trajectory import Group

FORMATS: dict[str, bool | SchemaStyle] = {"off": False, "json_object": "json_object", "json_schema": "json_schema"}
"""Reply format name -> RulerJudge's `structured` value."""

_LABEL_KEYS = ("tier", "perturbation")


@dataclass
class GroupOutcome:
    """One group scored under one reply format.

    `first_valid` and `valid` are None when no reply came back at all (a transport error, in
    `error`); otherwise whether the first reply was valid, and whether the group ended with
    valid scores (at once or after the corrective retry).
    """

    group_id: str
    first_valid: bool | None
    valid: bool | None
    seconds: float
    invalid_replies: int
    error: str | None = None


async def score_format(
    groups: Sequence[Group],
    model: str,
    structured: bool | SchemaStyle,
    *,
    on_group: Callable[[GroupOutcome], None] | None = None,
    **llm: Any,
) -> tuple[list[GroupOutcome], list[GroupScores]]:
    """Score every group once with a fresh `RulerJudge` (``cache=False``) per group, so its
    `RulerJudge.replies` are that group's alone. `llm` goes to the judge (api_base, api_key,
    max_tokens, timeout, ...). Returns the outcomes and the `GroupScores` (scores None where
    the judge failed) for `summarize_agreement`."""
    outcomes: list[GroupOutcome] = []
    results: list[GroupScores] = []
    for group in groups:
        judge = RulerJudge(model, structured=structured, **{**llm, "cache": False})
        result = GroupScores(
            group_id=group.scenario_id,
            tiers=[int(t.info["tier"]) for t in group.trajectories],
            labels=[str(t.info.get("perturbation", f"tier {t.info['tier']}")) for t in group.trajectories],
            lengths=[len(t.final_answer.split()) for t in group.trajectories],
        )
        error = None
        start = time.perf_counter()
        try:
            scores = await judge.score_group(_blind(group))
        except JudgeError as exc:  # an invalid reply after the retry, or a transport failure
            error = str(exc)
        else:
            result.scores = [float(s.score) for s in scores]
        seconds = time.perf_counter() - start
        replies = judge.replies
        got_reply = replies.calls > 0
        outcome = GroupOutcome(
            group_id=group.scenario_id,
            first_valid=replies.valid_first > 0 if got_reply else None,
            valid=result.scores is not None if got_reply else None,
            seconds=seconds,
            invalid_replies=replies.invalid_replies,
            error=error,
        )
        outcomes.append(outcome)
        results.append(result)
        if on_group:
            on_group(outcome)
    return outcomes, results


def _blind(group: Group) -> Group:
    """A copy without the labels, as judge-bench shows groups to a judge."""
    return Group(
        scenario_id=group.scenario_id,
        trajectories=[
            t.model_copy(deep=True, update={"info": {k: v for k, v in t.info.items() if k not in _LABEL_KEYS}}) for t in group.trajectories
        ],
    )


def summarize(outcomes: Sequence[GroupOutcome], results: Sequence[GroupScores]) -> dict[str, Any]:
    """The figures for one format. Shares are over the groups that got a reply; groups with
    a transport error are counted apart (`errors`) and also among `failed`."""
    answered = [o for o in outcomes if o.first_valid is not None]
    report = summarize_agreement(results)
    return {
        "groups": len(outcomes),
        "answered": len(answered),
        "first_reply_valid": sum(bool(o.first_valid) for o in answered) / len(answered) if answered else None,
        "valid_after_retry": sum(bool(o.valid) for o in answered) / len(answered) if answered else None,
        "failed": sum(o.valid is not True for o in outcomes),
        "errors": len(outcomes) - len(answered),
        "invalid_replies": sum(o.invalid_replies for o in outcomes),
        "median_seconds": float(np.median([o.seconds for o in outcomes])) if outcomes else None,
        "pairwise_accuracy": report.pairwise_accuracy,
        "scored_groups": report.n_groups,
        "scored_pairs": report.n_pairs,
    }


async def measure(
    groups: Sequence[Group],
    model: str,
    formats: Sequence[str] = tuple(FORMATS),
    *,
    on_group: Callable[[str, GroupOutcome], None] | None = None,
    **llm: Any,
) -> dict[str, Any]:
    """`summarize` per format, plus each format's per-group outcomes under ``"outcomes"``."""
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ValueError(f"unknown reply formats {', '.join(unknown)}; use {', '.join(FORMATS)}")
    figures: dict[str, Any] = {}
    for name in formats:
        report = (lambda outcome, name=name: on_group(name, outcome)) if on_group else None
        outcomes, results = await score_format(groups, model, FORMATS[name], on_group=report, **llm)
        figures[name] = {**summarize(outcomes, results), "outcomes": [asdict(o) for o in outcomes]}
    return figures


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def table(figures: dict[str, Any]) -> str:
    """The figures as a plain-text table, one row per format."""
    header = ("format", "groups", "first valid", "valid after retry", "failed", "median s/group", "pairwise acc.")
    rows = [header]
    for name, f in figures.items():
        seconds = "-" if f["median_seconds"] is None else f"{f['median_seconds']:.1f}"
        failed = f"{f['failed']}" + (f" ({f['errors']} errors)" if f["errors"] else "")
        accuracy = "-" if f["pairwise_accuracy"] is None else f"{f['pairwise_accuracy']:.3f} ({f['scored_pairs']} pairs)"
        rows.append((name, str(f["groups"]), _share(f["first_reply_valid"]), _share(f["valid_after_retry"]), failed, seconds, accuracy))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--api-base", required=True, help="the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8011/v1")
    parser.add_argument("--model", required=True, help="litellm model name, e.g. openai/smollm2")
    parser.add_argument("--api-key", default="none", help="the endpoint's key (default: 'none'; local servers ignore it)")
    parser.add_argument("--groups", type=int, default=20, help="labelled groups to generate (default: 20)")
    parser.add_argument("--group-size", type=int, default=4, help="responses per group, 2 to 8 (default: 4)")
    parser.add_argument("--seed", type=int, default=0, help="first scenario seed (default: 0)")
    parser.add_argument("--formats", nargs="+", default=list(FORMATS), choices=list(FORMATS), help="reply formats (default: all)")
    parser.add_argument("--max-tokens", type=int, default=1024, help="reply tokens at most (default: 1024, the judge's default)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per call (default: 300)")
    parser.add_argument("--json", type=Path, help="also write the figures and per-group outcomes here")
    args = parser.parse_args(argv)
    if args.groups < 1:
        parser.error("--groups must be >= 1")

    groups = generate_groups(args.groups, group_size=args.group_size, seed=args.seed)

    def progress(name: str, outcome: GroupOutcome) -> None:
        state = "error" if outcome.valid is None else "valid" if outcome.first_valid else "corrected" if outcome.valid else "invalid"
        print(f"{name} {outcome.group_id}: {state} ({outcome.seconds:.1f} s)", flush=True)

    started = datetime.now(UTC)
    figures = asyncio.run(
        measure(
            groups,
            args.model,
            args.formats,
            on_group=progress,
            api_base=args.api_base,
            api_key=args.api_key,
            max_tokens=args.max_tokens,
            timeout=args.timeout,
            retries=1,  # a local server that fails is down, not busy: fail the group, don't wait
        )
    )
    result = {
        "model": args.model,
        "api_base": args.api_base,
        "groups": len(groups),
        "group_size": args.group_size,
        "seed": args.seed,
        "max_tokens": args.max_tokens,
        "started": started.isoformat(timespec="seconds"),
        "seconds": round((datetime.now(UTC) - started).total_seconds(), 1),
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
        "formats": figures,
    }
    print(table(figures))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
