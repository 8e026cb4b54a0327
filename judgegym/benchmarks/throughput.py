"""Env throughput: medians and p99 of `reset` and of `step`.

Run with ``judgegym bench``. RagSupport-v0 (default: one world of 2,000 products, over
10,000 documents) times reset -> search -> read -> answer, and beside it the same searches
through rank-bm25, the BM25 library many RAG environments use, in the same run when it is
installed. Any other env is timed under one of its scripted baselines (`bench_steps`): the
agent's own time is excluded, the simulated user's (rule-based by default) is included.
"""

from __future__ import annotations

import re
import time
from typing import Any

import gymnasium as gym
import numpy as np

from ..formats.chat import tool_call_turn


def _stats(samples: list[float]) -> dict[str, float]:
    ms = np.asarray(samples) * 1e3
    return {"median_ms": float(np.median(ms)), "p99_ms": float(np.percentile(ms, 99)), "n": len(samples)}


def bench_env(n_products: int = 2000, episodes: int = 1000, split: str = "test") -> dict[str, Any]:
    """Time `episodes` rounds of reset -> search -> read -> answer on one cached world."""
    env = gym.make("RagSupport-v0", split=split, n_products=n_products, n_worlds=1)
    start = time.perf_counter()
    env.reset(seed=0)
    cold = time.perf_counter() - start
    timings: dict[str, list[float]] = {"reset": [], "step_search": [], "step_read": [], "step_answer": []}
    questions: list[str] = []
    for seed in range(episodes):
        t0 = time.perf_counter()
        observation, _ = env.reset(seed=seed)
        t1 = time.perf_counter()
        question = observation[1]["content"]
        questions.append(question)
        observation, *_ = env.step(tool_call_turn("search", {"query": question, "k": 5}))
        t2 = time.perf_counter()
        ids = re.findall(r"^\[([^\]\s]+)\]", observation[-1]["content"], re.MULTILINE)
        env.step(tool_call_turn("read", {"doc_id": ids[0] if ids else "missing"}))
        t3 = time.perf_counter()
        env.step("I could not find this; I can escalate it to a human support agent.")
        t4 = time.perf_counter()
        for key, value in zip(timings, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            timings[key].append(value)
    kb = env.unwrapped._kb
    result: dict[str, Any] = {"documents": len(kb), "cold_reset_s": cold, "episodes": episodes}
    result.update({key: _stats(values) for key, values in timings.items()})
    peer = _rank_bm25_search(kb.documents, questions)
    if peer is not None:
        result["peer_rank_bm25_search"] = peer
        result["search_speedup_vs_rank_bm25"] = peer["median_ms"] / result["step_search"]["median_ms"]
    env.close()
    return result


def bench_steps(env_id: str, agent_spec: str = "oracle", episodes: int = 300, **env_kwargs: Any) -> dict[str, Any]:
    """Time `reset` and every `step` of `episodes` episodes played by a scripted baseline.

    Reports ``reset`` (a fresh seed each time), ``step`` (all steps but the last) and
    ``step_final`` (the last step, which runs the verifier), as medians and p99 in ms."""
    import asyncio

    from ..agents import make_agent

    agent = make_agent(agent_spec, env_id)
    env = gym.make(env_id, **{"split": "test", **env_kwargs})
    timings: dict[str, list[float]] = {"reset": [], "step": [], "step_final": []}
    for seed in range(episodes):
        t0 = time.perf_counter()
        observation, info = env.reset(seed=seed)
        timings["reset"].append(time.perf_counter() - t0)
        while True:
            action = asyncio.run(agent.act(observation, info))
            t0 = time.perf_counter()
            observation, _, terminated, truncated, _ = env.step(action)
            elapsed = time.perf_counter() - t0
            if terminated or truncated:
                timings["step_final"].append(elapsed)
                break
            timings["step"].append(elapsed)
    env.close()
    return {"env_id": env_id, "agent": agent_spec, "episodes": episodes, **{k: _stats(v) for k, v in timings.items() if v}}


def _rank_bm25_search(documents: list[Any], questions: list[str]) -> dict[str, float] | None:
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        return None
    tokenize = re.compile(r"\w+").findall
    index = BM25Okapi([tokenize(f"{d.title}\n{d.text}".lower()) for d in documents])
    samples = []
    for question in questions[:200]:
        t0 = time.perf_counter()
        scores = index.get_scores(tokenize(question.lower()))
        np.argpartition(-scores, 4)[:5]
        samples.append(time.perf_counter() - t0)
    return _stats(samples)
