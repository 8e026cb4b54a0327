"""Export RagSupport episodes as a Hugging Face dataset and as an SFT file, then re-judge them.

    python examples/export_dataset.py [OUT_DIR]     (default: runs/export)

Plays three scripted agents on four scenarios (one group per scenario), saves every episode
as Parquet, writes the best episode of each group as OpenAI-chat JSONL for SFT, and reloads the
Parquet file to check that the verifier gives every episode the reward it had.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import datasets
import gymnasium as gym

import judgegym  # noqa: F401  (registers the envs)
from judgegym import Group
from judgegym.agents import make_agent
from judgegym.envs.rag import RagVerifier
from judgegym.evaluation import play_episode
from judgegym.integrations.export import groups_from_dataset, to_dataset, write_chat_jsonl

AGENTS = ["oracle", "search-quote", "unhelpful"]


async def play_groups(seeds: range) -> list[Group]:
    """One group per seed: each scripted agent plays that scenario once."""
    env = gym.make("RagSupport-v0", split="test", n_products=20, n_worlds=2)
    groups = []
    for seed in seeds:
        trajectories = [await play_episode(env, make_agent(name), seed) for name in AGENTS]
        groups.append(Group(scenario_id=trajectories[0].scenario_id, trajectories=trajectories))
    env.close()
    return groups


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    groups = asyncio.run(play_groups(range(4)))

    dataset = to_dataset(groups)
    dataset.to_parquet(out / "episodes.parquet")
    print(f"{len(dataset)} episodes -> {out / 'episodes.parquet'}; columns: {', '.join(dataset.column_names)}")

    kept = write_chat_jsonl(out / "sft.jsonl", groups, best_of_group=True, min_reward=0.8)
    print(f"{kept} of {len(dataset)} episodes kept for SFT (best of each group, reward >= 0.8) -> {out / 'sft.jsonl'}")

    reloaded = groups_from_dataset(datasets.Dataset.from_parquet(str(out / "episodes.parquet")))
    verifier = RagVerifier()
    for group in reloaded:
        for trajectory in group:
            score = verifier.verify(trajectory)
            if score.score != trajectory.reward:
                raise SystemExit(f"{trajectory.scenario_id}: re-judged {score.score}, exported {trajectory.reward}")
    print(f"re-judged {sum(len(g) for g in reloaded)} reloaded episodes: every reward matches")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("runs/export"))
