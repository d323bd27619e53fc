"""seed/EZPoints-v0: gym-cards' rules with string actions, drawn cards, disjoint splits."""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest

from seed_envs.ezpoints.cards import TOKENS, Card, evaluate, solution
from seed_envs.ezpoints.env import EZPointsEnv
from seed_envs.ezpoints.generate import deal, pair_is_unseen
from seed_envs.testing import check_seed_env, fuzz_env


def python_eval(tokens: tuple[str, ...]) -> int | None:
    """What gym-cards computes: Python's eval of the joined tokens."""
    try:
        value = eval("".join(tokens), {"__builtins__": {}})
    except Exception:
        return None
    return value if isinstance(value, int) else None


@pytest.mark.parametrize("mode", ["image", "text", "both"])
def test_conforms_to_the_seed_contract(mode):
    check_seed_env(gym.make("seed/EZPoints-v0", observation_mode=mode))


def test_fuzzing_never_crashes_and_reports_invalid():
    env = EZPointsEnv(observation_mode="text")
    assert fuzz_env(env, n=10_000, is_valid=lambda a: a.strip() in TOKENS) > 9_000


def test_formula_evaluation_matches_python_eval_on_every_short_formula():
    alphabet = ("2", "6", "10", "+", "*")
    for length in range(1, 5):
        for tokens in itertools.product(alphabet, repeat=length):
            assert evaluate(list(tokens)) == python_eval(tokens), tokens


def test_every_deal_has_a_winning_formula():
    for seed in range(2_000):
        cards = deal(np.random.default_rng(seed))
        assert evaluate(solution(cards)[:-1]) == 12, cards


def test_correct_formula_wins_ten_and_a_wrong_one_scores_zero():
    env = EZPointsEnv(observation_mode="text")
    env.reset(seed=0)
    env.cards = (Card("H", "7"), Card("S", "5"))
    for token in ("7", "+", "5"):
        _, reward, terminated, _, info = env.step(token)
        assert reward == 0 and not terminated and info["action_valid"]
    _, reward, terminated, _, info = env.step("=")
    assert reward == 10 and terminated and info["won"] and info["score"] == 1.0

    env.reset(seed=0)
    env.cards = (Card("H", "7"), Card("S", "5"))
    for token in ("7", "*", "5", "="):
        _, reward, terminated, _, info = env.step(token)
    assert reward == 0 and terminated and not info["won"]


def test_both_cards_must_be_used():
    env = EZPointsEnv(observation_mode="text")
    env.reset(seed=0)
    env.cards = (Card("H", "2"), Card("S", "T"))  # 2 and 10
    env.step("10")
    _, reward, terminated, _, info = env.step("=")
    assert terminated and reward == 0 and not info["won"]


def test_a_number_not_on_the_cards_is_invalid_and_changes_nothing():
    env = EZPointsEnv(observation_mode="text")
    env.reset(seed=0)
    env.cards = (Card("H", "7"), Card("S", "5"))
    obs, reward, terminated, _, info = env.step("9")
    assert info["action_valid"] is False and reward == 0 and not terminated and env.formula == []
    env.step("7")
    _, _, _, _, info = env.step("7")  # only one 7 on the cards
    assert info["action_valid"] is False and env.formula == ["7"]


def test_upstream_penalties_mode_reproduces_gym_cards_rewards():
    env = EZPointsEnv(observation_mode="text", upstream_penalties=True)
    env.reset(seed=0)
    env.cards = (Card("H", "7"), Card("S", "5"))
    _, reward, _, _, info = env.step("9")
    assert reward == -1 and env.formula == [" "] and info["action_valid"] is False
    env.reset(seed=0)
    env.cards = (Card("H", "7"), Card("S", "5"))
    for token in ("+",) * 6:
        env.step(token)
    _, reward, terminated, truncated, _ = env.step("+")
    assert truncated and not terminated and reward == -1


def test_unseen_card_pairs_never_appear_in_train_or_valid_seen():
    env = EZPointsEnv(observation_mode="text")

    def pairs(split: str, n: int) -> set[tuple[str, ...]]:
        out = set()
        for i in range(n):
            _, info = env.reset(options={"split": split, "index": i})
            out.add(tuple(sorted(info["cards"])))
        return out

    unseen = pairs("valid_unseen", 200)
    seen = pairs("train", 600) | pairs("valid_seen", 200)
    assert unseen and not unseen & seen
    assert all(pair_is_unseen((Card(p[0][0], p[0][1]), Card(p[1][0], p[1][1]))) for p in unseen)


def test_expert_plan_wins_every_evaluation_task():
    env = gym.make("seed/EZPoints-v0", split="valid_unseen", observation_mode="text")
    for index in range(50):
        env.reset(options={"index": index})
        for token in env.unwrapped.expert_plan():
            *_, info = env.step(token)
        assert info["won"]


def test_image_shows_the_cards_and_the_formula():
    env = EZPointsEnv(observation_mode="image")
    obs, info = env.reset(options={"split": "valid_seen", "index": 0})
    assert obs["image"].shape == (300, 300, 3) and "Cards:" not in obs["text"]
    other, _ = env.reset(options={"split": "valid_seen", "index": 1})
    assert info["cards"] == _["cards"] or not np.array_equal(obs["image"], other["image"])
    first = env.expert_plan()[0]
    after, *_ = env.step(first)
    assert not np.array_equal(other["image"], after["image"])  # the formula is drawn
    assert first in after["text"]


def _dealt(mode: str = "text", **kwargs) -> EZPointsEnv:
    env = EZPointsEnv(observation_mode=mode, **kwargs)
    env.reset(options={"split": "valid_seen", "index": 0})
    env.cards = (Card("H", "7"), Card("S", "5"))
    return env


def _anchors(env: EZPointsEnv, actions: list[str]) -> list[str]:
    return [env.step(action)[-1]["anchor"] for action in actions]


@pytest.mark.parametrize("mode", ["image", "text", "both"])
def test_anchor_is_the_cards_and_the_formula(mode):
    env = _dealt(mode)
    anchors = _anchors(env, ["7", "+", "5"])
    assert anchors == [
        'cards H7 S5; formula ["7"]',
        'cards H7 S5; formula ["7", "+"]',
        'cards H7 S5; formula ["7", "+", "5"]',
    ]
    assert _anchors(env, ["="]) == ['cards H7 S5; formula ["7", "+", "5"]; submitted']


def test_the_same_formula_by_another_path_has_the_same_anchor():
    first = _dealt("image")
    direct = _anchors(first, ["7", "+"])
    second = _dealt("image")
    obs, *_, info = second.step("9")  # not on the cards: rejected, the formula stays empty
    assert not info["action_valid"] and "Invalid action" in obs["text"]
    detour = _anchors(second, ["7", "7", "+"])  # the second 7 is rejected too
    assert detour == [direct[0], direct[0], direct[1]]
    assert _anchors(_dealt("text"), ["5", "+"]) != direct[:2]  # another formula, another state


def test_with_upstream_penalties_an_invalid_number_changes_the_state_and_the_anchor():
    env = _dealt("text", upstream_penalties=True)
    (anchor,) = _anchors(env, ["9"])
    assert anchor == 'cards H7 S5; formula [" "]' and env.formula == [" "]
