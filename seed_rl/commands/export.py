"""``seed export``: a run's trajectories as JSONL that Hugging Face ``datasets`` loads.

    seed export runs/sokoban_seed                         # writes runs/sokoban_seed/dataset.jsonl
    seed export runs/sokoban_seed --out seed_trajectories.jsonl

One row per episode of ``RUN/episodes.jsonl``, one schema for all rows: update, episode,
group, env, task_id, task, split, skill (null when none), skill_error, outcome (won, score,
return, reward, steps, lost) and steps (observation, response, action, valid, reward, and
per OPD token its text, gate and Delta; empty lists where the step got no OPD). Load it
with ``datasets.load_dataset("json", data_files="dataset.jsonl")``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    doc = (__doc__ or "").strip()
    parser = subparsers.add_parser(
        "export", help=doc.splitlines()[0], description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run", metavar="RUN", help="a run folder (holds episodes.jsonl)")
    parser.add_argument("--out", help="the JSONL file to write (default: RUN/dataset.jsonl)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from seed_rl.commands import read_run_episodes
    from seed_rl.records.episode_export import write_dataset

    records = read_run_episodes(args.run)
    if records is None:
        return 2
    out = Path(args.out) if args.out else Path(args.run) / "dataset.jsonl"
    try:
        count = write_dataset(records, out)
    except OSError as error:
        print(f"error: cannot write {out}: {error}", file=sys.stderr)
        return 2
    print(f"wrote {count} episodes to {out}")
    return 0
