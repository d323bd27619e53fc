"""Stage 1 kept apart (``sft_apart``): the acting policy never gets Stage 1's adapter; a skill
writer of its own, given the acting policy's current adapters, writes every skill."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from test_train import TINY as TRAIN_TINY  # noqa: E402

from seed_rl.compare.collect import arm_of_run  # noqa: E402
from seed_rl.config import ConfigError, load_config  # noqa: E402
from seed_rl.train import trainer as trainer_module  # noqa: E402
from seed_rl.train.saved_policy import load_run_policy, pack_run  # noqa: E402
from seed_rl.train.setup.run_setup import run_policy  # noqa: E402
from seed_rl.train.stage1.sft import run_stage1  # noqa: E402
from seed_rl.train.stage1.warm_start import run_warm_start  # noqa: E402
from seed_rl.train.trainer import Trainer  # noqa: E402

#: test_train's tiny runs, with Stage 1 on a few trajectories (later keys win)
TINY = [
    *TRAIN_TINY,
    "lr=0.05",
    "sft=true",
    "sft_tasks=2",
    "sft_rollouts=1",
    "sft_epochs=2",
    "sft_lr=0.05",
    "sft_eval_trajectories=2",
    "updates=1",
]
IDS = torch.tensor([[5, 17, 23, 42, 8, 99, 3]])


def logits(model) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=IDS).logits.float()


def test_stage1_goes_into_the_skill_writer_only_and_the_writer_takes_the_current_adapters(tmp_path, monkeypatch):
    warm = ["warm_start=expert", "warm_start_demos=4", "warm_start_epochs=1", "warm_start_lr=0.05"]
    cfg = load_config("sokoban_seed", [*TINY, *warm, "sft_apart=true", f"run_dir={tmp_path / 'apart'}"])
    written_by = []
    write_skills = trainer_module.write_skills

    def recording(*args, **kwargs):
        written_by.append(kwargs["policy"])
        return write_skills(*args, **kwargs)

    monkeypatch.setattr(trainer_module, "write_skills", recording)
    trainer = Trainer(cfg)
    start = run_policy(cfg)
    run_warm_start(cfg, start)  # from the cache the trainer filled
    with_stage1 = run_policy(cfg)
    run_warm_start(cfg, with_stage1)
    run_stage1(cfg, with_stage1, tmp_path / "other")  # from the cache too
    # the acting policy is the warm start (its new adapters are zero); the writer is the warm start
    # with Stage 1 merged, and differs from it
    assert torch.allclose(logits(trainer.policy.model), logits(start.model), atol=1e-6)
    assert torch.allclose(logits(trainer.skill_writer.policy.model), logits(with_stage1.model), atol=1e-5)
    assert not torch.allclose(logits(with_stage1.model), logits(start.model), atol=1e-3)
    (m,) = trainer.run()
    assert m["skills_analyzed"] == 4 and written_by == [trainer.skill_writer.policy]
    # the update moved the acting adapters; the writer takes them before each skill pass
    writer = trainer.skill_writer.synced(trainer.learner)
    theirs = dict(writer.model.named_parameters())
    for name, weight in trainer.learner.trainable_state().items():
        assert torch.equal(theirs[name], weight), name
    # evaluated, the run is the acting policy: the warm start and its RL adapters, without Stage 1
    saved = load_run_policy(tmp_path / "apart").policy
    assert torch.allclose(logits(saved.model), logits(trainer.policy.model), atol=1e-4)
    assert arm_of_run(cfg, tmp_path / "apart") == "seed-apart"
    # a pack carries what evaluation merges; a resumable one also the writer's Stage-1 adapter
    adapters = {p.name for p in pack_run(tmp_path / "apart", tmp_path / "pack") if p.parent.name == "adapters"}
    assert adapters == {"warm_start_adapter.safetensors"}
    resumable = pack_run(tmp_path / "apart", tmp_path / "resumable", resumable=True)
    assert "stage1_adapter.safetensors" in {p.name for p in resumable}


def test_merged_stage1_reaches_the_acting_policy_as_before(tmp_path):
    cfg = load_config("sokoban_seed", [*TINY, f"run_dir={tmp_path / 'merged'}"])
    trainer = Trainer(cfg)
    assert trainer.skill_writer is None
    assert not torch.allclose(logits(trainer.policy.model), logits(run_policy(cfg).model), atol=1e-3)


@pytest.mark.parametrize(
    "overrides", [["sft=false"], ["finetune=full"], ["analyzer=frozen-initial"], ["analyzer=scripted"]]
)
def test_a_skill_writer_needs_stage1_lora_and_the_policy_as_analyzer(overrides):
    with pytest.raises(ConfigError, match=r"sft_apart=true needs sft=true, finetune=lora, analyzer=self"):
        load_config("sokoban_seed", ["sft=true", "sft_apart=true", *overrides])
