#!/usr/bin/env bash
# The prepared GPU check (issue 48, point 5): scripts/gpu_check.py's four steps (a GRPO and a SEED
# update through `seed train`, the engine's log-probs on CUDA against the CPU's, bench_train.py at
# a small shape), one summary JSON, 8 minutes at most on one H100 or H200.
#
#   scripts/gpu_check.sh [--out PATH] [--steps train_grpo,train_seed,logprobs,bench_train]
#   scripts/gpu_check.sh --dry-run    # the same steps on the CPU at tiny shapes (about a minute)
#
# Assumes only what the GPU machine has: this working tree (no venv, nothing installed from it)
# and a Python ($PYTHON, else `python`, else `python3`) with torch (CUDA), transformers >= 5,
# peft, accelerate, safetensors and tokenizers (transformers' own), gymnasium, numpy, pillow and
# pyyaml. Nothing is downloaded: the models are built from configs with random weights, and the
# tokenizer is the tiny in-process one where SmolLM2 is not fetched. The repository root goes on
# PYTHONPATH instead of `pip install -e .` (which would want setuptools from an index).
#
# Summary: --out, default $OUT/gpu_check.json where $OUT is set, else runs/gpu_check.json; each
# step's output in <out>_logs/. Exit status: 0 when every step is ok, 1 when one is not, 2 without
# a CUDA GPU (and no --dry-run), 124 when the overall limit stopped it (the summary so far stays).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-$(command -v python || command -v python3)}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# 470 s for the whole run, then SIGTERM (the summary records the step it stopped), SIGKILL 10 s later:
# within 8 minutes whatever happens. scripts/gpu_check.py gives each step its own budget inside it.
exec timeout --kill-after=10 470 "$PYTHON" scripts/gpu_check.py "$@"
