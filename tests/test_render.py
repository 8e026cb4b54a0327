"""Rendering follows Gymnasium's contract: `check_env` with its render checks passes without a
warning, "ansi" returns the conversation, "human" prints each message once, and no render mode
prints nothing."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import judgegym  # noqa: F401  (registers the envs)

ENVS = {"RagSupport-v0": {"n_products": 20, "n_worlds": 1}, "CustomerSupport-v0": {}, "Summarize-v0": {}}


@pytest.mark.parametrize("env_id", ENVS)
def test_check_env_with_its_render_checks_warns_nothing(env_id, capsys):
    env = gym.make(env_id, split="test", **ENVS[env_id])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)  # also makes one env per declared render mode and renders it
    printed = capsys.readouterr().out
    question = env.unwrapped.render_mode is None and printed.count("[user] ")
    assert question == 1, printed  # the "human" env printed its first turn once


@pytest.mark.parametrize("env_id", ENVS)
def test_human_mode_prints_each_message_once_and_ansi_returns_all(env_id, capsys):
    human = gym.make(env_id, split="test", render_mode="human", **ENVS[env_id])
    human.reset(seed=3)
    human.step("<tool_call>not json</tool_call>")
    human.unwrapped.render()  # nothing new: prints nothing
    printed = capsys.readouterr().out
    ansi = gym.make(env_id, split="test", render_mode="ansi", **ENVS[env_id])
    ansi.reset(seed=3)
    ansi.step("<tool_call>not json</tool_call>")
    text = ansi.render()
    assert printed.strip() == text.strip()
    assert printed.count("[system] ") == 1
    quiet = gym.make(env_id, split="test", **ENVS[env_id])
    quiet.reset(seed=3)
    assert quiet.unwrapped.render() is None and capsys.readouterr().out == ""
