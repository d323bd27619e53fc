"""Translate a directory of ALFWorld games into the on-disk translation cache ahead of time.

The first reset of a game has to translate its PDDL problem to SAS (fast-downward's
translator, about a quarter of what upstream's reset costs). The env keeps every
translation on disk (:func:`seed_envs.alfworld.engine.default_disk_dir`), so this cost is
paid once per game and machine. Generated games are translated as the generator checks
them; for a downloaded release, ``seed data alfworld --precompile`` pays it up front,
in parallel, so that no training run does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from seed_envs.alfworld.data import collect_games
from seed_envs.core import SPLITS, MissingDataError
from seed_envs.parallel import map_in_processes

#: This process's translation caches, one per disk directory (reused by every file it translates).
_CACHES: dict[str | None, Any] = {}


def _translate_file(job: tuple[str, str | None]) -> str:
    """Translate one game file into ``disk_dir``; return "disk_hits" or "translations"."""
    from seed_envs.alfworld import engine  # textworld: loaded only when a game is translated

    game_file, disk_dir = job
    data = json.loads(Path(game_file).read_text())
    cache = _CACHES.get(disk_dir)
    if cache is None:
        cache = _CACHES[disk_dir] = engine.GameCache(max_games=1, disk_dir=disk_dir)
    disk_hits = cache.stats["disk_hits"]
    cache.translation(data["pddl_domain"], data["pddl_problem"])
    return "disk_hits" if cache.stats["disk_hits"] > disk_hits else "translations"


def precompile_games(
    root: str | Path,
    splits: Sequence[str] = SPLITS,
    workers: int = 1,
    disk_dir: str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Translate every playable game of ``splits`` under ``root`` into ``disk_dir``
    (default: the env's disk cache); return counts and timing.

    Games whose translation is already there are only read back. Splits missing from
    ``root`` are skipped; if none is there, :class:`~seed_envs.core.MissingDataError` names the path.
    """
    from seed_envs.alfworld import engine  # textworld: loaded only when a game is translated

    target = Path(disk_dir) if disk_dir is not None else engine.default_disk_dir()
    if target is None:
        raise ValueError(f"the disk cache is off (${engine.DISK_CACHE_ENV}); pass disk_dir= to precompile")
    files: list[str] = []
    missing: list[MissingDataError] = []
    for split in splits:
        try:
            files += [str(record.game_file) for record in collect_games(root, split).games]
        except MissingDataError as error:
            missing.append(error)
    if missing and len(missing) == len(splits):
        raise missing[0]
    jobs = [(f, str(target)) for f in files]
    start = time.perf_counter()
    counts = {"translations": 0, "disk_hits": 0}
    for done, outcome in enumerate(map_in_processes(_translate_file, jobs, workers, chunksize=8), 1):
        counts[outcome] += 1
        if progress is not None:
            progress(done, len(jobs))
    elapsed = time.perf_counter() - start
    return {"root": str(root), "disk_dir": str(target), "games": len(jobs), **counts, "seconds": elapsed}
