"""Policy back ends behind one protocol (:class:`Policy`).

- :class:`~seed_agent.policies.hf.TransformersPolicy` (``seed_agent.policies.hf``): CPU/GPU,
  text and Qwen2.5-VL-style VLMs, exact log-probs, teacher-forced scoring (needs torch); its
  sampling and batch layout, with the speed-ups, are the engine's (``seed_agent.policies.engine``);
- :class:`~seed_agent.policies.vllm_backend.VLLMPolicy`: fast sampling (optional vLLM);
- :class:`~seed_agent.policies.http.HttpPolicy`: OpenAI-compatible APIs;
- :func:`~seed_agent.policies.server.serve_policy`: serve a local policy over HTTP.

Heavy back ends are imported from their modules, so ``import seed_agent.policies`` needs
no torch.
"""

from seed_agent.policies.base import Completion, Policy, SamplingParams, ScoringUnsupported
from seed_agent.policies.http import HttpPolicy

__all__ = ["Completion", "HttpPolicy", "Policy", "SamplingParams", "ScoringUnsupported"]
