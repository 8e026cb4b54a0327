"""Shared fixtures: small RagSupport envs (a 20-product world builds in milliseconds)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import judgegym  # noqa: F401  (registers the envs)


@pytest.fixture
def rag_env():
    env = gym.make("RagSupport-v0", split="test", n_products=20, n_worlds=2)
    yield env
    env.close()
