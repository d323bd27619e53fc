"""Building a LoRA learner warns of nothing deprecated: peft reads the model's
``is_gradient_checkpointing``, which transformers 5 deprecates with a FutureWarning that every
``seed train`` and ``seed compare`` printed (issue 48, point 8); the learner silences exactly that one."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from seed_agent.tiny_models import tiny_random_policy
from seed_rl.train.learner.learner import Learner


@pytest.mark.parametrize("checkpointing", [False, True])
def test_a_lora_learner_raises_no_future_warning(checkpointing: bool) -> None:
    filters = list(warnings.filters)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        learner = Learner(tiny_random_policy(seed=0), finetune="lora", gradient_checkpointing=checkpointing)
    assert learner.peft_model is not None and learner.gradient_checkpointing == checkpointing
    assert warnings.filters == filters  # the learner's silencing stays inside it
