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


# The import layers of docs/architecture.md, top first: a module may import its own layer and the ones below.
LAYERS = [
    {"cli", "benchmarks", "integrations", "__init__"},  # the package __init__ registers the envs,
    {"trainers"},
    {"evaluation"},
    {"agents"},
    {"envs"},
    {"judges"},
    {"models", "chat_format"},
    {"trajectory", "tools", "parsing", "spaces", "jsonl"},
]
# Deliberate exceptions (docs/architecture.md): scripted baselines implement the Agent protocol.
ALLOWED_UPWARD = {("envs", "agents.base")}


def _layer(top: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if top in names)


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
                names += [f"{module}.{a.name}" for a in node.names if module == "judgegym" or module.count(".") == 0]
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names if a.name.startswith("judgegym")]
    return names


def test_no_module_imports_a_higher_layer():
    upward = []
    for path in sorted((ROOT / "judgegym").rglob("*.py")):
        own = path.relative_to(ROOT / "judgegym").parts[0].removesuffix(".py")
        for name in _imports(path):
            parts = name.split(".")
            if len(parts) < 2:
                continue
            target = parts[1]
            if _layer(target) < _layer(own) and (own, ".".join(parts[1:3])) not in ALLOWED_UPWARD:
                upward.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)
