"""Reading user-written JSONL files: one validated record a line, and errors that name the
file, the line and the field."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

Model = TypeVar("Model", bound=BaseModel)


def read_records(path: str | Path, model: type[Model], error: type[Exception]) -> Iterator[tuple[int, Model]]:
    """Yield (line number, record) for each non-blank line of `path`, validated as `model`.

    Raises `error` with a message like "FILE, line 3: field 'documents.0.text': Field
    required" for bad JSON, a non-object line or a failed validation, and
    `FileNotFoundError` when the file does not exist.
    """
    path = Path(path)
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{path}, line {lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(raw, dict):
                raise error(f"{path}, line {lineno}: expected a JSON object, got {type(raw).__name__}")
            try:
                yield lineno, model.model_validate(raw)
            except ValidationError as exc:
                first = exc.errors()[0]
                field = ".".join(str(part) for part in first["loc"]) or "<line>"
                raise error(f"{path}, line {lineno}: field '{field}': {first['msg']}") from None


class ScenarioError(ValueError):
    """A scenario whose fields contradict each other; `field` names the offending one
    (e.g. ``"key_facts.2.section"``)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"field '{field}': {message}")
        self.field = field
        self.message = message


class ScenarioFileError(ValueError):
    """A user scenario file has a bad line; the message names the file, line and field."""


def read_scenarios(path: str | Path, model: type[Model], check: Callable[[Model], None] | None = None) -> list[Model]:
    """Every scenario of a user JSONL file: each line validated as `model`, then by `check`
    (which raises `ScenarioError`); ``id`` fields must be unique and the file non-empty.

    Raises `ScenarioFileError` naming the file, the line and the field, and
    `FileNotFoundError` when the file does not exist.
    """
    path = Path(path)
    scenarios: list[Model] = []
    seen: dict[str, int] = {}
    for lineno, scenario in read_records(path, model, ScenarioFileError):
        if check is not None:
            try:
                check(scenario)
            except ScenarioError as exc:
                raise ScenarioFileError(f"{path}, line {lineno}: {exc}") from None
        scenario_id = str(getattr(scenario, "id", lineno))
        if scenario_id in seen:
            raise ScenarioFileError(f"{path}, line {lineno}: field 'id': '{scenario_id}' already used on line {seen[scenario_id]}")
        seen[scenario_id] = lineno
        scenarios.append(scenario)
    if not scenarios:
        raise ScenarioFileError(f"{path}: no scenarios (the file is empty)")
    return scenarios


__all__ = ["ScenarioError", "ScenarioFileError", "read_records", "read_scenarios"]
