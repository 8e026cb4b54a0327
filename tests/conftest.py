"""Shared fixtures: small RagSupport envs (a 20-product world builds in milliseconds), a tiny
random model saved as a transformers folder, and one torch thread for tiny-model tests."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch
from tiny_models import save_tiny_model

import judgegym  # noqa: F401  (registers the envs)


@pytest.fixture
def rag_env():
    env = gym.make("RagSupport-v0", split="test", n_products=20, n_worlds=2)
    yield env
    env.close()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    """The folder of a tiny random Llama and its tokenizer (tests/tiny_models.py)."""
    return str(save_tiny_model(tmp_path_factory.mktemp("tiny-llama")))


@pytest.fixture
def one_thread():
    """A 32-wide model runs fastest on one thread (and is not slowed by a busy machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
