"""Fuzzing the env server's protocol: any HTTP body or WebSocket message gets a 2xx or a
4xx with a message (never a 5xx), and the server keeps serving with no session leaked."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from strategies import action_strategy, examples

import judgegym  # noqa: F401  (registers the envs)
from judgegym.serving.server import ServeConfig, create_app

OK_STATUSES = {200, 204, 400, 401, 404, 409, 413, 422, 503}
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=10,
)
ACTIONS = action_strategy(["search", "read", "list_sections", "read_section", "find_customer"], [JSON_VALUES]).map(
    lambda a: a if not isinstance(a, bytes) else a.hex()
)
RESET_DATA = st.fixed_dictionaries(
    {},
    optional={
        "seed": st.integers(-5, 2**64) | JSON_VALUES,
        "options": st.none() | st.dictionaries(st.sampled_from(["scenario_id", "question", "x"]), JSON_VALUES, max_size=2) | JSON_VALUES,
        "env_args": st.dictionaries(
            st.sampled_from(["split", "max_turns", "max_tool_calls", "n_products", "judge"]), JSON_VALUES, max_size=2
        ),
        "group_id": st.text(max_size=6) | JSON_VALUES,
        "group_size": st.integers(-1, 3) | JSON_VALUES,
        "group_wait": st.booleans() | JSON_VALUES,
        "episode_id": JSON_VALUES,
        "session_id": JSON_VALUES,
    },
)


def _wire_action(action: Any) -> Any:
    """An action as the client would put it on the wire: text in {"content"}, the rest raw."""
    return {"content": action} if isinstance(action, str) else action


def post(http: TestClient, path: str, body: Any) -> Any:
    """POST any JSON value, NaN and infinities included (Python's json reads them back)."""
    return http.post(path, content=json.dumps(body).encode(), headers={"content-type": "application/json"})


@pytest.fixture(scope="module")
def client():
    app = create_app(ServeConfig(env_id="RagSupport-v0", max_concurrent_envs=4, env_args={"n_products": 20, "n_worlds": 2}))
    with TestClient(app) as test_client:
        yield test_client, app.state.server


@pytest.mark.slow
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    resets=st.lists(RESET_DATA | JSON_VALUES, min_size=1, max_size=3),
    steps=st.lists(
        st.tuples(st.booleans(), ACTIONS | st.fixed_dictionaries({}, optional={"content": JSON_VALUES, "tool_calls": JSON_VALUES})),
        max_size=6,
    ),
    raw=st.lists(st.binary(max_size=40) | st.text(max_size=40), max_size=2),
    seed=st.integers(0, 2**31),
)
def test_http_protocol_never_breaks(client, resets, steps, raw, seed):
    http, server = client
    opened: list[str] = []
    for body in [{"seed": seed}, *resets]:
        reply = post(http, "/reset", body)
        assert reply.status_code in OK_STATUSES, reply.text
        event(f"reset {reply.status_code}")
        if reply.status_code == 200:
            opened.append(reply.json()["observation"]["session_id"])
        else:
            assert reply.json()["detail"]
    for known, action in steps:
        sid = opened[0] if known else "not-a-session"
        reply = post(http, "/step", {"session_id": sid, "action": _wire_action(action)})
        assert reply.status_code in OK_STATUSES, reply.text
        if reply.status_code == 200:
            assert isinstance(reply.json()["observation"]["messages"], list)
        event(f"step {reply.status_code}")
    for body in raw:
        for path in ("/reset", "/step"):
            reply = http.post(
                path, content=body if isinstance(body, bytes) else body.encode(), headers={"content-type": "application/json"}
            )
            assert reply.status_code in OK_STATUSES, reply.text
            if reply.status_code == 200 and path == "/reset":  # e.g. "{}"
                opened.append(reply.json()["observation"]["session_id"])
    for sid in opened:
        http.delete(f"/sessions/{sid}")
    assert http.get("/health").status_code == 200
    assert not server.sessions


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    messages=st.lists(
        st.one_of(
            st.builds(lambda d: {"type": "reset", "data": d}, RESET_DATA | JSON_VALUES),
            st.builds(lambda a: {"type": "step", "data": _wire_action(a)}, ACTIONS),
            st.builds(lambda t, d: {"type": t, "data": d}, st.sampled_from(["state", "mcp", "", "STEP"]) | JSON_VALUES, JSON_VALUES),
            JSON_VALUES,
            st.text(max_size=30),
        ),
        min_size=1,
        max_size=8,
    ),
    seed=st.integers(0, 2**31),
)
def test_websocket_protocol_never_breaks(client, messages, seed):
    http, server = client
    with http.websocket_connect("/ws") as ws:
        for message in [{"type": "reset", "data": {"seed": seed}}, *messages]:
            ws.send_text(message if isinstance(message, str) else json.dumps(message))
            reply = json.loads(ws.receive_text())
            assert reply["type"] in ("observation", "state", "error"), reply
            kind = message.get("type") if isinstance(message, dict) else None
            event(f"{kind if kind in ('reset', 'step', 'state') else 'other'} -> {reply['type']}")
            if reply["type"] == "error":
                assert reply["data"]["status"] < 500, reply
                assert reply["data"]["message"]
        ws.send_text(json.dumps({"type": "close"}))
    assert http.get("/health").status_code == 200
    assert not server.sessions
