#!/usr/bin/env bash
# Set up a virtual environment with every extra and run the test suite.
#   scripts/test.sh              default suite (fast)
#   scripts/test.sh -m slow      the slow job
#   scripts/test.sh --install-only   the virtual environment only (CI times it apart from the tests)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# Activated on purpose: fast-downward (alfworld extra) builds with whatever `python` is on PATH.
source .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[all]'
if [ "${1-}" = "--install-only" ]; then exit 0; fi
exec python -m pytest "$@"
