"""Learning tests: GRPO, GiGPO and SEED (over either) must solve ``seed/Corridor-v0`` with a tiny model, in seconds.

The corridor's optimal policy is known (say the side the observation names), and a policy that
ignores the observation wins under a third of the tasks. The tiny random model first learns the
reply *format* only: each prompt with ``left</action>`` and with ``right</action>``, so it plays
valid actions but knows nothing of the task (its greedy success is measured below, with the same
protocol as the trained one). Then only the reward can teach it which side to take. These tests
fail when the advantage's sign is flipped or the action mask is off by one token (the note of
issue 22 shows both).
"""

from __future__ import annotations

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

import seed_envs  # noqa: E402, F401
from seed_agent.tiny_models import tiny_random_policy  # noqa: E402
from seed_rl.config import load_config  # noqa: E402
from seed_rl.train.learner import Learner  # noqa: E402
from seed_rl.train.run_setup import run_prompt_builder  # noqa: E402
from seed_rl.train.sft import fit  # noqa: E402
from seed_rl.train.trainer import Trainer  # noqa: E402

#: Held-out corridors: task ids training never draws (every situation is among them).
EVAL_TASKS = list(range(24))
TARGET = 0.95

CORRIDOR = [
    "env=seed/Corridor-v0",
    "history_length=0",
    "one_shot=false",
    "max_steps=4",
    "style=act",
    "max_new_tokens=4",
    "finetune=full",
    "lr=3e-3",
    "kl_coef=0",
    "tasks_per_update=4",
    "group_size=8",
    "minibatches=2",
    "progress=false",
    "checkpoint_every=1000",
    "analyzer_max_new_tokens=16",
]


def format_tuned_model_at(path) -> str:
    """A tiny random model taught only the reply format, both sides alike; saved at ``path``, as
    the ``model=hf:PATH`` it returns."""
    cfg = load_config(None, [*CORRIDOR, "model=tiny-random", "sft_epochs=6"])
    policy = tiny_random_policy(0)
    learner = Learner(policy, finetune="full", lr=3e-3, keep_reference=False)
    builder = run_prompt_builder(cfg)
    env = gym.make("seed/Corridor-v0")
    pairs = []
    for index in range(24):  # every observation on the way out of train-split corridors, each with both replies
        obs, info = env.reset(options={"split": "train", "index": index})
        for step in env.unwrapped.expert_plan():
            prompt = builder.build(info["task"], obs["text"], info.get("available_actions"))
            pairs += [(prompt, f"{side}</action>") for side in ("left", "right")]
            obs, *_, info = env.step(step)
    fit(learner, policy, pairs, cfg)
    policy.model.save_pretrained(path)
    policy.tokenizer.save_pretrained(path)
    return f"hf:{path}"


@pytest.fixture(scope="module")
def format_tuned_model(tmp_path_factory) -> str:
    return format_tuned_model_at(tmp_path_factory.mktemp("format_tuned"))


def learn(model: str, tmp_path, *overrides: str, updates: int = 40) -> tuple[float, float, list[dict]]:
    """Greedy valid_unseen success before and after ``updates`` updates, and the run's metrics."""
    cfg = load_config(None, [*CORRIDOR, f"model={model}", f"updates={updates}", f"run_dir={tmp_path}", *overrides])
    trainer = Trainer(cfg)
    before = trainer.evaluate("valid_unseen", EVAL_TASKS).success.mean
    metrics = trainer.run()
    after = trainer.evaluate("valid_unseen", EVAL_TASKS).success.mean
    return before, after, metrics


def test_the_format_tuned_model_plays_valid_actions_but_not_the_task(format_tuned_model, tmp_path):
    cfg = load_config(None, [*CORRIDOR, f"model={format_tuned_model}", f"run_dir={tmp_path}"])
    result = Trainer(cfg).evaluate("valid_unseen", EVAL_TASKS)
    assert result.invalid_rate < 0.1
    assert result.success.mean < 0.6  # at most the tasks of one side


def test_grpo_solves_the_corridor(format_tuned_model, tmp_path):
    before, after, metrics = learn(format_tuned_model, tmp_path)
    assert after >= TARGET, (before, after, [round(m["success"], 2) for m in metrics])
    assert before < 0.6


def test_seed_with_oracle_skills_solves_the_corridor(format_tuned_model, tmp_path):
    before, after, metrics = learn(format_tuned_model, tmp_path, "algo=seed", "analyzer=scripted", "lambda_opd=0.5")
    assert all(m["opd_rows"] > 0 for m in metrics)  # the distillation term took part in every update
    assert after >= TARGET, (before, after, [round(m["success"], 2) for m in metrics])
    assert before < 0.6


def test_gigpo_solves_the_corridor(format_tuned_model, tmp_path):
    before, after, metrics = learn(format_tuned_model, tmp_path, "advantage=gigpo")
    assert all(m["anchored_step_share"] > 0 for m in metrics)  # the step term had states to compare
    assert after >= TARGET, (before, after, [round(m["success"], 2) for m in metrics])
    assert before < 0.6


def test_seed_over_gigpo_solves_the_corridor(format_tuned_model, tmp_path):
    before, after, metrics = learn(
        format_tuned_model, tmp_path, "algo=seed", "analyzer=scripted", "lambda_opd=0.5", "advantage=gigpo"
    )
    assert all(m["opd_rows"] > 0 and m["anchored_step_share"] > 0 for m in metrics)
    assert after >= TARGET, (before, after, [round(m["success"], 2) for m in metrics])
    assert before < 0.6
