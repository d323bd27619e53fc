"""The on-disk translation cache: the generator fills it, ``--precompile`` fills it for a release,
and an env's first reset of a game reads it instead of translating."""

from __future__ import annotations

import json
import shutil

import pytest
from _alfworld_support import dataset

from seed_envs.alfworld import engine
from seed_envs.alfworld.data import collect_games
from seed_envs.alfworld.dataset import generate_dataset
from seed_envs.alfworld.precompile import precompile_games
from seed_envs.core import MissingDataError

COUNTS = {"train": 3, "valid_seen": 0, "valid_unseen": 2}


def _translations_on_disk(disk) -> int:
    return len(list(disk.rglob("*.pkl")))


def test_default_disk_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(engine.DISK_CACHE_ENV, raising=False)
    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path / "root"))
    assert engine.default_disk_dir() == tmp_path / "root" / "alfworld" / "translations"
    monkeypatch.setenv(engine.DISK_CACHE_ENV, str(tmp_path / "mine"))
    assert engine.default_disk_dir() == tmp_path / "mine"
    for off in ("off", "0", "", "None"):
        monkeypatch.setenv(engine.DISK_CACHE_ENV, off)
        assert engine.default_disk_dir() is None


def test_generated_games_are_translated_on_disk_as_they_are_made(monkeypatch, tmp_path):
    disk = tmp_path / "translations"
    monkeypatch.setenv(engine.DISK_CACHE_ENV, str(disk))
    root = tmp_path / "games"
    generate_dataset(root, COUNTS, difficulty="tiny", seed=31)
    games = collect_games(root, "train").games + collect_games(root, "valid_unseen").games
    assert len(games) == 5 and _translations_on_disk(disk) >= 5

    cache = engine.GameCache(disk_dir=disk)
    env = engine.make_game_env(engine.request_infos(), cache=cache)
    for game in games:
        env.load(str(game.game_file))
        env.reset()
    assert cache.stats["disk_hits"] == 5 and cache.stats["translations"] == 0
    engine.close_game_env(env)


def test_precompile_translates_each_game_once_and_resets_match(monkeypatch, tmp_path_factory, tmp_path):
    monkeypatch.setenv(engine.DISK_CACHE_ENV, "off")  # a release as downloaded: nothing translated yet
    root = dataset(tmp_path_factory, "tiny", COUNTS, seed=32)
    disk = tmp_path / "translations"
    first = precompile_games(root, disk_dir=disk)
    assert (first["games"], first["translations"], first["disk_hits"]) == (5, 5, 0)
    again = precompile_games(root, disk_dir=disk, workers=2)
    assert (again["translations"], again["disk_hits"]) == (0, 5)

    # A reset from the precompiled translation shows the same game as one that translates.
    from_disk = engine.make_game_env(engine.request_infos(), cache=engine.GameCache(disk_dir=disk))
    fresh = engine.make_game_env(engine.request_infos(), cache=engine.GameCache())
    for game in collect_games(root, "train").games:
        for env in (from_disk, fresh):
            env.load(str(game.game_file))
        a, b = from_disk.reset(), fresh.reset()
        assert (a["feedback"], a["admissible_commands"]) == (b["feedback"], b["admissible_commands"])
    assert from_disk.unwrapped.cache.stats["translations"] == 0
    for env in (from_disk, fresh):
        engine.close_game_env(env)


def test_precompile_names_the_missing_directory(tmp_path):
    with pytest.raises(MissingDataError, match=str(tmp_path / "nowhere")):
        precompile_games(tmp_path / "nowhere", disk_dir=tmp_path / "d")


def test_precompile_refuses_when_the_disk_cache_is_off(monkeypatch, tmp_path):
    monkeypatch.setenv(engine.DISK_CACHE_ENV, "off")
    with pytest.raises(ValueError, match=engine.DISK_CACHE_ENV):
        precompile_games(tmp_path)


def test_cli_precompile(monkeypatch, tmp_path_factory, tmp_path, capsys):
    from seed_rl.cli import main

    monkeypatch.setenv(engine.DISK_CACHE_ENV, str(tmp_path / "translations"))
    root = tmp_path / "release"
    shutil.copytree(dataset(tmp_path_factory, "tiny", COUNTS, seed=32), root)
    assert main(["data", "alfworld", "--precompile", "--data-dir", str(root)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["games"] == 5 and summary["translations"] + summary["disk_hits"] == 5
    assert main(["data", "alfworld", "--precompile", "--data-dir", str(tmp_path / "none")]) == 1
    assert str(tmp_path / "none") in capsys.readouterr().err
