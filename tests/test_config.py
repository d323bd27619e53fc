"""The config's sections: flat keys for users, each key in one section, each section checked by its
own function, and the loss settings read from a config in one place."""

from __future__ import annotations

import dataclasses

import pytest

from seed_rl.config import SECTIONS, ConfigError, TrainConfig, from_dict, load_config


def test_the_sections_hold_every_key_once_in_the_order_the_config_lists_them():
    listed = [f.name for section in SECTIONS for f in dataclasses.fields(section.keys)]
    assert listed == [f.name for f in dataclasses.fields(TrainConfig)]
    assert len(set(listed)) == len(listed) == len(TrainConfig().to_dict())
    assert [s.name for s in SECTIONS][:6] == ["task", "model", "rollout", "optimization", "loss", "seed"]


def test_users_write_the_same_flat_keys_and_overrides():
    cfg = from_dict({"lr": 1e-3, "lambda_opd": 0.1, "workers": 2, "eval_temperature": 0.5})
    assert (cfg.lr, cfg.lambda_opd, cfg.workers, cfg.eval_temperature) == (1e-3, 0.1, 2, 0.5)
    assert load_config(None, ["lr=2e-3", "algo=seed"]).lr == 2e-3


def test_an_unknown_key_names_the_allowed_ones():
    with pytest.raises(ConfigError, match=r"unknown config key 'lrr' \(did you mean 'lr'\?\); allowed keys: env, "):
        from_dict({"lrr": 1.0})


#: For each section, a value its own check refuses, with the start of the message.
REFUSED = {
    "task": ("split", "test", "split='test' is not allowed; split must be one of: train, valid_seen, valid_unseen"),
    "model": ("finetune", "qlora", "finetune='qlora' is not allowed; finetune must be one of: lora, full"),
    "rollout": ("max_new_tokens", 0, "max_new_tokens=0 is not allowed; max_new_tokens must be >= 1"),
    "optimization": ("memory_budget_gb", 0.0, "memory_budget_gb=0.0 is not allowed; memory_budget_gb must be > 0"),
    "loss": ("gamma", 1.5, "gamma=1.5 is not allowed; gamma must be in [0, 1]"),
    "seed": ("analyzer", "gpt4", "analyzer='gpt4' is not allowed; analyzer must be one of: self"),
    "warm start": ("warm_start", "teacher", "warm_start='teacher' is not allowed; warm_start must be one of: none"),
    "stage 1": ("sft_epochs", 0, "sft_epochs=0 is not allowed; sft_epochs must be >= 1"),
    "scale-out": ("workers", -1, "workers=-1 is not allowed; workers must be >= 0"),
    "evaluation": ("eval_temperature", -1.0, "eval_temperature=-1.0 is not allowed; eval_temperature must be >= 0"),
    "run": ("keep_checkpoints", 0, "keep_checkpoints=0 is not allowed; keep_checkpoints must be >= 1"),
}


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.name)
def test_each_section_checks_its_own_keys(section):
    key, value, message = REFUSED[section.name]
    assert key in {f.name for f in dataclasses.fields(section.keys)}
    bad = dataclasses.replace(TrainConfig(), **{key: value})
    for other in SECTIONS:  # the other sections pass it
        if other is not section:
            other.check(bad)
    with pytest.raises(ConfigError) as refused:
        section.check(bad)
    assert str(refused.value).startswith(message)
    with pytest.raises(ConfigError, match="is not allowed"):
        bad.validate()


def test_loss_settings_come_from_the_config():
    from seed_rl.train.phases.update import LossSettings

    seed = load_config(None, ["algo=seed", "lambda_opd=0.3", "clip_high=0.28", "dtype=bfloat16", "kl_coef=0"])
    settings = LossSettings.from_config(seed)
    assert (settings.lambda_opd, settings.clip_high, settings.kl_coef) == (0.3, 0.28, 0.0)
    assert settings.correct_sampler and seed.rescores  # bf16 sampling: old log-probs re-scored, sampler corrected
    grpo = LossSettings.from_config(load_config(None, ["algo=grpo", "lambda_opd=0.3"]))
    assert grpo.lambda_opd == 0.0 and not grpo.correct_sampler  # OPD only under SEED; fp32 needs no correction
    fields = {f.name for f in dataclasses.fields(LossSettings)} - {"correct_sampler"}
    assert all(getattr(settings, name) == getattr(seed, name) for name in fields - {"lambda_opd"})
