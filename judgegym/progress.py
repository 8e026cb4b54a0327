"""Progress of long runs (training, evaluations): a live, labelled bar in a terminal, and a
plain line per event when output goes to a file or a pipe, so that ``judgegym demo > log.txt``
shows where the run is while it runs."""

from __future__ import annotations

import resource
import sys
import time
from collections import deque
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


def format_seconds(seconds: float) -> str:
    """``75.2`` -> ``"1:15"``, ``3725`` -> ``"1:02:05"``."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class RunProgress:
    """A run of `total` units (steps, episodes) split into labelled phases.

    In a terminal it shows one bar (``label``, the current phase, units done of `total`,
    elapsed and remaining time); elsewhere it shows nothing live and `line` prints
    timestamped lines at once (flushed), which is what a log file should hold. `line` also
    prints in a terminal, above the bar. Use it as a context manager.

    Args:
        total: units in the whole run (the bar's length).
        label: what runs, e.g. ``"GRPO"``.
        completed: units already done (a resumed run).
        console: where to print (default: stdout).
        live: force the live bar (True) or plain lines (False); default: live in a terminal.
    """

    PACE_WINDOW = 5
    """`time_left` runs at the pace of this many recent units."""

    def __init__(self, total: int, *, label: str, completed: int = 0, console: Console | None = None, live: bool | None = None):
        self.console = console or Console()
        self.live = self.console.is_terminal if live is None else live
        self.label = label
        self.total = total
        self.completed = completed
        self._started_at = completed
        self.started = time.monotonic()
        self._progress: Progress | None = None
        self._task: Any = None
        self._phase = ""
        self._marks: deque[tuple[float, int]] = deque(maxlen=self.PACE_WINDOW + 1)

    def __enter__(self) -> RunProgress:
        if self.live:
            self._progress = Progress(
                TextColumn(f"[bold]{self.label}[/]"),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[note]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self.console,
            )
            self._progress.start()
            self._task = self._progress.add_task(self._phase, total=self.total, completed=self.completed, note="")
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    @property
    def elapsed(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.started

    def phase(self, text: str) -> None:
        """Label what runs now (e.g. ``"eval before training: 3/32 episodes"``); shown live only."""
        self._phase = text
        if self._progress is not None:
            self._progress.update(self._task, description=text)

    def update(self, completed: int, note: str = "") -> None:
        """Set the units done, with a short note beside the bar (e.g. ``"reward 0.31"``)."""
        self.completed = completed
        self._marks.append((time.monotonic(), completed))
        if self._progress is not None:
            self._progress.update(self._task, completed=completed, note=note)

    def time_left(self, unit_seconds: float | None = None) -> float:
        """Seconds until `total` units are done, at the pace of the last `PACE_WINDOW` units (the
        wall time between their updates, so evals and saves between units count, and a slow
        first unit that paid for loading and warm-up stops counting once others follow). With
        one update so far: `unit_seconds` per unit when given (that unit's own time), else the
        time since the start per unit done."""
        left = max(0, self.total - self.completed)
        if len(self._marks) >= 2:
            (first_time, first_done), (last_time, last_done) = self._marks[0], self._marks[-1]
            if last_done > first_done:
                return left * (last_time - first_time) / (last_done - first_done)
        if unit_seconds is not None:
            return left * unit_seconds
        return left * self.elapsed / max(1, self.completed - self._started_at)

    def line(self, text: str) -> None:
        """Print one event, prefixed with the elapsed time (above the bar in a terminal)."""
        stamped = f"[{format_seconds(self.elapsed)}] {text}"
        if self._progress is not None:
            self._progress.console.print(stamped, markup=False, highlight=False)
        else:
            self.console.print(stamped, markup=False, highlight=False, soft_wrap=True)
            self.console.file.flush()


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MiB (``ru_maxrss``). A child process's
    figure starts at its parent's peak at the time of the spawn, so measure in processes
    started from a small parent."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes on macOS, KiB on Linux


def peak_memory_line() -> str:
    """``peak memory: 5.8 GB (resident)``: what the training commands print last."""
    return f"peak memory: {peak_rss_mb() / 1024:.1f} GB (resident, this process)"


__all__ = ["RunProgress", "format_seconds", "peak_memory_line", "peak_rss_mb"]
