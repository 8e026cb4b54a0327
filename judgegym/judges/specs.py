"""Judges named by spec strings, as the command line takes them.

- ``verifier``: the env's own deterministic verifier (with no env id: each trajectory's
  env's, `EachEnvVerifier`);
- ``grounding``: `GroundingJudge` (offline, MiniLM embeddings, no gold answer);
- ``learned``: `LearnedJudge` (offline, no gold answer, no LLM: learned from the verifiers);
- ``retrieval``: `RetrievalVerifier` (RagSupport-v0 and other search-and-read tasks), a dense process reward for training
  beside the verifier (the share of the supporting articles the agent read);
- ``auto``: the env's verifier where the trajectories carry gold data, else ``learned``
  (`Fallback`; each score says which judge it came from);
- ``ruler:MODEL``: `RulerJudge` over any litellm model, e.g. ``ruler:openai/gpt-4o-mini``,
  ``ruler:hosted_vllm/Qwen/Qwen3-32B`` (with ``api_base``), ``ruler:local/smollm2-135m-instruct``;
- ``rubric:MODEL``: `RubricJudge`, a pointwise LLM judge with a natural-language rubric.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import gymnasium as gym

from ..trajectory import Trajectory
from .base import Judge, JudgeScore, Verifier

JUDGE_SPECS = (
    "verifier",
    "grounding",
    "learned",
    "retrieval",
    "auto",
    "ruler:MODEL",
    "rubric:MODEL",
    "MODULE:NAME or FILE.py:NAME (your Judge)",
    "W*SPEC+W*SPEC (weighted sum)",
)


def make_judge(spec: str, *, env_id: str | None = None, **options: Any) -> Judge:
    """Build the judge named by `spec`; `options` go to the judge's constructor (e.g.
    ``api_base``, ``rubric``). Besides the built-in specs, ``pkg.module:NAME`` or
    ``path/to/file.py:NAME`` names a judge of your own (a `Judge`, or a class or function
    returning one). Raises ValueError naming the known specs otherwise."""
    if "+" in spec:
        return _weighted_sum(spec, env_id=env_id, **options)
    kind, _, model = spec.strip().partition(":")
    if kind == "verifier":
        return env_verifier(env_id) if env_id is not None else EachEnvVerifier()
    if kind == "grounding":
        from .grounding import GroundingJudge

        return GroundingJudge(**options)
    if kind == "learned":
        from .learned import LearnedJudge, load_heads

        return LearnedJudge(load_heads(options["weights"])) if "weights" in options else LearnedJudge()
    if kind == "retrieval":
        from .retrieval import RetrievalVerifier

        return RetrievalVerifier()
    if kind == "auto":
        from .combine import Fallback
        from .learned import LearnedJudge

        verifier = make_judge("verifier", env_id=env_id)
        if not isinstance(verifier, Verifier):
            raise ValueError(f"{env_id}'s default judge is not a verifier; use 'learned' or 'verifier' directly")
        return Fallback(verifier, make_judge("learned", **options))
    if kind in ("ruler", "rubric"):
        if not model:
            raise ValueError(f"the {kind!r} judge needs a model: '{kind}:MODEL', e.g. '{kind}:openai/gpt-4o-mini'")
        if kind == "ruler":
            from .ruler import RulerJudge

            return RulerJudge(model, **options)
        from .rubric import RubricJudge

        return RubricJudge(model, **options)
    if model and kind not in _BUILT_IN:
        return _imported_judge(spec, **options)
    raise ValueError(f"unknown judge {spec!r}; known judges: {', '.join(JUDGE_SPECS)}")


def env_verifier(env_id: str) -> Judge:
    """The default judge (its verifier) of the judgegym env `env_id`."""
    env_class = gym.envs.registration.load_env_creator(gym.spec(env_id.removeprefix("judgegym:")).entry_point)
    return env_class.default_judge()


FAMILY_ENVS = {"rag": "RagSupport-v0", "support": "CustomerSupport-v0", "summarize": "Summarize-v0"}
"""The env whose verifier grades each task family (`judgegym.judges.learned.family_of`)."""


class EachEnvVerifier(Verifier):
    """The verifier of each trajectory's own env: its ``env_id``, else the judgegym env whose
    tools it was offered (search/read: RagSupport-v0, customer and order tools:
    CustomerSupport-v0, document sections: Summarize-v0). For files that mix envs; a
    trajectory of none of them raises ValueError.

    A trajectory that lacks what its env records at the end (CustomerSupport-v0's database)
    but names its ``env_id`` and ``seed`` is replayed in the env first (`replay`), so stored
    conversations can be graded; one the env answers differently raises ValueError."""

    def verify(self, trajectory: Trajectory) -> JudgeScore:
        from .learned import family_of

        env_id = trajectory.env_id or FAMILY_ENVS.get(family_of(trajectory))
        if env_id is None:
            raise ValueError("no env verifier applies: the trajectory has no env_id and none of the envs' tools")
        judge = _verifiers(env_id.removeprefix("judgegym:"))
        if not isinstance(judge, Verifier):
            raise ValueError(f"{env_id}'s default judge is not a verifier")
        try:
            return judge.verify(trajectory)
        except ValueError:
            if trajectory.seed is None or not trajectory.info.get("task") or "database" in trajectory.info:
                raise
        env_class = gym.envs.registration.load_env_creator(gym.spec(env_id.removeprefix("judgegym:")).entry_point)
        replayed = env_class.replay(trajectory.model_copy(update={"env_id": env_id}))
        return judge.verify(replayed.model_copy(update={"info": {**replayed.info, "task": trajectory.info["task"]}}))


@cache
def _verifiers(env_id: str) -> Judge:
    return env_verifier(env_id)


_BUILT_IN = frozenset(spec.partition(":")[0] for spec in JUDGE_SPECS[:7])


def _imported_judge(spec: str, **options: Any) -> Judge:
    """``pkg.module:NAME`` or ``path/to/file.py:NAME``: a `Judge` instance there, or a class or
    function that returns one (called with `options`)."""
    import importlib
    import importlib.util
    from pathlib import Path

    module_name, _, name = spec.strip().rpartition(":")
    if module_name.endswith(".py"):
        path = Path(module_name).resolve()
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if not path.is_file() or module_spec is None or module_spec.loader is None:
            raise ValueError(f"judge {spec!r}: no Python file {module_name}")
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ValueError(
                f"unknown judge {spec!r}: not one of {', '.join(JUDGE_SPECS)}, nor an importable MODULE:NAME ({exc})"
            ) from None
    target = getattr(module, name, None)
    if target is None:
        raise ValueError(f"judge {spec!r}: {module_name} has no {name!r}")
    judge = target if isinstance(target, Judge) else target(**options) if callable(target) else target
    if not isinstance(judge, Judge):
        raise ValueError(f"judge {spec!r} gave a {type(judge).__name__}, not a judgegym Judge")
    return judge


def _weighted_sum(spec: str, *, env_id: str | None, **options: Any) -> Judge:
    """``"0.7*verifier+0.3*grounding"`` (a missing weight is 1) -> `WeightedSum`, each part
    named by its spec (``verifier/recall`` ...)."""
    from .combine import WeightedSum

    parts: dict[str, tuple[Judge, float]] = {}
    for term in spec.split("+"):
        weight_text, star, part = term.strip().rpartition("*") if "*" in term else ("1", "*", term.strip())
        try:
            weight = float(weight_text)
        except ValueError:
            raise ValueError(f"bad weight {weight_text!r} in judge spec {spec!r}; write WEIGHT*SPEC, e.g. 0.7*verifier") from None
        if not part or not star or part in parts:
            raise ValueError(f"bad or repeated part {term.strip()!r} in judge spec {spec!r}")
        parts[part] = (make_judge(part, env_id=env_id, **options), weight)
    return WeightedSum(parts)
