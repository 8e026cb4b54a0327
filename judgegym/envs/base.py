"""`ChatEnv`: the Gymnasium base class for multi-turn, tool-using chat tasks.

Observations are the conversation so far (OpenAI message dicts); actions are assistant
turns (text or message dicts). Tools run inside `step`; every malformed action becomes a
message the agent can read. The terminal step carries the judge's reward.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, SupportsFloat

import gymnasium as gym

from ..formats.chat import FORMAT_ERROR_PREFIX, NOT_EXECUTED_PREFIX, TOOL_ERROR_PREFIX
from ..judges.base import Judge, JudgeScore, record_score
from ..parsing import ActionParser, HermesParser, ParsedCall, parse_action
from ..spaces import ChatAction, Conversation
from ..tools import DEFAULT_MAX_OUTPUT_CHARS, ToolSet
from ..trajectory import Message, TerminationReason, Trajectory


@dataclass
class Episode:
    """What a subclass's `_start` returns: one scenario, ready to play.

    `task` is the JSON-able grading data stored in ``Trajectory.info["task"]`` so judges can
    re-score the trajectory later without the env. `facts` are what the agent's instructions
    state that judges and baselines need as data (CustomerSupport-v0's policy figures,
    Summarize-v0's word limit; `judgegym.formats`), published as ``info["facts"]`` at reset and
    in ``Trajectory.info`` so nobody parses them back from prompt text.
    """

    scenario_id: str
    messages: list[Message]
    tools: ToolSet
    task: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)


class ChatEnv(gym.Env[list[dict[str, Any]], Any]):
    """A multi-turn chat task with tools, judged at the end of the episode.

    Episode flow: `reset` returns the opening messages (system prompt, user turn) and, in
    ``info["tools"]``, the tool schemas. Each `step` takes one assistant turn:

    - tool calls (native ``tool_calls`` or ``<tool_call>`` text blocks) run in order and
      their results are appended as ``tool`` messages; reward 0;
    - text without calls is handed to `_on_text`; by default it is the final answer and
      the episode terminates;
    - a junk or empty action appends a ``user`` message explaining the problem (a format
      error, reward 0) and the episode goes on.

    `max_turns` assistant turns or more than `max_tool_calls` tool calls truncate the
    episode. ``max_tool_calls=0`` makes an answer-only task: ``info["tools"]`` is empty, so
    an agent or trainer offers the model no tools (calls it makes anyway are not run).
    At the end (terminated or truncated) the judge scores the trajectory; the step's reward
    is its score and ``info`` holds ``trajectory``, ``judge_score``, ``components`` and
    ``termination``.

    With ``defer_judging=True`` the env never calls its judge: the last step's reward is
    0.0 and ``info`` holds the unscored ``trajectory`` (``reward`` None), ``termination``
    and ``turn``. Whoever owns the env scores it later; the group vector env
    (`judgegym.envs.group.GroupVectorEnv`) uses this to judge G members once, together.

    Subclasses implement `_start` (build an `Episode` for a seed / options) and
    `default_judge`, and may override `_on_text` (e.g. a simulated user replying).
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}
    """``render_fps``: Gymnasium's checker wants a rate; a chat has none (one frame per step)."""

    def __init__(
        self,
        *,
        judge: Judge | None = None,
        parser: ActionParser | None = None,
        max_turns: int = 10,
        max_tool_calls: int = 20,
        max_tool_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        render_mode: str | None = None,
        defer_judging: bool = False,
    ):
        if max_turns < 1 or max_tool_calls < 0:
            raise ValueError(f"need max_turns >= 1 and max_tool_calls >= 0, got {max_turns} and {max_tool_calls}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.judge = judge if judge is not None else self.default_judge()
        if self.judge.relative:
            raise ValueError(
                f"{type(self.judge).__name__} is a relative judge and needs whole groups; "
                "use the group vector env, gym.make_vec(env_id, num_envs=G, judge=...), "
                "or call judge.score_group yourself"
            )
        self.defer_judging = defer_judging
        self.parser = parser or HermesParser()
        self.max_turns = max_turns
        self.max_tool_calls = max_tool_calls
        self.max_tool_output_chars = max_tool_output_chars
        self.render_mode = render_mode
        self.observation_space = Conversation()
        self.action_space = ChatAction()
        self._episode: Episode | None = None
        self._messages: list[Message] = []
        self._rendered = 0  # messages already printed in "human" mode
        self._observation: list[dict[str, Any]] = []
        self._done = False
        self._seed: int | None = None
        self._counters: dict[str, int] = {}

    # -- subclass API -------------------------------------------------------------------

    @abstractmethod
    def _start(self, seed: int, options: dict[str, Any]) -> Episode:
        """Build the episode for `seed` (options may name a scenario instead)."""

    @abstractmethod
    def default_judge(self) -> Judge:
        """The judge used when none is given: the task's verifier."""

    @classmethod
    def replay(cls, trajectory: Trajectory, **env_kwargs: Any) -> Trajectory:
        """`trajectory` played again in a fresh env at its seed, judged, with what the env
        records at the end (`judgegym.envs.replay.replay`)."""
        from .replay import replay

        return replay(trajectory, **env_kwargs)

    def _on_text(self, content: str) -> TerminationReason | None:
        """Handle an assistant turn without tool calls; return why the episode ends, or None.

        An env with a simulated user appends the user's reply here (`_append`) and returns
        None to go on, or a reason (e.g. ``USER_STOP``) when the user is done."""
        return TerminationReason.FINAL_ANSWER

    def _trajectory_info(self) -> dict[str, Any]:
        """Extra JSON-able episode state stored in ``Trajectory.info`` beside ``task`` (e.g.
        the final database, policy violations), so a judge can grade the trajectory
        without the env. Default: nothing."""
        return {}

    # -- Gymnasium API ------------------------------------------------------------------

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI function schemas of the current episode's tools ([] before `reset`)."""
        return self._episode.tools.schemas if self._episode else []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Start an episode. The same `seed` gives the same scenario; without one, a seed is
        drawn from the env's generator. Returns (conversation, info) where info holds
        ``scenario_id``, ``seed``, ``tools`` (schemas), ``task`` (grading data) and ``facts``
        (what the instructions state, as data; see `Episode`)."""
        super().reset(seed=seed)
        scenario_seed = seed if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        self._seed = scenario_seed
        self._episode = self._start(scenario_seed, dict(options or {}))
        self._episode.tools.max_output_chars = self.max_tool_output_chars
        self._messages, self._observation, self._rendered = [], [], 0
        for message in self._episode.messages:
            self._append(message)
        self._done = False
        if self.render_mode == "human":
            self.render()
        self._counters = {"turns": 0, "tool_calls": 0, "tool_errors": 0, "format_errors": 0}
        info = {
            "scenario_id": self._episode.scenario_id,
            "seed": scenario_seed,
            "tools": self._episode.tools.schemas if self.max_tool_calls else [],
            "task": self._episode.task,
            "facts": self._episode.facts,
            **self._episode.info,
        }
        return list(self._observation), info

    def step(self, action: Any) -> tuple[list[dict[str, Any]], SupportsFloat, bool, bool, dict[str, Any]]:
        """Play one assistant turn. Never raises for a malformed action (see class docs)."""
        if self._episode is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError("this episode has ended; call reset() to start another")
        self._counters["turns"] += 1
        parsed = parse_action(action, self.parser, f"call_{self._counters['turns']}_")
        reason: TerminationReason | None = None
        if parsed.error or not (parsed.calls or (parsed.content or "").strip()):
            self._counters["format_errors"] += 1
            problem = parsed.error or "the turn was empty"
            self._append(
                Message(
                    role="user",
                    content=f"{FORMAT_ERROR_PREFIX} Your last turn could not be used: {problem}. "
                    "Call a tool, or reply with your final answer as plain text.",
                )
            )
        elif parsed.calls:
            self._append(parsed.assistant_message())
            reason = self._run_calls(parsed.calls)
        else:
            self._append(parsed.assistant_message())
            reason = self._on_text(parsed.content or "")
        if reason is None and self._counters["turns"] >= self.max_turns:
            reason = TerminationReason.MAX_TURNS
        if self.render_mode == "human":
            self.render()
        if reason is None:
            return list(self._observation), 0.0, False, False, {"turn": self._counters["turns"]}
        return self._finish(reason)

    def render(self) -> str | None:
        """ "ansi": the conversation so far as text. "human": print the messages not printed
        yet (called by `reset` and `step` themselves, so the conversation unfolds once); None.
        Without a render mode: None (Gymnasium's contract), nothing printed."""
        if self.render_mode == "human":
            fresh = self._messages[self._rendered :]
            self._rendered = len(self._messages)
            if fresh:
                print("\n".join(render_line(m) for m in fresh), flush=True)
            return None
        if self.render_mode == "ansi":
            return "\n".join(render_line(m) for m in self._messages)
        return None

    # -- internals ----------------------------------------------------------------------

    def _append(self, message: Message) -> None:
        self._messages.append(message)
        self._observation.append(message.to_openai())

    def _run_calls(self, calls: list[ParsedCall]) -> TerminationReason | None:
        assert self._episode is not None
        reason = None
        for call in calls:
            if self._counters["tool_calls"] >= self.max_tool_calls:
                content = f"{NOT_EXECUTED_PREFIX}: the limit of {self.max_tool_calls} tool calls per episode was reached."
                reason = TerminationReason.MAX_TOOL_CALLS
            else:
                self._counters["tool_calls"] += 1
                if call.error:
                    content, failed = f"{TOOL_ERROR_PREFIX}: {call.error}.", True
                else:
                    result = self._episode.tools.execute(call.name, call.arguments)
                    content, failed = result.content, not result.ok
                self._counters["tool_errors"] += failed
            self._append(Message(role="tool", tool_call_id=call.id, name=call.name or None, content=content))
        return reason

    def trajectory(self, termination: TerminationReason | None = None) -> Trajectory:
        """The episode so far as a `Trajectory` (without reward until it is judged)."""
        if self._episode is None:
            raise RuntimeError("call reset() before asking for the trajectory")
        return Trajectory(
            scenario_id=self._episode.scenario_id,
            env_id=self.spec.id if self.spec else type(self).__name__,
            split=self._episode.info.get("split"),
            seed=self._seed,
            messages=list(self._messages),
            tools=self._episode.tools.schemas,
            termination=termination,
            metrics={k: float(v) for k, v in self._counters.items()},
            info={"task": self._episode.task, **({"facts": self._episode.facts} if self._episode.facts else {}), **self._trajectory_info()},
        )

    def _finish(self, reason: TerminationReason) -> tuple[list[dict[str, Any]], float, bool, bool, dict[str, Any]]:
        self._done = True
        trajectory = self.trajectory(reason)
        if self.defer_judging:
            info = {"trajectory": trajectory, "termination": reason.value, "turn": self._counters["turns"]}
            return list(self._observation), 0.0, not reason.truncated, reason.truncated, info
        score: JudgeScore = self.judge.score_one_sync(trajectory)
        record_score(trajectory, score)
        info = {
            "trajectory": trajectory,
            "judge_score": score,
            "components": dict(score.components),
            "termination": reason.value,
            "turn": self._counters["turns"],
        }
        return list(self._observation), float(score.score), not reason.truncated, reason.truncated, info


def render_line(message: Message) -> str:
    """One message as a line of ``render()``'s text: ``[role] content``, tool calls as ``-> name(args)``."""
    if message.tool_calls:
        calls = ", ".join(f"{c.function.name}({c.function.arguments})" for c in message.tool_calls)
        prefix = f"{message.content}\n  " if message.content else ""
        return f"[assistant] {prefix}-> {calls}"
    label = f"tool:{message.name}" if message.role == "tool" and message.name else message.role
    return f"[{label}] {message.content or ''}"


__all__ = ["ChatEnv", "Episode", "render_line"]
