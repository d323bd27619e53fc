"""``seed view``: a run's episodes as one self-contained HTML page.

    seed view runs/sokoban_seed                           # writes runs/sokoban_seed/episodes.html
    seed view runs/sokoban_seed --out /tmp/seed.html

Episodes grouped by update, each with its task, outcome, the skill written for it and its
steps (observation, response, action, reward; invalid steps marked); the action tokens of
steps that got OPD are coloured by their gate (hover for gate and Delta). The page needs
no network and runs no script: open it in any browser.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    doc = (__doc__ or "").strip()
    parser = subparsers.add_parser(
        "view", help=doc.splitlines()[0], description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run", metavar="RUN", help="a run folder (holds episodes.jsonl)")
    parser.add_argument("--out", metavar="FILE.html", help="the page to write (default: RUN/episodes.html)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from seed_rl.commands import read_run_episodes
    from seed_rl.records.viewer import render_page

    records = read_run_episodes(args.run)
    if records is None:
        return 2
    out = Path(args.out) if args.out else Path(args.run) / "episodes.html"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render_page(records, title=f"episodes of {Path(args.run).resolve().name}"), encoding="utf-8")
    except OSError as error:
        print(f"error: cannot write {out}: {error}", file=sys.stderr)
        return 2
    print(f"wrote {len(records)} episodes to {out}")
    return 0
