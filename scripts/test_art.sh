#!/usr/bin/env bash
# Run tests/test_plugin_art.py against the real OpenPipe ART, in its own virtualenv.
#
#   scripts/test_art.sh [PYTEST_ARGS...]
#
# ART pins litellm<=1.82, so it cannot share .venv; judgegym needs litellm>=1.60 (and only for
# LLM judges), so one resolve installs both. The env (.venv-art, or $ART_VENV) is reused when
# it exists. The test file runs without tests/conftest.py, which needs torch.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${ART_VENV:-.venv-art}
art_version=${ART_VERSION:-0.5.18}

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q "openpipe-art==$art_version" -e . "pytest>=8" "hypothesis>=6.100"

export LITELLM_LOCAL_MODEL_COST_MAP=True  # no cost-map download at import
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
"$venv/bin/python" -c '
import art, judgegym
from importlib.metadata import version
print("openpipe-art", version("openpipe-art"), "| litellm", version("litellm"), "| judgegym", judgegym.__version__)'
exec "$venv/bin/python" -m pytest --noconftest -p no:cacheprovider tests/test_plugin_art.py "$@"
