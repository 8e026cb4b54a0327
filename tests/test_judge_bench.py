"""The judge-agreement benchmark: metrics on hand-made scores, fake judges with known
biases, the group generator, the external format and the `judge-bench` command."""

from __future__ import annotations

import asyncio
import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

from judgegym import cli
from judgegym.cli import app
from judgegym.envs.rag import RagVerifier
from judgegym.evaluation.judge_bench import (
    PERTURBATIONS,
    GroupFileError,
    GroupScores,
    generate_groups,
    kendall_tau,
    length_bias_by_tier,
    load_labelled_groups,
    pairwise_credit,
    run_judge_bench,
    save_labelled_groups,
    summarize_agreement,
    top1_credit,
)
from judgegym.judges.base import Judge, JudgeScore
from judgegym.trajectory import Group

runner = CliRunner()
SMALL = {"n_products": 20, "n_worlds": 2}
REQUIRED = {"pairwise_accuracy", "kendall_tau", "top1_accuracy", "position_bias", "length_bias", "n_groups", "n_pairs"}


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    monkeypatch.setattr(cli, "console", Console(width=200))


@pytest.fixture(scope="module")
def groups() -> list[Group]:
    return generate_groups(6, env_kwargs=SMALL)


def scored(tiers, scores, lengths=None, shuffled=None, group_id="g"):
    return GroupScores(
        group_id=group_id,
        tiers=list(tiers),
        labels=[f"tier {t}" for t in tiers],
        lengths=list(lengths or [10] * len(tiers)),
        scores=list(scores),
        shuffled_scores=shuffled,
    )


# -- metrics on hand-made scores -------------------------------------------------------------

TIERS = [6, 6, 5, 4, 3, 2, 1, 0]


def test_perfect_judge_agrees_completely():
    report = summarize_agreement([scored(TIERS, [t / 6 for t in TIERS]), scored([2, 0, 1], [0.9, 0.1, 0.5])])
    assert report.pairwise_accuracy == 1.0 and report.kendall_tau == pytest.approx(1.0) and report.top1_accuracy == 1.0
    assert report.n_groups == 2 and report.n_pairs == 27 + 3  # 28 pairs minus the one of equal tiers


def test_reversed_judge_disagrees_completely():
    report = summarize_agreement([scored(TIERS, [1 - t / 6 for t in TIERS])])
    assert report.pairwise_accuracy == 0.0 and report.kendall_tau == pytest.approx(-1.0) and report.top1_accuracy == 0.0


def test_constant_judge_is_a_coin_flip():
    report = summarize_agreement([scored(TIERS, [0.7] * 8)])
    assert report.pairwise_accuracy == 0.5 and report.kendall_tau == 0.0
    assert report.top1_accuracy == pytest.approx(2 / 8)  # the tie at the top shares the credit


def test_pair_rules():
    assert pairwise_credit([2, 1, 0], [0.9, 0.9, 0.1]) == (2.5, 3)  # a tie earns half
    assert pairwise_credit([1, 1, 0], [0.2, 0.9, 0.1]) == (2.0, 2)  # equal tiers are no pair
    assert kendall_tau([1, 1], [0.3, 0.4]) is None
    assert top1_credit([2, 1, 0], [0.5, 0.9, 0.9]) == 0.0


def test_length_bias_is_within_group_and_tier():
    # Longer responses of the same tier score higher in every group: positive bias; a judge
    # that ignores length inside a tier: zero, however lengths differ across groups.
    loving = [scored([1, 1, 0], [0.6, 0.8, 0.1], lengths=[10, 40, 5], group_id=str(g)) for g in range(4)]
    indifferent = [scored([1, 1, 0], [0.6 + g / 10] * 2 + [0.1], lengths=[10, 40 + g, 5]) for g in range(4)]
    assert length_bias_by_tier(loving) == {1: pytest.approx(1.0)}
    assert length_bias_by_tier(indifferent) == {1: 0.0}
    assert length_bias_by_tier(loving[:2]) == {}  # fewer points than MIN_LENGTH_POINTS


def test_failed_groups_are_counted_not_scored():
    failed = GroupScores(group_id="bad", tiers=[1, 0], labels=["a", "b"], lengths=[1, 1], error="RuntimeError: down")
    report = summarize_agreement([scored([1, 0], [0.9, 0.1]), failed])
    assert report.n_failed == 1 and report.n_groups == 1 and report.pairwise_accuracy == 1.0
    assert report.failures == {"bad": "RuntimeError: down"}
    empty = summarize_agreement([failed])
    assert empty.pairwise_accuracy is None and empty.n_groups == 0 and empty.n_pairs == 0


# -- fake judges with known behaviour ----------------------------------------------------------


class PositionJudge(Judge):
    """Prefers whatever comes first."""

    async def score_group(self, group):
        return [JudgeScore(score=1 - i / len(group)) for i in range(len(group))]


class LengthJudge(Judge):
    """Prefers long answers, whatever they say."""

    async def score_group(self, group):
        return [JudgeScore(score=min(1.0, len(t.final_answer.split()) / 150)) for t in group]


class FlakyJudge(Judge):
    """Fails on groups whose scenario seed is even; checks it never sees the labels."""

    async def score_group(self, group):
        assert all("tier" not in t.info and "perturbation" not in t.info for t in group)
        if int(group.scenario_id.rsplit("-", 1)[1]) % 2 == 0:
            raise RuntimeError("judge endpoint down")
        return [JudgeScore(score=0.5) for _ in group]


def bench(judge, groups):
    return asyncio.run(run_judge_bench(judge, groups, concurrency=3))


def test_position_dependent_judge_shows_position_bias(groups):
    assert bench(PositionJudge(), groups).position_bias > 0.1
    assert bench(RagVerifier(), groups).position_bias == 0.0


def test_length_loving_judge_shows_length_bias(groups):
    assert bench(LengthJudge(), groups).length_bias > 0.9  # verbose always beats faithful
    assert bench(RagVerifier(), groups).length_bias <= 0.0


def test_failing_judge_is_counted(groups):
    report = bench(FlakyJudge(), groups)
    failed = [g.scenario_id for g in groups if int(g.scenario_id.rsplit("-", 1)[1]) % 2 == 0]
    assert failed and report.n_failed == len(failed) and report.n_groups == len(groups) - len(failed)
    assert set(report.failures) == set(failed) and "endpoint down" in report.failures[failed[0]]
    assert report.pairwise_accuracy == 0.5  # the scored groups only, not zeros for the failed ones


# -- the generator -------------------------------------------------------------------------------


def test_generated_groups_hold_every_perturbation_with_its_tier(groups):
    verifier = RagVerifier()
    for group in groups:
        task = group.trajectories[0].info["task"]
        assert task["answerable"]
        assert sorted(t.info["perturbation"] for t in group) == sorted(PERTURBATIONS)
        by_name = {t.info["perturbation"]: t for t in group}
        for name, trajectory in by_name.items():
            assert trajectory.info["tier"] == PERTURBATIONS[name]
            assert trajectory.termination == "final_answer" and trajectory.reward is None
        assert not [m for m in by_name["ignores_context"].messages if m.role == "tool"]
        assert by_name["faithful"].final_answer == task["reference_answer"]
        assert verifier.verify(by_name["faithful"]).score >= 0.9
        assert len(by_name["verbose"].final_answer) > 2 * len(task["reference_answer"])
        assert "Note to the grader" in by_name["addresses_judge"].final_answer
    assert len({g.trajectories[0].info["perturbation"] for g in groups}) > 1  # the order is shuffled


def test_generation_is_deterministic_and_seeded():
    first = generate_groups(3, seed=5, group_size=4, env_kwargs=SMALL)
    again = generate_groups(3, seed=5, group_size=4, env_kwargs=SMALL)
    other = generate_groups(3, seed=6, group_size=4, env_kwargs=SMALL)
    assert [g.to_json() for g in first] == [g.to_json() for g in again]
    assert [g.to_json() for g in first] != [g.to_json() for g in other]
    for group in first:
        assert len(group) == 4 and len({t.info["tier"] for t in group}) >= 2


def test_generator_rejects_what_it_cannot_do():
    with pytest.raises(ValueError, match="only RagSupport-v0"):
        generate_groups(1, env_id="CartPole-v1")
    with pytest.raises(ValueError, match="group_size must be between 2 and 8"):
        generate_groups(1, group_size=9)


# -- the external format ------------------------------------------------------------------------


def test_saved_groups_load_back_and_rescore_the_same(groups, tmp_path):
    path = tmp_path / "groups.jsonl"
    assert save_labelled_groups(path, groups) == len(groups)
    loaded = load_labelled_groups(path)
    record = json.loads(path.read_text().splitlines()[0])
    assert record["messages"][0]["role"] == "system" and len(record["responses"]) == 8
    assert any(isinstance(r, list) for r in record["responses"])  # the ignores_context one never read
    verifier = RagVerifier()
    for before, after in zip(groups, loaded, strict=True):
        assert after.scenario_id == before.scenario_id
        for a, b in zip(before, after, strict=True):
            assert [m.to_openai() for m in a.messages] == [m.to_openai() for m in b.messages]
            assert (a.info["tier"], a.info["perturbation"]) == (b.info["tier"], b.info["perturbation"])
            assert verifier.verify(a).score == verifier.verify(b).score


def test_string_responses_are_final_answers(tmp_path):
    path = tmp_path / "mine.jsonl"
    line = {"id": "q1", "messages": [{"role": "user", "content": "Warranty?"}], "responses": ["24 months.", "No idea."]}
    path.write_text(json.dumps({**line, "tiers": [1, 0]}) + "\n")
    (group,) = load_labelled_groups(path)
    assert [t.final_answer for t in group] == ["24 months.", "No idea."]
    assert [t.info["perturbation"] for t in group] == ["tier 1", "tier 0"] and "task" not in group.trajectories[0].info


GOOD = {"id": "q", "messages": [{"role": "user", "content": "?"}], "responses": ["a", "b"], "tiers": [1, 0]}


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["{not json"], "line 1: not valid JSON"),
        ([json.dumps({k: v for k, v in GOOD.items() if k != "tiers"})], "line 1: field 'tiers': Field required"),
        ([json.dumps({**GOOD, "tiers": [1, 0, 2]})], "field 'tiers': 3 tiers for 2 responses"),
        ([json.dumps({**GOOD, "tiers": [1, 1]})], "field 'tiers': every response has the same tier"),
        ([json.dumps({**GOOD, "responses": ["a", 3]})], "field 'responses.1': expected the final answer"),
        ([json.dumps({**GOOD, "responses": ["a", [{"role": "robot"}]]})], "field 'responses.1.0.role'"),
        ([json.dumps({**GOOD, "labels": ["x"]})], "field 'labels': 1 labels for 2 responses"),
        ([json.dumps({**GOOD, "score": 1})], "field 'score': Extra inputs are not permitted"),
        ([json.dumps(GOOD), "", json.dumps(GOOD)], "line 3: field 'id': 'q' already used on line 1"),
        (["[1, 2]"], "line 1: expected a JSON object, got list"),
        ([""], "no groups (the file is empty)"),
    ],
)
def test_loader_errors_name_line_and_field(tmp_path, lines, message):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(GroupFileError, match="bad.jsonl") as error:
        load_labelled_groups(path)
    assert message in str(error.value)


# -- the command line ----------------------------------------------------------------------------


def test_cli_json_report_for_the_verifier():
    result = runner.invoke(app, ["judge-bench", "--generate", "6", "--judge", "verifier", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert REQUIRED <= set(report) and report["n_groups"] == 6 and report["n_failed"] == 0
    assert report["pairwise_accuracy"] >= 0.9 and report["top1_accuracy"] == 1.0  # measured 2026-11-29: 0.969, 1.0
    assert report["position_bias"] == 0.0


def test_cli_table_save_and_rerun(tmp_path):
    saved = tmp_path / "groups.jsonl"
    args = ["judge-bench", "--generate", "3", "--group-size", "4", "--seed", "2", "--save", str(saved)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "pairwise_accuracy" in result.output and "mean score per response kind" in result.output
    rerun = runner.invoke(app, ["judge-bench", "--groups", str(saved), "--json"])
    assert rerun.exit_code == 0, rerun.output
    assert json.loads(rerun.stdout)["n_groups"] == 3


def test_cli_counts_a_failing_judge(monkeypatch):
    monkeypatch.setattr("judgegym.judges.specs.make_judge", lambda spec, **_: FlakyJudge())
    result = runner.invoke(app, ["judge-bench", "--generate", "4", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["n_failed"] >= 1 and report["n_groups"] + report["n_failed"] == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "exactly one of --groups"),
        (["--generate", "2", "--groups", "x.jsonl"], "exactly one of --groups"),
        (["--groups", "nowhere.jsonl"], "does not exist"),
        (["--generate", "2", "--judge", "nonsense"], "unknown judge 'nonsense'"),
        (["--generate", "2", "--model", "openai/gpt-4o-mini"], "--model goes with an LLM judge"),
        (["--generate", "2", "--api-base", "http://localhost:8000/v1"], "--api-base goes with an LLM judge"),
        (["--generate", "2", "--env", "Nope-v0"], "unknown env 'Nope-v0'"),
        (["--generate", "2", "--schema", "off"], "goes with --judge ruler"),
        (["--generate", "2", "--judge", "ruler:openai/m", "--schema", "yes"], "--schema takes auto, json_schema"),
    ],
)
def test_cli_wrong_arguments(args, message):
    result = runner.invoke(app, ["judge-bench", *args])
    assert result.exit_code == 2 and message in result.output, result.output


def test_cli_verifier_needs_gold_data(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(GOOD) + "\n")
    result = runner.invoke(app, ["judge-bench", "--groups", str(path), "--judge", "verifier"])
    assert result.exit_code == 2 and "group 'q'" in result.output and "gold_facts" in result.output


@pytest.mark.parametrize(("mode", "sent"), [("json_schema", "json_schema"), ("json_object", "json_object"), ("off", None)])
def test_cli_ruler_schema_mode_reaches_the_request(mode, sent, monkeypatch, tmp_path):
    from openai_stub import StubServer

    stub = StubServer()
    stub.default = json.dumps({"scores": [{"id": "1", "explanation": "a", "score": 0.9}, {"id": "2", "explanation": "b", "score": 0.1}]})
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setattr("judgegym.judges.llm.DEFAULT_CACHE_DIR", tmp_path / "cache")
    try:
        args = ["judge-bench", "--generate", "2", "--group-size", "2", "--judge", "ruler", "--model", "openai/judge-model"]
        result = runner.invoke(app, [*args, "--api-base", stub.api_base, "--schema", mode, "--json"])
    finally:
        stub.close()
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n_groups"] == 2 and len(stub.requests) >= 2  # each group in two orders
    assert all(r.get("response_format", {}).get("type") == sent for r in stub.requests)


def test_cli_out_writes_the_report_and_its_calibration_plot(tmp_path):
    out = tmp_path / "bench" / "verifier.json"
    result = runner.invoke(app, ["judge-bench", "--generate", "4", "--judge", "verifier", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    tiers = [row["tier"] for row in report["by_tier"]]
    assert tiers == sorted(set(PERTURBATIONS.values()), reverse=True)
    for row in report["by_tier"] + report["by_label"]:
        assert row["ci_low"] <= row["mean_score"] <= row["ci_high"] and row["n"] >= 4
    faithful = next(row for row in report["by_tier"] if row["tier"] == 6)
    assert faithful["mean_score"] == 1.0  # the reference answer and its verbose variant
    png = out.with_suffix(".png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "calibration plot" in result.output
