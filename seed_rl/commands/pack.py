"""``seed pack``: a run's trained policy as a small folder that ``seed eval`` loads on any machine.

    seed pack runs/compare/seed/seed0 --out docs/policies/sokoban_seed0
    seed eval --policy docs/policies/sokoban_seed0 --env sokoban --split valid_unseen

The folder holds the run's ``config.yaml``, its latest checkpoint's weights (the LoRA adapter
RL trained; not the optimizer's state), ``metrics.jsonl``, and the warm-start and Stage-1
adapters the trainer merged before RL (otherwise kept only in the training machine's cache):
a few MB for a LoRA run, small enough to commit beside the results it produced. The evaluations
``seed compare`` kept in the run (and its Stage-1 report) come too, so that ``seed compare --runs``
over packs gives the run's table on another machine without playing or training again:

    seed compare --runs docs/policies/sokoban_seed0 docs/policies/sokoban_grpo0 --out runs/cmp

With ``--resumable`` the pack also holds what continuing the run reads (the optimizer's and the
generators' states, the warm-start report, the skill log), and ``seed train`` goes on from it on a
machine without the run's cache:

    seed pack runs/long --out docs/runs/long --resumable
    seed train --resume run_dir=docs/runs/long updates=40

With ``--into-cache`` it goes the other way: a pack's warm-start and Stage-1 adapters are put into
this machine's cache, under the keys of the pack's settings, so that new runs with those settings
(more training seeds, other arms) start from the very adapters the pack's run started from. Trained
again on another CPU or code version they come out different:

    seed pack docs/results/adapters/alfworld/grpo-outcome-seed0 --into-cache
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    doc = (__doc__ or "").strip()
    parser = subparsers.add_parser(
        "pack", help=doc.splitlines()[0], description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run", metavar="RUN", help="a run folder, or one of its checkpoints/update-NNNNNN")
    parser.add_argument("--out", help="the folder to write (created)")
    parser.add_argument(
        "--into-cache",
        action="store_true",
        help="RUN is a pack: put its warm-start and Stage-1 adapters into this machine's cache instead",
    )
    parser.add_argument(
        "--resumable",
        action="store_true",
        help="also the optimizer and generator states: `seed train --resume run_dir=OUT` continues the run",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from seed_rl.train.saved_policy import PolicyError, cache_pack_adapters, pack_run

    if (args.out is None) != args.into_cache or (args.into_cache and args.resumable):
        print("error: give --out (with or without --resumable), or --into-cache alone", file=sys.stderr)
        return 2
    try:
        if args.into_cache:
            files = cache_pack_adapters(Path(args.run))
            print(f"put {len(files)} files into the cache: {', '.join(str(f) for f in files) or 'all there already'}")
            return 0
        files = pack_run(Path(args.run), Path(args.out), resumable=args.resumable)
    except PolicyError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    size = sum(f.stat().st_size for f in files)
    print(f"packed {len(files)} files ({size / 2**20:.1f} MiB) into {args.out}")
    return 0
