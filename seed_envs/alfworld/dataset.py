"""Whole generated ALFWorld sets: ``generate_dataset(root, counts, ...)`` (``seed data alfworld --generate``).

A set is what a :class:`~seed_envs.alfworld.sources.GeneratedSource` plays: each game
written in the upstream layout (:mod:`.generate`) plus its index file, so an env over
the same directory and settings finds every game already made.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from seed_envs.alfworld import vocab
from seed_envs.alfworld.generate import GENERATOR_VERSION, Difficulty, get_difficulty
from seed_envs.alfworld.sources import GeneratedSource
from seed_envs.core import SPLITS
from seed_envs.parallel import map_in_processes

#: One job: (difficulty, seed, task types, counts, root, split, index).
Job = tuple[str, int, tuple[str, ...], dict[str, int], str, str, int]


def _ensure_game(job: Job) -> str:
    """Make (or find) one game of a set; return its split (run in worker processes)."""
    difficulty, seed, task_types, counts, root, split, index = job
    GeneratedSource(difficulty, seed, task_types, counts=counts, root=root).ensure(split, index)
    return split


def generate_dataset(
    root: str | Path,
    counts: Mapping[str, int],
    difficulty: str | Difficulty = "full",
    seed: int = 0,
    task_types: Sequence[str] = vocab.TASK_TYPES,
    progress: Callable[[str, int, int], None] | None = None,
    workers: int = 1,
) -> dict[str, Any]:
    """Write ``counts[split]`` games per split under ``root``; return a summary with timings.

    Games already there (same generator version, difficulty, seed and families) are
    kept, so an interrupted run resumes where it stopped. ``workers`` > 1 generates in
    that many processes; the games are the same whatever the number of workers.
    """
    level = get_difficulty(difficulty)
    source = GeneratedSource(level.name, seed, task_types, counts={s: int(counts.get(s, 0)) for s in SPLITS}, root=root)
    start = time.perf_counter()
    total = sum(source.counts.values())
    jobs: list[Job] = [
        (level.name, seed, tuple(task_types), source.counts, str(source.root), split, index)
        for split in SPLITS
        for index in range(source.count(split))
    ]
    for done, split in enumerate(map_in_processes(_ensure_game, jobs, workers), 1):
        if progress is not None:
            progress(split, done, total)
    elapsed = time.perf_counter() - start
    return {
        "root": str(source.root),
        "difficulty": level.name,
        "seed": seed,
        "task_types": list(task_types),
        "counts": source.counts,
        "workers": workers,
        "seconds": elapsed,
        "games_per_second": (total / elapsed) if elapsed > 0 else float("inf"),
        "generator_version": GENERATOR_VERSION,
    }
