"""The shared judges work on Summarize-v0 unchanged: GroundingJudge prefers a faithful summary
to a hallucinated one, and RULER builds a prompt for a Summarize group (loads MiniLM once)."""

from __future__ import annotations

import asyncio
import json
import re

import gymnasium as gym

import judgegym  # noqa: F401  (registers the envs)
from judgegym.envs.summarize import SummarizeEnv, SummaryScenario
from judgegym.envs.summarize.baselines import BASELINES
from judgegym.judges.grounding import GroundingJudge
from judgegym.judges.ruler import build_prompt
from judgegym.trajectory import Group, Trajectory

SCENARIOS = [
    SummaryScenario.model_validate(s)
    for s in (
        {
            "id": "depot",
            "title": "Depot review",
            "word_limit": 60,
            "sections": [
                {"title": "Results", "text": "Revenue for the quarter was $4.2 million. The operating margin was 12.5%."},
                {"title": "Decisions", "text": "The board chose Leeds for the new depot. Priya Raman will lead the project."},
            ],
            "key_facts": [
                {"description": "Revenue", "value": "$4.2 million", "subject": ["revenue"]},
                {"description": "Depot", "value": "Leeds", "subject": ["depot"]},
            ],
            "reference_summary": "Revenue for the quarter was $4.2 million and the operating margin was 12.5%. "
            "The board chose Leeds for the new depot, led by Priya Raman.",
            "people": ["Priya Raman"],
        },
        {
            "id": "outage",
            "title": "Checkout outage report",
            "word_limit": 60,
            "sections": [
                {"title": "Impact", "text": "The outage lasted 94 minutes. It affected 18,420 customers who could not pay."},
                {
                    "title": "Cause",
                    "text": "The root cause was an expired certificate on the payment gateway. Mei Takahashi led the response.",
                },
            ],
            "key_facts": [
                {"description": "Duration", "value": "94 minutes", "subject": ["lasted"]},
                {"description": "Customers affected", "value": "18,420", "subject": ["affected"]},
            ],
            "reference_summary": "The outage lasted 94 minutes and affected 18,420 customers who could not pay. "
            "It was caused by an expired certificate on the payment gateway; Mei Takahashi led the response.",
            "people": ["Mei Takahashi"],
        },
        {
            "id": "launch",
            "title": "Launch plan",
            "word_limit": 60,
            "sections": [
                {"title": "Release", "text": "General availability is planned for 2026-05-14. The beta will include 37 customers."},
                {"title": "Pricing", "text": "The list price will be $29 per seat per month."},
            ],
            "key_facts": [
                {"description": "Launch date", "value": "2026-05-14", "subject": ["availability"]},
                {"description": "Price", "value": "$29", "subject": ["price"]},
            ],
            "reference_summary": "General availability is planned for 2026-05-14, with 37 customers in the beta. "
            "The list price will be $29 per seat per month.",
        },
    )
]


def _read_all_and_answer(env, scenario_id: str, summary_for) -> Trajectory:
    _, info = env.reset(options={"scenario_id": scenario_id})
    calls = [
        {"id": f"r{i}", "type": "function", "function": {"name": "read_section", "arguments": json.dumps({"section_id": s["id"]})}}
        for i, s in enumerate(info["task"]["sections"])
    ]
    env.step({"role": "assistant", "content": None, "tool_calls": calls})
    *_, terminated, _, end = env.step(summary_for(info["task"]))
    assert terminated
    return end["trajectory"]


def _hallucinate(summary: str) -> str:
    shifted = re.sub(r"\d+", lambda m: str(int(m.group()) + 7), summary)
    return shifted + " Tomasz Novak approved a further $1.5 million for the next phase."


def test_grounding_judge_scores_faithful_summaries_above_hallucinated_ones():
    env = SummarizeEnv(scenarios=SCENARIOS)
    faithful = [_read_all_and_answer(env, s.id, lambda t: t["reference_summary"]) for s in SCENARIOS]
    invented = [_read_all_and_answer(env, s.id, lambda t: _hallucinate(t["reference_summary"])) for s in SCENARIOS]
    scores = GroundingJudge().score_many(faithful + invented)
    for good, bad in zip(scores[: len(SCENARIOS)], scores[len(SCENARIOS) :], strict=True):
        # The judge's coverage term compares the summary with the one-line request (title and
        # word limit), so a faithful summary's absolute score varies; its support does not.
        assert good.components["support"] >= 0.9 and good.components["unsupported"] == 0, good
        assert bad.components["unsupported"] >= 2 and bad.score <= good.score / 2 and good.score >= 0.5, (good, bad)


def test_ruler_builds_a_prompt_for_a_summarize_group():
    env = gym.make("Summarize-v0", split="test")

    async def play(agent) -> Trajectory:
        observation, info = env.reset(seed=4)
        while True:
            observation, _, terminated, truncated, end = env.step(await agent.act(observation, info))
            if terminated or truncated:
                return end["trajectory"]

    group = Group(scenario_id="test-4", trajectories=[asyncio.run(play(BASELINES[name]())) for name in ("oracle", "lead", "unhelpful")])
    system, user = build_prompt(group.trajectories)
    assert system["role"] == "system" and "relative to the others" in system["content"]
    content = user["content"]
    assert "list_sections()" in content and "read_section(section_id: string, part?: integer)" in content
    assert [f'<trajectory id="{i}">' in content for i in (1, 2, 3)] == [True] * 3
    assert "Tool results that several trajectories received, shown once" in content  # oracle and lead read the same sections
    assert content.count("<context>") == 1 and "Summarize the " in content
