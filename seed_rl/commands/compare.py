"""``seed compare``: train GRPO and SEED (and ablations) under one budget, evaluate alike, tabulate.

    seed compare --config demo                       # the README's CPU run: grpo vs seed
    seed compare --config sokoban_grpo --arms grpo seed seed-scripted updates=30 --eval-episodes 64

Each arm trains in ``<out>/<arm>`` (finished arms are reused, interrupted ones resume), then
plays the same fixed ``valid_unseen`` tasks with no skill: the first N of the env's task
manifest (seed_rl/manifests/, the tasks ``seed eval`` plays); the untrained model plays them
too. Writes ``comparison.md``, ``comparison.json`` and ``comparison.png`` in ``--out``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    from seed_rl.compare import ARMS

    doc = (__doc__ or "").strip()
    parser = subparsers.add_parser(
        "compare", help=doc.splitlines()[0], description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", default="demo", help="the base config (a file or a shipped name)")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="overrides applied to every arm")
    parser.add_argument("--arms", nargs="+", default=["grpo", "seed"], choices=list(ARMS))
    parser.add_argument("--out", default="runs/compare", help="folder of the arms' runs and the outputs")
    parser.add_argument(
        "--eval-episodes", type=int, default=32, help="the first N valid_unseen tasks of the manifest (as seed eval)"
    )
    parser.add_argument("--eval-seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--force", action="store_true", help="compare arms whose budgets differ (the table says so)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from seed_rl.compare import arm_config, check_budgets, evaluate_untrained, manifest_indices, run_arm, write_outputs
    from seed_rl.config import ConfigError
    from seed_rl.manifests import ManifestError

    out = Path(args.out)
    try:
        configs = {name: arm_config(name, args.config, args.overrides, out) for name in args.arms}
        differing = check_budgets(configs, force=args.force)
        first = next(iter(configs.values()))
        tasks = manifest_indices(first, args.eval_episodes)
    except (ConfigError, ManifestError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    seeds = tuple(args.eval_seeds)
    print(f"== untrained {first.model} on {args.eval_episodes} valid_unseen tasks of {first.env}", flush=True)
    untrained = evaluate_untrained(first, tasks, seeds, out)
    try:
        arms = [run_arm(cfg, tasks, seeds) for cfg in configs.values()]
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print()
    print(write_outputs(out, untrained, arms, differing))
    print(f"\nwrote {out / 'comparison.md'}, {out / 'comparison.png'} and {out / 'comparison.json'}")
    return 0
