"""The loader on the upstream layout (generated and hand-built), upstream's skips, errors, download, CLI."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import zipfile
from pathlib import Path

import pytest
from _alfworld_support import SMALL_COUNTS, dataset

from seed_envs.alfworld.data import collect_games, upstream_logic_files
from seed_envs.alfworld.download import download_release
from seed_envs.alfworld.env import ALFWorldEnv

HAND_PROBLEM = """(define (problem plan_trial_hand)
(:domain alfred)
(:objects
agent1 - agent
SinkBasinType - rtype
MicrowaveType - rtype
FridgeType - rtype
CoffeeMachineType - rtype
CabinetType - rtype
KnifeType - otype
ButterKnifeType - otype
MugType - otype
        Mug_bar__plus_01_dot_00_bar__plus_00_dot_90_bar__minus_01_dot_00 - object
        CoffeeMachine_bar__plus_00_dot_50_bar__plus_00_dot_90_bar__minus_02_dot_00 - receptacle
        Cabinet_bar__plus_03_dot_00_bar__plus_00_dot_40_bar__minus_01_dot_00 - receptacle
        Cabinet_bar__plus_04_dot_00_bar__plus_00_dot_40_bar__minus_01_dot_00 - receptacle
        loc_bar_2_bar__minus_4_bar_2_bar_60 - location
        loc_bar_12_bar__minus_4_bar_2_bar_60 - location
        loc_bar_16_bar__minus_4_bar_2_bar_60 - location
        loc_bar_8_bar_0_bar_0_bar_30 - location
        )
(:init
        (receptacleType CoffeeMachine_bar__plus_00_dot_50_bar__plus_00_dot_90_bar__minus_02_dot_00 CoffeeMachineType)
        (receptacleType Cabinet_bar__plus_03_dot_00_bar__plus_00_dot_40_bar__minus_01_dot_00 CabinetType)
        (receptacleType Cabinet_bar__plus_04_dot_00_bar__plus_00_dot_40_bar__minus_01_dot_00 CabinetType)
        (objectType Mug_bar__plus_01_dot_00_bar__plus_00_dot_90_bar__minus_01_dot_00 MugType)
        (canContain CoffeeMachineType MugType)
        (canContain CabinetType MugType)
        (pickupable Mug_bar__plus_01_dot_00_bar__plus_00_dot_90_bar__minus_01_dot_00)
        (openable Cabinet_bar__plus_03_dot_00_bar__plus_00_dot_40_bar__minus_01_dot_00)
        (openable Cabinet_bar__plus_04_dot_00_bar__plus_00_dot_40_bar__minus_01_dot_00)
        (atLocation agent1 loc_bar_8_bar_0_bar_0_bar_30)
        (inReceptacle Mug_bar__plus_01_dot_00_bar__plus_00_dot_90_bar__minus_01_dot_00 Cabinet_bar__plus_03_dot_00_bar__plus_00_dot_40_bar__minus_01_dot_00)
        (receptacleAtLocation CoffeeMachine_bar__plus_00_dot_50_bar__plus_00_dot_90_bar__minus_02_dot_00 loc_bar_2_bar__minus_4_bar_2_bar_60)
        (receptacleAtLocation Cabinet_bar__plus_03_dot_00_bar__plus_00_dot_40_bar__minus_01_dot_00 loc_bar_12_bar__minus_4_bar_2_bar_60)
        (receptacleAtLocation Cabinet_bar__plus_04_dot_00_bar__plus_00_dot_40_bar__minus_01_dot_00 loc_bar_16_bar__minus_4_bar_2_bar_60)
        (objectAtLocation Mug_bar__plus_01_dot_00_bar__plus_00_dot_90_bar__minus_01_dot_00 loc_bar_12_bar__minus_4_bar_2_bar_60)
        )
 (:goal (and (exists (?r - receptacle) (exists (?o - object) (and
     (inReceptacle ?o ?r) (objectType ?o MugType) (receptacleType ?r CoffeeMachineType))))))
)
"""  # noqa: E501


def write_trial(root: Path, split: str, folder: str, trial: str, task_type: str, game: dict | None) -> Path:
    trial_dir = root / "json_2.1.1" / split / folder / trial
    trial_dir.mkdir(parents=True)
    traj = {"task_type": task_type, "pddl_params": {"object_target": "Mug", "parent_target": "CoffeeMachine"}}
    (trial_dir / "traj_data.json").write_text(json.dumps(traj))
    if game is not None:
        (trial_dir / "game.tw-pddl").write_text(json.dumps(game))
    return trial_dir


def hand_game(**changes) -> dict:
    domain, grammar = (p.read_text() for p in upstream_logic_files())
    game = {
        "pddl_domain": domain,
        "grammar": grammar.replace("UNKNOWN GOAL", "put a mug in coffeemachine"),
        "pddl_problem": HAND_PROBLEM,
        "solvable": True,
    }
    game.update(changes)
    return {k: v for k, v in game.items() if v is not None}


@pytest.fixture
def hand_root(tmp_path) -> Path:
    """A directory in the real layout, written by hand, with one case of each upstream skip."""
    root = tmp_path / "alfworld"
    folder = "pick_and_place_simple-Mug-None-CoffeeMachine-1"
    write_trial(root, "train", folder, "trial_T20190101_000000_000001", "pick_and_place_simple", hand_game())
    write_trial(root, "train", folder, "trial_T20190101_000000_000002", "pick_and_place_simple", hand_game())
    write_trial(root, "train", folder, "trial_no_game", "pick_and_place_simple", None)
    write_trial(root, "train", folder, "trial_unsolvable", "pick_and_place_simple", hand_game(solvable=False))
    write_trial(root, "train", folder, "trial_no_key", "pick_and_place_simple", hand_game(solvable=None))
    write_trial(root, "train", "pick_and_place_with_movable_recep-Mug-Bowl-Cabinet-1", "trial_m", "x", hand_game())
    write_trial(root, "train", "pick_clean_then_place_in_recep-AppleSliced-None-Fridge-1", "trial_s", "x", hand_game())
    write_trial(
        root,
        "train",
        "look_at_obj_in_light-Mug-None-DeskLamp-1",
        "trial_l",
        "look_at_obj_in_light",
        hand_game(),
    )
    return root


def test_loader_reads_hand_built_layout_and_counts_skips(hand_root):
    listing = collect_games(hand_root, "train")
    assert [g.task_id.rsplit("/", 1)[-1] for g in listing.games] == [
        "trial_l",
        "trial_T20190101_000000_000001",
        "trial_T20190101_000000_000002",
    ]
    assert dict(listing.skipped) == {
        "movable": 1,
        "sliced": 1,
        "missing_game_file": 1,
        "unsolvable": 1,
        "missing_solvable_key": 1,
    }
    only_place = collect_games(hand_root, "train", task_types=["pick_and_place_simple"])
    assert len(only_place.games) == 2 and only_place.filtered_out == 1


def test_upstream_loader_agrees(hand_root, tmp_path_factory):
    """alfworld's own AlfredTWEnv keeps the same games as our loader (hand-built and generated)."""
    from alfworld.agents.environment.alfred_tw_env import AlfredTWEnv

    def upstream_files(split_dir: Path) -> set[str]:
        config = {
            "env": {"goal_desc_human_anns_prob": 0, "task_types": [1, 2, 3, 4, 5, 6]},
            "dataset": {"data_path": str(split_dir), "num_train_games": -1},
        }
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            env = AlfredTWEnv(config, train_eval="train")
        return set(env.game_files)

    generated = dataset(tmp_path_factory, "easy", SMALL_COUNTS)
    for root in (hand_root, generated):
        ours = {str(g.game_file) for g in collect_games(root, "train").games}
        assert ours and ours == upstream_files(root / "json_2.1.1" / "train")


def test_env_plays_hand_built_game(hand_root):
    env = ALFWorldEnv(data_dir=str(hand_root), task_types=["pick_and_place_simple"])
    obs, info = env.reset(options={"index": 0})
    intro = obs["text"].split("you see ", 1)[1].split(".\n", 1)[0]
    assert sorted(intro.replace(", and ", ", ").split(", ")) == [
        "a cabinet 1",
        "a cabinet 2",
        "a coffeemachine 1",
    ]
    assert info["task"] == "put a mug in coffeemachine."
    assert env.expert_plan() == [
        "go to cabinet 2",
        "open cabinet 2",
        "take mug 1 from cabinet 2",
        "go to coffeemachine 1",
        "move mug 1 to coffeemachine 1",
    ]
    for command in env.expert_plan():
        obs, _reward, terminated, _, info = env.step(command)
    assert terminated and info["won"] and obs["text"] == "You move the mug 1 to the coffeemachine 1."
    env.close()


def test_download_release_from_archive(tmp_path, hand_root):
    archive = tmp_path / "json_2.1.1_tw-pddl.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in (hand_root / "json_2.1.1").rglob("*"):
            if path.is_file():
                zf.write(path, path.relative_to(hand_root).as_posix())
    dest = tmp_path / "downloaded"
    root = download_release(dest, urls=[archive.as_uri()], log=lambda m: None)
    assert root == dest and not list(dest.glob("*.zip"))
    assert len(collect_games(dest, "train").games) == 3

    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../outside.txt", "x")
    with pytest.raises(ValueError, match="outside"):
        download_release(tmp_path / "d2", urls=[evil.as_uri()], log=lambda m: None)
    assert not (tmp_path / "outside.txt").exists()


def test_cli_generate(tmp_path, capsys):
    from seed_rl.commands import data as data_command

    assert data_command.DATA_TARGETS["alfworld"] == "seed_envs.alfworld.cli"
    parser = argparse.ArgumentParser()
    data_command.register(parser.add_subparsers(dest="command"))
    out = tmp_path / "gen"
    args = parser.parse_args(
        [
            "data",
            "alfworld",
            "--generate",
            "2",
            "--difficulty",
            "easy",
            "--valid-seen",
            "1",
            "--valid-unseen",
            "1",
            "--out",
            str(out),
            "--seed",
            "3",
        ]
    )
    assert args.func(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["counts"] == {"train": 2, "valid_seen": 1, "valid_unseen": 1}
    assert summary["games_per_second"] > 0
    assert len(collect_games(out, "train").games) == 2
    assert len(collect_games(out, "valid_unseen").games) == 1


def test_cli_download_failure_names_the_url_and_the_offline_command(tmp_path, monkeypatch, capsys):
    from seed_rl.commands import data as data_command

    monkeypatch.setattr("seed_envs.alfworld.download.RELEASE_URLS", ("http://127.0.0.1:9/json_2.1.1_json.zip",))
    parser = argparse.ArgumentParser()
    data_command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["data", "alfworld", "--data-dir", str(tmp_path / "release")])
    assert args.func(args) == 1
    err = capsys.readouterr().err
    assert "http://127.0.0.1:9/json_2.1.1_json.zip" in err and "seed data alfworld --generate N" in err
    assert list((tmp_path / "release").iterdir()) == []  # no partial archive left
