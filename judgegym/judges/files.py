"""Judging your own trajectories from a JSONL file: what ``judgegym judge`` runs.

A line is one of:

- **a chat record**: ``{"messages": [...OpenAI chat messages...]}``, with optional ``id``,
  ``group`` (lines sharing a group are attempts at one scenario, judged together: relative
  judges such as RULER rank them against each other, and LearnedJudge compares what they
  state),
  ``tools`` (the OpenAI function schemas offered) and ``task`` (gold data for an env's
  verifier). OpenAI's fine-tuning files (``messages`` plus ``tools``) are such records;
- **a judgegym trajectory**, as ``judgegym eval --out`` and `write_jsonl` write them (grouped
  by their ``scenario_id``);
- **a judgegym group** (``{"scenario_id", "trajectories": [...]}``), judged as one group.

A bad line is reported with its number and field and skipped; it never stops the others.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..trajectory import Group, Trajectory
from .base import BatchJudge, Judge, JudgeScore, Verifier

BATCH = 256
"""Trajectories a pointwise judge scores in one call (one embedding batch for the offline judges)."""


class _ChatRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    messages: list[Any] = Field(min_length=1)
    id: str | int | None = None
    group: str | int | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)
    task: dict[str, Any] | None = None


@dataclass
class JudgeInput:
    """One trajectory to judge: where it came from (`line`, `id`) and the `group` it is
    judged with (None: judged alone)."""

    line: int
    id: str
    group: str | None
    trajectory: Trajectory


@dataclass
class JudgedLine:
    """A judge's verdict on one input, or the `error` that kept it from being scored."""

    line: int
    id: str
    group: str | None
    score: JudgeScore | None = None
    error: str | None = None

    def record(self) -> dict[str, Any]:
        """The output line: ``line``, ``id``, ``group`` and either ``score``,
        ``components``, ``explanation`` or ``error``."""
        out: dict[str, Any] = {"line": self.line, "id": self.id, "group": self.group}
        if self.score is not None:
            out |= {"score": self.score.score, "components": self.score.components, "explanation": self.score.explanation}
        else:
            out["error"] = self.error
        return out


@dataclass
class TrajectoryFile:
    """What `read_trajectory_file` found: the inputs, in file order, and one message per bad line."""

    inputs: list[JudgeInput] = field(default_factory=list)
    errors: list[JudgedLine] = field(default_factory=list)


def read_trajectory_file(path: str | Path) -> TrajectoryFile:
    """Every trajectory in `path` (formats in the module docstring). Bad lines become
    errors naming the line and the field; raises FileNotFoundError if there is no file."""
    path = Path(path)
    found = TrajectoryFile()
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                found.inputs.extend(_parse_line(line, lineno))
            except ValueError as exc:
                found.errors.append(JudgedLine(line=lineno, id=f"line-{lineno}", group=None, error=str(exc)))
    return found


def _parse_line(line: str, lineno: int) -> list[JudgeInput]:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if isinstance(raw, list):
        raw = {"messages": raw}
    if not isinstance(raw, dict):
        raise ValueError(f"expected a JSON object with 'messages', got {type(raw).__name__}")
    try:
        if "trajectories" in raw:
            group = Group.model_validate(raw)
            if not group.trajectories:
                raise ValueError("field 'trajectories': the group is empty")
            key = str(group.scenario_id or f"line-{lineno}")
            return [JudgeInput(lineno, f"line-{lineno}.{k}", key, t) for k, t in enumerate(group.trajectories)]
        if "scenario_id" in raw:
            trajectory = Trajectory.model_validate(raw)
            return [JudgeInput(lineno, f"line-{lineno}", trajectory.scenario_id or None, trajectory)]
        record = _ChatRecord.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "<line>"
        raise ValueError(f"field '{where}': {first['msg']}") from None
    name = f"line-{lineno}" if record.id is None else str(record.id)
    scenario = name if record.group is None else str(record.group)  # lines of one group are attempts at one scenario
    trajectory = Trajectory.from_messages(record.messages, tools=record.tools, scenario_id=scenario, task=record.task)
    return [JudgeInput(lineno, name, None if record.group is None else str(record.group), trajectory)]


def _by_group(inputs: Sequence[JudgeInput]) -> dict[str, list[int]]:
    """The indices of `inputs` by group, in first-seen order; an input without a group alone."""
    by_group: dict[str, list[int]] = {}
    for i, item in enumerate(inputs):
        by_group.setdefault(item.group if item.group is not None else f"\0{i}", []).append(i)
    return by_group


async def judge_inputs(
    judge: Judge,
    inputs: Sequence[JudgeInput],
    *,
    concurrency: int = 8,
    on_scored: Callable[[int], None] | None = None,
) -> list[JudgedLine]:
    """Score `inputs` with `judge`, in their order.

    A batch judge (the offline ones) or a verifier scores up to `BATCH` inputs per call, whole
    groups together, a batch judge one call at a time; any other judge (relative ones,
    combinations) scores each group together, an input without a group alone, `concurrency`
    groups at once. A judge error
    costs only the trajectories it was about: a failed batch is retried one trajectory at a
    time, and what still fails carries the error. `on_scored(n)` is told as each n are done.
    """
    chunks: list[list[int]]
    if not isinstance(judge, BatchJudge | Verifier):  # relative, or a combination that may judge a group as a whole
        chunks = list(_by_group(inputs).values())
    else:  # whole groups, packed up to BATCH a call: a batch judge may compare a group's members (LearnedJudge does)
        chunks = []
        for members in _by_group(inputs).values():
            if not chunks or len(chunks[-1]) + len(members) > BATCH:
                chunks.append([])
            chunks[-1].extend(members)
    results: list[JudgedLine | None] = [None] * len(inputs)
    gate = asyncio.Semaphore(1 if isinstance(judge, BatchJudge) else concurrency)  # a batch already fills the cores

    async def score(indices: list[int], retry_alone: bool) -> None:
        group = Group(scenario_id=inputs[indices[0]].group or inputs[indices[0]].id, trajectories=[inputs[i].trajectory for i in indices])
        try:
            async with gate:
                scores = await judge.score_group(group)
            if len(scores) != len(indices):
                raise ValueError(f"the judge returned {len(scores)} scores for {len(indices)} trajectories")
        except Exception as exc:
            if retry_alone and len(indices) > 1:
                await asyncio.gather(*(score([i], False) for i in indices))
                return
            for i in indices:
                results[i] = _line(inputs[i], error=f"{type(exc).__name__}: {exc}")
        else:
            for i, verdict in zip(indices, scores, strict=True):
                results[i] = _line(inputs[i], score=verdict)
        if on_scored is not None:
            on_scored(len(indices))

    await asyncio.gather(*(score(chunk, isinstance(judge, BatchJudge | Verifier)) for chunk in chunks))
    return [r for r in results if r is not None]


def _line(item: JudgeInput, *, score: JudgeScore | None = None, error: str | None = None) -> JudgedLine:
    return JudgedLine(line=item.line, id=item.id, group=item.group, score=score, error=error)


__all__ = ["BATCH", "JudgeInput", "JudgedLine", "TrajectoryFile", "judge_inputs", "read_trajectory_file"]
