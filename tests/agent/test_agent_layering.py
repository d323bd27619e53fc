"""seed_agent never imports seed_rl, and its light modules need no torch."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import seed_agent

LIGHT = [
    "seed_agent",
    "seed_agent.policies",
    "seed_agent.agent",
    "seed_agent.models",
    "seed_agent.policies.http",
    "seed_agent.policies.server",
    "seed_agent.skills",
    "seed_agent.prompts",
]


def test_no_seed_rl_and_no_torch_for_light_modules():
    code = (
        f"import importlib, sys\nfor m in {LIGHT!r}: importlib.import_module(m)\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'torch', 'transformers', 'seed_rl', 'vllm'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_module_imports_seed_rl():
    names = [
        m.name
        for m in pkgutil.walk_packages(seed_agent.__path__, "seed_agent.")
        if m.name != "seed_agent.policies.vllm_backend"
    ]
    code = f"import importlib, sys\nfor m in {names!r}: importlib.import_module(m)\nprint('seed_rl' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
