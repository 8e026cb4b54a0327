"""Peak memory of the demo's training steps, by setting and by phase: SFT on the teacher's
longest episodes with and without activation checkpointing, and GRPO steps (rollouts, then
the update) as `judgegym demo` runs them.

Each setting runs in a process of its own, whose peak resident memory is read from the kernel
(``wait4``) and whose wall time is measured around its training; inside it a thread samples
resident memory every 0.2 s, so each phase's peak says which phase sets the process's. SFT
takes the longest of the teacher's verified train episodes (the longest one sets SFT's peak);
GRPO plays as the demo does (`tools_demo.demo_grpo_config`, with ``--oversample``) from an SFT
adapter, the one a demo run wrote::

    python -m judgegym.benchmarks.train_memory --env CustomerSupport-v0 --adapter runs/demo-support-24/sft/last
    python -m judgegym.benchmarks.train_memory --env RagSupport-v0 --grpo-steps 0
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

MAX_TURNS = {"RagSupport-v0": 4, "CustomerSupport-v0": 10}
"""The demo's turns per episode on each env (what `judgegym demo` passes)."""


def _resident_gb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024**2
    return 0.0


class PhasePeaks:
    """The largest resident memory seen in each phase, sampled by a daemon thread."""

    def __init__(self) -> None:
        self.phase = "load"
        self.peaks: dict[str, float] = {}
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while True:
            self.note()
            time.sleep(0.2)

    def note(self) -> None:
        self.peaks[self.phase] = max(self.peaks.get(self.phase, 0.0), _resident_gb())

    def wrap(self, obj: Any, method: str, phase: str) -> None:
        """Count the time inside ``obj.method`` as `phase`."""
        inner = getattr(obj, method)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            outer, self.phase = self.phase, phase
            try:
                return inner(*args, **kwargs)
            finally:
                self.note()
                self.phase = outer

        setattr(obj, method, wrapped)


def _demo_config(settings: dict[str, Any], output_dir: str) -> Any:
    from ..trainers.tools_demo import ToolsDemoConfig

    return ToolsDemoConfig(
        output_dir=output_dir,
        env_id=settings["env"],
        max_turns=MAX_TURNS.get(settings["env"], 4),
        oversample=settings["oversample"],
        grpo_steps=max(1, settings["grpo_steps"]),
        eval_episodes=1,
        seed=settings["seed"],
    )


def child(settings: dict[str, Any]) -> dict[str, Any]:
    """One setting, in this process: train, and report the phases' peaks and the wall time."""
    from ..trainers import GRPOTrainer, SFTTrainer
    from ..trainers.tools_demo import demo_grpo_config, demo_sft_config

    peaks = PhasePeaks()
    with tempfile.TemporaryDirectory() as folder:
        config = _demo_config(settings, folder)
        if settings["mode"] == "sft":
            sft = replace(
                demo_sft_config(config, Path(settings["data"]), Path(folder) / "sft"),
                gradient_checkpointing=settings["checkpointing"],
                epochs=1,
                max_steps=settings["sft_steps"],
                eval_episodes=0,
            )
            trainer: Any = SFTTrainer(sft)
            peaks.phase = "update"
        else:
            adapter = Path(settings["adapter"]) if settings["adapter"] else None
            grpo = replace(
                demo_grpo_config(config, settings["judge"], adapter or Path(), Path(folder) / "grpo"),
                init_adapter=str(adapter) if adapter else None,
                eval_steps=10**6,
                save_steps=0,
            )
            trainer = GRPOTrainer(grpo)
            peaks.wrap(trainer, "rollout", "rollouts")
            peaks.wrap(trainer, "_update", "update")
            peaks.phase = "other"
        started = time.perf_counter()
        try:
            trainer.train()
        finally:
            if hasattr(trainer, "close"):
                trainer.close()
        wall = time.perf_counter() - started
    return {"train_s": round(wall, 1), "phase_peaks_gb": {k: round(v, 2) for k, v in peaks.peaks.items()}}


def run(settings: dict[str, Any]) -> dict[str, Any]:
    """`child` in a fresh process: its report plus the kernel's peak RSS of the whole process."""
    command = [sys.executable, "-m", "judgegym.benchmarks.train_memory", "--child", json.dumps(settings)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(process.pid, 0)
    stdout = process.stdout.read() if process.stdout else ""
    stderr = process.stderr.read() if process.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"the {settings['mode']} setting failed:\n{stderr[-3000:]}")
    return {**json.loads(stdout.strip().splitlines()[-1]), "peak_rss_gb": round(usage.ru_maxrss / 1024**2, 2)}


def longest_teacher_episodes(env_id: str, count: int, folder: Path, seed: int) -> Path:
    """The `count` longest of 24 verified teacher episodes on the train split, as SFT data."""
    from ..trainers.tools_demo import sft_data
    from ..trajectory import read_jsonl, write_jsonl

    config = replace(_demo_config({"env": env_id, "oversample": 0, "grpo_steps": 1, "seed": seed}, str(folder)), sft_episodes=24)
    played = folder / "played.jsonl"
    sft_data(played, config)
    verified = [t for t in read_jsonl(played) if (t.reward or 0.0) >= config.min_reward]
    verified.sort(key=lambda t: -len(json.dumps([m.model_dump(mode="json") for m in t.messages])))
    path = folder / "longest.jsonl"
    write_jsonl(path, verified[:count])
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="CustomerSupport-v0", choices=sorted(MAX_TURNS))
    parser.add_argument("--adapter", type=Path, help="the SFT adapter GRPO starts from (a demo run's sft/last)")
    parser.add_argument("--sft-steps", type=int, default=3, help="SFT steps per setting (2 episodes a step; default 3)")
    parser.add_argument("--grpo-steps", type=int, default=2, help="GRPO steps (0: no GRPO setting; default 2)")
    parser.add_argument("--oversample", type=int, default=2, help="GRPO: scenarios played a step beyond the 2 trained on")
    parser.add_argument("--judge", default=None, help="GRPO's training reward (default: the demo's for the env)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return

    from ..trainers.tools_demo import DEMO_ENVS

    base = {"env": args.env, "oversample": args.oversample, "grpo_steps": args.grpo_steps, "seed": args.seed}
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        data = longest_teacher_episodes(args.env, 2 * args.sft_steps, Path(folder), args.seed)
        for checkpointing in (False, True):
            settings = {**base, "mode": "sft", "data": str(data), "checkpointing": checkpointing, "sft_steps": args.sft_steps}
            row = {"setting": f"SFT, checkpointing {'on' if checkpointing else 'off'}", **run(settings)}
            print(f"{row['setting']}: peak {row['peak_rss_gb']} GB, {row['train_s']} s, phases {row['phase_peaks_gb']}", flush=True)
            rows.append(row)
    if args.grpo_steps:
        judge = args.judge or DEMO_ENVS[args.env].reward
        settings = {**base, "mode": "grpo", "adapter": str(args.adapter) if args.adapter else None, "judge": judge}
        row = {"setting": f"GRPO, {args.grpo_steps} steps", **run(settings)}
        print(f"{row['setting']}: peak {row['peak_rss_gb']} GB, {row['train_s']} s, phases {row['phase_peaks_gb']}", flush=True)
        rows.append(row)
    result = {
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k not in ("json", "child")},
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
        "rows": rows,
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
