"""Score an OpenPipe ART trajectory group with a judgegym judge.

    python examples/art_score_group.py [JUDGE]    (default: verifier; or e.g. ruler:openai/gpt-4o-mini)

Needs openpipe-art (scripts/test_art.sh builds an environment with it). Three scripted agents
play one RagSupport scenario; `to_art_group` turns their episodes into an ``art.TrajectoryGroup``
(assistant turns as openai ``Choice`` objects, as ART records them), and `score_art_group`
scores that group with a judgegym judge and writes rewards, metrics and the judge's
explanation back onto the ART trajectories.
"""

from __future__ import annotations

import asyncio
import sys

import gymnasium as gym

import judgegym  # noqa: F401  (registers the envs)
from judgegym import Group
from judgegym.agents import make_agent
from judgegym.evaluation import play_episode
from judgegym.integrations.art import score_art_group, to_art_group
from judgegym.judges import make_judge

AGENTS = ["oracle", "search-quote", "unhelpful"]


async def main(judge_spec: str) -> None:
    env = gym.make("RagSupport-v0", split="test", n_products=20, n_worlds=2)
    episodes = [await play_episode(env, make_agent(name), seed=0) for name in AGENTS]
    env.close()

    art_group = to_art_group(Group(scenario_id=episodes[0].scenario_id, trajectories=episodes))
    judge = make_judge(judge_spec, env_id="RagSupport-v0")
    scored = await score_art_group(judge, art_group)
    assert scored is not None  # None only with skip_failed=True

    print(f"scenario {scored.metadata['scenario_id']}, judged by {type(judge).__name__}")
    for agent, trajectory in zip(AGENTS, scored.trajectories, strict=True):
        turns = sum(not isinstance(m, dict) for m in trajectory.messages_and_choices)
        print(f"{agent:>12}: reward {trajectory.reward:.2f} ({turns} Choice turns) | {trajectory.logs[-1]}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "verifier"))
