"""Hypothesis strategies for agent actions: junk, malformed tool calls, huge and odd text.

Shared by the env fuzz tests; `tool_name_pool` lets a test mix in its env's real tool names,
and `checked_step` asserts the env contract on every step."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from judgegym.judges.base import SCORE_FLOOR


def action_strategy(tool_name_pool: list[str], argument_strategies: list[st.SearchStrategy]) -> st.SearchStrategy:
    """Any action an agent could send: text (with or without ``<tool_call>`` blocks, huge,
    empty), OpenAI-style dicts (valid or broken), and non-text junk. Tool names come from
    `tool_name_pool` (plus variants and random text), arguments from `argument_strategies`
    plus random JSON."""
    json_values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
        lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
        max_leaves=12,
    )
    tool_names = st.sampled_from(
        [*tool_name_pool, *(n.upper() for n in tool_name_pool), *(n + " " for n in tool_name_pool), "", "lookup", "x\x00"]
    ) | st.text(max_size=12)
    arguments = st.one_of(*argument_strategies, st.dictionaries(st.text(max_size=10), json_values, max_size=4), json_values)
    raw_arguments = arguments.map(lambda a: json.dumps(a)) | st.text(max_size=80)
    native_call = st.fixed_dictionaries(
        {
            "id": st.text(max_size=8),
            "type": st.just("function"),
            "function": st.fixed_dictionaries({"name": tool_names, "arguments": raw_arguments | arguments}),
        }
    )
    dict_action = st.fixed_dictionaries(
        {"role": st.sampled_from(["assistant", "assistant", "user", "tool", 3])},
        optional={
            "content": st.none() | st.text(max_size=200) | st.integers(),
            "tool_calls": st.lists(native_call | json_values, max_size=4) | json_values,
        },
    )
    text_call = st.builds(
        lambda name, args: f'<tool_call>{{"name": {json.dumps(name)}, "arguments": {args}}}</tool_call>',
        tool_names,
        raw_arguments,
    )
    fragments = st.sampled_from(["<tool_call>", "</tool_call>", "<think>", "</think>", "{", "}", '"name"', ":", "[", "]", "\n"])
    text_action = st.one_of(
        st.text(max_size=300),
        st.lists(st.one_of(text_call, fragments, st.text(max_size=40)), max_size=8).map("".join),
        st.just(""),
        st.integers(100_000, 400_000).map(lambda n: "x" * n),
        st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=50).map(lambda s: s * 500),
    )
    junk = st.one_of(st.none(), st.integers(), st.floats(), st.binary(max_size=20), st.lists(st.integers(), max_size=3), json_values)
    return st.one_of(text_action, text_action, dict_action, dict_action, junk)


def checked_step(env: Any, action: Any, turns: int, max_turns: int) -> tuple[bool, dict[str, Any]]:
    """Step `action` (the episode's turn number `turns`, counted from 1) and assert the
    contract: observations stay in the space, rewards in [-1, 1] (below 0 only for proven harm), 0 before the end, the judged
    reward at the end, and `max_turns` always ends the episode. Returns (episode over, info)."""
    observation, reward, terminated, truncated, info = env.step(action)
    assert env.observation_space.contains(observation)
    assert isinstance(terminated, bool) and isinstance(truncated, bool)
    assert math.isfinite(reward) and SCORE_FLOOR <= reward <= 1.0
    if terminated or truncated:
        assert info["trajectory"].reward == reward and turns <= max_turns
        assert truncated == (info["termination"] in ("max_turns", "max_tool_calls"))
    else:
        assert reward == 0.0 and turns < max_turns, "the turn limit must end the episode"
    return terminated or truncated, info


def fuzz_episodes(env: Any, seed: int, actions: list[Any], max_turns: int) -> None:
    """Step every action with `checked_step`; when an episode ends, the next one starts."""
    observation, _ = env.reset(seed=seed)
    assert env.observation_space.contains(observation)
    turns = 0
    for action in actions:
        turns += 1
        done, _ = checked_step(env, action, turns, max_turns)
        if done:
            env.reset(seed=seed + turns)
            turns = 0


# -- example budgets -----------------------------------------------------------------------------
# Two Hypothesis profiles. `ci` runs each property with the example count it states (the count it
# was written with); `dev`, the default on a developer's machine, runs a fifth of it (at least
# 10). tests/conftest.py loads `ci` where the CI variable is set, else `dev`; HYPOTHESIS_PROFILE or
# pytest's --hypothesis-profile picks one by name. Without conftest (the plug-in scripts run with
# --noconftest) Hypothesis's default profile applies, which has CI's scale. Neither profile
# fails a property for slow input generation (HealthCheck.too_slow): on two loaded cores the first
# draws pay for imports and caches, and how long a test takes is the benchmarks' business.
CI_EXAMPLES = 100  # Hypothesis's own default; a property that states no count gets this many in CI
PROFILES = {"ci": CI_EXAMPLES, "dev": CI_EXAMPLES // 5}
for _name, _count in PROFILES.items():
    settings.register_profile(_name, max_examples=_count, suppress_health_check=[HealthCheck.too_slow])


def examples(ci: int) -> int:
    """The example count for a property that runs `ci` examples in CI, scaled to the loaded profile:
    `ci` under the ci profile (and Hypothesis's default), a fifth of it (at least 10) under dev.
    Call it inside ``@settings(max_examples=...)``, which is evaluated when the module is imported,
    after the profile is loaded."""
    scale = settings.default.max_examples / CI_EXAMPLES
    return ci if scale >= 1 else max(min(ci, 10), round(ci * scale))
