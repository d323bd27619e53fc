"""Run setup: what a run builds from its config (``run_setup.py``: env keywords, the training pool,
the prompt builder, the policy, sampling) and the vLLM rollout backend it may start
(``rollout_backend.py``)."""
