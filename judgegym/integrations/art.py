"""OpenPipe ART and judgegym, both ways: `art.Trajectory` / `art.TrajectoryGroup` to judgegym's
`Trajectory` / `Group` and back, and `score_art_group` to score ART groups with any judgegym judge.

ART keeps the model's own turns as openai `Choice` objects (what its backend trains on) and
other messages as dicts; judgegym keeps plain OpenAI messages. What one side has no field for
travels in the other's free-form slot: judgegym's env id, split, seed, termination and info go
into ART ``metadata`` (``judgegym_*`` keys), ART's metadata, logs and policy versions into
``info["art"]``. ``art`` (package ``openpipe-art``) is imported only inside these functions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..judges.base import Judge, score_groups
from ..trajectory import Group, Message, Trajectory

if TYPE_CHECKING:
    import art
    from openai.types.chat.chat_completion import Choice

_PREFIX = "judgegym_"
_FIELDS = ("env_id", "split", "seed", "termination")
_ART_FIELDS = ("initial_policy_version", "final_policy_version")


def to_art_trajectory(trajectory: Trajectory) -> art.Trajectory:
    """The trajectory as an ``art.Trajectory``.

    Assistant messages become ``Choice`` objects (``finish_reason`` "tool_calls" or "stop";
    ``logprobs`` taken from a message's ``logprobs`` field when it has one), other messages
    OpenAI dicts; an empty tool list becomes ``tools=None``. ART has no unscored state: a
    reward of None becomes 0.0, marked ``metadata["judgegym_unscored"]``.

    Note: ART's backend trains on Choices that carry logprobs; judgegym's envs do not record
    them, so these trajectories suit ART's scoring, logging and SFT paths unless the messages
    bring their own ``logprobs``.
    """
    art_module = _import_art()
    info = dict(trajectory.model_dump(mode="json", include={"info"})["info"])
    kept: dict[str, Any] = info.pop("art", None) or {}
    metadata: dict[str, Any] = {**kept.get("metadata", {}), "scenario_id": trajectory.scenario_id}
    for key in _FIELDS:
        value = getattr(trajectory, key)
        if value is not None:
            metadata[_PREFIX + key] = value.value if key == "termination" else value
    if info:
        metadata[_PREFIX + "info"] = json.dumps(info, ensure_ascii=False)
    if trajectory.reward is None:
        metadata[_PREFIX + "unscored"] = True
    return art_module.Trajectory(
        messages_and_choices=[_to_art_message(message, index) for index, message in enumerate(trajectory.messages)],
        tools=list(trajectory.tools) or None,
        reward=0.0 if trajectory.reward is None else trajectory.reward,
        metrics=dict(trajectory.metrics),
        metadata=metadata,
        logs=list(kept.get("logs", [])),
        **{key: kept.get(key) for key in _ART_FIELDS},
    )


def to_art_group(group: Group) -> art.TrajectoryGroup:
    """The group as an ``art.TrajectoryGroup`` (``metadata["scenario_id"]`` set; see
    `to_art_trajectory` for each member and the logprobs note). Raises ValueError for a failed
    group: its rewards are not the judge's."""
    art_module = _import_art()
    if group.failed:
        raise ValueError(f"group {group.scenario_id!r} failed judging ({group.error}); leave it out of training")
    return art_module.TrajectoryGroup(
        [to_art_trajectory(trajectory) for trajectory in group.trajectories], metadata={"scenario_id": group.scenario_id}
    )


def from_art_trajectory(trajectory: art.Trajectory, *, scenario_id: str = "") -> Trajectory:
    """The ART trajectory as a judgegym `Trajectory`; inverse of `to_art_trajectory`.

    ``Choice`` turns become assistant messages (their ``logprobs``, and a ``finish_reason``
    other than the obvious one, kept as message fields); assistant dicts, which ART does not
    train on, get ``trainable: False``. Text content parts are joined. ``metadata
    ["scenario_id"]`` names the scenario, else `scenario_id`; other foreign metadata, the logs
    and policy versions go to ``info["art"]``.

    Raises ValueError for additional histories (a judge grades one conversation) and for
    messages judgegym cannot hold (non-text content parts, unknown roles), naming the message.
    """
    _import_art()
    if trajectory.additional_histories:
        raise ValueError("ART trajectories with additional_histories are not supported: a judgegym judge grades one conversation")
    metadata = dict(trajectory.metadata)
    scenario = metadata.pop("scenario_id", None)
    ours = {key: metadata.pop(_PREFIX + key) for key in (*_FIELDS, "info", "unscored") if _PREFIX + key in metadata}
    info: dict[str, Any] = json.loads(ours["info"]) if "info" in ours else {}
    kept = {"metadata": metadata, "logs": list(trajectory.logs), **{key: getattr(trajectory, key) for key in _ART_FIELDS}}
    kept = {key: value for key, value in kept.items() if value not in (None, {}, [])}
    if kept:
        info["art"] = kept
    return Trajectory(
        scenario_id=scenario_id if scenario is None else str(scenario),
        env_id=ours.get("env_id"),
        split=ours.get("split"),
        seed=ours.get("seed"),
        termination=ours.get("termination"),
        messages=[_from_art_message(item, index) for index, item in enumerate(trajectory.messages_and_choices)],
        tools=list(trajectory.tools or []),
        reward=None if ours.get("unscored") else trajectory.reward,
        metrics={key: float(value) for key, value in trajectory.metrics.items()},
        info=info,
    )


def from_art_group(group: art.TrajectoryGroup) -> Group:
    """The ART group as a judgegym `Group`. Its scenario id is ``metadata["scenario_id"]`` of
    the group, else of its first trajectory that has one, else "". Group-level metadata,
    metrics, logs and exceptions have no judgegym counterpart and are not carried."""
    candidates = [group.metadata, *(t.metadata for t in group.trajectories)]
    scenario_id = next((str(m["scenario_id"]) for m in candidates if m.get("scenario_id") is not None), "")
    return Group(scenario_id=scenario_id, trajectories=[from_art_trajectory(t, scenario_id=scenario_id) for t in group.trajectories])


async def score_art_group(judge: Judge, group: art.TrajectoryGroup, *, skip_failed: bool = False) -> art.TrajectoryGroup | None:
    """Score an ART group with a judgegym judge, pointwise or relative (e.g. `RulerJudge`).

    Returns a new ``TrajectoryGroup`` of copies of the trajectories (messages, Choices and
    logprobs untouched) with ``reward`` set to the judge's score, the judge's components and
    ``independent_reward`` (the reward before, as ART's RULER does) added to ``metrics``, and
    the judge's explanation appended to ``logs``; the group's metadata, metrics, logs and
    exceptions are kept. Fits ``art.gather_trajectory_groups(..., after_each=lambda g:
    score_art_group(judge, g))``.

    A judge failure raises. With ``skip_failed=True`` it is logged as a warning and None comes
    back, which ``gather_trajectory_groups`` drops.
    """
    [scored] = await score_groups(judge, [from_art_group(group)], skip_failed=skip_failed)
    if scored.failed:
        return None
    name = type(judge).__name__
    trajectories = []
    for original, result in zip(group.trajectories, scored.trajectories, strict=True):
        changed = {key: value for key, value in result.metrics.items() if original.metrics.get(key) != value}
        explanation = result.info.get("judge_explanation") or ""
        update = {"reward": result.reward, "metrics": {**original.metrics, **changed}, "logs": list(original.logs)}
        if explanation:
            update["logs"].append(f"{name}: {explanation}")
        trajectories.append(original.model_copy(update=update))
    return group.model_copy(update={"trajectories": trajectories})


# -- internals ----------------------------------------------------------------------------


def _import_art() -> Any:
    try:
        import art
    except ImportError as exc:
        raise ImportError(
            "judgegym.integrations.art needs OpenPipe ART: pip install openpipe-art (in its own environment: it pins litellm<=1.82)"
        ) from exc
    if not hasattr(art, "TrajectoryGroup"):
        raise ImportError(f"the installed `art` module ({art.__file__}) is not OpenPipe ART: pip install openpipe-art")
    return art


def _obvious_finish_reason(message: Mapping[str, Any]) -> str:
    return "tool_calls" if message.get("tool_calls") else "stop"


def _to_art_message(message: Message, index: int) -> dict[str, Any] | Choice:
    data = message.to_openai()
    if message.role != "assistant":
        return data
    if data.get("trainable") is False:
        del data["trainable"]
        return data
    from openai.types.chat.chat_completion import Choice

    finish_reason = data.pop("finish_reason", _obvious_finish_reason(data))
    logprobs = data.pop("logprobs", None)
    try:
        return Choice.model_validate({"index": 0, "finish_reason": finish_reason, "message": data, "logprobs": logprobs})
    except ValidationError as exc:
        raise ValueError(f"message {index} cannot be an openai Choice: {exc}") from None


def _from_art_message(item: Any, index: int) -> Message:
    from openai.types.chat.chat_completion import Choice

    if isinstance(item, Choice):
        data = item.message.model_dump(mode="json", exclude_none=True)
        if item.logprobs is not None:
            data["logprobs"] = item.logprobs.model_dump(mode="json")
        if item.finish_reason != _obvious_finish_reason(data):
            data["finish_reason"] = item.finish_reason
    else:
        data = dict(item)
        if isinstance(data.get("content"), list):
            data["content"] = _joined_text(data["content"], index)
        if data.get("role") == "assistant":
            data["trainable"] = False
    try:
        return Message.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"ART message {index} is not a judgegym message: {exc}") from None


def _joined_text(parts: list[Any], index: int) -> str:
    kinds = sorted({str(part.get("type")) if isinstance(part, Mapping) else type(part).__name__ for part in parts} - {"text"})
    if kinds:
        raise ValueError(f"ART message {index} has {', '.join(kinds)} content parts; judgegym messages hold text only")
    return "".join(part["text"] for part in parts)


__all__ = ["from_art_group", "from_art_trajectory", "score_art_group", "to_art_group", "to_art_trajectory"]
