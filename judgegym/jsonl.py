"""Reading user-written JSONL files: one validated record a line, and errors that name the
file, the line and the field."""

from __future__ import annotations

import json
from collections.abc import Iterator
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
