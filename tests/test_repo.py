"""The README's two commands stay what CI and users run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^python3 -m venv .*$", readme, re.MULTILINE)
    assert len(commands) == 2, "the README must show exactly two set-up commands"
    assert commands[1].endswith("python -m pytest")
    assert commands[1] in (ROOT / ".ci" / "run").read_text()
