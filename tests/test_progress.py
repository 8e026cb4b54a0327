"""RunProgress: the time-left estimate follows the recent pace, not a slow first unit."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from judgegym import progress as progress_module
from judgegym.progress import RunProgress


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(progress_module.time, "monotonic", fake)
    return fake


def test_time_left_follows_the_recent_pace_after_a_slow_first_step(clock):
    with RunProgress(10, label="GRPO", console=Console(file=io.StringIO()), live=False) as run:
        clock.now += 300  # loading, a held-out eval and a first step that warms everything up
        run.update(1)
        assert run.time_left(unit_seconds=30) == pytest.approx(9 * 30)  # the step's own time, not the 300 s since start
        assert run.time_left() == pytest.approx(9 * 300)  # without it, the only pace known
        for step in range(2, 5):
            clock.now += 30
            run.update(step)
        assert run.time_left(unit_seconds=999) == pytest.approx(6 * 30)
        for step in range(5, 10):  # the window moves on: only the last PACE_WINDOW steps count
            clock.now += 10
            run.update(step)
        assert run.time_left() == pytest.approx(1 * 10)
        run.update(10)
        assert run.time_left() == 0


def test_a_resumed_run_counts_only_the_units_it_did(clock):
    with RunProgress(10, label="SFT", completed=6, console=Console(file=io.StringIO()), live=False) as run:
        clock.now += 40
        run.update(7)
        assert run.time_left() == pytest.approx(3 * 40)
