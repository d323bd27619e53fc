"""ALFWorld's command: ``seed data alfworld`` (download the release, generate games, precompile).

``seed data alfworld`` fetches the text-game files of the release that alfworld 0.4.2's
``alfworld-download`` fetches, into ``--data-dir`` (default ``$ALFWORLD_DATA`` or
``~/.cache/alfworld``); point the env at it with ``data_dir=`` or ``ALFWORLD_DATA``.

``seed data alfworld --generate N`` writes N train games (and validation games) with
the procedural generator, offline, in the same layout. By default they go where
``gym.make("seed/ALFWorld-v0", difficulty=...)`` looks for them, so the env finds
them already made, and leaves each game's translation in the env's disk cache.

``seed data alfworld --precompile`` translates the games already at ``--data-dir`` into
that disk cache (with ``--workers`` processes), so that no env pays a game's first
translation; worth it once after a download.
"""

from __future__ import annotations

import argparse
import json
import sys

from seed_envs.alfworld import vocab
from seed_envs.alfworld.data import GENERATE_COMMAND, default_download_dir
from seed_envs.alfworld.dataset import generate_dataset
from seed_envs.alfworld.download import download_release
from seed_envs.alfworld.generate import DIFFICULTIES
from seed_envs.alfworld.precompile import precompile_games
from seed_envs.alfworld.sources import generated_root
from seed_envs.cli import main
from seed_envs.core import MissingDataError
from seed_envs.download import DownloadError

DIFFICULTY_NAMES = tuple(DIFFICULTIES)


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", help="where to put the release (default: $ALFWORLD_DATA or ~/.cache/alfworld)")
    parser.add_argument("--force", action="store_true", help="overwrite files that are already there")
    parser.add_argument(
        "--precompile",
        action="store_true",
        help="translate the games at --data-dir into the env's disk cache (no download)",
    )
    gen = parser.add_argument_group("offline generation")
    gen.add_argument("--generate", type=int, metavar="N", help="generate N train games instead of downloading")
    gen.add_argument("--difficulty", choices=DIFFICULTY_NAMES, default="full", help="room size (default: full)")
    gen.add_argument("--seed", type=int, default=0, help="generator seed (default: 0)")
    gen.add_argument(
        "--valid-seen",
        type=int,
        default=None,
        help="valid_seen games (default: N/10, at least 6, at most 140)",
    )
    gen.add_argument(
        "--valid-unseen",
        type=int,
        default=None,
        help="valid_unseen games (default: N/10, at least 6, at most 134)",
    )
    gen.add_argument(
        "--task-types", nargs="+", choices=vocab.TASK_TYPES, default=None, help="families (default: all 6)"
    )
    gen.add_argument("--out", default=None, help="output directory (default: the env's cache for this setting)")
    parser.add_argument("--workers", type=int, default=1, help="processes for --generate/--precompile (default: 1)")


def _default_valid(n: int, cap: int) -> int:
    return min(cap, max(6, n // 10))


def _print_progress(done: int, total: int, what: str) -> None:
    """Print about twenty progress lines over a run, and the last one."""
    if done % max(1, total // 20) == 0 or done == total:
        print(f"  {done}/{total} games {what}", file=sys.stderr)


def _precompile(root: str, workers: int) -> int:
    try:
        summary = precompile_games(
            root, workers=workers, progress=lambda done, total: _print_progress(done, total, "translated")
        )
    except MissingDataError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2))
    return 0


def run_data(args: argparse.Namespace) -> int:
    """Download the ALFWorld release, or generate ALFWorld games offline (--generate N)."""
    if args.precompile and args.generate is None:
        return _precompile(str(args.data_dir or default_download_dir()), args.workers)
    if args.generate is None:
        try:
            root = download_release(args.data_dir, force=args.force, log=lambda m: print(m, file=sys.stderr))
        except DownloadError as error:
            print(f"error: {error}", file=sys.stderr)
            print(f"This command needs internet access to GitHub; `{GENERATE_COMMAND}` works offline.", file=sys.stderr)
            return 1
        print(f"ALFWorld data in {root}; use data_dir={str(root)!r} or export ALFWORLD_DATA={root}")
        return 0

    if args.generate < 0:
        print("--generate needs a non-negative number of games", file=sys.stderr)
        return 2
    task_types = tuple(args.task_types) if args.task_types else vocab.TASK_TYPES
    counts = {
        "train": args.generate,
        "valid_seen": args.valid_seen if args.valid_seen is not None else _default_valid(args.generate, 140),
        "valid_unseen": args.valid_unseen if args.valid_unseen is not None else _default_valid(args.generate, 134),
    }
    out = args.out or generated_root(args.difficulty, args.seed, task_types)

    def progress(split: str, done: int, total: int) -> None:
        _print_progress(done, total, f"({split})")

    print(f"generating {counts} ({args.difficulty}, seed {args.seed}) into {out}", file=sys.stderr)
    summary = generate_dataset(
        out, counts, args.difficulty, args.seed, task_types, progress=progress, workers=args.workers
    )
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.modules[__name__]))
