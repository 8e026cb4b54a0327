"""Judge prompt size: RULER's deduplicated group prompt against sending every trajectory
whole, on labelled groups generated from RagSupport-v0 (groups of 4 and 8).

Run: ``python -m judgegym.benchmarks.judge_tokens`` (counts with the embedded SmolLM2
tokenizer when the ``local`` extra is installed, else with a whitespace/punctuation proxy).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ..evaluation.judge_bench import generate_groups
from ..judges.ruler import build_prompt
from ..trajectory import Group

_PROXY = re.compile(r"\w+|[^\w\s]")


def proxy_tokens(text: str) -> int:
    """A tokenizer-free estimate: words and punctuation marks."""
    return len(_PROXY.findall(text))


def smollm2_counter() -> Callable[[str], int]:
    """Token counts with the embedded SmolLM2-135M-Instruct tokenizer."""
    from ..models import load_local_tokenizer

    tokenizer = load_local_tokenizer("smollm2-135m-instruct")
    return lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])


def prompt_tokens(group: Group, count: Callable[[str], int], dedup: bool) -> int:
    """Tokens of the judge prompt (system + user) for one group."""
    return sum(count(m["content"]) for m in build_prompt(group.trajectories, dedup=dedup))


def measure(
    n_groups: int = 50, sizes: tuple[int, ...] = (4, 8), count: Callable[[str], int] = proxy_tokens, seed: int = 0
) -> dict[str, Any]:
    """Median tokens per group with and without dedup, and the median per-group ratio."""
    result: dict[str, Any] = {}
    for size in sizes:
        groups = generate_groups(n_groups, group_size=size, seed=seed)
        dedup = np.array([prompt_tokens(g, count, True) for g in groups])
        full = np.array([prompt_tokens(g, count, False) for g in groups])
        result[f"G={size}"] = {
            "groups": len(groups),
            "median_tokens_dedup": float(np.median(dedup)),
            "median_tokens_full": float(np.median(full)),
            "median_ratio": float(np.median(dedup / full)),
            "total_ratio": float(dedup.sum() / full.sum()),
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--proxy", action="store_true", help="count words/punctuation instead of loading the tokenizer")
    args = parser.parse_args()
    count = proxy_tokens if args.proxy else smollm2_counter()
    print(json.dumps(measure(args.groups, count=count), indent=2))


if __name__ == "__main__":
    main()
