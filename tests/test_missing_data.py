"""Missing data: every env raises ``seed_envs.core.MissingDataError`` naming the path and the command.

The command in each error must be one the ``seed`` CLI accepts, and point at the same
place the env looked. Sokoban and EZPoints are procedural and read no data from disk;
their test checks exactly that, so they can never need a ``seed data`` command.
"""

from __future__ import annotations

import ast
import json
import pickle
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from seed_envs.core import MissingDataError
from seed_rl.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


def assert_names_path_and_command(error: MissingDataError, path: Path, command: str) -> None:
    """``error`` carries ``path`` and ``command``, names both, and the command parses as a ``seed`` command."""
    assert isinstance(error, MissingDataError) and isinstance(error, FileNotFoundError)
    assert error.path == path and error.command == command
    message = str(error)
    assert str(path) in message and f"`{command}`" in message
    argv = shlex.split(command)
    assert argv[:2] == ["seed", "data"]
    args = build_parser().parse_args(argv[1:])  # exits (SystemExit) on a command seed does not know
    assert args.command == "data" and callable(args.func)


# ---------------------------------------------------------------------- the type
def test_the_error_carries_path_and_command_and_survives_pickling(tmp_path):
    error = MissingDataError(tmp_path / "a.json", "seed data webshop", what="the catalog", hint="or use --generate")
    assert_names_path_and_command(error, tmp_path / "a.json", "seed data webshop")
    assert "or use --generate" in str(error) and error.paths == (tmp_path / "a.json",)
    several = MissingDataError(tmp_path / "a", "seed data search", what="QA files", also_missing=[tmp_path / "b"])
    assert several.paths == (tmp_path / "a", tmp_path / "b") and str(tmp_path / "b") in str(several)
    for original in (error, several):
        copy = pickle.loads(pickle.dumps(original))  # vector workers send errors back pickled
        assert (copy.path, copy.paths, copy.command, str(copy)) == (
            original.path,
            original.paths,
            original.command,
            str(original),
        )
    with pytest.raises(ValueError, match="command"):
        MissingDataError(tmp_path, " ")


def test_no_env_defines_another_missing_file_error():
    """One type to catch: any FileNotFoundError subclass in seed_envs is core's MissingDataError."""
    found = []
    for path in sorted((ROOT / "seed_envs").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {getattr(base, "id", getattr(base, "attr", "")) for base in node.bases}
                if bases & {"FileNotFoundError", "OSError", "IOError"}:
                    found.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert "seed_envs/core.py:MissingDataError" in found
    others = [f for f in found if f != "seed_envs/core.py:MissingDataError"]
    # DownloadError (a failed download, not missing data) is the one other OSError.
    assert others == ["seed_envs/download.py:DownloadError"], others


# ---------------------------------------------------------------------- ALFWorld
def test_alfworld_missing_release(tmp_path):
    from seed_envs.alfworld.data import collect_games, game_file_for
    from seed_envs.alfworld.env import ALFWorldEnv

    root = tmp_path / "nowhere"
    command = f"seed data alfworld --data-dir {root}"
    with pytest.raises(MissingDataError) as error:
        ALFWorldEnv(data_dir=root, split="valid_seen")  # fails before the engine is loaded
    assert_names_path_and_command(error.value, root / "json_2.1.1" / "valid_seen", command)
    assert "seed data alfworld --generate N" in str(error.value)  # the offline way is named too
    with pytest.raises(MissingDataError) as error:
        collect_games(root / "json_2.1.1", "train")  # the dataset directory itself: same command
    assert_names_path_and_command(error.value, root / "json_2.1.1" / "train", command)
    with pytest.raises(MissingDataError) as error:
        game_file_for(root, "train/pick_and_place_simple-Mug-None-Desk-308/trial_T1")
    game = root / "json_2.1.1" / "train" / "pick_and_place_simple-Mug-None-Desk-308" / "trial_T1" / "game.tw-pddl"
    assert_names_path_and_command(error.value, game, command)


def test_alfworld_split_without_playable_games(tmp_path):
    from seed_envs.alfworld.sources import DirectorySource

    trial = tmp_path / "json_2.1.1" / "train" / "pick_and_place_simple-Mug-None-Desk-308" / "trial_T1"
    trial.mkdir(parents=True)
    (trial / "traj_data.json").write_text(json.dumps({"task_type": "pick_and_place_simple"}))  # no game file
    with pytest.raises(MissingDataError) as error:
        DirectorySource(tmp_path).listing("train")
    command = f"seed data alfworld --data-dir {tmp_path}"
    assert_names_path_and_command(error.value, tmp_path / "json_2.1.1" / "train", command)
    assert "missing_game_file" in str(error.value)


# ----------------------------------------------------------------------- WebShop
def test_webshop_missing_files(tmp_path):
    from seed_envs.webshop.data import load_data
    from seed_envs.webshop.generate import generate_catalog

    with pytest.raises(MissingDataError) as error:
        load_data(tmp_path)
    command = f"seed data webshop --dir {tmp_path}"
    assert_names_path_and_command(error.value, tmp_path / "items_shuffle.json", command)
    assert "items_shuffle_1000.json" in str(error.value) and "--generate" in str(error.value)

    generate_catalog(tmp_path, num_products=40, seed=1)
    (tmp_path / "items_ins_v2.json").unlink()
    with pytest.raises(MissingDataError) as error:
        load_data(tmp_path)
    assert_names_path_and_command(error.value, tmp_path / "items_ins_v2.json", command)

    human = tmp_path / "elsewhere" / "human.json"
    with pytest.raises(MissingDataError) as error:
        load_data(tmp_path, attributes_file=tmp_path / "items_shuffle.json", human_file=human, human_goals=True)
    assert_names_path_and_command(error.value, human, command)


def test_webshop_env_with_an_empty_data_dir(tmp_path):
    pytest.importorskip("rapidfuzz", reason="the webshop extra is not installed")
    from seed_envs.webshop.env import WebShopEnv

    with pytest.raises(MissingDataError) as error:
        WebShopEnv(data_dir=tmp_path)
    assert_names_path_and_command(error.value, tmp_path / "items_shuffle.json", f"seed data webshop --dir {tmp_path}")


# ---------------------------------------------------------------------- SearchQA
def test_searchqa_missing_corpus_and_questions(tmp_path):
    from seed_envs.searchqa.env import SearchQAEnv

    with pytest.raises(MissingDataError) as error:
        SearchQAEnv(dataset="nq", data_dir=tmp_path)
    command = f"seed data search --out {tmp_path} --corpus wiki18"
    assert_names_path_and_command(error.value, tmp_path / "wiki-18.jsonl", command)

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"id": "0", "contents": '"T"\ntext'}) + "\n")
    env = SearchQAEnv(dataset="nq", data_dir=tmp_path, corpus=corpus, retriever="http://127.0.0.1:9")
    with pytest.raises(MissingDataError) as error:
        env.reset(options={"split": "train"})  # the questions are read at the first reset
    assert_names_path_and_command(error.value, tmp_path / "nq" / "train.jsonl", f"seed data search --out {tmp_path}")


def test_searchqa_default_root_and_corpus_files(tmp_path, monkeypatch):
    from seed_envs.searchqa.env import SearchQAEnv
    from seed_envs.searchqa.retrievers.corpus import Corpus

    monkeypatch.setenv("SEED_SEARCHQA_DATA", str(tmp_path))
    with pytest.raises(MissingDataError) as error:
        SearchQAEnv(dataset="nq_hotpotqa")  # the default root: the plain command
    assert_names_path_and_command(error.value, tmp_path / "wiki-18.jsonl", "seed data search --corpus wiki18")
    with pytest.raises(MissingDataError) as error:
        Corpus(tmp_path / "nope.jsonl")
    assert_names_path_and_command(error.value, tmp_path / "nope.jsonl", "seed data search --corpus wiki18")


# ----------------------------------------------------------- Sokoban and EZPoints
READS_NOTHING = textwrap.dedent(
    """
    import os, sys, sysconfig
    import gymnasium as gym, seed_envs

    installed = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                 *sysconfig.get_paths().values())}
    source = os.path.realpath(os.path.dirname(seed_envs.__file__))
    reads = []

    def outside(path):
        path = os.path.realpath(os.fsdecode(path))
        return not any(path == d or path.startswith(d + os.sep) for d in (*installed, source))

    def hook(event, args):
        if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes, os.PathLike)):
            if outside(args[0]):
                reads.append((event, os.fsdecode(args[0])))

    sys.addaudithook(hook)
    for env_id in sys.argv[1:]:
        for mode in ("image", "text"):
            env = gym.make(env_id, observation_mode=mode)
            for split in ("train", "valid_seen", "valid_unseen"):
                for index in range(3):
                    env.reset(options={"split": split, "index": index})
                    for action in env.unwrapped.expert_plan():
                        env.step(action)
                    env.step("not an action")
            env.close()
    print(reads)
    """
)


@pytest.mark.parametrize("env_id", ["seed/Sokoban-v0", "seed/EZPoints-v0"])
def test_procedural_envs_read_no_data(env_id, tmp_path):
    """Procedural envs have no missing-data path: they open no file outside the Python
    installation and the seed_envs sources (no data dir, nothing in the cache)."""
    cache = tmp_path / "cache"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SEED_CACHE_DIR": str(cache)}
    result = subprocess.run(
        [sys.executable, "-c", READS_NOTHING, env_id], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]", result.stdout
    assert not cache.exists() or not any(cache.iterdir())


def test_the_read_check_sees_a_data_file(tmp_path):
    """The check above is able to fail: an env step that opens a file is reported."""
    data = tmp_path / "tiles.png"
    data.write_bytes(b"")
    step = 'env.step("not an action")'
    script = READS_NOTHING.replace(step, f"{step}; open({str(data)!r}).close()")
    result = subprocess.run(
        [sys.executable, "-c", script, "seed/Sokoban-v0"], capture_output=True, text=True, timeout=300,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SEED_CACHE_DIR": str(tmp_path / "cache")},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert str(data) in result.stdout
