"""Served env latency: N concurrent sessions x M steps against a ``judgegym serve`` process,
over HTTP and over WebSocket, beside the same steps in process; and the server's memory
through a churn of sessions.

    python -m judgegym.benchmarks.serve_latency [--env RagSupport-v0] [--sessions 16] [--steps 50]

The actions are the oracle baseline's, recorded once in process (its own time is excluded
everywhere), then replayed by every session, so each transport plays the very same steps
and every served reward is checked against the in-process one. A step's latency is the
client's wall time from sending the action to having the decoded reply.

The peer, in the same run: the same env behind OpenEnv's own server (openenv-core's
``HTTPEnvServer``, its WebSocket sessions; its HTTP routes keep no session), played by the
same WebSocket clients (``--no-peer`` skips it; it needs ``judgegym[openenv]``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

import gymnasium as gym
import httpx
import numpy as np

import judgegym  # noqa: F401  (registers the envs)

from ..agents import make_agent
from ..serving.protocol import wire_action, ws_url


def _stats(seconds: list[float]) -> dict[str, float]:
    ms = np.asarray(seconds) * 1e3
    return {"p50_ms": float(np.median(ms)), "p99_ms": float(np.percentile(ms, 99)), "mean_ms": float(ms.mean()), "steps": len(ms)}


def record_episodes(env_id: str, episodes: int) -> tuple[list[dict[str, Any]], list[float], list[float]]:
    """The oracle's episodes on seeds 0..n-1 (actions and final reward), and the in-process
    latency of each of their steps and of each reset."""
    env = gym.make(env_id)
    agent = make_agent("oracle", env_id)
    scripts, latencies, resets = [], [], []
    for seed in range(episodes):
        start = time.perf_counter()
        observation, info = env.reset(seed=seed)
        resets.append(time.perf_counter() - start)
        actions, done, reward = [], False, 0.0
        while not done:
            action = asyncio.run(agent.act(observation, info))
            start = time.perf_counter()
            observation, reward, terminated, truncated, _ = env.step(action)
            latencies.append(time.perf_counter() - start)
            actions.append(wire_action(action))
            done = terminated or truncated
        scripts.append({"seed": seed, "actions": actions, "reward": float(reward)})
    env.close()
    return scripts, latencies, resets


class _Tally:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.mismatches = 0


async def _http_session(client: httpx.AsyncClient, scripts: list[dict[str, Any]], steps: int, offset: int, tally: _Tally) -> None:
    done, sid, index = 0, None, offset
    while done < steps:
        script = scripts[index % len(scripts)]
        index += 1
        reply = await client.post("/reset", json={"seed": script["seed"], "session_id": sid})
        if reply.status_code != 200:
            tally.errors.append(f"reset HTTP {reply.status_code}: {reply.text[:200]}")
            return
        sid = reply.json()["observation"]["session_id"]
        for action in script["actions"]:
            start = time.perf_counter()
            reply = await client.post("/step", json={"session_id": sid, "action": action})
            payload = reply.json()
            tally.latencies.append(time.perf_counter() - start)
            if reply.status_code != 200:
                tally.errors.append(f"step HTTP {reply.status_code}: {payload}")
                return
            done += 1
        tally.mismatches += payload["reward"] != script["reward"]
    await client.delete(f"/sessions/{sid}")


async def _ws_session(url: str, scripts: list[dict[str, Any]], steps: int, offset: int, tally: _Tally) -> None:
    from websockets.asyncio.client import connect

    async with connect(ws_url(url) + "/ws", max_size=None) as ws:
        done, index = 0, offset
        while done < steps:
            script = scripts[index % len(scripts)]
            index += 1
            await ws.send(json.dumps({"type": "reset", "data": {"seed": script["seed"]}}))
            reply = json.loads(await ws.recv())
            if reply["type"] != "observation":
                tally.errors.append(f"reset: {reply}")
                return
            for action in script["actions"]:
                start = time.perf_counter()
                await ws.send(json.dumps({"type": "step", "data": action}))
                reply = json.loads(await ws.recv())
                tally.latencies.append(time.perf_counter() - start)
                if reply["type"] != "observation":
                    tally.errors.append(f"step: {reply['data']}")
                    return
                done += 1
            tally.mismatches += reply["data"]["reward"] != script["reward"]
        await ws.send(json.dumps({"type": "close"}))


async def load(url: str, transport: str, scripts: list[dict[str, Any]], sessions: int, steps: int) -> dict[str, Any]:
    """`sessions` concurrent sessions of `steps` steps each over `transport`."""
    tally = _Tally()
    start = time.perf_counter()
    if transport == "http":
        async with httpx.AsyncClient(base_url=url, timeout=120, limits=httpx.Limits(max_connections=sessions)) as client:
            await asyncio.gather(*(_http_session(client, scripts, steps, i, tally) for i in range(sessions)))
    else:
        await asyncio.gather(*(_ws_session(url, scripts, steps, i, tally) for i in range(sessions)))
    wall = time.perf_counter() - start
    return {
        **_stats(tally.latencies),
        "steps_per_s": len(tally.latencies) / wall,
        "errors": len(tally.errors),
        "first_errors": tally.errors[:3],
        "reward_mismatches": tally.mismatches,
    }


async def churn(url: str, sessions: int, concurrency: int) -> int:
    """Open, reset, step once and drop `sessions` WebSocket sessions (half without a "close"
    message, as a crashed client would); returns the errors."""
    from websockets.asyncio.client import connect

    errors = 0
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        nonlocal errors
        async with gate:
            try:
                async with connect(ws_url(url) + "/ws") as ws:
                    await ws.send(json.dumps({"type": "reset", "data": {"seed": i}}))
                    await ws.recv()
                    await ws.send(json.dumps({"type": "step", "data": {"content": "A short answer."}}))
                    errors += json.loads(await ws.recv())["type"] != "observation"
                    if i % 2:
                        await ws.send(json.dumps({"type": "close"}))
            except Exception:
                errors += 1

    await asyncio.gather(*(one(i) for i in range(sessions)))
    return errors


def openenv_peer_app(env_id: str, max_concurrent_envs: int) -> Any:
    """The env behind openenv-core's `HTTPEnvServer` (WebSocket sessions), judged in `step`
    as the local env is: the peer judgegym's server is measured against."""
    from fastapi import FastAPI
    from openenv.core.env_server.http_server import HTTPEnvServer
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import State

    from ..integrations.openenv import ChatObservation, ChatTurn
    from ..serving.protocol import ActionData, encode_info

    class Served(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self.env, self.steps = gym.make(env_id), 0

        def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ChatObservation:
            messages, info = self.env.reset(seed=seed)
            self.steps = 0
            return ChatObservation(messages=messages, info=encode_info(info))

        def step(self, action: ChatTurn, timeout_s: float | None = None, **kwargs: Any) -> ChatObservation:
            turn = ActionData.model_validate(action.model_dump(exclude={"metadata"}, exclude_none=True)).env_action()
            messages, reward, terminated, truncated, info = self.env.step(turn)
            self.steps += 1
            done = terminated or truncated
            return ChatObservation(
                messages=messages, info=encode_info(info), terminated=terminated, truncated=truncated, reward=float(reward), done=done
            )

        @property
        def state(self) -> State:
            return State(step_count=self.steps)

        def close(self) -> None:
            self.env.close()

    app = FastAPI()
    HTTPEnvServer(
        env=Served, action_cls=ChatTurn, observation_cls=ChatObservation, max_concurrent_envs=max_concurrent_envs
    ).register_routes(app)
    return app


def _start(command: list[str], url: str, log: Any) -> subprocess.Popen:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            log.seek(0)
            raise RuntimeError(f"the server did not start: {log.read().decode()[-2000:]}")
        time.sleep(0.2)


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run(
    env_id: str = "RagSupport-v0",
    sessions: int = 16,
    steps: int = 50,
    churn_sessions: int = 500,
    episodes: int = 16,
    workers: int | None = None,
    peer: bool = True,
) -> dict[str, Any]:
    """The whole benchmark against a fresh server process (and, with `peer`, OpenEnv's
    server on the same env); returns the figures."""
    scripts, in_process, in_process_resets = record_episodes(env_id, episodes)
    port = _free_port()
    log = tempfile.TemporaryFile()  # never a pipe: a full pipe would stall the server's writes
    command = [sys.executable, "-m", "judgegym", "serve", env_id, "--port", str(port), "--max-concurrent-envs", str(max(64, 2 * sessions))]
    command += ["--log-level", "warning"] + (["--workers", str(workers)] if workers else [])
    url = f"http://127.0.0.1:{port}"
    server = _start(command, url, log)
    try:
        # warm-up: every scenario's world built once (as in process), code paths loaded
        asyncio.run(load(url, "ws", scripts, 1, sum(len(s["actions"]) for s in scripts)))
        memory = {"warm": _rss_mb(server.pid)}
        results: dict[str, Any] = {"in_process": _stats(in_process), "in_process_reset": _stats(in_process_resets)}
        for transport in ("http", "ws"):
            results[transport] = asyncio.run(load(url, transport, scripts, sessions, steps))
            results[transport]["p50_vs_in_process"] = results[transport]["p50_ms"] / results["in_process"]["p50_ms"]
            memory[f"after_{transport}"] = _rss_mb(server.pid)
        churn_errors = asyncio.run(churn(url, churn_sessions, sessions))
        time.sleep(0.5)
        memory["after_churn"] = _rss_mb(server.pid)
        left = httpx.get(f"{url}/sessions").json()
        churn_errors += asyncio.run(churn(url, churn_sessions, sessions))
        time.sleep(0.5)
        memory["after_second_churn"] = _rss_mb(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    if peer:
        results["openenv_ws"] = peer_load(env_id, scripts, sessions, steps)
        results["openenv_ws"]["p50_vs_in_process"] = results["openenv_ws"]["p50_ms"] / results["in_process"]["p50_ms"]
        results["ws_p50_vs_openenv"] = results["ws"]["p50_ms"] / results["openenv_ws"]["p50_ms"]
    return {
        "env_id": env_id,
        "sessions": sessions,
        "steps_per_session": steps,
        "episodes_recorded": len(scripts),
        "server_workers": workers,
        "cpus": os.cpu_count(),
        **results,
        "churn": {"sessions": 2 * churn_sessions, "errors": churn_errors, "open_after": left["active_sessions"], "rss_mb": memory},
    }


def peer_load(env_id: str, scripts: list[dict[str, Any]], sessions: int, steps: int) -> dict[str, Any]:
    """The WebSocket load against OpenEnv's server (a process of its own) on the same env."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = tempfile.TemporaryFile()
    command = [sys.executable, "-m", "judgegym.benchmarks.serve_latency", "--peer-server", "--env", env_id, "--port", str(port)]
    server = _start(command, url, log)
    try:
        asyncio.run(load(url, "ws", scripts, 1, sum(len(s["actions"]) for s in scripts)))
        figures = asyncio.run(load(url, "ws", scripts, sessions, steps))
        figures["rss_mb"] = _rss_mb(server.pid)
        return figures
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="RagSupport-v0")
    parser.add_argument("--sessions", type=int, default=16, help="concurrent sessions (N)")
    parser.add_argument("--steps", type=int, default=50, help="steps per session (M)")
    parser.add_argument("--churn", type=int, default=500, help="sessions opened and dropped, twice, for the memory check")
    parser.add_argument(
        "--episodes", type=int, default=16, help="distinct scenarios (seeds 0..n-1); RagSupport-v0 keeps 16 worlds built, more rebuild them"
    )
    parser.add_argument("--workers", type=int, help="the server's env threads (default: judgegym serve's)")
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--no-peer", action="store_true", help="skip OpenEnv's server")
    parser.add_argument("--peer-server", action="store_true", help=argparse.SUPPRESS)  # run the peer server (internal)
    parser.add_argument("--port", type=int, default=8000, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.peer_server:
        import uvicorn

        uvicorn.run(openenv_peer_app(args.env, 64), host="127.0.0.1", port=args.port, log_level="warning")
        return
    figures = run(args.env, args.sessions, args.steps, args.churn, args.episodes, workers=args.workers, peer=not args.no_peer)
    print(json.dumps(figures, indent=2))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)


if __name__ == "__main__":
    main()
