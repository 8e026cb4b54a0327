"""What judging your own data costs: ``judgegym judge`` on 1,000 RagSupport-v0 trajectories.

Run: ``python -m judgegym.benchmarks.judge_cost [--groups 125] [--group-size 8] [--json FILE]``
(``--groups 500 --group-size 2``: the same 1,000 trajectories' worth over 500 scenarios, so
fewer articles recur).

It writes 1,000 real RagSupport-v0 episodes (125 test scenarios, 8 answers of known quality
each: judge-bench's generated groups) as OpenAI chat JSONL, the way a user exports their own
agent's trajectories, then runs the command a user would, ``judgegym judge FILE --judge
SPEC --out SCORES``, in a fresh process for each judge (learned, grounding, verifier), and
reports its wall time (imports and model loading included), the cost per trajectory and the
peak memory of that process. Every process starts with an empty embedding cache, as a
user's does.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..evaluation.judge_bench import generate_groups


def write_chat_records(path: Path, n_groups: int, seed: int, group_size: int = 8) -> int:
    """`n_groups` generated groups of `group_size` as chat records (``id``, ``group``,
    ``messages``, ``tools``, ``task``); returns how many lines were written."""
    groups = generate_groups(n_groups, seed=seed, group_size=group_size)
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for group in groups:
            for k, trajectory in enumerate(group.trajectories):
                record = {
                    "id": f"{group.scenario_id}-{k}",
                    "group": group.scenario_id,
                    "messages": [m.to_openai() for m in trajectory.messages],
                    "tools": trajectory.tools,
                    "task": trajectory.info.get("task"),
                }
                handle.write(json.dumps(record) + "\n")
                count += 1
    return count


def time_command(path: Path, judge: str, out: Path) -> dict[str, Any]:
    """Run ``judgegym judge`` in a fresh process: wall seconds, cost per trajectory, and the
    process's own peak RSS (from `os.wait4`)."""
    command = [sys.executable, "-m", "judgegym", "judge", str(path), "--judge", judge, "--env", "RagSupport-v0"]
    with tempfile.TemporaryFile("w+") as log:
        start = time.perf_counter()
        child = subprocess.Popen([*command, "--out", str(out), "--show", "0"], stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            log.seek(0)
            raise RuntimeError(f"{' '.join(command)} failed ({child.returncode}): {log.read()[-2000:]}")
    scored = sum(1 for line in out.read_text().splitlines() if "score" in json.loads(line))
    return {
        "wall_s": round(wall, 2),
        "scored": scored,
        "ms_per_trajectory": round(1e3 * wall / scored, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=125, help="Scenarios (8 trajectories each).")
    parser.add_argument("--group-size", type=int, default=8, help="Answers per scenario (2-8): fewer, more distinct contexts.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--judges", nargs="+", default=["learned", "grounding", "verifier"])
    parser.add_argument("--json", type=Path, default=None, help="Also write the figures here.")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trajectories.jsonl"
        start = time.perf_counter()
        n = write_chat_records(path, args.groups, args.seed, args.group_size)
        report: dict[str, Any] = {"trajectories": n, "file_mb": round(path.stat().st_size / 2**20, 1)}
        report["generate_s"] = round(time.perf_counter() - start, 1)
        report["judges"] = {}
        for judge in args.judges:
            figures = time_command(path, judge, Path(tmp) / f"{judge}.jsonl")
            report["judges"][judge] = figures
            print(f"{judge}: {figures}", flush=True)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
