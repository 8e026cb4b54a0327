"""The README's two commands stay what CI and users run."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium as gym
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^python3 -m venv .*$", readme, re.MULTILINE)
    assert len(commands) == 2, "the README must show exactly two set-up commands"
    return commands


def test_ci_runs_the_readme_test_command_and_the_slow_tier():
    commands = _readme_commands()
    assert commands[0].endswith("judgegym demo")
    assert commands[1].endswith("python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci
    assert ".venv/bin/python -m pytest -m slow" in ci.split(commands[1], 1)[1], "CI runs the slow tier after the README's fast tier"
    readme = (ROOT / "README.md").read_text()
    assert "pytest -m slow" in readme and "pytest -m ''" in readme, "the README says how to run the slow tier and both"


def test_plain_pytest_runs_the_fast_tier():
    import shlex
    import tomllib

    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    addopts = shlex.split(options["addopts"])
    assert addopts[addopts.index("-m") + 1] == "not slow"
    assert any(m.startswith("slow:") for m in options["markers"]) and "--strict-markers" in addopts


@pytest.fixture(scope="module")
def recorded_tiers(request, tmp_path_factory) -> dict[str, tuple[float, bool]]:
    """{test id: (seconds recorded, marked slow)} for every test in tests/durations.json that
    still exists. The marks come from this session's collection where it covered the test's
    file (a plain `pytest` collects every file before `-m` deselects), else from collecting
    the other files once."""
    import json
    import subprocess
    import sys

    from conftest import DURATIONS, MARKED_SLOW

    recorded = json.loads(DURATIONS.read_text())
    marked = dict(request.config.stash.get(MARKED_SLOW, {}))
    seen = {test.split("::")[0] for test in marked}
    unseen = sorted({test.split("::")[0] for test in recorded} - seen)
    unseen = [path for path in unseen if (ROOT / path).exists()]
    if unseen:
        listing = tmp_path_factory.mktemp("tiers") / "tiers.json"
        command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "--list-tiers", str(listing), *unseen]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        assert done.returncode in (0, 5), done.stdout[-2000:] + done.stderr[-2000:]
        marked.update(json.loads(listing.read_text()))
    return {test: (seconds, marked[test]) for test, seconds in recorded.items() if test in marked}


def test_every_test_over_the_threshold_is_marked_slow(recorded_tiers):
    """From the durations last recorded (`pytest -m '' --record-durations`), so not a timed test:
    a test whose setup, call and teardown took over SLOW_SECONDS belongs to the slow tier."""
    from conftest import DURATIONS, SLOW_SECONDS

    assert len(recorded_tiers) > 1000, f"{DURATIONS.name} has lost most of the suite: record it again"
    unmarked = sorted(
        f"{test} ({seconds:.1f} s)" for test, (seconds, slow) in recorded_tiers.items() if seconds > SLOW_SECONDS and not slow
    )
    assert not unmarked, f"over {SLOW_SECONDS:g} s in {DURATIONS.name} but not marked slow:\n" + "\n".join(unmarked)


def test_each_tier_stays_within_its_budget(recorded_tiers):
    """The recorded seconds of each tier add up to no more than its budget, so the fast tier keeps
    the README's time and CI keeps well inside its limit as the suite grows."""
    from conftest import DURATIONS, TIER_BUDGETS

    totals = {"fast": 0.0, "slow": 0.0}
    for seconds, slow in recorded_tiers.values():
        totals["slow" if slow else "fast"] += seconds
    over = {tier: f"{total:.0f} s > {TIER_BUDGETS[tier]:.0f} s" for tier, total in totals.items() if total > TIER_BUDGETS[tier]}
    assert not over, f"tiers over budget in {DURATIONS.name}: {over}; make tests cheaper (shared fixtures, fewer examples) first"


# The import layers of docs/architecture.md, top first: a module may import its own layer and the ones below.
# A dotted name places a submodule apart from its package (the most specific name listed wins).
LAYERS = [
    {"cli", "__main__", "benchmarks", "integrations", "serving", "testing", "__init__",  # the package __init__ registers the envs
     "judges.learned.data", "judges.learned.training"},  # the learned judge's training drives the envs' baselines
    {"trainers"},
    {"evaluation"},
    {"agents"},
    {"envs"},
    {"judges"},
    {"models", "chat_format"},
    {"trajectory", "tools", "parsing", "spaces", "jsonl", "progress", "formats", "serving.protocol"},
]  # fmt: skip
# Deliberate exceptions (docs/architecture.md): scripted baselines implement the Agent protocol.
ALLOWED_UPWARD = {("envs", "agents.base")}


def _layer_name(parts: list[str]) -> str:
    """The most specific name in LAYERS that `parts` (a module path below judgegym) falls under."""
    names = set().union(*LAYERS)
    return next(".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in names)


def _layer(name: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if name in names)


def _imports(path: Path) -> list[str]:
    """Absolute judgegym module names imported by `path` (relative imports resolved)."""
    import ast

    package = list(path.relative_to(ROOT).with_suffix("").parts)[:-1]
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            if module.startswith("judgegym"):
                names.append(module)
                names += [f"{module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names if a.name.startswith("judgegym")]
    return names


def _modules() -> list[tuple[Path, list[str]]]:
    """Each judgegym module's path and its dotted place below judgegym (a package's __init__ is the package)."""
    found = []
    for path in sorted((ROOT / "judgegym").rglob("*.py")):
        parts = list(path.relative_to(ROOT / "judgegym").with_suffix("").parts)
        found.append((path, parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts))
    return found


def test_no_module_imports_a_higher_layer():
    upward = []
    for path, own in _modules():
        own_layer = _layer_name(own)
        for name in _imports(path):
            parts = name.split(".")[1:]
            if not parts:
                continue
            target = _layer_name(parts)
            if _layer(target) < _layer(own_layer) and (own[0], ".".join(parts[:2])) not in ALLOWED_UPWARD:
                upward.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)


def test_benchmarks_and_test_doubles_stay_outside_the_library():
    """Only the command line reaches the benchmarks (they measure, nothing builds on them), and
    nothing in the package imports the tests; the test doubles in `judgegym.testing` serve only
    tests and benchmarks."""
    wrong = []
    for path, own in _modules():
        for name in _imports(path):
            parts = name.split(".")[1:]
            if parts[:1] == ["benchmarks"] and own[0] not in ("cli", "benchmarks"):
                wrong.append(f"{path.relative_to(ROOT)} imports {name}")
            if parts[:1] == ["testing"] and own[0] not in ("benchmarks", "testing"):
                wrong.append(f"{path.relative_to(ROOT)} imports {name}")
        if re.search(r"^\s*(?:from|import)\s+(?:tests\b|conftest\b|tiny_models\b)", path.read_text(), re.M):
            wrong.append(f"{path.relative_to(ROOT)} imports from tests/")
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow  # imports every module of the package
def test_every_import_of_judgegym_names_something_that_exists():
    """Imports inside functions run only when their path does: a moved module must not leave one
    pointing nowhere."""
    import ast
    import importlib

    missing = []
    for path, _ in _modules():
        package = list(path.relative_to(ROOT).with_suffix("").parts)[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join([*base, node.module] if node.module else base)
                pairs = [(module, a.name) for a in node.names] if module.startswith("judgegym") else []
            elif isinstance(node, ast.Import):
                pairs = [(a.name, None) for a in node.names if a.name.startswith("judgegym")]
            else:
                continue
            for module, name in pairs:
                try:
                    imported = importlib.import_module(module)
                    if name is not None and not hasattr(imported, name):
                        importlib.import_module(f"{module}.{name}")
                except ImportError as exc:
                    missing.append(f"{path.relative_to(ROOT)}: {module} {name or ''} ({exc})")
    assert not missing, "\n".join(missing)


def test_no_module_imports_another_modules_private_names():
    """A name with a leading underscore belongs to its module: what two modules share is public."""
    import ast

    private = []
    for path, _ in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("judgegym")):
                names = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                private += [f"{path.relative_to(ROOT)}: {name} from {'.' * node.level}{node.module or ''}" for name in names]
    assert not private, "\n".join(private)


def test_the_readme_example_runs_and_scores_what_it_says():
    """The "Use it" block is a real episode: run it as written, and the comment on `reward` is
    what the verifier gives; a placeholder citation in the same answer earns no citation."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Use it", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    stated = re.search(r"^reward\s+# ([0-9.]+)", block, re.M)
    assert stated and namespace["reward"] == pytest.approx(float(stated.group(1)))
    assert namespace["terminated"] is True

    env = gym.make("RagSupport-v0", split="train")
    env.reset(seed=0)
    env.step('<tool_call>{"name": "read", "arguments": {"doc_id": "horizon-4-lite-warranty"}}</tool_call>')
    env.step('<tool_call>{"name": "read", "arguments": {"doc_id": "horizon-4-pro-warranty"}}</tool_call>')
    answer = "No: you have 30 days to return the Horizon 4 Lite [doc-id] and 45 days for the Horizon 4 Pro [doc-id], 15 days more."
    *_, info = env.step(answer)
    assert info["components"]["citation"] == 0.0 and info["components"]["recall"] == 1.0
