"""ALFWorld game files: find them and list them per split as upstream does.

The upstream layout (``alfworld-download``, release json_2.1.1)::

    $ALFWORLD_DATA/json_2.1.1/{train,valid_seen,valid_unseen}/
        <task_type>-<Obj>-<Mrecep>-<Recep>-<scene>/<trial>/
            game.tw-pddl  traj_data.json  [initial_state.pddl]

:func:`collect_games` keeps the games upstream's ``AlfredTWEnv.collect_game_files``
keeps, and counts the ones it skips for the same reasons: a path naming ``movable``
or ``Sliced`` (families the text engine does not support), a missing
``game.tw-pddl``, a game file without the ``solvable`` key, or one marked unsolvable.
Games are listed in sorted order (upstream walks the directory tree in file-system
order); a game's id is its path under ``json_2.1.1``, e.g.
``valid_seen/pick_and_place_simple-Mug-None-Desk-308/trial_T2019...``.

Missing games raise :class:`seed_envs.core.MissingDataError` naming the directory and
``seed data alfworld``. Nothing here imports the engine: this module is light enough for
the CLI. Fetching the release is :mod:`seed_envs.alfworld.download`.
"""

from __future__ import annotations

import json
import os
import shlex
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path

from seed_envs.core import MissingDataError, check_split
from seed_envs.extras import install_hint

DATASET_DIRNAME = "json_2.1.1"
DATA_COMMAND = "seed data alfworld"
GENERATE_COMMAND = "seed data alfworld --generate N"


@dataclass(frozen=True)
class GameRecord:
    """One playable game: where its files are and what ``traj_data.json`` says of it."""

    task_id: str
    task_type: str
    game_file: Path


@dataclass
class GameListing:
    """The games of one split, plus how many were skipped and why."""

    split: str
    games: list[GameRecord]
    skipped: Counter = field(default_factory=Counter)
    filtered_out: int = 0


def upstream_logic_files() -> tuple[Path, Path]:
    """The PDDL domain and the grammar that the ``alfworld`` package ships."""
    spec = find_spec("alfworld")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"the 'alfworld' package is not installed: {install_hint('alfworld')}")
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    domain, grammar = data / "alfred.pddl", data / "alfred.twl2"
    for path in (domain, grammar):
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing from the installed alfworld package")
    return domain, grammar


def dataset_dir(root: str | Path) -> Path:
    """``root/json_2.1.1``; ``root`` may also be that directory itself."""
    root = Path(root).expanduser()
    if root.name == DATASET_DIRNAME or (root / "train").is_dir() or (root / "valid_seen").is_dir():
        return root
    return root / DATASET_DIRNAME


def default_download_dir() -> Path:
    """Where ``seed data alfworld`` puts the release: ``$ALFWORLD_DATA`` or ``~/.cache/alfworld``."""
    return Path(os.environ.get("ALFWORLD_DATA") or Path.home() / ".cache" / "alfworld").expanduser()


def data_command(root: str | Path) -> str:
    """The ``seed data alfworld`` command that downloads the release into ``root``."""
    root = Path(root).expanduser()
    target = root.parent if root.name == DATASET_DIRNAME else root
    return f"{DATA_COMMAND} --data-dir {shlex.quote(str(target))}"


def missing_games(root: str | Path, path: Path, what: str) -> MissingDataError:
    """The error for ALFWorld games of ``root`` that are not at ``path``: download or generate them."""
    return MissingDataError(
        path,
        data_command(root),
        what=what,
        hint=f"then set ALFWORLD_DATA or pass data_dir=; or generate games offline with `{GENERATE_COMMAND}`",
    )


def collect_games(root: str | Path, split: str, task_types: Iterable[str] | None = None) -> GameListing:
    """The playable games of ``split`` under ``root``, upstream's skips counted.

    Raises :class:`~seed_envs.core.MissingDataError` naming the directory and the
    commands that provide data when the split's directory does not exist.
    """
    split = check_split(split)
    split_dir = dataset_dir(root) / split
    if not split_dir.is_dir():
        raise missing_games(root, split_dir, f"ALFWorld games of split {split!r}")
    wanted = set(task_types) if task_types is not None else None
    listing = GameListing(split=split, games=[])
    for traj_path in sorted(split_dir.rglob("traj_data.json")):
        trial_dir = traj_path.parent
        relative = trial_dir.relative_to(split_dir).as_posix()
        if "movable" in relative:
            listing.skipped["movable"] += 1
            continue
        if "Sliced" in relative:
            listing.skipped["sliced"] += 1
            continue
        try:
            traj = json.loads(traj_path.read_text())
        except (OSError, ValueError):
            listing.skipped["unreadable_traj_data"] += 1
            continue
        task_type = traj.get("task_type", "")
        if wanted is not None and task_type not in wanted:
            listing.filtered_out += 1
            continue
        game_file = trial_dir / "game.tw-pddl"
        if not game_file.is_file():
            listing.skipped["missing_game_file"] += 1
            continue
        try:
            game = json.loads(game_file.read_text())
        except (OSError, ValueError):
            listing.skipped["unreadable_game_file"] += 1
            continue
        if "solvable" not in game:
            listing.skipped["missing_solvable_key"] += 1
            continue
        if not game["solvable"]:
            listing.skipped["unsolvable"] += 1
            continue
        listing.games.append(GameRecord(task_id=f"{split}/{relative}", task_type=task_type, game_file=game_file))
    return listing


def game_file_for(root: str | Path, task_id: str) -> Path:
    """The ``game.tw-pddl`` of a task id (``<split>/<task>/<trial>``), or a clear error."""
    split = task_id.split("/", 1)[0]
    check_split(split)
    path = dataset_dir(root) / task_id / "game.tw-pddl"
    if not path.is_file():
        raise missing_games(root, path, f"the game file of task {task_id!r}")
    return path
