"""The Summarize-v0 verifier: bounds over generated documents, each component on a hand-made
document, the baselines' ordering, and hypothesis over arbitrary summaries."""

from __future__ import annotations

import asyncio
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import examples

from judgegym import Trajectory
from judgegym.envs.summarize import SummarizeEnv, SummaryScenario, SummaryVerifier
from judgegym.envs.summarize.baselines import BASELINES
from judgegym.judges.facts import extract_entities
from judgegym.judges.grader_talk import GRADER_TALK_SCORE

VERIFIER = SummaryVerifier()


@pytest.fixture(scope="module")
def env():
    return SummarizeEnv(split="test")


def answer(env, seed, summary_for, **options):
    """Reset to `seed`, reply with summary_for(task) at once; return (reward, end info)."""
    _, info = env.reset(seed=seed, options=options or None)
    *_, reward, terminated, truncated, end = env.step(summary_for(info["task"]))
    assert terminated and not truncated
    return reward, end


def shift_numbers(text: str) -> str:
    return re.sub(r"\d+", lambda m: str(int(m.group()) + 7), text)


def test_reference_summaries_score_at_least_0_9(env):
    rewards = [answer(env, seed, lambda t: t["reference_summary"])[0] for seed in range(200)]
    assert min(rewards) >= 0.9, sorted(rewards)[:5]


def _value(task, description):
    return next(f["value"] for f in task["key_facts"] if f["description"].startswith(description))


def _paraphrase(task):
    """A fluent summary in other words than the document's: long sentences packing several
    facts into clauses, as a model would write it."""
    v = lambda description: _value(task, description)  # noqa: E731
    actions = [f for f in task["key_facts"] if f["description"].startswith(("Owner", "Deadline"))]
    kind = task["kind"]
    if kind == "operations_review":
        return (
            f"In the quarter the company earned {v('Revenue')} in revenue at an operating margin of {v('Operating margin')}, "
            f"delivered {v('On-time')} of parcels on time across {v('Orders')} orders, handled {v('Support')} support tickets "
            f"with a CSAT of {v('Customer satisfaction')}, and ended with {v('Headcount')} employees. The board approved "
            f"{v('Capital')} to build a new distribution centre in {v('Location')}, opening on {v('Opening')} under {v('Lead of')}. "
            f"{actions[0]['value']} must renegotiate the carrier contract by {actions[1]['value']}."
        )
    if kind == "incident_report":
        return (
            f"On {v('Date')}, an outage caused by a fault in {v('Component')} lasted {v('Duration')}; it was detected after "
            f"{v('Time to detect')} and affected {v('Customers')} customers, with {v('Requests')} failed requests. "
            f"{v('Incident commander')} led the response as incident commander, and {v('Service credits')} in credits will be paid. "
            f"Follow-ups: {actions[0]['statement']} {actions[2]['statement']}"
        )
    if kind == "meeting_minutes":
        return (
            f"The board approved a budget of {v('Budget')} and chose {v('Vendor')} as vendor, with launch set for {v('Launch')}. "
            f"It approved {v('New roles')} new roles and a price rise of {v('Price')}. {actions[0]['value']} owns "
            f"{actions[0]['description'][9:]}, due {actions[1]['value']}; {actions[2]['value']} owns {actions[2]['description'][9:]}, "
            f"due {actions[3]['value']}. Next meeting: {v('Date of the next')}."
        )
    return (
        f"The release reaches general availability on {v('General')}, priced at {v('List price')} per seat per month with "
        f"{v('Storage')} of storage per workspace. Targets: latency of {v('Latency')}, uptime of {v('Uptime')} and "
        f"{v('Concurrent')} concurrent users. {v('Product owner')} is product owner and {v('Engineering lead')} leads engineering, "
        f"on a budget of {v('Development')}; the beta includes {v('Beta')} customers."
    )


@pytest.mark.parametrize("kind", ["operations_review", "incident_report", "meeting_minutes", "product_spec"])
def test_fluent_paraphrases_packing_facts_into_clauses_score_one(env, kind):
    for seed in range(10):
        reward, end = answer(env, seed, _paraphrase, kind=kind)
        assert reward == 1.0, end["judge_score"].explanation


def test_swapping_two_figures_in_a_paraphrase_is_caught(env):
    for seed in range(10):
        _, info = env.reset(seed=seed, options={"kind": "operations_review"})
        revenue, capital = _value(info["task"], "Revenue"), _value(info["task"], "Capital")
        swapped = _paraphrase(info["task"]).replace(revenue, "<r>").replace(capital, revenue).replace("<r>", capital)
        *_, reward, _, _, end = env.step(swapped)
        assert end["components"]["contradictions"] >= 1 and reward <= 0.5, end["judge_score"].explanation


def test_shifting_every_number_scores_far_below_the_reference(env):
    for seed in range(60):
        right, _ = answer(env, seed, lambda t: t["reference_summary"])
        wrong, end = answer(env, seed, lambda t: shift_numbers(t["reference_summary"]))
        assert wrong <= right - 0.7 and end["components"]["unsupported"] >= 3, end["judge_score"].explanation


def test_empty_and_over_limit_summaries_are_penalised(env):
    _, info = env.reset(seed=9)
    task = info["task"]
    reference = task["reference_summary"]
    padding = " ".join(["Further detail follows"] * task["word_limit"])
    over = " ".join((reference + " " + padding).split()[: int(task["word_limit"] * 1.2)])
    *_, reward, _, _, end = env.step(over)
    assert end["components"]["length"] == pytest.approx(0.6) and reward == pytest.approx(0.6)
    env.reset(seed=9)
    *_, reward, _, _, end = env.step(reference + " " + padding)
    assert reward == 0.0 and end["components"]["length"] == 0.0
    trajectory = end["trajectory"]
    trajectory.messages.pop()  # no final answer (as after truncation)
    assert VERIFIER.verify(trajectory).score == 0.0 and VERIFIER.verify(trajectory).explanation == "no summary"


def test_dumping_every_figure_of_the_document_does_not_pay(env):
    for seed in range(10):
        reward, end = answer(env, seed, lambda t: " ".join(e.split(":", 1)[1] for e in t["document_entities"] if e.startswith("num:")))
        assert reward <= 0.05 and end["components"]["focus"] < 0.1, end["judge_score"].explanation


def test_baselines_are_ordered_oracle_lead_unhelpful(env):
    async def play(agent, seed):
        observation, info = env.reset(seed=seed)
        while True:
            observation, reward, terminated, truncated, _ = env.step(await agent.act(observation, info))
            if terminated or truncated:
                return reward

    means = {name: sum(asyncio.run(play(cls(), seed)) for seed in range(24)) / 24 for name, cls in BASELINES.items()}
    assert means["oracle"] == 1.0 and means["unhelpful"] == 0.0
    assert 0.15 <= means["lead"] <= 0.7, means


# -- components on a hand-made document --------------------------------------------------------------

DOC = SummaryScenario.model_validate(
    {
        "id": "hand-made",
        "title": "Depot review",
        "word_limit": 60,
        "sections": [
            {
                "title": "Results",
                "text": "Revenue was $4.2 million, up from $3.9 million. Operating costs were $3.1 million. The margin was 12.5%.",
            },
            {
                "title": "Decisions",
                "text": "The depot will be in Leeds. Priya Raman will lead it; Daniel Okafor is the sponsor. It opens on 2026-03-02.",
            },
        ],
        "key_facts": [
            {
                "description": "Revenue",
                "value": "$4.2 million",
                "aliases": ["$4.2M"],
                "subject": ["revenue"],
                "distractors": ["$3.9 million"],
            },
            {"description": "Operating costs", "value": "$3.1 million", "subject": ["cost"]},
            {"description": "Margin", "value": "12.5%", "subject": ["margin"]},
            {
                "description": "Depot lead",
                "value": "Priya Raman",
                "aliases": ["Raman"],
                "subject": ["lead"],
                "distractors": ["Daniel Okafor"],
            },
            {"description": "Opening date", "value": "2026-03-02", "subject": ["open"]},
        ],
        "people": ["Priya Raman", "Daniel Okafor"],
    }
)
GOOD = (
    "Revenue was $4.2 million and operating costs $3.1 million; the margin was 12.5%. "
    "Priya Raman will lead the Leeds depot, which opens on 2026-03-02."
)


def score(summary: str, *, seen: str = ""):
    messages = [{"role": "user", "content": "Summarize the document."}]
    if seen:
        messages.append({"role": "tool", "tool_call_id": "r", "name": "read_section", "content": seen})
    messages.append({"role": "assistant", "content": summary})
    return VERIFIER.verify(Trajectory(scenario_id=DOC.id, messages=messages, info={"task": DOC.task()}))


def test_a_faithful_summary_scores_one():
    result = score(GOOD)
    assert result.score == 1.0 and result.components["recall"] == 1.0, result.explanation


def test_swapped_figures_are_contradictions():
    swapped = score("Revenue was $3.1 million and operating costs $4.2 million; the margin was 12.5%.")
    assert swapped.components["contradictions"] == 2 and swapped.components["recall"] == pytest.approx(0.2)
    assert "contradicts k1, k2" in swapped.explanation
    both_in_one_clause = score("The margin of 12.5% came on revenue of $4.2 million.")
    assert both_in_one_clause.components["contradictions"] == 0
    other_kind = score("Revenue of $4.2 million came at a margin, with costs of $3.1 million by 2026-03-02, when the depot opens.")
    assert other_kind.components["contradictions"] == 0  # a date beside "open" is fine; figures only clash with their own kind
    date_by_a_percentage = score("Revenue was $4.2 million. The margin was set on 2026-03-02.")
    assert date_by_a_percentage.components["contradictions"] == 0  # the margin is a number: a date is not taken for it


def test_a_distractor_given_for_a_fact_is_a_contradiction():
    confused = score("Revenue was $3.9 million. The margin was 12.5%.")
    assert confused.components["contradictions"] == 1 and confused.score == pytest.approx(0.2 * 0.5)
    for context in (
        "Revenue was $4.2 million, up from $3.9 million.",
        "Revenue was $4.2 million. Before that, revenue had been $3.9 million.",
    ):
        assert score(context + " The margin was 12.5%.").components["contradictions"] == 0
    wrong_person = score("Daniel Okafor will lead the depot.")
    assert wrong_person.components["contradictions"] == 1 and wrong_person.components["recall"] == 0
    assert score("Daniel Okafor is the sponsor of the depot.").components["contradictions"] == 0


def test_invented_figures_and_people_are_unsupported():
    invented = score(GOOD + " Tomasz Novak approved a further $2.5 million.")
    assert invented.components["unsupported"] == 2 and invented.components["grounding"] == 0.25
    assert "num:2.5" in invented.explanation and "Tomasz Novak" in invented.explanation
    mixed_up = score(GOOD + " Priya Okafor signed it off.")
    assert mixed_up.components["unsupported"] == 1
    assert score(GOOD + " Ms Raman thanked the team. When Okafor agreed, Raman's plan went ahead.").components["unsupported"] == 0
    seen = score(GOOD + " The document has 2 sections.", seen="[s1] Results (2 sections)")
    assert seen.components["unsupported"] == 0  # a figure from the tool output is not invented


def test_aliases_and_unit_words_count():
    assert score(GOOD.replace("$4.2 million", "$4.2M")).components["recall"] == 1.0
    assert score(GOOD.replace("Priya Raman will lead", "Raman will lead")).components["recall"] == 1.0
    assert score(GOOD.replace("2026-03-02", "March 2, 2026")).components["recall"] == pytest.approx(0.8)


def test_coverage_counts_what_the_agent_read():
    task = DOC.task()
    half = DOC.sections[0]
    result = score(GOOD, seen=f"[s1] {half.title}\n\n{half.text}")
    assert result.components["coverage"] == pytest.approx(half.words / sum(s["words"] for s in task["sections"]))
    assert result.score == 1.0  # coverage is logged, not scored


def test_regrading_a_stored_trajectory_gives_the_same_score(env):
    reward, end = answer(env, 3, lambda t: t["reference_summary"][:200])
    stored = Trajectory.from_json(end["trajectory"].to_json())
    assert VERIFIER.verify(stored).score == reward


def test_missing_task_and_bad_settings_are_clear_errors():
    with pytest.raises(ValueError, match="no info\\['task'\\]"):
        VERIFIER.verify(Trajectory(scenario_id="x"))
    with pytest.raises(ValueError, match="zero_length_at > 1"):
        SummaryVerifier(zero_length_at=1.0)


GENERATED_TASK = SummarizeEnv(split="test").reset(seed=2)[1]["task"]


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.one_of(
        st.text(max_size=400),
        st.lists(
            st.sampled_from([*GOOD.split(), "$3.9", "million", "Okafor", "revenue", ",", ";", "(", "\n", "2026-03-02", "Tomasz"]),
            max_size=80,
        ).map(" ".join),
    ),
    task=st.sampled_from([DOC.task(), GENERATED_TASK]),
)
def test_any_summary_scores_in_range_without_raising(text, task):
    trajectory = Trajectory(scenario_id="fuzz", messages=[{"role": "assistant", "content": text}], info={"task": task})
    result = VERIFIER.verify(trajectory)
    assert 0.0 <= result.score <= 1.0 or result.score == GRADER_TALK_SCORE
    assert all(value == value for value in result.components.values())  # no NaN
    if not extract_entities(text) and not text.strip():
        assert result.score == 0.0


def _people_doc(contract_owner: str) -> SummaryScenario:
    return SummaryScenario.model_validate(
        {
            "id": "owners",
            "title": "Network review",
            "word_limit": 60,
            "sections": [
                {
                    "title": "Decisions",
                    "text": f"Dana Whitcombe will lead the new site. {contract_owner} owns the carrier contract renegotiation.",
                }
            ],
            "key_facts": [
                {"description": "New site lead", "value": "Dana Whitcombe", "subject": ["site"]},
                {"description": "Carrier contract owner", "value": contract_owner, "subject": ["contract"]},
            ],
            "people": sorted({"Dana Whitcombe", contract_owner}),
        }
    )


def _score_on(doc: SummaryScenario, summary: str):
    messages = [{"role": "user", "content": "Summarize the document."}, {"role": "assistant", "content": summary}]
    return VERIFIER.verify(Trajectory(scenario_id=doc.id, messages=messages, info={"task": doc.task()}))


def test_people_swapped_between_roles_are_contradictions_but_one_person_may_own_two_things():
    doc = _people_doc("Raj Patel")
    assert _score_on(doc, "Dana Whitcombe will lead the new site and Raj Patel owns the carrier contract.").score == 1.0
    swapped = _score_on(doc, "Raj Patel will lead the new site and Dana Whitcombe owns the carrier contract.")
    assert swapped.components["contradictions"] == 2 and swapped.components["recall"] == 0.0, swapped.explanation
    same = _people_doc("Dana Whitcombe")
    assert _score_on(same, "Dana Whitcombe will lead the new site.").components["contradictions"] == 0


MINUTES = (
    "[s1] Present\n\nPriya Raman chaired the meeting. Tomasz Novak took the minutes.\n\n"
    "[s2] Actions\n\nAmara Mensah will renew the insurance policy by 2026-04-01. "
    "Lucas Ferreira will brief the regional leads by 2026-03-15."
)
PEOPLE = ["Priya Raman", "Tomasz Novak", "Amara Mensah", "Lucas Ferreira"]


@pytest.mark.parametrize(
    ("summary", "swapped"),
    [
        ("Priya Raman chaired; Tomasz Novak took the minutes. Amara Mensah renews the insurance, Lucas Ferreira briefs the leads.", []),
        ("Chaired by Raman. Mensah will renew the insurance by 2026-04-01.", []),  # surnames alone
        ("Tomasz Novak chaired the meeting. Priya Raman took the minutes.", ["Tomasz Novak", "Priya Raman"]),
        ("Lucas Ferreira will renew the insurance policy. Amara Mensah will brief the regional leads.", ["Lucas Ferreira", "Amara Mensah"]),
        ("Amara Mensah and Lucas Ferreira share the insurance and the briefing.", []),  # two people in a clause: not judged
        ("Priya Raman was thanked for her work.", []),  # no other person's marker
    ],
)
def test_role_swaps_find_people_given_anothers_role_or_action(summary, swapped):
    from judgegym.envs.summarize.verifier import role_swaps

    assert role_swaps(summary, MINUTES, PEOPLE) == swapped


def test_a_role_swap_costs_consistency_like_a_contradiction():
    messages = [
        {"role": "user", "content": "Summarize the minutes."},
        {"role": "tool", "tool_call_id": "r", "name": "read_section", "content": MINUTES},
    ]
    task = {"key_facts": [{"id": "k1", "description": "Renewal deadline", "value": "2026-04-01", "subject": ["renew"]}], "word_limit": 80}
    task["names"] = PEOPLE

    def verify(summary: str):
        trajectory = Trajectory(scenario_id="m", messages=[*messages, {"role": "assistant", "content": summary}], info={"task": task})
        return VERIFIER.verify(trajectory)

    faithful = verify("Priya Raman chaired and Tomasz Novak took the minutes. Amara Mensah will renew the insurance by 2026-04-01.")
    swapped = verify("Tomasz Novak chaired and Priya Raman took the minutes. Amara Mensah will renew the insurance by 2026-04-01.")
    assert faithful.score == 1.0 and faithful.components["role_swaps"] == 0
    assert swapped.components["role_swaps"] == 2 and swapped.score == pytest.approx(0.25)
    assert "gives another person's role to Tomasz Novak, Priya Raman" in swapped.explanation
