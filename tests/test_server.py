"""`judgegym serve` and `RemoteEnv`: served episodes equal local ones, OpenEnv's own client
plays them, sessions and groups behave, and bad requests get 4xx without hurting the server."""

from __future__ import annotations

import asyncio
import gc
import json
from typing import Any

import gymnasium as gym
import httpx
import pytest
from gymnasium.utils.env_checker import check_env
from served import served, wait_until
from websockets.exceptions import InvalidHandshake
from websockets.sync.client import connect

import judgegym  # noqa: F401  (registers the envs)
from judgegym.agents import make_agent
from judgegym.envs.remote import RemoteEnv, RemoteEnvError
from judgegym.evaluation.runner import play_episode
from judgegym.judges.base import Judge, JudgeScore
from judgegym.serving.protocol import ws_url
from judgegym.trajectory import Group

ENV_IDS = ("RagSupport-v0", "CustomerSupport-v0", "Summarize-v0")
MESSY = (
    "",  # empty turn: a format error
    '<tool_call>{"name": "search", "arguments": {"query": </tool_call>',  # malformed call
    '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>',  # unknown tool
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}],
    },
    "I could not find that; I can escalate this to a human support agent.",
)


class Scripted:
    """Plays a fixed list of actions (then repeats the last)."""

    name = "scripted"

    def __init__(self, actions: tuple[Any, ...]):
        self.actions, self.turn = actions, 0

    async def act(self, observation: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        action = self.actions[min(self.turn, len(self.actions) - 1)]
        self.turn += 1
        return action


class LengthRank(Judge):
    """A relative judge for tests: ranks a group's final answers by length (longest 1.0)."""

    relative = True

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def score_group(self, group: Group) -> list[JudgeScore]:
        answers = [t.final_answer for t in group.trajectories]
        self.calls.append(answers)
        order = sorted(range(len(answers)), key=lambda i: len(answers[i]))
        n = max(1, len(answers) - 1)
        return [JudgeScore(score=order.index(i) / n, components={"rank": float(order.index(i))}) for i in range(len(answers))]


def _play(env: gym.Env, agent: Any, seed: int):
    return asyncio.run(play_episode(env, agent, seed))


@pytest.fixture(scope="module")
def rag_server():
    with served("RagSupport-v0", max_concurrent_envs=16) as running:
        yield running


# -- the same episodes, local and served -------------------------------------------------


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_served_episodes_equal_local_ones(env_id):
    """The same seeded scenarios, played by the oracle and by a messy scripted agent, give
    identical trajectories, rewards and reset infos locally and over both transports."""
    with served(env_id) as (url, _):
        local = gym.make(env_id)
        for transport in ("ws", "http"):
            remote = gym.make("judgegym/Remote-v0", url=url, env_id=env_id, transport=transport)
            for seed in (0, 7):
                _, local_info = local.reset(seed=seed)
                _, remote_info = remote.reset(seed=seed)
                assert json.loads(json.dumps(local_info)) == remote_info
                for agent in (make_agent("oracle", env_id), Scripted(MESSY)):
                    if isinstance(agent, Scripted):
                        agent.turn = 0
                    here = _play(local, agent, seed)
                    if isinstance(agent, Scripted):
                        agent.turn = 0
                    there = _play(remote, agent, seed)
                    assert there.model_dump() == here.model_dump(), (transport, seed, agent.name)
                    assert there.reward == here.reward
            remote.close()
        local.close()


def test_remote_env_passes_check_env(rag_server):
    url, _ = rag_server
    env = RemoteEnv(url, "RagSupport-v0", split="test")
    check_env(env, skip_render_check=True)
    env.close()


def test_remote_env_with_a_local_judge_and_per_session_args(rag_server):
    """``judge=`` scores here (the server returns the unscored trajectory); per-session env
    arguments reach the server's env; the rest are refused with the reason."""
    url, _ = rag_server
    judge = judgegym.judges.make_judge("grounding")
    local = gym.make("RagSupport-v0", split="train", max_turns=3, judge=judge)
    remote = gym.make("judgegym/Remote-v0", url=url, env_id="RagSupport-v0", split="train", max_turns=3, judge=judge)
    oracle = make_agent("oracle", "RagSupport-v0")
    assert _play(remote, oracle, 4).model_dump() == _play(local, oracle, 4).model_dump()
    remote.close()
    with pytest.raises(ValueError, match="fixed by the server"):
        RemoteEnv(url, "RagSupport-v0", n_products=5)
    with pytest.raises(ValueError, match="serves RagSupport-v0, not Summarize-v0"):
        RemoteEnv(url, "Summarize-v0")
    with pytest.raises(ValueError, match="relative judge"):
        RemoteEnv(url, judge=LengthRank())


def test_unreachable_server_is_a_clear_error():
    with pytest.raises(RemoteEnvError, match="cannot reach a judgegym server at http://127.0.0.1:9"):
        RemoteEnv("http://127.0.0.1:9", connect_timeout_s=0.3)


# -- OpenEnv's own clients ---------------------------------------------------------------


@pytest.mark.slow
def test_openenv_generic_client_plays_an_episode(rag_server):
    """openenv-core's GenericEnvClient (its WebSocket protocol, no judgegym code) plays a
    served episode to the same reward as the local env, and its replies parse as OpenEnv's
    own message types."""
    from openenv.core.env_server.types import WSObservationResponse, WSStateResponse
    from openenv.core.generic_client import GenericEnvClient

    url, _ = rag_server
    local = gym.make("RagSupport-v0")
    oracle = make_agent("oracle", "RagSupport-v0")
    expected = _play(local, oracle, 3)

    async def play() -> tuple[float | None, dict[str, Any]]:
        async with GenericEnvClient(base_url=url) as env:
            result = await env.reset(seed=3)
            observation, info = result.observation["messages"], result.observation["info"]
            while not result.done:
                action = await oracle.act(observation, info)
                result = await env.step({"content": action} if isinstance(action, str) else action)
                observation = result.observation["messages"]
            return result.reward, await env.state()

    reward, state = asyncio.run(play())
    assert reward == expected.reward
    assert state["step_count"] == len([m for m in expected.messages if m.role == "assistant"])
    with connect(ws_url(url) + "/ws") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
        WSObservationResponse.model_validate_json(ws.recv())
        ws.send(json.dumps({"type": "state"}))
        WSStateResponse.model_validate_json(ws.recv())


def test_judgegym_openenv_client_sync_and_token():
    """The typed OpenEnv client (`judgegym.integrations.openenv.JudgegymEnv`) through
    OpenEnv's sync wrapper, against a server guarded by a token."""
    from judgegym.integrations.openenv import ChatTurn, JudgegymEnv

    with served("Summarize-v0", token="s3cret") as (url, _):
        oracle = make_agent("oracle", "Summarize-v0")
        expected = _play(gym.make("Summarize-v0"), oracle, 2)
        with JudgegymEnv(base_url=url, token="s3cret").sync() as env:
            result = env.reset(seed=2)
            info = result.observation.info
            assert result.observation.tools and info["scenario_id"] == expected.scenario_id
            while not result.done:
                action = asyncio.run(oracle.act(result.observation.messages, info))
                turn = ChatTurn(content=action) if isinstance(action, str) else ChatTurn(**{k: v for k, v in action.items() if k != "role"})
                result = env.step(turn)
            assert result.reward == expected.reward
            played = result.observation.trajectory
            played.info.update(agent="oracle", trial=0)  # what play_episode adds
            assert played.model_dump() == expected.model_dump()
        with pytest.raises(ConnectionError), JudgegymEnv(base_url=url, token="wrong").sync() as env:
            env.reset(seed=0)


# -- sessions ------------------------------------------------------------------------------


def test_http_session_lifecycle_and_errors(rag_server):
    url, server = rag_server
    with httpx.Client(base_url=url) as http:
        assert http.get("/health").json() == {"status": "healthy"}
        assert http.get("/metadata").json()["name"] == "RagSupport-v0"
        assert set(http.get("/schema").json()) == {"action", "observation", "state"}
        reply = http.post("/reset", json={"seed": 5})
        assert reply.status_code == 200
        sid = reply.json()["observation"]["session_id"]
        assert reply.headers["x-session-id"] == sid and reply.json()["done"] is False
        step = http.post("/step", json={"session_id": sid, "action": {"content": "No idea, sorry."}})
        assert step.status_code == 200 and step.json()["done"] is True
        assert http.get("/state", params={"session_id": sid}).json()["reward"] == step.json()["reward"]
        again = http.post("/step", json={"session_id": sid, "action": {"content": "more"}})
        assert again.status_code == 409 and "reset to start another" in again.json()["detail"]
        unknown = http.post("/step", json={"session_id": "nope", "action": {"content": "hi"}})
        assert unknown.status_code == 404 and "unknown session 'nope'" in unknown.json()["detail"]
        for body, status, words in [
            (b"{not json", 400, "not JSON"),
            (b"[1, 2]", 422, "JSON object"),
            (json.dumps({"session_id": sid, "action": "text"}).encode(), 422, "action"),
            (json.dumps({"session_id": sid, "action": {"content": 5}}).encode(), 422, "action.content"),
            (json.dumps({"session_id": sid, "action": {"text": "hi"}}).encode(), 422, "action.text"),
        ]:
            bad = http.post("/step", content=body, headers={"content-type": "application/json"})
            assert bad.status_code == status and words in bad.json()["detail"], bad.json()
        refused = http.post("/reset", json={"seed": 1, "env_args": {"scenarios": "/etc/passwd"}})
        assert refused.status_code == 422 and "fixed by the server" in refused.json()["detail"]
        bad_option = http.post("/reset", json={"seed": 1, "options": {"scenario_id": "no-such-scenario"}})
        assert bad_option.status_code == 422 and "reset refused by RagSupport-v0" in bad_option.json()["detail"]
        assert len(server.sessions) == 1  # the session that reset opened was closed again
        assert http.delete(f"/sessions/{sid}").status_code == 204
        assert http.get("/state", params={"session_id": sid}).status_code == 404
        assert http.get("/health").status_code == 200
    assert sid not in server.sessions


def test_capacity_and_token(monkeypatch):
    with served("RagSupport-v0", max_concurrent_envs=2, token="t0k") as (url, server):
        auth = {"Authorization": "Bearer t0k"}
        with httpx.Client(base_url=url) as http:
            assert http.get("/health").status_code == 200  # liveness stays open
            assert http.post("/reset", json={"seed": 0}).status_code == 401
            assert http.post("/reset", json={"seed": 0}, headers={"Authorization": "Bearer nope"}).status_code == 401
            ids = [http.post("/reset", json={"seed": i}, headers=auth).json()["observation"]["session_id"] for i in range(2)]
            full = http.post("/reset", json={"seed": 2}, headers=auth)
            assert full.status_code == 503 and "at capacity (2 of 2" in full.json()["detail"]
            with connect(ws_url(url) + "/ws?token=t0k") as ws:
                reply = json.loads(ws.recv())
                assert reply["type"] == "error" and reply["data"]["code"] == "CAPACITY_REACHED"
            for sid in ids:
                assert http.delete(f"/sessions/{sid}", headers=auth).status_code == 204
            env = RemoteEnv(url, "RagSupport-v0", token="t0k")
            env.reset(seed=0)
            env.close()
            monkeypatch.setenv("JUDGEGYM_SERVE_TOKEN", "t0k")  # what --env-url clients send without token=
            env = RemoteEnv(url, "RagSupport-v0", transport="http")
            env.reset(seed=0)
            env.close()
        with pytest.raises(InvalidHandshake), connect(ws_url(url) + "/ws") as ws:  # refused at the handshake
            ws.send(json.dumps({"type": "reset"}))
            ws.recv()
        assert wait_until(lambda: not server.sessions)


def test_websocket_errors_keep_the_session(rag_server):
    url, server = rag_server
    with connect(ws_url(url) + "/ws") as ws:

        def ask(message: Any) -> dict[str, Any]:
            ws.send(message if isinstance(message, str) else json.dumps(message))
            return json.loads(ws.recv())

        assert ask({"type": "step", "data": {"content": "hi"}})["data"]["message"] == "no episode in this session: reset first"
        assert ask("{oops")["data"]["code"] == "INVALID_JSON"
        assert ask({"type": "dance"})["data"]["code"] == "UNKNOWN_TYPE"
        assert ask({"type": "reset", "data": {"seed": -1}})["data"]["code"] == "VALIDATION_ERROR"
        assert ask({"type": "reset", "data": {"seed": 0, "colour": "red"}})["data"]["code"] == "VALIDATION_ERROR"
        assert ask({"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        assert "an action" in ask({"type": "step", "data": "text"})["data"]["message"]
        assert ask({"type": "step", "data": {"content": "The answer."}})["data"]["done"] is True
        assert ask({"type": "state"})["data"]["done"] is True
    assert wait_until(lambda: not server.sessions)


def test_disconnect_mid_episode_frees_the_session(rag_server):
    url, server = rag_server
    ws = connect(ws_url(url) + "/ws").__enter__()
    ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
    ws.recv()
    assert len(server.sessions) == 1
    ws.close()  # no "close" message: the client just goes away
    assert wait_until(lambda: not server.sessions)


def test_idle_sessions_time_out():
    with served("RagSupport-v0", session_timeout_s=0.4) as (url, server):
        sid = httpx.post(f"{url}/reset", json={"seed": 0}).json()["observation"]["session_id"]
        assert sid in server.sessions
        assert wait_until(lambda: sid not in server.sessions, timeout=5)
        reply = httpx.post(f"{url}/step", json={"session_id": sid, "action": {"content": "late"}})
        assert reply.status_code == 404 and "timed out" in reply.json()["detail"]


@pytest.mark.slow
def test_churn_frees_every_env(rag_server):
    """Sessions opened and closed over both transports leave no env behind."""
    from judgegym.envs.rag import RagSupportEnv

    url, server = rag_server
    closed_before = server.closed_sessions
    for i in range(40):
        env = RemoteEnv(url, transport="ws" if i % 2 else "http")
        env.reset(seed=i)
        env.step("An answer.")
        env.close()
    assert wait_until(lambda: not server.sessions and server.closed_sessions - closed_before == 40)
    gc.collect()
    alive = [o for o in gc.get_objects() if type(o) is RagSupportEnv]
    assert len(alive) <= 2, f"{len(alive)} envs still alive after churn"


# -- groups ---------------------------------------------------------------------------------


def test_group_members_judged_together_like_the_local_group_env():
    """G members stepped concurrently (group_wait) get, on their last step, the rewards the
    local group vector env gives the same actions; the judge runs once for the group."""
    answers = ["Short.", "A somewhat longer answer.", "The longest answer of the three, by a clear margin."]
    judge = LengthRank()
    vector = gym.make_vec("RagSupport-v0", num_envs=3, judge=LengthRank())
    vector.reset(seed=11)
    _, local_rewards, *_ = vector.step(answers)

    async def member(url: str, index: int) -> dict[str, Any]:
        from websockets.asyncio.client import connect as aconnect

        async with aconnect(ws_url(url) + "/ws") as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"seed": 11, "group_id": "g-1", "group_size": 3, "group_wait": True}}))
            json.loads(await ws.recv())
            await asyncio.sleep(0.05 * index)
            await ws.send(json.dumps({"type": "step", "data": {"content": answers[index]}}))
            return json.loads(await ws.recv())["data"]

    with served("RagSupport-v0", judge=judge) as (url, server):

        async def main() -> list[dict[str, Any]]:
            return await asyncio.gather(*(member(url, i) for i in range(3)))

        replies = asyncio.run(main())
        assert [r["reward"] for r in replies] == list(local_rewards)
        assert len(judge.calls) == 1 and judge.calls[0] == answers
        assert all(r["observation"]["info"]["components"]["rank"] == i for i, r in enumerate(replies))
        status = httpx.get(f"{url}/groups/g-1").json()
        assert status["judged"] and [m["result"]["reward"] for m in status["members"]] == list(local_rewards)


def test_served_group_vector_env_matches_the_local_one():
    """``gym.make_vec("judgegym/Remote-v0", num_envs=G)``: the local group env's semantics,
    the server's judge scoring each group once, members finishing at different turns."""
    search = '<tool_call>{"name": "search", "arguments": {"query": "returns"}}</tool_call>'
    turns = [["Short.", None], [search, "A somewhat longer answer."], ["The longest answer of the three, by far.", None]]
    local = gym.make_vec("RagSupport-v0", num_envs=3, judge=LengthRank())
    judge = LengthRank()
    with served("RagSupport-v0", judge=judge) as (url, server):
        remote = gym.make_vec("judgegym/Remote-v0", num_envs=3, url=url, env_id="RagSupport-v0")
        outcomes = []
        for vector in (local, remote):
            _, infos = vector.reset(seed=5)
            assert len(set(infos["scenario_id"])) == 1
            _, rewards, terminated, _, infos = vector.step([t[0] for t in turns])
            assert not terminated.any() and list(infos["active"]) == [False, True, False]
            _, rewards, terminated, _, infos = vector.step([t[1] for t in turns])
            assert terminated.all()
            outcomes.append((list(rewards), [t.model_dump(exclude={"info"}) for t in infos["trajectory"]], vector.unwrapped.group))
        assert outcomes[1][0] == outcomes[0][0] == [0.0, 0.5, 1.0]
        assert outcomes[1][1] == outcomes[0][1]
        assert len(judge.calls) == 1 and not outcomes[1][2].failed
        with pytest.raises(RuntimeError, match="call reset"):
            remote.step(["x", "y", "z"])
        remote.close()
        assert wait_until(lambda: not server.sessions)


def test_group_played_one_member_at_a_time():
    """A client that steps members one after another (group_wait false): early finishers
    get judge_pending, the last gets everyone's rewards; state and /groups show them."""
    judge = LengthRank()
    with served("RagSupport-v0", judge=judge) as (url, server):
        members = [RemoteEnv(url) for _ in range(2)]
        for env in members:
            env.reset(seed=3, options={"group": {"id": "seq", "size": 2}})
        _, reward, terminated, _, info = members[0].step("A long and careful answer.")
        assert terminated and reward == 0.0 and info["judge_pending"] is True
        _, reward, terminated, _, info = members[1].step("Short.")
        assert reward == 0.0 and info["judge_score"].score == 0.0
        assert [m["reward"] for m in info["group"]] == [1.0, 0.0]
        assert members[0].state()["reward"] == 1.0
        assert httpx.get(f"{url}/groups/seq").json()["members"][0]["result"]["reward"] == 1.0
        for env in members:
            env.close()
        assert wait_until(lambda: not server.groups)
        assert httpx.get(f"{url}/groups/seq").json()["judged"] is True  # still readable after the members left


def test_group_failures_never_become_zero_rewards():
    judge = LengthRank()
    with served("RagSupport-v0", judge=judge) as (url, server):
        first, second = RemoteEnv(url), RemoteEnv(url)
        first.reset(seed=1, options={"group": {"id": "g", "size": 2}})
        second.reset(seed=1, options={"group": {"id": "g", "size": 2}})
        extra, a, b = RemoteEnv(url), RemoteEnv(url), RemoteEnv(url)
        with pytest.raises(RemoteEnvError, match="full"):
            extra.reset(seed=1, options={"group": {"id": "g", "size": 2}})
        a.reset(seed=2, options={"group": {"id": "g2", "size": 2}})
        with pytest.raises(RemoteEnvError, match="plays seed 2"):
            b.reset(seed=3, options={"group": {"id": "g2", "size": 2}})
        for env in (extra, a, b):
            env.close()
        _, _, _, _, info = first.step("Done.")
        assert info["judge_pending"] is True
        second.close()  # leaves before its episode ended
        state = first.state()
        assert state["judge_failed"] is True and state["reward"] is None
        status = httpx.get(f"{url}/groups/g").json()
        assert status["failed"] and "before its episode ended" in status["error"]
        assert judge.calls == []
        first.close()
        with httpx.Client(base_url=url) as http:
            refused = http.post("/reset", json={"seed": 0})
            assert refused.status_code == 422 and "relative" in refused.json()["detail"]
            assert http.post("/reset", json={"seed": 0, "group_id": "x"}).status_code == 422


# -- the trainer and the command line on served envs ----------------------------------------


@pytest.mark.slow
def test_grpo_step_on_served_envs_equals_the_local_one(tmp_path, tiny_model, one_thread):
    """A GRPO step (rollouts and held-out eval) with ``env_url`` plays the same episodes,
    scored the same, as with envs in the process."""
    from judgegym.trainers import GRPOConfig, GRPOTrainer

    small = {"n_products": 20, "n_worlds": 1}
    options = {
        "model": tiny_model,
        "scenarios_per_step": 2,
        "group_size": 2,
        "max_new_tokens": 8,
        "max_turns": 2,
        "max_steps": 1,
        "eval_steps": 1,
        "eval_episodes": 2,
        "save_steps": 0,
        "mixed_precision": "no",
    }
    local = GRPOTrainer(GRPOConfig(**options, env_kwargs=small, output_dir=str(tmp_path / "local")))
    local_record = local.train()[-1]
    with served("RagSupport-v0", env_args=small) as (url, server):
        remote = GRPOTrainer(GRPOConfig(**options, env_url=url, output_dir=str(tmp_path / "remote")))
        remote_record = remote.train()[-1]
        remote.close()
        assert wait_until(lambda: not server.sessions)
    local.close()
    mine = [e.trajectory.model_dump() for e in local.last_rollout]
    theirs = [e.trajectory.model_dump() for e in remote.last_rollout]
    assert theirs == mine
    for key in ("reward", "eval/reward", "num_trained_tokens"):
        assert remote_record[key] == pytest.approx(local_record[key]), key


def test_cli_serve_and_eval_against_it(tmp_path):
    """`judgegym serve` in its own process; `judgegym eval --env-url` plays on it and gets the
    local run's table; a wrong env id is a clear error."""
    import os
    import socket
    import subprocess
    import sys

    from typer.testing import CliRunner

    from judgegym.cli import app

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = (tmp_path / "serve.log").open("wb")  # a file, not a pipe nobody reads
    server = subprocess.Popen(
        [sys.executable, "-m", "judgegym", "serve", "Summarize-v0", "--port", str(port), "--max-concurrent-envs", "4"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_until(lambda: _healthy(url), timeout=60), (tmp_path / "serve.log").read_text()
        runner = CliRunner()
        common = ["eval", "--env", "Summarize-v0", "--agent", "oracle", "--episodes", "3", "--concurrency", "2"]
        here = runner.invoke(app, [*common, "--out", str(tmp_path / "local.jsonl")])
        there = runner.invoke(app, [*common, "--env-url", url, "--out", str(tmp_path / "remote.jsonl")])
        assert here.exit_code == 0 and there.exit_code == 0, there.output
        local_rewards = [json.loads(line)["reward"] for line in (tmp_path / "local.jsonl").read_text().splitlines()]
        remote_rewards = [json.loads(line)["reward"] for line in (tmp_path / "remote.jsonl").read_text().splitlines()]
        assert remote_rewards == local_rewards and len(local_rewards) == 3
        wrong = runner.invoke(app, ["eval", "--env", "RagSupport-v0", "--agent", "oracle", "--env-url", url])
        assert wrong.exit_code == 2 and "serves Summarize-v0, not RagSupport-v0" in wrong.output
        assert httpx.get(f"{url}/sessions").json()["active_sessions"] == 0
    finally:
        server.terminate()
        server.wait(timeout=20)
        log.close()


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def test_the_docs_examples_run():
    """docs/plugins/openenv.md's Python blocks, run against a served RagSupport-v0."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "plugins" / "openenv.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, re.DOTALL)
    assert len(blocks) == 3
    with served("RagSupport-v0") as (url, server):
        for block in blocks:
            exec(compile(block.replace("http://127.0.0.1:8000", url), "docs/plugins/openenv.md", "exec"), {"__name__": "__main__"})
        assert wait_until(lambda: not server.sessions)


@pytest.mark.slow
def test_latency_benchmark_runs_and_checks_rewards():
    """The served-env benchmark end to end, tiny: a server process, both transports, churn."""
    from judgegym.benchmarks.serve_latency import run

    figures = run("Summarize-v0", sessions=2, steps=4, churn_sessions=4, episodes=2)
    for transport in ("http", "ws"):
        assert figures[transport]["errors"] == 0 and figures[transport]["reward_mismatches"] == 0
        assert figures[transport]["steps"] >= 8 and figures[transport]["p50_ms"] > 0
    assert figures["churn"]["errors"] == 0 and figures["churn"]["open_after"] == 0


def test_cli_serve_refuses_bad_arguments_before_listening():
    from typer.testing import CliRunner

    from judgegym.cli import app

    runner = CliRunner()
    unknown = runner.invoke(app, ["serve", "NoSuch-v0"])
    assert unknown.exit_code == 2 and "unknown env 'NoSuch-v0'" in unknown.output
    judge = runner.invoke(app, ["serve", "RagSupport-v0", "--judge", "ruler"])
    assert judge.exit_code == 2 and "needs a model" in judge.output and "serving" not in judge.output
    fixed = runner.invoke(app, ["serve", "RagSupport-v0", "--env-arg", "judge=learned"])
    assert fixed.exit_code == 2 and "the server judges" in fixed.output


def test_tls_with_a_self_signed_certificate(tmp_path):
    """--ssl-certfile/--ssl-keyfile: both transports over TLS with a token; a client that does
    not trust the certificate is refused with a clear error."""
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    with served("Summarize-v0", token="t", ssl_certfile=str(cert), ssl_keyfile=str(key)) as (url, server):
        assert url.startswith("https://")
        oracle = make_agent("oracle", "Summarize-v0")
        expected = _play(gym.make("Summarize-v0"), oracle, 1)
        for transport in ("ws", "http"):
            env = RemoteEnv(url, "Summarize-v0", transport=transport, token="t", verify=str(cert))
            assert _play(env, oracle, 1).model_dump() == expected.model_dump()
            env.close()
        with pytest.raises(RemoteEnvError, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
            RemoteEnv(url, connect_timeout_s=0.5)
        assert wait_until(lambda: not server.sessions)
