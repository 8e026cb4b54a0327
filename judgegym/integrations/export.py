"""Trajectories and groups as training data: a Hugging Face `datasets.Dataset` with one row per
trajectory (read back with `trajectories_from_dataset` / `groups_from_dataset`), and OpenAI-chat
JSONL for SFT, with reward filtering and best-of-group selection (rejection sampling).

`datasets` is imported only by the functions that build or read a Dataset.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..evaluation.selection import group_units, select_trajectories
from ..trajectory import Group, Trajectory

if TYPE_CHECKING:
    import datasets

_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")
_CALL_KEYS = ("id", "type", "function")
_FUNCTION_KEYS = ("name", "arguments")
_INT64 = (-(2**63), 2**63 - 1)
_JSONL_METADATA = {"scenario_id", "env_id", "split", "seed", "termination", "reward", "metrics"}

COLUMNS: dict[str, str] = {
    "scenario_id": "string",
    "env_id": "string, null if unknown",
    "split": "string, null if unknown",
    "seed": "int64, null if unknown",
    "group_id": "int64: position of the trajectory's group among the exported records; null for a trajectory exported alone",
    "group_index": "int64: position inside that group; null for a trajectory exported alone",
    "group_failed": "bool: the group's judge failed, so its rewards are not the judge's; null for a trajectory exported alone",
    "group_error": "string: the group's judge error, if any",
    "messages": "list of OpenAI chat messages {role, content, tool_calls [{id, type, function {name, arguments}}], "
    "tool_call_id, name}; tool-call arguments are the JSON text the model wrote; unset fields are null",
    "tools": "string: JSON list of the OpenAI tool schemas the agent had",
    "termination": "string: final_answer, user_stop, max_turns, max_tool_calls or error; null if unknown",
    "reward": "float64: the judge's score in [0, 1] (a verifier's below 0 for proven harm); null if unscored",
    "metrics": "string: JSON object of the judge's components and the episode counters",
    "info": "string: JSON object; info['task'] holds the grading data a verifier re-judges with",
    "message_extras": "string: JSON object {message index: fields outside the columns above, e.g. reasoning_content}",
}
"""The Dataset schema, column by column. Free-form fields are JSON text so that every export
has the same Arrow types whatever the env, and datasets from different runs concatenate."""


def to_dataset(records: Iterable[Trajectory | Group]) -> datasets.Dataset:
    """One row per trajectory (see `COLUMNS`); a group's trajectories get its ``group_id``.

    The rows hold everything a `Trajectory` holds, so `trajectories_from_dataset` gives the
    trajectories back unchanged, and `groups_from_dataset` the groups (empty groups have no
    rows and are not exported). Raises ValueError for a seed outside int64.
    """
    ds = _import_datasets()
    columns: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    for group_id, (group, trajectories) in enumerate(group_units(records)):
        for index, trajectory in enumerate(trajectories):
            row = _row(trajectory)
            if group is not None:
                row.update(group_id=group_id, group_index=index, group_failed=group.failed, group_error=group.error)
            for name in COLUMNS:
                columns[name].append(row.get(name))
    return ds.Dataset.from_dict(columns, features=_features(ds))


def trajectories_from_dataset(rows: Iterable[Mapping[str, Any]]) -> list[Trajectory]:
    """The trajectories of a dataset written by `to_dataset` (or of any rows with its columns;
    free-form columns may also be plain lists / dicts instead of JSON text).

    Raises ValueError naming the first row that is not a valid trajectory."""
    return [trajectory for _, trajectory in _read_rows(rows)]


def groups_from_dataset(rows: Iterable[Mapping[str, Any]]) -> list[Group]:
    """The groups of a dataset written by `to_dataset`, in order of first appearance, each
    ordered by ``group_index`` (so shuffled rows are fine). A group's ``scenario_id`` is its
    first trajectory's. Rows without a ``group_id`` are grouped by (env_id, scenario_id)."""
    members: dict[Any, list[tuple[Mapping[str, Any], Trajectory]]] = {}
    for row, trajectory in _read_rows(rows):
        key = row.get("group_id")
        members.setdefault(("id", key) if key is not None else ("scenario", trajectory.env_id, trajectory.scenario_id), []).append(
            (row, trajectory)
        )
    groups = []
    for entries in members.values():
        entries.sort(key=lambda entry: entry[0].get("group_index") or 0)
        first = entries[0][0]
        groups.append(
            Group(
                scenario_id=entries[0][1].scenario_id,
                trajectories=[trajectory for _, trajectory in entries],
                failed=bool(first.get("group_failed")),
                error=first.get("group_error"),
            )
        )
    return groups


def write_chat_jsonl(
    path: str | Path,
    records: Iterable[Trajectory | Group],
    *,
    min_reward: float | None = None,
    best_of_group: bool = False,
    min_components: Mapping[str, float] | None = None,
    metadata: bool = True,
) -> int:
    """Write an SFT file: one ``{"messages": [...], "tools": [...], ...}`` line per trajectory
    kept by `select_trajectories` (same options). Returns the number of lines.

    Messages are OpenAI chat format exactly as `Message.to_openai` gives them (tool-call
    arguments as JSON text, tool results as ``tool`` messages); ``tools`` is left out when the
    agent had none. With ``metadata=True`` each line also carries scenario_id, env_id, split,
    seed, termination, reward and metrics (TRL's SFTTrainer drops unused columns);
    ``metadata=False`` writes only messages and tools, the strict OpenAI fine-tuning format.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    trajectories = select_trajectories(records, min_reward=min_reward, best_of_group=best_of_group, min_components=min_components)
    with path.open("w", encoding="utf-8") as handle:
        for trajectory in trajectories:
            line: dict[str, Any] = {"messages": [m.to_openai() for m in trajectory.messages]}
            if trajectory.tools:
                line["tools"] = trajectory.tools
            if metadata:
                line.update(trajectory.model_dump(mode="json", include=_JSONL_METADATA))
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    return len(trajectories)


# -- internals ----------------------------------------------------------------------------


def _import_datasets() -> Any:
    try:
        import datasets
    except ImportError as exc:
        raise ImportError("exporting to a Dataset needs the `datasets` package: pip install datasets (or judgegym[trl])") from exc
    return datasets


def _features(ds: Any) -> Any:
    string, int64 = ds.Value("string"), ds.Value("int64")
    function = {"name": string, "arguments": string}
    message = {
        "role": string,
        "content": string,
        "tool_calls": [{"id": string, "type": string, "function": function}],
        "tool_call_id": string,
        "name": string,
    }
    types = {"seed": int64, "group_id": int64, "group_index": int64, "group_failed": ds.Value("bool"), "reward": ds.Value("float64")}
    return ds.Features({name: [message] if name == "messages" else types.get(name, string) for name in COLUMNS})


def _row(trajectory: Trajectory) -> dict[str, Any]:
    data = trajectory.model_dump(mode="json")
    seed = data["seed"]
    if seed is not None and not _INT64[0] <= seed <= _INT64[1]:
        raise ValueError(f"trajectory {trajectory.scenario_id!r}: seed {seed} does not fit the int64 seed column")
    messages, extras = [], {}
    for index, message in enumerate(data["messages"]):
        core, extra = _split_message(message)
        messages.append(core)
        if extra:
            extras[str(index)] = extra
    return {
        "scenario_id": data["scenario_id"],
        "env_id": data["env_id"],
        "split": data["split"],
        "seed": seed,
        "messages": messages,
        "tools": _dumps(data["tools"]),
        "termination": data["termination"],
        "reward": trajectory.reward,
        "metrics": _dumps(data["metrics"]),
        "info": _dumps(data["info"]),
        "message_extras": _dumps(extras),
    }


def _split_message(message: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A dumped message as (the OpenAI columns, the remaining fields). A tool call with
    fields of its own goes whole into the remainder, which overrides the columns on reading."""
    extra = {key: value for key, value in message.items() if key not in _MESSAGE_KEYS}
    core = {key: message.get(key) for key in _MESSAGE_KEYS}
    calls = core["tool_calls"]
    if calls is not None:
        if any(set(call) - set(_CALL_KEYS) or set(call["function"]) - set(_FUNCTION_KEYS) for call in calls):
            extra["tool_calls"] = calls
        core["tool_calls"] = [
            {"id": call["id"], "type": call["type"], "function": {key: call["function"][key] for key in _FUNCTION_KEYS}} for call in calls
        ]
    return core, extra


def _read_rows(rows: Iterable[Mapping[str, Any]]) -> Iterator[tuple[Mapping[str, Any], Trajectory]]:
    for number, row in enumerate(rows):
        try:
            extras = _loads(row.get("message_extras"), {})
            messages = [{**dict(message), **extras.get(str(index), {})} for index, message in enumerate(row.get("messages") or [])]
            trajectory = Trajectory.model_validate(
                {
                    "scenario_id": row.get("scenario_id"),
                    "env_id": row.get("env_id"),
                    "split": row.get("split"),
                    "seed": row.get("seed"),
                    "messages": messages,
                    "tools": _loads(row.get("tools"), []),
                    "termination": row.get("termination"),
                    "reward": row.get("reward"),
                    "metrics": _loads(row.get("metrics"), {}),
                    "info": _loads(row.get("info"), {}),
                }
            )
        except (ValidationError, ValueError, TypeError, AttributeError) as exc:
            raise ValueError(f"row {number}: not a valid Trajectory: {exc}") from None
        yield row, trajectory


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _loads(value: Any, default: Any) -> Any:
    if value is None:
        return default
    return json.loads(value) if isinstance(value, str) else value


__all__ = [
    "COLUMNS",
    "groups_from_dataset",
    "select_trajectories",
    "to_dataset",
    "trajectories_from_dataset",
    "write_chat_jsonl",
]
