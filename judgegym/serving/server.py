"""`judgegym serve`: any judgegym env over HTTP and WebSocket, in OpenEnv's protocol.

One session is one env instance. Sessions are opened by a WebSocket connection (closed with
it) or by an HTTP reset without a session id (closed by DELETE or after
``session_timeout_s`` idle). A group session's G members share a scenario and are judged
together when the last one ends. See docs/plugins/openenv.md.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import secrets
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ValidationError

import judgegym

from ..judges.base import Judge, JudgeScore, record_score
from ..judges.specs import make_judge
from ..trajectory import Group, Trajectory
from .protocol import (
    CLIENT_ENV_ARGS,
    TOKEN_HEADER,
    ActionData,
    ChatObservation,
    ResetData,
    SessionState,
    StepBody,
    encode_info,
    observation_reply,
)

log = logging.getLogger("judgegym.server")

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


@dataclass
class ServeConfig:
    """What ``judgegym serve`` serves and how (the CLI's flags are these fields)."""

    env_id: str
    judge: str = "verifier"
    """Judge spec (`judgegym.judges.make_judge`); a relative one (RULER) needs group sessions."""
    env_args: dict[str, Any] = field(default_factory=dict)
    """``gym.make`` arguments fixed for every session (clients may set only `CLIENT_ENV_ARGS`)."""
    max_concurrent_envs: int = 64
    """Open sessions (env instances) at most; one more is refused (HTTP 503 / CAPACITY_REACHED)."""
    session_timeout_s: float = 300.0
    """A session with no request for this long is closed and its env freed."""
    group_timeout_s: float = 600.0
    """A group not finished this long after its first member joined fails (its members get no reward)."""
    token: str | None = None
    """If set, every request needs ``Authorization: Bearer TOKEN`` (or ``?token=TOKEN``)."""
    max_body_bytes: int = 8 * 2**20
    """Largest HTTP body or WebSocket message accepted."""
    workers: int = 8
    """Threads that run env steps (env code is synchronous; an LLM-simulated customer waits on I/O)."""
    ssl_certfile: str | None = None
    """TLS certificate (PEM): serve https:// and wss:// (with `ssl_keyfile`), so a token does not
    cross the network in clear text."""
    ssl_keyfile: str | None = None
    """The certificate's private key (PEM)."""

    def problems(self) -> list[str]:
        """What is wrong with this configuration ([] if nothing)."""
        problems = []
        if self.max_concurrent_envs < 1:
            problems.append(f"max_concurrent_envs must be >= 1, got {self.max_concurrent_envs}")
        if self.session_timeout_s <= 0 or self.group_timeout_s <= 0:
            problems.append("session_timeout_s and group_timeout_s must be > 0")
        if self.workers < 1:
            problems.append(f"workers must be >= 1, got {self.workers}")
        if (self.ssl_certfile is None) != (self.ssl_keyfile is None):
            problems.append("TLS needs both ssl_certfile and ssl_keyfile")
        fixed = sorted({"judge", "defer_judging", "render_mode"} & set(self.env_args))
        if fixed:
            problems.append(f"env_args may not set {fixed}: the server judges (use --judge)")
        return problems


class ProtocolError(Exception):
    """A request the server refuses: HTTP `status` and the message a client can act on."""

    def __init__(self, status: int, message: str, code: str = "VALIDATION_ERROR"):
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


@dataclass
class GroupRun:
    """G sessions playing one scenario, judged together when the last one ends."""

    id: str
    size: int
    seed: int
    options: dict[str, Any] | None
    env_args: dict[str, Any]
    opened: float = field(default_factory=time.monotonic)
    members: list[Session] = field(default_factory=list)
    departed: int = 0
    """Members that have left (closed, or reset into another episode)."""
    trajectories: dict[int, Trajectory] = field(default_factory=dict)
    results: list[dict[str, Any]] | None = None
    """One terminal record per member (reward, components, ...) once judged or failed."""
    error: str | None = None
    judged: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def failed(self) -> bool:
        return self.error is not None

    def status(self) -> dict[str, Any]:
        """The group as JSON: who joined, who finished, the rewards once judged."""
        return {
            "group_id": self.id,
            "group_size": self.size,
            "seed": self.seed,
            "joined": len(self.members),
            "finished": len(self.trajectories),
            "judged": self.judged.is_set() and not self.failed,
            "failed": self.failed,
            "error": self.error,
            "members": [
                {"index": i, "session_id": s.id, **({"result": _encode(self.results[i])} if self.results else {})}
                for i, s in enumerate(self.members)
            ],
        }


@dataclass
class Session:
    """One env instance and the episode on it."""

    id: str
    transport: str
    env: gym.Env | None = None
    env_key: str = ""
    defer_judging: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_active: float = field(default_factory=time.monotonic)
    in_flight: int = 0
    started: bool = False
    done: bool = False
    episode_id: str | None = None
    seed: int | None = None
    scenario_id: str | None = None
    turn: int = 0
    result: dict[str, Any] | None = None
    """The terminal record (reward, components, termination, trajectory) once known."""
    group: GroupRun | None = None
    member: int = -1
    group_wait: bool = False
    closed: bool = False

    def state(self) -> dict[str, Any]:
        """OpenEnv's State (``episode_id``, ``step_count``) plus judgegym's fields (`SessionState`)."""
        result = self.result or {}
        return SessionState(
            episode_id=self.episode_id,
            step_count=self.turn,
            session_id=self.id,
            transport=self.transport,
            started=self.started,
            done=self.done,
            seed=self.seed,
            scenario_id=self.scenario_id,
            group_id=self.group.id if self.group is not None else None,
            group_member=self.member if self.group is not None else None,
            reward=result.get("reward"),
            components=result.get("components") or {},
            judge_failed=bool(result.get("judge_failed", False)),
            judge_pending=self.done and self.result is None,
        ).model_dump()


class EnvServer:
    """Sessions, groups and judging behind the routes of `create_app`."""

    def __init__(self, config: ServeConfig, judge: Judge | None = None):
        problems = config.problems()
        if problems:
            raise ValueError("; ".join(problems))
        self.config = config
        self.judge: Judge = judge if judge is not None else make_judge(config.judge, env_id=config.env_id)
        probe = gym.make(config.env_id, defer_judging=True, **config.env_args)  # fail at start, not at the first reset
        self.env_id = probe.spec.id if probe.spec else config.env_id
        self.description = (type(probe.unwrapped).__doc__ or "").strip().splitlines()[0] if type(probe.unwrapped).__doc__ else ""
        probe.close()
        self.sessions: dict[str, Session] = {}
        self.groups: dict[str, GroupRun] = {}
        self.finished_groups: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.pool = ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="judgegym-env")
        self.closed_sessions = 0

    # -- sessions -----------------------------------------------------------------------

    def open_session(self, transport: str) -> Session:
        if len(self.sessions) >= self.config.max_concurrent_envs:
            raise ProtocolError(
                503,
                f"the server is at capacity ({len(self.sessions)} of {self.config.max_concurrent_envs} sessions); "
                "close a session or start the server with a larger --max-concurrent-envs",
                "CAPACITY_REACHED",
            )
        session = Session(id=secrets.token_hex(8), transport=transport)
        self.sessions[session.id] = session
        return session

    def session(self, session_id: str | None) -> Session:
        session = self.sessions.get(session_id or "")
        if session is None:
            raise ProtocolError(
                404,
                f"unknown session {session_id!r}: it was closed, or timed out after {self.config.session_timeout_s:g} s idle; "
                "reset without a session_id to open one",
                "SESSION_ERROR",
            )
        return session

    async def close_session(self, session: Session, reason: str) -> None:
        """Free a session's env; a group member that had not finished fails its group."""
        if session.closed:
            return
        session.closed = True
        self.sessions.pop(session.id, None)
        self.closed_sessions += 1
        self._leave_group(session, reason)
        if session.env is not None:
            env, session.env = session.env, None
            await asyncio.get_running_loop().run_in_executor(self.pool, env.close)

    async def reap(self) -> None:
        """Close idle sessions and overdue groups, forever (a background task)."""
        interval = min(5.0, self.config.session_timeout_s / 4, self.config.group_timeout_s / 4)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.reap_once()
            except Exception:  # the reaper must outlive any one bad session
                log.exception("session reaper")

    async def reap_once(self) -> None:
        now = time.monotonic()
        for session in list(self.sessions.values()):
            if session.in_flight == 0 and now - session.last_active > self.config.session_timeout_s:
                log.info("closing session %s: idle for %.0f s", session.id, now - session.last_active)
                await self.close_session(session, "idle past the session timeout")
        for group in list(self.groups.values()):
            if not group.judged.is_set() and now - group.opened > self.config.group_timeout_s:
                self._fail_group(
                    group,
                    f"the group did not finish within {self.config.group_timeout_s:g} s "
                    f"({len(group.trajectories)} of {group.size} members ended)",
                )
            self._retire_if_over(group)

    # -- episodes -----------------------------------------------------------------------

    async def reset(self, session: Session, data: ResetData) -> dict[str, Any]:
        unknown = sorted(set(data.env_args) - CLIENT_ENV_ARGS)
        if unknown:
            raise ProtocolError(
                422, f"env_args {unknown} are fixed by the server (judgegym serve --env-arg); a client may set {sorted(CLIENT_ENV_ARGS)}"
            )
        if (data.group_id is None) != (data.group_size is None):
            raise ProtocolError(422, "a group reset needs both group_id and group_size")
        defer = bool(data.env_args.get("defer_judging", False))
        if data.group_id is not None and defer:
            raise ProtocolError(422, "a group is judged by the server; defer_judging is for sessions whose client judges")
        if self.judge.relative and data.group_id is None and not defer:
            raise ProtocolError(
                422,
                f"this server's judge ({self.config.judge}) is relative and scores whole groups: reset with group_id and group_size "
                "(G members sharing a scenario), or with env_args {'defer_judging': true} to get unscored trajectories",
            )
        env_args = {k: v for k, v in data.env_args.items() if k != "defer_judging"}
        seed, options = data.seed, data.options
        self._leave_group(session, "reset")
        await self._ensure_env(session, env_args)
        assert session.env is not None
        if data.group_id is not None:
            group = self._join_group(session, data, env_args)
            seed, options = group.seed, group.options
        elif seed is None:
            seed = secrets.randbelow(2**31 - 1)
        session.started = False
        try:
            messages, info = await self._run(session.env.reset, seed=seed, options=options)
        except (ValueError, KeyError, TypeError, IndexError) as exc:  # a bad option or seed for this env
            self._leave_group(session, "had its reset refused")
            raise ProtocolError(422, f"reset refused by {self.env_id}: {type(exc).__name__}: {exc}") from None
        session.defer_judging = defer
        session.started, session.done, session.turn, session.result = True, False, 0, None
        session.seed, session.scenario_id, session.episode_id = seed, info.get("scenario_id"), data.episode_id
        return observation_reply(messages, info, session_id=session.id, reward=None)

    async def step(self, session: Session, action: ActionData) -> dict[str, Any]:
        if not session.started or session.env is None:
            raise ProtocolError(409, "no episode in this session: reset first", "SESSION_ERROR")
        if session.done:
            raise ProtocolError(409, "this episode has ended: reset to start another", "SESSION_ERROR")
        messages, reward, terminated, truncated, info = await self._run(session.env.step, action.env_action())
        session.turn += 1
        if not (terminated or truncated):
            return observation_reply(messages, info, session_id=session.id, reward=float(reward))
        session.done = True
        trajectory: Trajectory = info["trajectory"]
        if session.defer_judging:  # the client judges: the local env's defer_judging reply
            session.result = {"reward": None, "termination": info["termination"], "trajectory": trajectory}
            return observation_reply(messages, info, session_id=session.id, reward=0.0, terminated=terminated, truncated=truncated)
        if session.group is None:
            record = (await self._judge([trajectory]))[0]
        else:
            record = await self._finish_member(session, trajectory)
        record = {**record, "termination": info["termination"], "turn": info.get("turn", session.turn)}
        session.result = record
        reward_out = record.get("reward")
        return observation_reply(messages, record, session_id=session.id, reward=reward_out, terminated=terminated, truncated=truncated)

    async def _judge(self, trajectories: list[Trajectory]) -> list[dict[str, Any]]:
        """Score trajectories of one scenario with one `score_group`; one record each. A
        failing judge gives records with ``judge_failed`` (reward None), never a zero."""
        group = Group(scenario_id=trajectories[0].scenario_id, trajectories=trajectories)
        try:
            scores: list[JudgeScore] = await self.judge.score_group(group)
            if len(scores) != len(trajectories):
                raise ValueError(
                    f"{type(self.judge).__name__}.score_group returned {len(scores)} scores for {len(trajectories)} trajectories"
                )
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            log.warning("judge failed on %s: %s", group.scenario_id, error)
            return [{"reward": None, "trajectory": t, "judge_failed": True, "judge_error": error} for t in trajectories]
        records = []
        for trajectory, score in zip(trajectories, scores, strict=True):
            record_score(trajectory, score)
            records.append(
                {
                    "reward": float(score.score),
                    "trajectory": trajectory,
                    "judge_score": score,
                    "components": dict(score.components),
                    "explanation": score.explanation,
                    "judge_failed": False,
                }
            )
        return records

    # -- groups -------------------------------------------------------------------------

    def _join_group(self, session: Session, data: ResetData, env_args: dict[str, Any]) -> GroupRun:
        assert data.group_id is not None and data.group_size is not None
        group = self.groups.get(data.group_id)
        if group is None:
            seed = data.seed if data.seed is not None else secrets.randbelow(2**31 - 1)
            group = GroupRun(id=data.group_id, size=data.group_size, seed=seed, options=data.options, env_args=env_args)
            self.groups[group.id] = group
        elif group.size != data.group_size:
            raise ProtocolError(409, f"group {group.id!r} has {group.size} members, not {data.group_size}")
        elif len(group.members) >= group.size:
            raise ProtocolError(409, f"group {group.id!r} is full ({group.size} members joined); use a new group_id for the next group")
        elif data.seed is not None and data.seed != group.seed or data.options is not None and data.options != group.options:
            raise ProtocolError(
                409, f"group {group.id!r} plays seed {group.seed} with options {group.options}; its members share one scenario"
            )
        elif env_args != group.env_args:
            raise ProtocolError(409, f"group {group.id!r} plays with env_args {group.env_args}; its members share one configuration")
        elif group.failed:
            raise ProtocolError(409, f"group {group.id!r} has failed ({group.error}); use a new group_id")
        session.group, session.member, session.group_wait = group, len(group.members), data.group_wait
        group.members.append(session)
        return group

    def _leave_group(self, session: Session, reason: str) -> None:
        """A member leaves its group (it closed, or reset into another episode). Leaving
        before its episode ended fails the group; the last to leave a judged group retires it."""
        group, session.group = session.group, None
        if group is None:
            return
        group.departed += 1
        if not group.judged.is_set() and session.member not in group.trajectories:
            self._fail_group(group, f"member {session.member} (session {session.id}) {reason} before its episode ended")
        self._retire_if_over(group)

    def _retire_if_over(self, group: GroupRun) -> None:
        """Drop a judged group whose members have all left; its status stays readable for a
        while (`finished_groups`, bounded) so a client that reads results late still can."""
        if group.judged.is_set() and group.departed >= len(group.members) and self.groups.get(group.id) is group:
            del self.groups[group.id]
            self.finished_groups[group.id] = group.status()
            while len(self.finished_groups) > 4 * self.config.max_concurrent_envs:
                self.finished_groups.popitem(last=False)

    async def _finish_member(self, session: Session, trajectory: Trajectory) -> dict[str, Any]:
        group = session.group
        assert group is not None
        if group.failed:
            return {"reward": None, "trajectory": trajectory, "judge_failed": True, "judge_error": group.error, "group_id": group.id}
        group.trajectories[session.member] = trajectory
        if len(group.trajectories) == group.size:
            group.results = await self._judge([group.trajectories[i] for i in range(group.size)])
            group.judged.set()
            summary = [
                {"index": i, "reward": r["reward"], "session_id": m.id}
                for i, (r, m) in enumerate(zip(group.results, group.members, strict=True))
            ]
            for member, result in zip(group.members, group.results, strict=True):
                if member is not session and member.group is group and member.done:
                    member.result = {**(member.result or {}), **result}
            return {**group.results[session.member], "group_id": group.id, "group": summary}
        if session.group_wait:
            remaining = max(0.0, self.config.group_timeout_s - (time.monotonic() - group.opened))
            try:
                await asyncio.wait_for(group.judged.wait(), timeout=remaining)
            except TimeoutError:
                self._fail_group(group, f"the group did not finish within {self.config.group_timeout_s:g} s")
            assert group.results is not None
            return {**group.results[session.member], "group_id": group.id}
        return {"reward": None, "trajectory": trajectory, "judge_pending": True, "group_id": group.id}

    def _fail_group(self, group: GroupRun, error: str) -> None:
        if group.judged.is_set():
            return
        log.warning("group %s failed: %s", group.id, error)
        group.error = error
        group.results = [
            {"reward": None, "trajectory": group.trajectories.get(i), "judge_failed": True, "judge_error": error} for i in range(group.size)
        ]
        for member in group.members:
            if member.group is group and member.done:
                member.result = {**(member.result or {}), **group.results[member.member]}
        group.judged.set()

    async def group_status(self, group_id: str, wait_s: float) -> dict[str, Any]:
        group = self.groups.get(group_id)
        if group is None and group_id in self.finished_groups:
            return self.finished_groups[group_id]
        if group is None:
            raise ProtocolError(404, f"unknown group {group_id!r} (never opened, or all its members have closed)", "SESSION_ERROR")
        if wait_s > 0 and not group.judged.is_set():
            try:
                await asyncio.wait_for(group.judged.wait(), timeout=wait_s)
            except TimeoutError:
                pass
        return group.status()

    # -- helpers ------------------------------------------------------------------------

    async def _ensure_env(self, session: Session, env_args: dict[str, Any]) -> None:
        key = json.dumps(env_args, sort_keys=True, default=str)
        if session.env is not None and session.env_key == key:
            return
        if session.env is not None:
            await self._run(session.env.close)
        kwargs = {**self.config.env_args, **env_args, "defer_judging": True}
        try:
            session.env = await self._run(gym.make, self.config.env_id, **kwargs)
        except (ValueError, TypeError) as exc:
            session.env = None
            raise ProtocolError(422, f"cannot make {self.env_id} with env_args {env_args}: {exc}") from None
        session.env_key = key

    async def _run(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.pool, lambda: fn(*args, **kwargs))

    def capacity(self) -> dict[str, Any]:
        return {
            "active_sessions": len(self.sessions),
            "max_sessions": self.config.max_concurrent_envs,
            "groups": len(self.groups),
            "closed_sessions": self.closed_sessions,
        }


class _Guard:
    """ASGI middleware in front of every route: the token (HTTP 401, or a WebSocket refused
    at the handshake) and the body size limit (HTTP 413). Pure ASGI, so it costs a few
    microseconds a request and covers WebSockets too."""

    def __init__(self, app: Any, *, token: str | None, max_body_bytes: int):
        self.app, self.token, self.max_body_bytes = app, token, max_body_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        if self.token is not None and scope.get("path") != "/health" and not self._authorised(headers, scope.get("query_string", b"")):
            if scope["type"] == "websocket":
                return await send({"type": "websocket.close", "code": 1008, "reason": "missing or wrong token"})
            return await JSONResponse({"detail": "missing or wrong token: send 'Authorization: Bearer TOKEN' (or ?token=TOKEN)"}, 401)(
                scope, receive, send
            )
        length = headers.get("content-length")
        if scope["type"] == "http" and length is not None and (not length.isdigit() or int(length) > self.max_body_bytes):
            return await JSONResponse({"detail": f"request body over {self.max_body_bytes} bytes"}, 413)(scope, receive, send)
        return await self.app(scope, receive, send)

    def _authorised(self, headers: dict[str, str], query_string: bytes) -> bool:
        from urllib.parse import parse_qs

        assert self.token is not None
        given = (parse_qs(query_string.decode("latin-1")).get("token") or [""])[0]
        header = headers.get(TOKEN_HEADER.lower(), "")
        if header.lower().startswith("bearer "):
            given = header[7:].strip()
        return hmac.compare_digest(given.encode(), self.token.encode())


def _encode(record: dict[str, Any]) -> dict[str, Any]:
    return encode_info(record)


def _readable(exc: ValidationError | RequestValidationError, what: str) -> str:
    parts = []
    for error in exc.errors()[:5]:
        location = ".".join(str(p) for p in error.get("loc", ()) if p not in ("body",)) or what
        parts.append(f"{location}: {error.get('msg', 'invalid')}")
    return f"invalid {what}: " + "; ".join(parts)


def create_app(config: ServeConfig, *, judge: Judge | None = None) -> FastAPI:
    """The FastAPI app serving `config.env_id`: OpenEnv's routes (``/ws``, ``/reset``,
    ``/step``, ``/state``, ``/health``, ``/metadata``, ``/schema``) plus ``/sessions`` and
    ``/groups/{id}``. `judge`: a `Judge` object instead of ``config.judge``'s spec."""
    server = EnvServer(config, judge)

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ARG001
        reaper = asyncio.create_task(server.reap())
        try:
            yield
        finally:
            reaper.cancel()
            for session in list(server.sessions.values()):
                await server.close_session(session, "closed by the server's shutdown")
            server.pool.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(title=f"judgegym: {server.env_id}", version=judgegym.__version__, lifespan=lifespan)
    app.state.server = server

    app.add_middleware(_Guard, token=config.token, max_body_bytes=config.max_body_bytes)

    @app.exception_handler(ProtocolError)
    async def protocol_error(request: Request, exc: ProtocolError) -> JSONResponse:  # noqa: ARG001
        return JSONResponse({"detail": exc.message, "code": exc.code}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:  # noqa: ARG001
        return JSONResponse({"detail": _readable(exc, "request"), "code": "VALIDATION_ERROR"}, status_code=422)

    async def body_of(request: Request, model: type[BaseModel], what: str) -> Any:
        raw = await request.body()
        if len(raw) > config.max_body_bytes:
            raise ProtocolError(413, f"request body over {config.max_body_bytes} bytes")
        try:
            payload = json.loads(raw) if raw.strip() else {}
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ProtocolError(400, f"the body is not JSON: {exc}") from None
        if not isinstance(payload, dict):
            raise ProtocolError(422, f"a {what} body is a JSON object, got {type(payload).__name__}")
        try:
            return model.model_validate(payload)
        except ValidationError as exc:
            raise ProtocolError(422, _readable(exc, what)) from None

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "healthy"}

    @app.get("/metadata")
    async def metadata() -> dict[str, Any]:
        return {
            "name": server.env_id,
            "description": server.description or f"judgegym {server.env_id}",
            "version": judgegym.__version__,
            "author": "judgegym",
            "documentation_url": None,
            "readme_content": None,
        }

    @app.get("/schema")
    async def schema() -> dict[str, Any]:
        return {
            "action": ActionData.model_json_schema(),
            "observation": ChatObservation.model_json_schema(),
            "state": SessionState.model_json_schema(),
        }

    @app.get("/sessions")
    async def sessions() -> dict[str, Any]:
        return {**server.capacity(), "judge": config.judge, "env_id": server.env_id}

    @app.post("/reset")
    async def reset(request: Request) -> JSONResponse:
        data: ResetData = await body_of(request, ResetData, "reset")
        session = server.session(data.session_id) if data.session_id else server.open_session("http")
        session.in_flight += 1
        try:
            async with session.lock:
                reply = await server.reset(session, data)
        except BaseException:
            if not session.started and data.session_id is None:
                await server.close_session(session, "refused at its first reset")
            raise
        finally:
            session.in_flight -= 1
            session.last_active = time.monotonic()
        return JSONResponse(reply, headers={"X-Session-ID": session.id})

    @app.post("/step")
    async def step(request: Request) -> dict[str, Any]:
        body: StepBody = await body_of(request, StepBody, "step")
        session = server.session(body.session_id)
        session.in_flight += 1
        try:
            async with session.lock:
                return await server.step(session, body.action)
        finally:
            session.in_flight -= 1
            session.last_active = time.monotonic()

    @app.get("/state")
    async def state(session_id: str = "") -> dict[str, Any]:
        if not session_id:
            raise ProtocolError(422, "GET /state needs ?session_id=... (the id from your reset)")
        session = server.session(session_id)
        session.last_active = time.monotonic()
        return session.state()

    @app.delete("/sessions/{session_id}", status_code=204)
    async def close(session_id: str) -> Response:
        await server.close_session(server.session(session_id), "closed by its client")
        return Response(status_code=204)

    @app.get("/groups/{group_id}")
    async def group(group_id: str, wait: float = 0.0) -> dict[str, Any]:
        if not wait >= 0:
            raise ProtocolError(422, f"wait is a number of seconds >= 0, got {wait}")
        return await server.group_status(group_id, min(wait, config.group_timeout_s))

    @app.websocket("/ws")
    async def websocket(ws: WebSocket) -> None:
        await ws.accept()
        try:
            session = server.open_session("ws")
        except ProtocolError as exc:
            await ws.send_text(_ws_error(exc))
            await ws.close(code=1013)
            return
        try:
            while True:
                raw = await ws.receive_text()
                session.in_flight += 1
                try:
                    async with session.lock:
                        reply = await _ws_reply(server, session, raw)
                except ProtocolError as exc:
                    reply = _ws_error(exc)
                except Exception as exc:  # an env bug: report it, keep the server and the session
                    log.exception("session %s", session.id)
                    reply = _ws_error(ProtocolError(500, f"{type(exc).__name__}: {exc}", "EXECUTION_ERROR"))
                finally:
                    session.in_flight -= 1
                    session.last_active = time.monotonic()
                if reply is None:  # "close"
                    break
                await ws.send_text(reply)
        except WebSocketDisconnect:
            pass
        finally:
            await server.close_session(session, "disconnected")
            try:
                await ws.close()
            except (RuntimeError, WebSocketDisconnect):  # the client is already gone
                pass

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> JSONResponse:  # noqa: ARG001
        log.exception("%s %s", request.method, request.url.path)
        return JSONResponse({"detail": f"the env raised {type(exc).__name__}: {exc}", "code": "EXECUTION_ERROR"}, status_code=500)

    return app


async def _ws_reply(server: EnvServer, session: Session, raw: str) -> str | None:
    """One OpenEnv WebSocket message in, its reply out (None for "close")."""
    if len(raw) > server.config.max_body_bytes:
        raise ProtocolError(413, f"message over {server.config.max_body_bytes} bytes")
    try:
        message = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ProtocolError(400, f"Invalid JSON: {exc}", "INVALID_JSON") from None
    if not isinstance(message, dict):
        raise ProtocolError(422, f"a message is a JSON object with a 'type', got {type(message).__name__}")
    kind, data = message.get("type"), message.get("data")
    extra = sorted(set(message) - {"type", "data"})
    if extra:
        raise ProtocolError(422, f"unknown message fields {extra}: a message is {{'type', 'data'}}")
    if kind == "close":
        return None
    if kind == "state":
        return json.dumps({"type": "state", "data": session.state()})
    if kind not in ("reset", "step"):
        raise ProtocolError(422, f"Unknown message type: {kind!r} (known: reset, step, state, close)", "UNKNOWN_TYPE")
    if data is None and kind == "reset":
        data = {}
    if not isinstance(data, dict):
        what = "reset parameters" if kind == "reset" else "an action (an assistant turn: {'content': ...} or {'tool_calls': [...]})"
        raise ProtocolError(422, f"{kind} data must be {what} as a JSON object, got {type(data).__name__}")
    try:
        if kind == "reset":
            if data.get("session_id") not in (None, session.id):
                raise ProtocolError(422, "session_id is for HTTP; a WebSocket connection is its own session")
            reply = await server.reset(session, ResetData.model_validate(data))
        else:
            reply = await server.step(session, ActionData.model_validate(data))
    except ValidationError as exc:
        raise ProtocolError(422, _readable(exc, "reset" if kind == "reset" else "action")) from None
    return json.dumps({"type": "observation", "data": reply})


def _ws_error(exc: ProtocolError) -> str:
    return json.dumps({"type": "error", "data": {"message": exc.message, "code": exc.code, "status": exc.status}})


def serve(config: ServeConfig, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info") -> None:
    """Run the server with uvicorn until interrupted (what ``judgegym serve`` calls)."""
    import uvicorn

    if host not in LOOPBACK and config.token is None:
        log.warning("serving on %s without a token: anyone who can reach the port can play (and judge) episodes; pass --token", host)
    elif host not in LOOPBACK and config.ssl_certfile is None:
        log.warning("serving on %s without TLS: the token crosses the network in clear text; pass --ssl-certfile/--ssl-keyfile", host)
    app = create_app(config)
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        ws_max_size=config.max_body_bytes,
        timeout_graceful_shutdown=5,
        ssl_certfile=config.ssl_certfile,
        ssl_keyfile=config.ssl_keyfile,
    )


__all__ = ["EnvServer", "ProtocolError", "ServeConfig", "create_app", "serve"]
