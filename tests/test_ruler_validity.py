"""The RULER reply-validity benchmark (judgegym.benchmarks.ruler_validity) against the scripted
OpenAI-compatible stub: per-format counting of first replies, corrections, failures and
transport errors, the reply format sent, the cache kept off, and the command line. No
llama.cpp here: the figures in docs/judge-bench.md come from a real llama_cpp.server."""

from __future__ import annotations

import asyncio
import json

import pytest
from openai_stub import StubServer

from judgegym.benchmarks import ruler_validity
from judgegym.benchmarks.ruler_validity import measure, table
from judgegym.evaluation.judge_bench import generate_groups

SMALL = {"n_products": 20, "n_worlds": 2}


@pytest.fixture(scope="module")
def groups():
    return generate_groups(2, group_size=4, env_kwargs=SMALL)


@pytest.fixture
def stub():
    server = StubServer()
    yield server
    server.close()


def perfect(group) -> str:
    """A valid reply that orders the group exactly as its tiers do."""
    tiers = [t.info["tier"] for t in group.trajectories]
    return json.dumps({"scores": [{"id": str(i + 1), "explanation": "x", "score": t / 6} for i, t in enumerate(tiers)]})


def test_each_format_counts_first_replies_corrections_failures_and_errors(stub, groups, tmp_path):
    first, second = groups
    stub.script = [
        perfect(first),  # off: valid at once
        "not json",  # off: invalid, then corrected
        perfect(second),
        '{"scores": []}',  # json_object: invalid twice, failed
        '{"scores": [{"id": "1", "score": 7}]}',
        perfect(second),  # json_object: valid at once
        {"status": 500, "content": "down"},  # json_schema: no reply at all
        perfect(second),  # json_schema: valid at once
    ]
    seen = []
    figures = asyncio.run(
        measure(
            groups,
            "openai/judge-model",
            on_group=lambda name, outcome: seen.append((name, outcome.group_id)),
            api_base=stub.api_base,
            api_key="test",
            retries=1,
            cache=True,  # forced off: every group is a real call
            cache_dir=tmp_path / "cache",
        )
    )
    assert not (tmp_path / "cache").exists() and len(stub.requests) == 8 and len(seen) == 6
    off, json_object, json_schema = figures["off"], figures["json_object"], figures["json_schema"]
    assert (off["first_reply_valid"], off["valid_after_retry"], off["failed"]) == (0.5, 1.0, 0)
    assert off["pairwise_accuracy"] == 1.0 and off["scored_groups"] == 2 and off["invalid_replies"] == 1
    assert (json_object["first_reply_valid"], json_object["valid_after_retry"], json_object["failed"]) == (0.5, 0.5, 1)
    assert json_object["scored_groups"] == 1 and json_object["invalid_replies"] == 2
    assert (json_schema["answered"], json_schema["errors"], json_schema["failed"], json_schema["first_reply_valid"]) == (1, 1, 1, 1.0)
    assert [o["first_valid"] for o in json_schema["outcomes"]] == [None, True]
    assert all(f["median_seconds"] >= 0 for f in figures.values())
    sent = [r.get("response_format", {}).get("type") for r in stub.requests]
    assert sent == [None, None, None, "json_object", "json_object", "json_object", "json_schema", "json_schema"]
    assert stub.requests[4]["messages"][-1]["role"] == "user"  # the corrective retry
    text = table(figures)
    assert "json_object" in text and "1 (1 errors)" in text and "1.000 (" in text


def test_the_command_writes_the_figures(stub, groups, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ruler_validity, "generate_groups", lambda n, **kwargs: groups[:n])
    stub.default = perfect(groups[0])
    out = tmp_path / "validity.json"
    argv = ["--api-base", stub.api_base, "--model", "openai/m", "--groups", "1", "--formats", "off", "json_schema", "--json", str(out)]
    result = ruler_validity.main(argv)
    saved = json.loads(out.read_text())
    assert saved["formats"].keys() == {"off", "json_schema"} and saved == json.loads(json.dumps(result))
    assert saved["formats"]["json_schema"]["first_reply_valid"] == 1.0 and saved["max_tokens"] == 1024
    assert "first valid" in capsys.readouterr().out
    with pytest.raises(ValueError, match="unknown reply formats"):
        asyncio.run(measure(groups, "openai/m", ["xml"]))
