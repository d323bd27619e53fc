"""SkyRL-gym adapter: seed envs made with ``skyrl_gym.make`` and driven as SkyRL's generator does.

Each trajectory is what SkyRL's generator does with a dataset row: ``skyrl_gym.make(env_class,
env_config=..., extras=row)``, ``init(prompt)``, then ``step(reply)`` until ``done``.
"""

from __future__ import annotations

import pytest
from integration_support import TEXT_ENVS, expert_outcome, expert_plans

skyrl_gym = pytest.importorskip("skyrl_gym", reason="the skyrl extra is not installed")

from skyrl_gym.envs.base_text_env import BaseTextEnv  # noqa: E402

from seed_envs import env_ids  # noqa: E402
from seed_envs.integrations.skyrl import SeedTextEnv, register_skyrl_envs, task_rows  # noqa: E402


def make(row: dict, env_config: dict, max_turns: int | None = None) -> BaseTextEnv:
    """The env SkyRL's generator makes for a dataset row (it sets ``max_turns`` in the extras)."""
    extras = {key: value for key, value in row.items() if key not in ("prompt", "env_class")}
    if max_turns is not None:
        extras["max_turns"] = max_turns
    return skyrl_gym.make(row["env_class"], env_config=env_config, extras=extras)


def play(env: BaseTextEnv, prompt: list[dict], reply_for) -> tuple[list[dict], list[dict]]:
    """SkyRL's loop: init, then step with each reply until done. Returns the chat and the outputs."""
    chat, _ = env.init(prompt)
    outputs = []
    while not outputs or not outputs[-1]["done"]:
        reply = reply_for(chat)
        chat = [*chat, {"role": "assistant", "content": reply}]
        output = env.step(reply)
        outputs.append(output)
        chat = chat + output["observations"]
    return chat, outputs


def replies(actions: list[str]):
    """A player that answers each turn with the next action, in an ``<action>`` tag after some talk."""
    remaining = iter(actions)
    return lambda chat: f"I will play this.\n<action>{next(remaining)}</action>"


def test_every_seed_id_is_registered_and_made_as_a_text_env():
    register_skyrl_envs()  # idempotent: the import registered them already
    for env_id in env_ids():
        assert skyrl_gym.spec(env_id).entry_point == "seed_envs.integrations.skyrl:SeedTextEnv"
    env = skyrl_gym.make("seed/Corridor-v0")
    assert isinstance(env, SeedTextEnv) and isinstance(env, BaseTextEnv)
    assert env.spec.kwargs["env_id"] == "seed/Corridor-v0"


@pytest.mark.parametrize(("env_id", "env_kwargs"), TEXT_ENVS)
def test_the_expert_wins_and_the_score_is_the_reward_of_the_last_step(env_id, env_kwargs):
    rows = task_rows(env_id, "valid_seen", count=2, **env_kwargs)
    ids = [row["extra_info"]["task_id"] for row in rows]
    for row, task_id, (opening, plan) in zip(
        rows, ids, expert_plans(env_id, "valid_seen", ids, env_kwargs), strict=True
    ):
        env = make(row, {"split": "valid_seen", **env_kwargs}, max_turns=20)
        chat, outputs = play(env, row["prompt"], replies(plan))
        outcome = expert_outcome(env_id, "valid_seen", task_id, env_kwargs, plan)
        assert chat[0] == row["prompt"][0] and opening in chat[1]["content"]
        assert len(outputs) == len(plan) and outcome["won"] and outputs[-1]["metadata"]["won"]
        assert [o["reward"] for o in outputs] == [0.0] * (len(plan) - 1) + [outcome["score"]]
        assert "The episode is over" in outputs[-1]["observations"][0]["content"]
        assert sum(o["metadata"]["env_reward"] for o in outputs) == pytest.approx(outcome["total_reward"])
        assert env.get_metrics() == {"won": 1.0, "score": outcome["score"], "steps": len(plan)}
        after = env.step("<action>left</action>")
        assert after["done"] and after["reward"] == 0.0
        assert "already over" in after["observations"][0]["content"]
        env.close()


def test_the_turn_limit_ends_the_episode_with_the_score_so_far():
    row = task_rows("seed/Corridor-v0", "train", count=1)[0]
    env = make(row, {}, max_turns=2)
    chat, outputs = play(env, [], lambda chat: "stay here")
    assert len(outputs) == 2 and [o["done"] for o in outputs] == [False, True]
    assert [o["metadata"]["action_valid"] for o in outputs] == [False, False]
    assert outputs[-1]["reward"] == 0.0 and "turn limit of 2" in outputs[-1]["observations"][0]["content"]
    assert chat[0]["role"] == "user" and "Your task is to:" in chat[0]["content"]


def test_without_a_task_id_a_task_is_drawn():
    env = make({"env_class": "seed/Corridor-v0"}, {"split": "valid_unseen"})
    _, meta = env.init([{"role": "user", "content": "Play well."}])
    assert meta["task_id"].startswith("corridor/valid_unseen/")


def test_bad_input_is_refused_with_a_clear_message():
    with pytest.raises(ValueError, match="BaseTextEnv is text only: set observation_mode: text"):
        skyrl_gym.make("seed/Sokoban-v0")
    with pytest.raises(ValueError, match="unknown split 'test'"):
        skyrl_gym.make("seed/Corridor-v0", env_config={"split": "test"})
    with pytest.raises(ValueError, match="not a task of this env"):
        make({"env_class": "seed/Corridor-v0", "extra_info": {"task_id": "ezpoints/train/0"}}, {}).init([])
    with pytest.raises(RuntimeError, match="before act"):
        skyrl_gym.make("seed/Corridor-v0").step("left")
    with pytest.raises(ValueError, match="unknown env id 'seed/Nope-v0'"):
        SeedTextEnv("seed/Nope-v0")
    with pytest.raises(skyrl_gym.error.Error, match="No registered env with id: seed/Nope-v0"):
        skyrl_gym.make("seed/Nope-v0")
