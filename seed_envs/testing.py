"""Conformance checks for seed envs, for our tests and for anyone writing a new env.

``check_seed_env(env)`` runs Gymnasium's own checker plus the seed contract:
the ``info`` keys, exact replay of a ``task_id`` (anchors included), that a rejected
action leaves ``info["anchor"]`` as it was, and that hostile input never raises.
``bad_actions(n)`` yields the hostile input.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
from gymnasium.utils.env_checker import check_env

from seed_envs.core import SPLITS, SeedEnv

REQUIRED_INFO_KEYS = ("task", "task_id", "split", "available_actions", "action_valid", "won", "score", "anchor")

#: Actions that belong to *other* benchmarks' grammars (or to none).
FOREIGN_ACTIONS = (
    "click[buy now]",
    "search[red shoes under 30 dollars]",
    "go to fridge 1",
    "move apple 1 to countertop 1",
    "take mug 1 from cabinet 2",
    "<search> capital of france </search>",
    "<answer> Paris </answer>",
    "<action>jump</action>",
    "=",
    "10",
    "north",
    "push box",
    "look around",
    "noop",
)

TAG_SOUP = (
    "<think>",
    "</think>",
    "<action>",
    "</action>",
    "<action><action>up</action>",
    "<answer><answer></answer>",
    "<<>>",
    "[[[",
    "click[",
    "search[]",
    "]]]]",
    "<think>I should</think><action></action>",
    "<html><body><script>alert(1)</script></body></html>",
)


def _random_unicode(rng: random.Random, length: int) -> str:
    # Any code point, lone surrogates and control characters included.
    return "".join(chr(rng.randrange(0, 0x110000)) for _ in range(length))


def bad_actions(n: int, seed: int = 0, huge_every: int = 500) -> Iterator[str]:
    """Yield ``n`` hostile actions: random Unicode, empty and whitespace strings,
    1 MB strings, tag soup, other benchmarks' actions and mixes of these."""
    rng = random.Random(seed)
    kinds: list[Callable[[], str]] = [
        lambda: _random_unicode(rng, rng.randrange(1, 40)),
        lambda: "",
        lambda: rng.choice([" ", "\n", "\t", "\r\n", "\x00", "\u200b", "\ufeff"]) * rng.randrange(1, 9),
        lambda: rng.choice(TAG_SOUP),
        lambda: rng.choice(FOREIGN_ACTIONS),
        lambda: rng.choice(TAG_SOUP) + rng.choice(FOREIGN_ACTIONS) + _random_unicode(rng, 3),
        lambda: "".join(rng.choice("[]<>/{}()=+*") for _ in range(rng.randrange(1, 30))),
    ]
    for i in range(n):
        if huge_every and i % huge_every == huge_every - 1:
            yield rng.choice("ab<[") * (1 << 20)  # 1 MB
        else:
            yield rng.choice(kinds)()


def check_info(info: dict[str, Any]) -> None:
    """Assert that ``info`` carries the seed keys with the right types."""
    missing = [k for k in REQUIRED_INFO_KEYS if k not in info]
    assert not missing, f"info lacks {missing}"
    assert isinstance(info["task"], str) and info["task"], "info['task'] must be a non-empty str"
    assert isinstance(info["task_id"], str) and info["task_id"]
    assert info["split"] in SPLITS, info["split"]
    actions = info["available_actions"]
    assert actions is None or (isinstance(actions, list) and all(isinstance(a, str) for a in actions))
    assert isinstance(info["action_valid"], bool)
    assert isinstance(info["won"], bool)
    assert isinstance(info["score"], float)
    assert isinstance(info["anchor"], str) and info["anchor"], "info['anchor'] must be a non-empty str"


def check_replay(env: gym.Env, steps: list[str] | None = None) -> None:
    """Resetting with the same ``task_id`` gives the same observations after the same actions."""
    obs, info = env.reset(seed=7)
    task_id = info["task_id"]
    first = [(obs["text"], info["anchor"])]
    plan = steps or (info["available_actions"] or [""])[:3]
    for action in plan:
        obs, *_, info = env.step(action)
        first.append((obs["text"], info["anchor"]))
    env.reset(seed=99)  # play something else in between
    obs2, info2 = env.reset(options={"task_id": task_id})
    assert info2["task_id"] == task_id
    second = [(obs2["text"], info2["anchor"])]
    for action in plan:
        obs2, *_, info2 = env.step(action)
        second.append((obs2["text"], info2["anchor"]))
    assert first == second, "the same task_id and actions must replay exactly (observations and anchors)"


def check_rejections_keep_the_anchor(env: gym.Env, n: int = 30, seed: int = 0) -> None:
    """Every action the env rejects (``action_valid=False``) leaves ``info["anchor"]`` as it was.

    Steps an action longer than the env's limit (rejected by the base class), then ``n``
    hostile actions (rejected by the env itself, most of them).
    """
    _, info = env.reset(seed=seed)
    anchor = info["anchor"]
    too_long = "a" * (env.unwrapped.max_action_length + 1)
    for action in (too_long, *bad_actions(n, seed=seed, huge_every=0)):
        _, _, terminated, truncated, info = env.step(action)
        check_info(info)
        if not info["action_valid"]:
            assert info["anchor"] == anchor, f"the rejected action {action[:40]!r} changed info['anchor']"
        anchor = info["anchor"]
        if terminated or truncated:
            _, info = env.reset()
            anchor = info["anchor"]


def fuzz_env(
    env: SeedEnv,
    n: int = 10_000,
    seed: int = 0,
    is_valid: Callable[[str], bool] | None = None,
) -> int:
    """Step ``env`` with ``n`` hostile actions; return how many were judged invalid.

    Every step must return an observation in the space and the seed ``info`` keys.
    Actions that ``is_valid`` accepts (legal moves that happen to be in the corpus) may
    be valid; every other one must come back with ``action_valid=False``, must not
    end the episode and must leave ``info["anchor"]`` as it was.
    """
    _, info = env.reset(seed=seed)
    anchor = info["anchor"]
    invalid = 0
    for action in bad_actions(n, seed=seed):
        obs, _, terminated, truncated, info = env.step(action)
        assert env.observation_space.contains(obs), f"observation outside the space after {action[:40]!r}"
        check_info(info)
        if is_valid is not None and is_valid(action):
            anchor = info["anchor"]
            if terminated or truncated:
                anchor = env.reset()[1]["anchor"]
            continue
        assert info["action_valid"] is False, f"{action[:60]!r} was accepted"
        assert not terminated, f"{action[:60]!r} ended the episode"
        assert info["anchor"] == anchor, f"the rejected action {action[:60]!r} changed info['anchor']"
        invalid += 1
        if truncated:
            anchor = env.reset()[1]["anchor"]
    return invalid


def check_seed_env(env: gym.Env, replay_steps: list[str] | None = None) -> None:
    """Gymnasium's ``check_env`` plus the seed contract (info keys, every non-empty split, replay).

    ``env.unwrapped.split`` must have tasks (Gymnasium's checker resets without options).
    """
    check_env(env.unwrapped, skip_render_check=True)
    _, info = env.reset(seed=0)
    check_info(info)
    splits = [split for split in SPLITS if env.unwrapped.task_count(split) != 0]
    assert splits, "the env has no tasks in any split"
    for split in splits:
        _, info = env.reset(options={"split": split, "index": 0})
        check_info(info)
        assert info["split"] == split
    check_replay(env, replay_steps)
    check_rejections_keep_the_anchor(env)
