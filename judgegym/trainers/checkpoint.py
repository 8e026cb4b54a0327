"""Training checkpoints: written atomically (a temp folder beside the target, fsynced, then
renamed), found again by `latest_checkpoint`, restored with every RNG, and pruned.

Layout of ``checkpoints/step-N/``: ``adapter/`` (peft) or ``model.safetensors`` (full
weights), ``optimizer.pt``, ``scheduler.pt``, ``rng.pt`` and ``trainer_state.json`` (step,
data cursor, best eval so far, the config).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

log = logging.getLogger("judgegym.trainers")

STATE_FILE = "trainer_state.json"
_STEP_DIR = re.compile(r"^step-(\d+)$")
_TEMP_PREFIX = ".tmp-"


@dataclass
class TrainerState:
    """What a resumed run needs besides weights and optimizer: where it was."""

    step: int = 0
    """Optimizer steps done."""
    cursor: int = 0
    """Scenarios of the train split consumed so far (the data cursor)."""
    best_eval_reward: float | None = None
    """Highest held-out eval reward so far (None before the first eval)."""
    best_step: int | None = None
    """The step that reached it (its weights are in ``best/``)."""


@contextlib.contextmanager
def atomic_directory(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temp folder in `target`'s parent; when the block ends without error, fsync
    everything in it and rename it to `target` (replacing an existing one). A crash leaves
    either the old `target` or the new one, plus at worst a ``.tmp-*`` folder that
    `latest_checkpoint` ignores and `remove_temp_dirs` deletes."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f"{_TEMP_PREFIX}{target.name}-", dir=target.parent))
    try:
        yield temp
        _fsync_tree(temp)
        old = None
        if target.exists():  # os.replace cannot replace a non-empty folder: move it aside first
            old = target.parent / f"{_TEMP_PREFIX}old-{target.name}-{os.getpid()}"
            os.replace(target, old)
        os.replace(temp, target)
        _fsync_dir(target.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise


def remove_temp_dirs(folder: str | os.PathLike[str]) -> list[Path]:
    """Delete the ``.tmp-*`` folders an interrupted `atomic_directory` left in `folder`."""
    folder = Path(folder)
    removed = [p for p in folder.glob(f"{_TEMP_PREFIX}*") if p.is_dir()] if folder.is_dir() else []
    for path in removed:
        shutil.rmtree(path, ignore_errors=True)
    return removed


def checkpoint_dirs(folder: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """Complete checkpoints in `folder` (``step-N`` with a state file), oldest first."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = []
    for path in folder.iterdir():
        match = _STEP_DIR.match(path.name)
        if match and path.is_dir() and (path / STATE_FILE).is_file():
            found.append((int(match.group(1)), path))
    return sorted(found)


def latest_checkpoint(folder: str | os.PathLike[str]) -> Path | None:
    """The newest complete checkpoint in `folder`, or None."""
    found = checkpoint_dirs(folder)
    return found[-1][1] if found else None


def prune_checkpoints(folder: str | os.PathLike[str], keep_last: int | None) -> list[Path]:
    """Delete all but the newest `keep_last` checkpoints (None or 0 keeps all)."""
    if not keep_last:
        return []
    old = [path for _, path in checkpoint_dirs(folder)[:-keep_last]]
    for path in old:
        shutil.rmtree(path, ignore_errors=True)
    return old


def save_pretrained(model: Any, folder: str | os.PathLike[str]) -> None:
    """``model.save_pretrained(folder)`` without warnings that say nothing about the run: peft
    looking for a base-model config beside the embedded GGUF file (there is none; the
    vocabulary is unchanged) and transformers' deprecation of ``is_gradient_checkpointing``,
    which peft still reads (`peft_quietly`). An adapter never saves the embedding layers: LoRA
    on ``lm_head`` or ``embed_tokens`` trains its own low-rank matrices and leaves the base
    weights (and the vocabulary) as they were, so peft's "auto" copy of them would only make
    the adapter as big as the model."""
    from ..models import peft_quietly

    extra = {"save_embedding_layers": False} if hasattr(model, "peft_config") else {}
    with warnings.catch_warnings(), peft_quietly():
        warnings.filterwarnings("ignore", message="Could not find a config file in")
        model.save_pretrained(str(folder), **extra)


def save_weights(model: Any, folder: str | os.PathLike[str], tokenizer: Any = None) -> None:
    """A loadable copy of the weights in `folder`: the LoRA adapter of a peft model (load it
    with ``HFAgent(model, adapter=folder)``), else the full model (``HFAgent(folder)``); the
    tokenizer beside it when given."""
    save_pretrained(model, folder)
    if tokenizer is not None:
        tokenizer.save_pretrained(str(folder))


def save_checkpoint(
    folder: str | os.PathLike[str],
    *,
    model: Any,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    state: TrainerState,
    config: dict[str, Any],
) -> Path:
    """Write ``folder/step-{state.step}`` atomically and return it."""
    target = Path(folder) / f"step-{state.step}"
    with atomic_directory(target) as temp:
        if _is_peft(model):
            save_pretrained(model, temp / "adapter")
        else:
            from safetensors.torch import save_model

            save_model(model, str(temp / "model.safetensors"))  # handles tied weights
        torch.save(optimizer.state_dict(), temp / "optimizer.pt")
        torch.save(scheduler.state_dict(), temp / "scheduler.pt")
        torch.save(rng_state(), temp / "rng.pt")
        payload = {"state": asdict(state), "config": config}
        (temp / STATE_FILE).write_text(json.dumps(payload, indent=2, default=str), encoding="utf-8")
    return target


def load_checkpoint(
    path: str | os.PathLike[str], *, model: Any, optimizer: torch.optim.Optimizer, scheduler: Any
) -> tuple[TrainerState, dict]:
    """Restore weights, optimizer, scheduler and RNG states from checkpoint `path`; return
    the trainer state and the config the checkpoint was written with."""
    path = Path(path)
    if not (path / STATE_FILE).is_file():
        raise FileNotFoundError(f"{path} is not a complete checkpoint (no {STATE_FILE}); give a checkpoints/step-N folder")
    payload = json.loads((path / STATE_FILE).read_text(encoding="utf-8"))
    device = next(model.parameters()).device
    if (path / "adapter").is_dir():
        if not _is_peft(model):
            raise ValueError(f"{path} holds a LoRA adapter but the model has none: resume with use_lora=True")
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        weights = load_file(str(path / "adapter" / "adapter_model.safetensors"), device=str(device))
        result = set_peft_model_state_dict(model, weights)
        unexpected = list(getattr(result, "unexpected_keys", []) or [])
        if unexpected:
            raise ValueError(f"{path}: the adapter does not fit this model (unexpected weights {unexpected[:3]}); same LoRA config?")
    else:
        if _is_peft(model):
            raise ValueError(f"{path} holds full model weights but the model has a LoRA adapter: resume with use_lora=False")
        from safetensors.torch import load_model

        load_model(model, str(path / "model.safetensors"), device=str(device))
    optimizer.load_state_dict(torch.load(path / "optimizer.pt", map_location=device, weights_only=True))
    scheduler.load_state_dict(torch.load(path / "scheduler.pt", weights_only=True))
    set_rng_state(torch.load(path / "rng.pt", weights_only=False))  # our own file; numpy's state is not a tensor
    return TrainerState(**payload["state"]), payload.get("config", {})


def keep_best(state: TrainerState, step: int, metrics: dict[str, float], *, folder: Path, model: Any, tokenizer: Any) -> bool:
    """After a held-out eval at `step`: when its ``eval/reward`` beats the best so far, record
    it in `state` and write the weights (and ``eval.json``) atomically to `folder`. Returns
    whether it did."""
    reward = metrics["eval/reward"]
    if state.best_eval_reward is not None and reward <= state.best_eval_reward:
        return False
    state.best_eval_reward, state.best_step = reward, step
    with atomic_directory(folder) as temp:
        save_weights(model, temp, tokenizer)
        (temp / "eval.json").write_text(json.dumps({"step": step, **metrics}), encoding="utf-8")
    return True


def resume_checkpoint(output_dir: str | os.PathLike[str], resume: bool | str | os.PathLike[str]) -> Path | None:
    """Prepare a run's output folder and say which checkpoint the run continues from.

    Removes the ``.tmp-*`` folders an interrupted write left. With `resume` a path, that
    checkpoint; with ``True``, the newest in ``output_dir/checkpoints`` (None, with a warning,
    when there is none); with ``False``, None, refusing a folder that already holds a run.
    When the run starts fresh its metrics.jsonl is emptied.

    Raises:
        FileNotFoundError: `resume` names a folder that does not exist.
        FileExistsError: a fresh run in a folder holding another run's metrics or checkpoints.
    """
    output_dir = Path(output_dir)
    checkpoints, metrics = output_dir / "checkpoints", output_dir / "metrics.jsonl"
    output_dir.mkdir(parents=True, exist_ok=True)
    remove_temp_dirs(output_dir)
    remove_temp_dirs(checkpoints)
    checkpoint = None
    if isinstance(resume, str | os.PathLike) and resume:
        checkpoint = Path(resume)
        if not checkpoint.is_dir():
            raise FileNotFoundError(f"resume={str(resume)!r}: no such checkpoint folder")
    elif resume:
        checkpoint = latest_checkpoint(checkpoints)
        if checkpoint is None:
            log.warning("resume=True but %s holds no checkpoint: starting from scratch", checkpoints)
    elif metrics.exists() or latest_checkpoint(checkpoints) is not None:
        raise FileExistsError(
            f"{output_dir} already holds a run (metrics.jsonl or checkpoints); pass resume=True to continue it, "
            "or choose another output_dir"
        )
    if checkpoint is None:
        truncate_metrics(metrics, -1)
    return checkpoint


def resume_run(
    output_dir: Path,
    resume: bool | str | os.PathLike[str],
    *,
    model: Any,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    config: dict[str, Any],
    may_change: set[str],
) -> tuple[TrainerState, Path | None]:
    """A trainer's start: `resume_checkpoint`, then, when there is a checkpoint, its weights,
    optimizer, scheduler and RNG states (`load_checkpoint`), a warning naming the `config`
    fields (other than `may_change`) that differ from the checkpoint's, and the run's
    metrics.jsonl cut back to its step. Returns (the state to continue from, the checkpoint
    or None)."""
    checkpoint = resume_checkpoint(output_dir, resume)
    if checkpoint is None:
        return TrainerState(), None
    state, saved = load_checkpoint(checkpoint, model=model, optimizer=optimizer, scheduler=scheduler)
    changed = sorted(k for k, v in config.items() if k not in may_change and saved.get(k, v) != v)
    if changed:
        log.warning("resuming %s with a different config for %s", checkpoint, ", ".join(changed))
    truncate_metrics(Path(output_dir) / "metrics.jsonl", state.step)
    log.info("resumed from %s at step %d", checkpoint, state.step)
    return state, checkpoint


def rng_state() -> dict[str, Any]:
    """Every RNG a training step draws from: Python's, NumPy's, torch's (CPU and CUDA)."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Inverse of `rng_state`."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def truncate_metrics(path: str | os.PathLike[str], after_step: int) -> int:
    """Drop the lines of a metrics JSONL file whose step is beyond `after_step` (and a line a
    crash cut short), so a resumed run logs each step once. Rewritten atomically; returns the
    lines kept."""
    path = Path(path)
    if not path.exists():
        return 0
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a partial last line
        step = record.get("step") if isinstance(record, dict) else None
        if isinstance(step, int) and step <= after_step:
            kept.append(line)
    temp = path.with_name(f"{_TEMP_PREFIX}{path.name}")
    with temp.open("w", encoding="utf-8") as handle:
        handle.write("".join(f"{line}\n" for line in kept))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)
    return len(kept)


def _is_peft(model: Any) -> bool:
    return hasattr(model, "peft_config") and hasattr(model, "disable_adapter")


def _fsync_tree(folder: Path) -> None:
    for root, _, files in os.walk(folder):
        for name in files:
            with open(os.path.join(root, name), "rb") as handle:
                os.fsync(handle.fileno())
        _fsync_dir(Path(root))


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # some filesystems refuse to fsync a directory
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


__all__ = [
    "STATE_FILE",
    "TrainerState",
    "atomic_directory",
    "checkpoint_dirs",
    "latest_checkpoint",
    "load_checkpoint",
    "prune_checkpoints",
    "remove_temp_dirs",
    "rng_state",
    "save_checkpoint",
    "save_weights",
    "set_rng_state",
    "truncate_metrics",
]
