"""Where the env's games come from: a directory in the upstream layout, or the generator.

Both give every game a stable id, and the ``game.tw-pddl`` the engine loads for it.

- :class:`DirectorySource` lists a directory once per split, as upstream does
  (:func:`seed_envs.alfworld.data.collect_games`), with its skip counts. A game's id is
  its path under ``json_2.1.1``: ``<split>/<task_type>-<Obj>-<Mrecep>-<Recep>-<scene>/<trial>``.
- :class:`GeneratedSource` is a procedural set with a fixed size per split. A game's id
  is known without making the game: ``<split>/<task_type>/<trial>``, from the split, the
  index and the generator seed (:func:`generated_task_id`; the family cycles with the
  index and the trial name is :func:`.generate.trial_name`). Listing ids therefore costs
  nothing; a game is generated when its file is first asked for (at ``reset``), written
  in the upstream layout under the cache directory, and read from there afterwards. An
  index file per game records which directory it got (the directory's name depends on
  the drawn goal), so any process, or ``seed data alfworld --generate``, that made a
  game makes it for all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from seed_envs.alfworld import vocab
from seed_envs.alfworld.data import GameListing, collect_games, dataset_dir, game_file_for, missing_games
from seed_envs.alfworld.generate import (
    GENERATOR_VERSION,
    get_difficulty,
    make_game,
    parse_trial_name,
    task_type_for,
    trial_name,
    write_game,
)
from seed_envs.core import check_split
from seed_envs.files import atomic_write_text
from seed_envs.paths import cache_dir

#: Split sizes of a generated set: those of the ALFWorld release (train, valid_seen, valid_unseen).
DEFAULT_COUNTS: dict[str, int] = {"train": 3553, "valid_seen": 140, "valid_unseen": 134}


def split_of(task_id: str) -> str:
    """The split a task id belongs to (its first path component)."""
    return check_split(task_id.split("/", 1)[0])


def task_type_of(task_id: str) -> str:
    """The family of a task id (the start of its second path component)."""
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
                raise missing_games(
                    self.root,
                    dataset_dir(self.root) / split,
                    f"playable ALFWorld games of split {split!r} (skipped: {dict(listing.skipped)}, "
                    f"of other task types: {listing.filtered_out})",
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
    name = f"{difficulty}-seed{seed}-gen{GENERATOR_VERSION}"
    if tuple(task_types) != vocab.TASK_TYPES:
        name += "-" + hashlib.blake2b("|".join(task_types).encode(), digest_size=4).hexdigest()
    return cache_dir("alfworld", "generated", name)


def generated_task_id(seed: int, split: str, index: int, task_types: Sequence[str] = vocab.TASK_TYPES) -> str:
    """The id of generated game ``index`` of ``split``: ``<split>/<task_type>/<trial>``, made without the game."""
    return f"{check_split(split)}/{task_type_for(index, task_types)}/{trial_name(seed, split, index)}"


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
        self.difficulty = get_difficulty(difficulty).name
        self.seed = int(seed)
        self.task_types = vocab.check_task_types(task_types) if task_types else vocab.TASK_TYPES
        self.counts = dict(DEFAULT_COUNTS if counts is None else counts)
        self.root = Path(root) if root is not None else generated_root(self.difficulty, self.seed, self.task_types)
        #: (split, index) -> directory (under ``json_2.1.1``) of the games this source has found or made.
        self._game_dirs: dict[tuple[str, int], str] = {}

    def count(self, split: str) -> int:
        return int(self.counts.get(check_split(split), 0))

    def _check_index(self, split: str, index: int) -> None:
        if not 0 <= index < self.count(split):
            raise IndexError(f"index {index} out of range for split {split!r} with {self.count(split)} tasks")

    def task_id(self, split: str, index: int) -> str:
        """The id of game ``index`` of ``split`` (nothing is generated)."""
        split = check_split(split)
        self._check_index(split, index)
        return generated_task_id(self.seed, split, index, self.task_types)

    def locate(self, task_id: str) -> tuple[str, int]:
        """``(split, index)`` of one of this set's task ids; ValueError for any other id.

        The second component may also be the game's directory name (the id of the same
        game under :class:`DirectorySource`): only its family is checked.
        """
        parts = task_id.split("/")
        parsed = parse_trial_name(parts[-1]) if len(parts) == 3 else None
        if (
            parsed is None
            or parsed[0] != self.seed
            or parsed[1] != parts[0]
            or not 0 <= parsed[2] < self.count(parsed[1])
            or task_type_of(task_id) != task_type_for(parsed[2], self.task_types)
        ):
            example = generated_task_id(self.seed, "train", 0, self.task_types)
            raise ValueError(
                f"task_id {task_id!r} is not a game of this generated set (seed {self.seed}, "
                f"split sizes {self.counts}); its ids look like {example!r}"
            )
        return parsed[1], parsed[2]

    def _index_file(self, split: str, index: int) -> Path:
        return self.root / "index" / split / f"{index:06d}.txt"

    def ensure(self, split: str, index: int) -> str:
        """The directory (under ``json_2.1.1``) of game ``index`` of ``split``, generating
        and writing the game if it is not on disk yet."""
        split = check_split(split)
        self._check_index(split, index)
        game_dir = self._game_dirs.get((split, index))
        if game_dir is None:
            game_dir = self._written(split, index) or self._generate(split, index)
            self._game_dirs[(split, index)] = game_dir
        return game_dir

    def _written(self, split: str, index: int) -> str | None:
        """The directory of game ``index`` of ``split`` if its index file and game file are on disk."""
        marker = self._index_file(split, index)
        if marker.is_file():
            game_dir = marker.read_text().strip()
            if (dataset_dir(self.root) / game_dir / "game.tw-pddl").is_file():
                return game_dir
        return None

    def _generate(self, split: str, index: int) -> str:
        """Make game ``index`` of ``split``, write it and its index file; return its directory."""
        game = make_game(split, index, self.difficulty, self.seed, self.task_types)
        write_game(self.root, game)
        atomic_write_text(self._index_file(split, index), game.relative_dir + "\n")
        return game.relative_dir

    def game_file(self, task_id: str) -> Path:
        """The ``game.tw-pddl`` of a task id, generating the game if needed."""
        split, index = self.locate(task_id)
        path = dataset_dir(self.root) / self.ensure(split, index) / "game.tw-pddl"
        if not path.is_file():  # removed from disk since this source found it: find or make it again
            self._game_dirs.pop((split, index), None)
            path = dataset_dir(self.root) / self.ensure(split, index) / "game.tw-pddl"
        return path
