"""`RemoteEnv`: a judgegym env served by ``judgegym serve`` (`judgegym.serving.server`),
played over WebSocket or HTTP in the wire protocol both ends share, OpenEnv's
(`judgegym.serving.protocol`).

``gym.make("judgegym/Remote-v0", url="http://host:8000", env_id="RagSupport-v0")`` behaves
as ``gym.make("RagSupport-v0")``: same spaces, seeds, options, trajectories and rewards, with
the env (and, by default, its judge) running on the server.
"""

from __future__ import annotations

import json
import os
import secrets
import ssl
import time
from typing import Any, Literal, SupportsFloat

import gymnasium as gym
import httpx

from ..judges.base import Judge, JudgeScore, record_score
from ..serving.protocol import CLIENT_ENV_ARGS, INFO_TYPES, TOKEN_ENV, TOKEN_HEADER, decode_info, http_url, wire_action, ws_url
from ..spaces import ChatAction, Conversation
from ..trajectory import Group, Message, Trajectory
from .base import render_line
from .group import GroupVectorEnv

_INFO_TYPES = {**INFO_TYPES, "judge_score": JudgeScore}
"""The info keys that come back as models: the protocol's (``trajectory``) and ``judge_score``."""


class RemoteEnvError(RuntimeError):
    """The server refused a request (its message says why) or could not be reached."""


class RemoteEnv(gym.Env[list[dict[str, Any]], Any]):
    """A judgegym env on a ``judgegym serve`` server, as a Gymnasium env.

    Same observation and action spaces, seeds, options, trajectories and rewards as the
    local env: ``reset`` returns (conversation, info) with ``info["tools"]``; the last
    ``step`` returns the judge's reward and ``info["trajectory"]`` (a `Trajectory`),
    ``judge_score``, ``components``, ``termination``. One instance is one server session
    (one env instance there), freed by `close`.

    Args:
        url: the server, ``http://host:port`` (or ``ws://``; both transports use it).
        env_id: the env expected there (checked); None takes whatever the server serves.
        transport: "ws" (one WebSocket per env, the faster) or "http".
        token: the server's token, if it was started with one (default: the
            ``JUDGEGYM_SERVE_TOKEN`` environment variable, if set).
        judge: a local judge instead of the server's: the server returns unscored
            trajectories and this judge scores them here (pointwise judges only, as for a
            local env; for groups use a `GroupVectorEnv` of local envs or the server's groups).
        timeout_s: seconds to wait for one reply.
        connect_timeout_s: seconds to keep trying to reach the server at construction.
        verify: for an https:// server: check its certificate against the system's CAs
            (True; ``SSL_CERT_FILE`` adds yours), a CA bundle or self-signed certificate (a
            PEM path), or not at all (False).
        **env_args: per-session env arguments (``split``, ``max_turns``, ``max_tool_calls``,
            ``max_tool_output_chars``, ``defer_judging``); the server fixes the others.

    The server checks an action's shape (text, or an assistant message dict): a dict of the
    wrong shape raises `RemoteEnvError` here where the local env would append a format error
    (text, what models produce, is always accepted and handled exactly as locally).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        url: str,
        env_id: str | None = None,
        *,
        transport: Literal["ws", "http"] = "ws",
        token: str | None = None,
        judge: Judge | None = None,
        timeout_s: float = 120.0,
        connect_timeout_s: float = 10.0,
        verify: bool | str = True,
        render_mode: str | None = None,
        **env_args: Any,
    ):
        if transport not in ("ws", "http"):
            raise ValueError(f"transport must be 'ws' or 'http', got {transport!r}")
        unknown = sorted(set(env_args) - CLIENT_ENV_ARGS)
        if unknown:
            raise ValueError(
                f"env arguments {unknown} are fixed by the server (judgegym serve --env-arg KEY=VALUE); "
                f"a client may set {sorted(CLIENT_ENV_ARGS)}"
            )
        if judge is not None and judge.relative:
            raise ValueError(
                f"{type(judge).__name__} is a relative judge and needs whole groups; judge groups of RemoteEnv "
                "trajectories with judge.score_group, or start the server with --judge and use its group sessions"
            )
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.url = http_url(url)
        self.transport = transport
        self.judge = judge
        self.render_mode = render_mode
        self.timeout_s = timeout_s
        token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        self._headers = {TOKEN_HEADER: f"Bearer {token}"} if token else {}
        self.env_args = {**env_args, **({"defer_judging": True} if judge is not None else {})}
        self.observation_space = Conversation()
        self.action_space = ChatAction()
        self._ssl = _ssl_context(verify) if self.url.startswith("https://") else None
        self._http = httpx.Client(base_url=self.url, headers=self._headers, timeout=timeout_s, verify=self._ssl or True)
        self.server = self._server_metadata(connect_timeout_s)
        self.env_id = self.server["name"]
        if env_id is not None and env_id.removeprefix("judgegym:") != self.env_id:
            self._http.close()
            raise ValueError(f"the server at {self.url} serves {self.env_id}, not {env_id}")
        self._ws: Any = None
        self.session_id: str | None = None
        self._messages: list[dict[str, Any]] = []
        self._done = True
        self._started = False

    # -- Gymnasium API ------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Start an episode on the server (same seeds and options as the local env).

        Without a seed one is drawn from this env's generator, as the local env does.
        ``options["group"] = {"id": ..., "size": G, "wait": False}`` joins a server-side group
        (its members share the first member's scenario and are judged together when the last
        ends): an early finisher's last step has reward 0.0 and ``info["judge_pending"]``,
        its reward then shows in `state`; the last finisher's info has ``group``, every
        member's reward. With ``"wait": True`` every last step waits for the judgement
        (members stepped concurrently)."""
        super().reset(seed=seed)
        options = dict(options or {})
        group = options.pop("group", None)
        data: dict[str, Any] = {"env_args": self.env_args}
        if isinstance(group, dict):  # join a server-side group; its first member's seed is everyone's
            data.update(group_id=group.get("id"), group_size=group.get("size"), group_wait=bool(group.get("wait", False)))
            if seed is not None:
                data["seed"] = seed
        else:
            data["seed"] = seed if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        if options:
            data["options"] = options
        reply = self._request("reset", data, fresh=True)
        observation = reply["observation"]
        self.session_id = observation["session_id"]
        self._messages = observation["messages"]
        self._done, self._started = False, True
        return list(self._messages), decode_info(observation["info"], _INFO_TYPES)

    def step(self, action: Any) -> tuple[list[dict[str, Any]], SupportsFloat, bool, bool, dict[str, Any]]:
        """Play one assistant turn on the server."""
        if not self._started:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError("this episode has ended; call reset() to start another")
        reply = self._request("step", wire_action(action))
        observation = reply["observation"]
        self._messages = observation["messages"]
        info = decode_info(observation["info"], _INFO_TYPES)
        terminated, truncated = bool(observation["terminated"]), bool(observation["truncated"])
        reward = reply["reward"]
        if terminated or truncated:
            self._done = True
            if self.judge is not None and isinstance(info.get("trajectory"), Trajectory):
                score = self.judge.score_one_sync(info["trajectory"])
                record_score(info["trajectory"], score)
                info.update(judge_score=score, components=dict(score.components))
                reward = score.score
        return list(self._messages), (float(reward) if reward is not None else 0.0), terminated, truncated, info

    def state(self) -> dict[str, Any]:
        """The server's state of this session (OpenEnv's ``state``: episode id, step count,
        and judgegym's scenario, reward and group fields)."""
        return self._request("state", None)

    def group_status(self, group_id: str, wait_s: float = 0.0) -> dict[str, Any]:
        """A server group's members and, once judged, their results (``GET /groups/{id}``),
        waiting up to `wait_s` seconds for the judgement."""
        try:
            response = self._http.get(f"/groups/{group_id}", params={"wait": wait_s}, timeout=wait_s + self.timeout_s)
        except httpx.TransportError as exc:
            raise RemoteEnvError(f"group {group_id}: the server at {self.url} is unreachable ({type(exc).__name__}: {exc})") from None
        return _json_or_raise(response)

    def render(self) -> str | None:
        """ "ansi": the conversation so far as text; otherwise None."""
        if self.render_mode == "ansi":
            return "\n".join(render_line(Message.model_validate(m)) for m in self._messages)
        return None

    def close(self) -> None:
        """End the session on the server (its env is freed) and close the connection."""
        try:
            if self._ws is not None:
                try:
                    self._ws.send(json.dumps({"type": "close"}))
                finally:
                    self._ws.close()
            elif self.session_id is not None:
                self._http.delete(f"/sessions/{self.session_id}")
        except Exception:  # closing an already broken connection
            pass
        finally:
            self._ws, self.session_id = None, None
            self._http.close()
        super().close()

    # -- transport ----------------------------------------------------------------------

    def _server_metadata(self, connect_timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + connect_timeout_s
        while True:
            try:
                response = self._http.get("/metadata")
                break
            except httpx.TransportError as exc:
                if time.monotonic() >= deadline:
                    raise RemoteEnvError(
                        f"cannot reach a judgegym server at {self.url} ({type(exc).__name__}: {exc}); "
                        "start one with `judgegym serve ENV_ID`"
                    ) from None
                time.sleep(0.2)
        return _json_or_raise(response)

    def _request(self, kind: Literal["reset", "step", "state"], data: dict[str, Any] | None, *, fresh: bool = False) -> dict[str, Any]:
        if self.transport == "http":
            return self._http_request(kind, data)
        return self._ws_request(kind, data, fresh=fresh)

    def _http_request(self, kind: str, data: dict[str, Any] | None) -> dict[str, Any]:
        try:
            if kind == "reset":
                response = self._http.post("/reset", json={**(data or {}), "session_id": self.session_id})
            elif kind == "step":
                response = self._http.post("/step", json={"session_id": self.session_id, "action": data})
            else:
                response = self._http.get("/state", params={"session_id": self.session_id or ""})
        except httpx.TransportError as exc:
            raise RemoteEnvError(f"{kind} failed: the server at {self.url} is unreachable ({type(exc).__name__}: {exc})") from None
        return _json_or_raise(response)

    def _ws_request(self, kind: str, data: dict[str, Any] | None, *, fresh: bool) -> dict[str, Any]:
        from websockets.exceptions import ConnectionClosed, InvalidHandshake
        from websockets.sync.client import connect

        message = json.dumps({"type": kind, **({"data": data} if data is not None else {})})
        for attempt in (0, 1):
            if self._ws is None:
                try:
                    # entered like a context manager (closed in `close`): websockets' one way across versions
                    self._ws = connect(
                        ws_url(self.url) + "/ws",
                        additional_headers=self._headers,
                        max_size=None,
                        open_timeout=self.timeout_s,
                        ssl=self._ssl,
                    ).__enter__()
                except (OSError, InvalidHandshake, TimeoutError) as exc:
                    raise RemoteEnvError(f"cannot open a session at {self.url}: {type(exc).__name__}: {exc}") from None
            try:
                self._ws.send(message)
                reply = json.loads(self._ws.recv(timeout=self.timeout_s))
                break
            except (ConnectionClosed, OSError) as exc:
                self._ws = None
                if not fresh or attempt:  # a lost session cannot be resumed mid-episode
                    self._done = True
                    raise RemoteEnvError(
                        f"{kind} failed: the connection to {self.url} was lost ({exc}); the server freed the session, reset to start again"
                    ) from None
            except TimeoutError:
                self._ws.close()
                self._ws, self._done = None, True
                raise RemoteEnvError(f"{kind}: no reply from {self.url} within {self.timeout_s:g} s; the session was closed") from None
        if reply.get("type") == "error":
            error = reply.get("data") or {}
            raise RemoteEnvError(f"{kind} refused by the server: {error.get('message', 'unknown error')} ({error.get('code', '?')})")
        return reply.get("data") or {}


class RemoteGroupVectorEnv(GroupVectorEnv):
    """G served members in one server-side group: `GroupVectorEnv`'s semantics (one shared
    scenario per reset, parked finishers, every reward on the step the last member ends), with
    the server's judge scoring the group once.

    ``gym.make_vec("judgegym/Remote-v0", num_envs=G, url=..., env_id=...)`` returns one. Each
    reset opens a fresh group on the server; when the last member ends, the group's results
    (rewards, components, scored trajectories) come from ``GET /groups/{id}``. A failed group
    (a judge error, a member lost) raises `RemoteEnvError` (``on_judge_error="raise"``) or
    gives rewards 0.0 with ``judge_failed`` (``"mark_failed"``), as the local group env does.

    Args:
        url, env_id, **kwargs: what each `RemoteEnv` member gets (``transport``, ``token``,
            the per-session env arguments); not ``judge``: the server judges.
        num_envs: G.
        wait_s: seconds to wait for the server's judgement of a finished group.
    """

    def __init__(
        self,
        url: str,
        env_id: str | None = None,
        num_envs: int = 1,
        *,
        on_judge_error: Literal["raise", "mark_failed"] = "raise",
        wait_s: float = 600.0,
        **kwargs: Any,
    ):
        if num_envs < 1:
            raise ValueError("a group needs at least one member (num_envs >= 1)")
        if "judge" in kwargs:
            raise ValueError("a served group is judged by the server (judgegym serve --judge); use GroupVectorEnv to judge here")
        self._setup([RemoteEnv(url, env_id, **kwargs) for _ in range(num_envs)], None, on_judge_error)
        self.wait_s = wait_s
        self.group_id: str | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Open a fresh server group and reset every member into it (see `GroupVectorEnv.reset`)."""
        self.group_id = secrets.token_hex(8)
        return super().reset(seed=seed, options={**(options or {}), "group": {"id": self.group_id, "size": self.num_envs}})

    def _finish_group(self) -> list[dict[str, Any]]:
        assert self.group_id is not None
        status = self.envs[0].unwrapped.group_status(self.group_id, wait_s=self.wait_s)
        records = [dict(r) for r in self._finished if r is not None]
        results = [decode_info(m.get("result") or {}, _INFO_TYPES) for m in status["members"]]
        if not status["judged"] or len(results) != len(records):
            error = status.get("error") or f"the server had not judged group {self.group_id} after {self.wait_s:g} s"
            trajectories = [r["trajectory"] for r in records]
            self.group = Group(scenario_id=trajectories[0].scenario_id, trajectories=trajectories, failed=True, error=error)
            if self.on_judge_error == "raise":
                raise RemoteEnvError(f"group {self.group_id} failed: {error}")
            for record in records:
                record.update(reward=0.0, judge_failed=True, judge_error=error)
            return records
        for record, result in zip(records, results, strict=True):
            record.update(
                trajectory=result["trajectory"],
                reward=float(result["reward"]),
                judge_failed=False,
                judge_score=result["judge_score"],
                components=dict(result.get("components") or {}),
                explanation=result.get("explanation", ""),
            )
        self.group = Group(scenario_id=records[0]["trajectory"].scenario_id, trajectories=[r["trajectory"] for r in records])
        return records


def _ssl_context(verify: bool | str) -> ssl.SSLContext:
    """The TLS context both transports use: system CAs, a PEM bundle, or no checks."""
    if verify is False:
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        return context
    return ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)


def _json_or_raise(response: httpx.Response) -> dict[str, Any]:
    if response.is_success:
        return response.json()
    try:
        detail = response.json().get("detail", response.text)
    except ValueError:
        detail = response.text
    raise RemoteEnvError(f"{response.request.method} {response.request.url.path}: HTTP {response.status_code}: {detail}")


__all__ = ["RemoteEnv", "RemoteEnvError", "RemoteGroupVectorEnv"]
