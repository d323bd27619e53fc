"""Where the env's games come from: a directory in the upstream layout, or the generator.

Both give every game a stable id, its path under ``json_2.1.1``
(``<split>/<task_type>-<Obj>-<Mrecep>-<Recep>-<scene>/<trial>``), and the
``game.tw-pddl`` the engine loads.

- :class:`DirectorySource` lists a directory once per split, as upstream does
  (:func:`seed_envs.alfworld.data.collect_games`), with its skip counts.
- :class:`GeneratedSource` is a procedural set with a fixed size per split whose
  games are generated the first time their index is asked for, written in the
  upstream layout under the cache directory, and read from there afterwards. An
  index file per game records which trial directory it got, so any process (or
  ``seed data alfworld --generate``) that made a game makes it for all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from seed_envs.alfworld import vocab
from seed_envs.alfworld.data import ALFWorldDataError, GameListing, collect_games, dataset_dir, game_file_for
from seed_envs.core import check_split
from seed_envs.files import atomic_write_text
from seed_envs.paths import cache_dir

#: Split sizes of a generated set: those of the ALFWorld release (train, valid_seen, valid_unseen).
DEFAULT_COUNTS: dict[str, int] = {"train": 3553, "valid_seen": 140, "valid_unseen": 134}


def split_of(task_id: str) -> str:
    """The split a task id belongs to (its first path component)."""
    return check_split(task_id.split("/", 1)[0])


def task_type_of(task_id: str) -> str:
    """The family of a task id (the start of its task directory's name)."""
    return task_id.split("/")[1].split("-", 1)[0]


class DirectorySource:
    """Games read from ``root`` (the real release or a generated directory)."""

    def __init__(self, root: str | Path, task_types: Sequence[str] | None = None) -> None:
        self.root = Path(root).expanduser()
        self.task_types = tuple(task_types) if task_types is not None else None
        self._listings: dict[str, GameListing] = {}
        self._by_id: dict[str, Path] = {}

    def listing(self, split: str) -> GameListing:
        split = check_split(split)
        if split not in self._listings:
            listing = collect_games(self.root, split, self.task_types)
            if not listing.games:
                raise ALFWorldDataError(
                    f"No playable ALFWorld games for split {split!r} under {dataset_dir(self.root) / split} "
                    f"(skipped: {dict(listing.skipped)}, other task types: {listing.filtered_out}). "
                    "Get games with `seed data alfworld` or `seed data alfworld --generate N`."
                )
            self._listings[split] = listing
            self._by_id.update((g.task_id, g.game_file) for g in listing.games)
        return self._listings[split]

    def count(self, split: str) -> int:
        return len(self.listing(split).games)

    def task_id(self, split: str, index: int) -> str:
        return self.listing(split).games[index].task_id

    def game_file(self, task_id: str) -> Path:
        if task_id not in self._by_id:
            self.listing(split_of(task_id))
        path = self._by_id.get(task_id)
        return path if path is not None else game_file_for(self.root, task_id)


def generated_root(difficulty: str, seed: int, task_types: Sequence[str] = vocab.TASK_TYPES) -> Path:
    """The cache directory of a generated set (one per difficulty, seed, families, generator version)."""
    from seed_envs.alfworld.generate import GENERATOR_VERSION

    name = f"{difficulty}-seed{seed}-gen{GENERATOR_VERSION}"
    if tuple(task_types) != vocab.TASK_TYPES:
        name += "-" + hashlib.blake2b("|".join(task_types).encode(), digest_size=4).hexdigest()
    return cache_dir("alfworld", "generated", name)


class GeneratedSource:
    """A generated set whose games are made on first use (see the module docstring)."""

    def __init__(
        self,
        difficulty: str = "full",
        seed: int = 0,
        task_types: Sequence[str] | None = None,
        counts: dict[str, int] | None = None,
        root: str | Path | None = None,
    ) -> None:
        from seed_envs.alfworld.generate import get_difficulty

        self.difficulty = get_difficulty(difficulty).name
        self.seed = int(seed)
        self.task_types = vocab.check_task_types(task_types) if task_types else vocab.TASK_TYPES
        self.counts = dict(DEFAULT_COUNTS if counts is None else counts)
        self.root = (
            Path(root) if root is not None else generated_root(self.difficulty, self.seed, self.task_types)
        )
        #: (split, index) -> task id of the games this source has found or made.
        self._task_ids: dict[tuple[str, int], str] = {}

    def _index_file(self, split: str, index: int) -> Path:
        return self.root / "index" / split / f"{index:06d}.txt"

    def count(self, split: str) -> int:
        return int(self.counts.get(check_split(split), 0))

    def ensure(self, split: str, index: int) -> str:
        """The task id of game ``index`` of ``split``, generating and writing the game if needed."""
        split = check_split(split)
        if not 0 <= index < self.count(split):
            raise IndexError(f"index {index} out of range for split {split!r} with {self.count(split)} tasks")
        task_id = self._task_ids.get((split, index))
        if task_id is None:
            task_id = self._written(split, index) or self._generate(split, index)
            self._task_ids[(split, index)] = task_id
        return task_id

    def _written(self, split: str, index: int) -> str | None:
        """The task id of game ``index`` of ``split`` if its index file and game file are on disk."""
        marker = self._index_file(split, index)
        if marker.is_file():
            task_id = marker.read_text().strip()
            if (dataset_dir(self.root) / task_id / "game.tw-pddl").is_file():
                return task_id
        return None

    def _generate(self, split: str, index: int) -> str:
        """Make game ``index`` of ``split``, write it and its index file; return its task id."""
        from seed_envs.alfworld.generate import make_game, write_game

        game = make_game(split, index, self.difficulty, self.seed, self.task_types)
        write_game(self.root, game)
        atomic_write_text(self._index_file(split, index), game.relative_dir + "\n")
        return game.relative_dir

    def task_id(self, split: str, index: int) -> str:
        return self.ensure(split, index)

    def game_file(self, task_id: str) -> Path:
        path = dataset_dir(self.root) / task_id / "game.tw-pddl"
        if not path.is_file():
            missing = ALFWorldDataError(f"no game {task_id!r} in the generated set at {self.root}")
            index = _index_from_trial(task_id)
            if index is None:
                raise missing
            split = split_of(task_id)
            self._task_ids.pop((split, index), None)  # gone from disk since: find or make it again
            if self.ensure(split, index) != task_id:
                raise missing
        return path


def _index_from_trial(task_id: str) -> int | None:
    trial = task_id.rsplit("/", 1)[-1]
    digits = trial[-6:]
    return int(digits) if trial.startswith("trial_G") and digits.isdigit() else None
