"""The wire protocol lives once (`judgegym.serving.protocol`): the server, `RemoteEnv` and the
OpenEnv client share its very objects, and importing it loads no FastAPI."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import judgegym.envs.remote as remote
import judgegym.serving.protocol as protocol
import judgegym.serving.server as server
from judgegym.judges.base import JudgeScore
from judgegym.trajectory import Trajectory

openenv_spec = importlib.util.find_spec("judgegym.integrations.openenv")


def test_server_and_remote_env_use_the_protocol_objects():
    for name in ("CLIENT_ENV_ARGS", "TOKEN_HEADER", "ActionData", "ChatObservation", "ResetData", "SessionState", "StepBody"):
        assert getattr(server, name) is getattr(protocol, name), name
    assert server.observation_reply is protocol.observation_reply
    assert server.encode_info is protocol.encode_info
    for name in ("CLIENT_ENV_ARGS", "TOKEN_ENV", "TOKEN_HEADER", "decode_info", "http_url", "wire_action", "ws_url"):
        assert getattr(remote, name) is getattr(protocol, name), name


def test_openenv_client_imports_the_protocol():
    """Read, not imported: importing openenv-core's client takes seconds."""
    tree = ast.parse(Path(openenv_spec.origin).read_text(encoding="utf-8"))
    sources = {(node.level, node.module): {a.name for a in node.names} for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "decode_info" in sources[(2, "serving.protocol")]
    assert not any(module and "remote" in module for _, module in sources), sources


def test_decode_info_inverts_encode_info():
    trajectory = Trajectory(scenario_id="s", env_id="e", messages=[])
    score = JudgeScore(score=0.5, components={"a": 0.5})
    wire = protocol.encode_info({"trajectory": trajectory, "judge_score": score, "turn": 2})
    assert wire["trajectory"] == trajectory.model_dump(mode="json")
    decoded = protocol.decode_info(wire)
    assert decoded["trajectory"] == trajectory and decoded["judge_score"] == wire["judge_score"]
    decoded = protocol.decode_info(wire, {**protocol.INFO_TYPES, "judge_score": JudgeScore})
    assert decoded["judge_score"] == score and decoded["turn"] == 2


def test_importing_the_protocol_loads_no_fastapi():
    code = (
        "import sys, judgegym.serving.protocol\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fastapi', 'starlette', 'uvicorn')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]", result.stdout
