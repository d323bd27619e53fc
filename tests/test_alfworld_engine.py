"""Our cached engine against upstream's: same game states on reset, on valid and on invalid commands."""

from __future__ import annotations

import json
import random

import pytest
from _alfworld_support import SMALL_COUNTS, dataset, upstream_game_env

from seed_envs.alfworld import engine
from seed_envs.alfworld.data import collect_games, upstream_logic_files
from seed_envs.alfworld.grammar import LogicCache

# Every key of a game state that either engine fills, compared by value.
PLAIN_KEYS = (
    "feedback",
    "raw",
    "won",
    "lost",
    "score",
    "done",
    "last_command",
    "last_action",
    "admissible_commands",
    "_valid_commands",
    "policy_commands",
    "command_templates",
    "extra.gamefile",
)


def snapshot(state) -> dict:
    """A game state as comparable values (objects by their text)."""
    out = {key: state.get(key) for key in PLAIN_KEYS}
    out["keys"] = sorted(state.keys())
    out["facts"] = [str(f) for f in state["facts"]]
    out["_facts"] = [str(f) for f in state["_facts"]]  # in iteration order: it drives listed items' order
    out["_valid_actions"] = [str(a) for a in state["_valid_actions"]]
    out["_last_action"] = str(state.get("_last_action"))
    out["entities"] = sorted((k, v.name) for k, v in state["_entity_infos"].items())
    return out


INVALID = ["put mug 1 in sinkbasin 1", "go to cabinet 99", "", "   ", "LOOK", "look around", "take", "ë§ñ"]


def play_side_by_side(game_file, rng: random.Random, episodes: int = 2, steps: int = 12) -> int:
    ours = engine.make_game_env(engine.request_infos(expert=True, facts=True), cache=engine.GameCache())
    upstream = upstream_game_env(expert=True, facts=True)
    compared = 0
    try:
        ours.load(str(game_file))
        upstream.load(str(game_file))
        for _ in range(episodes):
            a, b = ours.reset(), upstream.reset()
            assert snapshot(a) == snapshot(b)
            for _ in range(steps):
                if rng.random() < 0.35:
                    command = rng.choice(INVALID)
                else:
                    command = rng.choice(a["admissible_commands"])
                    if rng.random() < 0.2:
                        command = f"  {command} "  # upstream strips commands
                a, score_a, done_a = ours.step(command)
                b, score_b, done_b = upstream.step(command)
                assert (score_a, done_a) == (score_b, done_b)
                assert snapshot(a) == snapshot(b), command
                compared += 1
                if done_a:
                    break
    finally:
        engine.close_game_env(ours)
        engine.close_game_env(upstream)
    return compared


@pytest.fixture(scope="module")
def easy_root(tmp_path_factory):
    return dataset(tmp_path_factory, "easy", SMALL_COUNTS)


def test_states_identical_to_upstream_easy(easy_root):
    rng = random.Random(0)
    games = collect_games(easy_root, "valid_seen").games
    assert {g.task_type for g in games} == set(engine_task_types())
    compared = sum(play_side_by_side(g.game_file, rng) for g in games)
    assert compared > 50


def test_states_identical_to_upstream_medium(tmp_path_factory):
    root = dataset(tmp_path_factory, "medium", {"train": 3})
    rng = random.Random(1)
    for game in collect_games(root, "train").games:
        play_side_by_side(game.game_file, rng, episodes=2, steps=8)


@pytest.mark.slow
def test_states_identical_to_upstream_full(tmp_path_factory):
    root = dataset(tmp_path_factory, "full", {"train": 6})
    rng = random.Random(2)
    for game in collect_games(root, "train").games:
        play_side_by_side(game.game_file, rng, episodes=1, steps=6)


def engine_task_types():
    from seed_envs.alfworld.vocab import TASK_TYPES

    return TASK_TYPES


def test_invalid_commands_answered_without_engine_step(easy_root, monkeypatch):
    """The shortcut path must not call upstream's step (and must still match it: see above)."""
    game = collect_games(easy_root, "train").games[0]
    env = engine.make_game_env(engine.request_infos(), cache=engine.GameCache())
    env.load(str(game.game_file))
    state = env.reset()
    calls = []
    original = engine.PddlEnv.step
    monkeypatch.setattr(engine.PddlEnv, "step", lambda self, c: calls.append(c) or original(self, c))
    state, score, done = env.step("fly to the moon")
    assert state.feedback == "Nothing happens." and not done and score == 0
    assert calls == []
    state, _, _ = env.step(state["admissible_commands"][0])
    assert len(calls) == 1
    engine.close_game_env(env)


def test_cache_translates_each_game_once(easy_root):
    cache = engine.GameCache()
    env = engine.make_game_env(engine.request_infos(), cache=cache)
    games = collect_games(easy_root, "train").games[:2]
    for _ in range(3):
        for game in games:
            env.load(str(game.game_file))
            env.reset()
            env.reset()
    assert cache.stats["translations"] == 2
    assert cache.stats["memory_hits"] == 4
    engine.close_game_env(env)


def test_disk_cache_roundtrip(easy_root, tmp_path):
    game = collect_games(easy_root, "train").games[0]
    data = json.loads(game.game_file.read_text())
    first = engine.GameCache(disk_dir=tmp_path)
    _, made = first.translation(data["pddl_domain"], data["pddl_problem"])
    second = engine.GameCache(disk_dir=tmp_path)
    _, loaded = second.translation(data["pddl_domain"], data["pddl_problem"])
    assert first.stats["translations"] == 1 and second.stats["disk_hits"] == 1
    assert (loaded.sas, loaded.sas_replan) == (made.sas, made.sas_replan)
    # A torn file is translated again, not trusted.
    for path in tmp_path.rglob("*.pkl"):
        path.write_bytes(b"\x80garbage")
    third = engine.GameCache(disk_dir=tmp_path)
    _, again = third.translation(data["pddl_domain"], data["pddl_problem"])
    assert third.stats["translations"] == 1 and again.sas == made.sas


def rule_texts(logic) -> dict:
    return {lhs: [repr(rule) for rule in rules] for lhs, rules in logic.grammar._rules.items()}


def test_logic_cache_equals_upstream_parse(easy_root):
    from textworld.envs.pddl.logic import GameLogic

    cache = LogicCache()
    games = [json.loads(g.game_file.read_text()) for g in collect_games(easy_root, "train").games]
    for data in games:
        ours = cache.game_logic(data["pddl_domain"], data["grammar"])
        theirs = GameLogic(domain=data["pddl_domain"], grammar=data["grammar"])
        assert rule_texts(ours) == rule_texts(theirs)
        assert {k: (a.template, a.feedback_rule) for k, a in ours.actions.items()} == {
            k: (a.template, a.feedback_rule) for k, a in theirs.actions.items()
        }
    assert cache.full_parses == 1  # one grammar shape for all generated games


def test_logic_cache_falls_back_to_full_parse():
    from textworld.envs.pddl.logic import GameLogic

    domain_path, grammar_path = upstream_logic_files()
    domain, grammar = domain_path.read_text(), grammar_path.read_text()
    cache = LogicCache()
    # Task text with grammar syntax in it: the shortcut cannot vouch for it, so it parses in full.
    odd = grammar.replace("UNKNOWN GOAL", "put a {o.name} in #list_empty#")
    plain = grammar.replace("UNKNOWN GOAL", "put some mug on desk")
    no_task = grammar.replace("Your task is to: UNKNOWN GOAL.", "No task here.")
    for text in (odd, plain, no_task):
        assert rule_texts(cache.game_logic(domain, text)) == rule_texts(GameLogic(domain=domain, grammar=text))
    assert cache.full_parses == 3
