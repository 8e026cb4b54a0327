"""Peak memory and wall time of a held-out eval of long conversations, by how many episodes
are played at once (a model agent batches their turns).

Each setting plays the same greedy eval (`judgegym eval`: the same env, agent and scenarios)
in its own process, whose peak resident memory is read from the kernel (``wait4``) and whose
wall time is measured around it. The episodes are compared: greedy, they differ only where a
batch's padding changes the float32 sums enough to flip a token.

The default plays what the support demo evaluates: CustomerSupport-v0, up to 10 turns, 16
episodes at once, with an SFT adapter (the base model does not call tools, so its episodes
stay short)::

    python -m judgegym.benchmarks.eval_memory --adapter runs/demo-support-24/sft/last --json eval-memory.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def play(args: argparse.Namespace, concurrency: int, out: Path) -> dict[str, Any]:
    """One eval in a child process playing `concurrency` episodes at once; its wall seconds and peak RSS."""
    spec = f"hf:{args.model}" + (f"+{args.adapter}" if args.adapter else "") + f"?max_tokens={args.max_new_tokens}"
    command = [
        sys.executable, "-m", "judgegym", "eval", "--env", args.env, "--split", "test", "--episodes", str(args.episodes),
        "--concurrency", str(concurrency), "--agent", spec, "--env-arg", f"max_turns={args.max_turns}", "--out", str(out),
    ]  # fmt: skip
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    stderr = child.stderr.read() if child.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"the eval with concurrency {concurrency} failed:\n{stderr[-2000:]}")
    episodes = [json.loads(line) for line in out.read_text().splitlines()]
    return {
        "concurrency": concurrency,
        "wall_s": round(wall, 1),
        "peak_rss_gb": round(usage.ru_maxrss / 1024**2, 2),
        "episodes": len(episodes),
        "mean_reward": round(sum(e.get("reward") or 0.0 for e in episodes) / max(1, len(episodes)), 3),
        "prompt_tokens": sum(e.get("metrics", {}).get("prompt_tokens", 0) for e in episodes),
        "messages": [[m.get("content") for m in e["messages"]] for e in episodes],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="CustomerSupport-v0")
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--adapter", type=Path, help="a LoRA adapter folder (e.g. the support demo's runs/demo-support-24/sft/last)")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--max-turns", type=int, default=10)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 8], help="episodes at once, one run each (default: 16 8)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for concurrency in args.concurrency:
            row = play(args, concurrency, Path(folder) / f"{concurrency}.jsonl")
            print(f"{concurrency} at once: {row['wall_s']} s, peak {row['peak_rss_gb']} GB, reward {row['mean_reward']}", flush=True)
            rows.append(row)
    differing = [sum(a != b for a, b in zip(row["messages"], rows[0]["messages"], strict=True)) for row in rows]
    print(f"episodes that differ from the first setting's: {differing}")
    result = {
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k != "json"},
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
        "rows": [{k: v for k, v in row.items() if k != "messages"} for row in rows],
        "episodes_differing_from_the_first": differing,
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
