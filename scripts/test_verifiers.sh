#!/usr/bin/env bash
# Run tests/test_plugin_verifiers.py against the real verifiers (Prime Intellect), in its own virtualenv.
#
#   scripts/test_verifiers.sh [PYTEST_ARGS...]
#
# verifiers 0.4 pins its own stack (openai>=2.54, mcp==2.0.0, numpy>=2.1, ...), so it does not
# share .venv; one resolve installs it with judgegym (no torch: judgegym's verifier judges need
# none). The env (.venv-verifiers, or $VERIFIERS_VENV) is reused when it exists. The test file
# runs without tests/conftest.py, which needs torch.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${VERIFIERS_VENV:-.venv-verifiers}
verifiers_version=${VERIFIERS_VERSION:-0.4.0}

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q "verifiers==$verifiers_version" -e . "pytest>=8" "hypothesis>=6.100"

export LITELLM_LOCAL_MODEL_COST_MAP=True  # no cost-map download at import
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
"$venv/bin/python" -c '
import verifiers.v1, judgegym
from importlib.metadata import version
print("verifiers", version("verifiers"), "| openai", version("openai"), "| litellm", version("litellm"), "| judgegym", judgegym.__version__)'
exec "$venv/bin/python" -m pytest --noconftest -p no:cacheprovider tests/test_plugin_verifiers.py "$@"
