"""``seed compare``: train GRPO and SEED (and ablations) under one budget, evaluate alike, tabulate.

    seed compare --config demo                       # the README's CPU run: grpo vs seed
    seed compare --config sokoban_grpo --arms grpo seed seed-lambda0 skill-prompt --train-seeds 0 1 2
    seed compare --config demo train_tasks=64 --data-fractions 0.25 0.5 1   # the paper's Table 6
    seed compare --config demo --arms grpo seed --train-seeds 0 1 2 3 --eval-every 2  # success vs episodes

Each arm trains once per training seed (and data fraction) in ``<out>/<arm>/seed<S>`` (finished
runs are reused, interrupted ones resume), then plays the same fixed tasks of each
``--eval-splits`` split with no skill (the skill-prompt arm: its own skills): the first N of the
env's task manifest (seed_rl/manifests/, the tasks ``seed eval`` plays); the untrained model
plays them too. With several training seeds an arm's success is the mean over seeds with
Student's 95% interval. Writes ``comparison.md``, ``comparison.json`` and ``comparison.png``
in ``--out``.

Runs trained elsewhere (separate ``seed train`` jobs, torchrun on other machines), once finished:

    seed compare --runs runs/grpo-s0 runs/grpo-s1 runs/seed-s0 runs/seed-s1 --eval-episodes 32

Each folder's arm is named from its algorithm keys (the arm whose overrides they match, else the
folder's name); runs of one arm with different seeds are its training seeds. Every budget key but
``seed`` must be equal (``--force``: the table says which differ); each final policy and the
untrained model then play the same tasks as above (an evaluation a folder holds on them is
reused). A folder may be a run packed by ``seed pack`` (its evaluations and the adapters merged
before RL travel with it): compared on another machine as the run was, nothing trained there.
``--runs`` takes none of ``--config``, ``--arms``, ``--train-seeds``, ``--data-fractions`` or
overrides.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    from seed_envs.core import SPLITS
    from seed_rl.compare.arms import ARMS

    doc = (__doc__ or "").strip()
    parser = subparsers.add_parser(
        "compare", help=doc.splitlines()[0], description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", default=None, help="the base config (a file or a shipped name; default: demo)")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="overrides applied to every arm")
    parser.add_argument("--arms", nargs="+", default=None, choices=list(ARMS), help="default: grpo seed")
    parser.add_argument(
        "--runs", nargs="+", default=None, metavar="DIR", help="compare these finished seed train runs; train nothing"
    )
    parser.add_argument("--out", default="runs/compare", help="folder of the arms' runs and the outputs")
    parser.add_argument(
        "--train-seeds", type=int, nargs="+", default=None, help="one run per arm and seed (default: the config's seed)"
    )
    parser.add_argument(
        "--data-fractions",
        type=float,
        nargs="+",
        default=None,
        metavar="F",
        help="train each arm on the first F of the train tasks (default: 1; train_tasks=N sets the pool of a "
        "procedural split)",
    )
    parser.add_argument(
        "--eval-episodes", type=int, default=32, help="the first N tasks of each split's manifest (as seed eval)"
    )
    parser.add_argument(
        "--eval-every",
        type=int,
        default=0,
        metavar="N",
        help="also evaluate each run after every N updates: success against episodes consumed",
    )
    parser.add_argument("--eval-seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--eval-splits", nargs="+", default=["valid_unseen"], choices=SPLITS)
    parser.add_argument(
        "--force", action="store_true", help="compare arms (or runs) whose budgets differ (the table says so)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from seed_rl.compare.collect import evaluate_run, plan_collected
    from seed_rl.compare.comparison import evaluate_starts, manifest_indices, plan_runs, run_arm, write_outputs
    from seed_rl.config import ConfigError
    from seed_rl.evaluate.manifests import ManifestError
    from seed_rl.train.saved_policy import PolicyError

    out = Path(args.out)
    try:
        if args.eval_every < 0:
            raise ConfigError(f"--eval-every {args.eval_every} is not allowed; give N >= 1, or 0 for no curve")
        if args.runs is not None:
            planned, differing = plan_collected(refuse_training_options(args), force=args.force)
        else:
            fractions = args.data_fractions or [1.0]
            planned, differing = plan_runs(
                args.arms or ["grpo", "seed"],
                args.config or "demo",
                args.overrides,
                out,
                args.train_seeds,
                fractions,
                force=args.force,
            )
        first = planned[0][1]
        splits = list(dict.fromkeys(args.eval_splits))
        tasks = {split: manifest_indices(first, args.eval_episodes, split) for split in splits}
    except (ConfigError, ManifestError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    seeds = tuple(args.eval_seeds)
    which = "untrained and warm-started" if first.warm_start != "none" else "untrained"
    print(f"== {which} {first.model} on {args.eval_episodes} tasks of {', '.join(splits)} of {first.env}", flush=True)
    evaluate = evaluate_run if args.runs is not None else run_arm
    try:  # --runs: the warm start is the first run's adapter, never trained here
        starts = evaluate_starts(first, tasks, seeds, out, Path(first.run_dir) if args.runs is not None else None)
        results = [evaluate(name, cfg, tasks, seeds, args.eval_every) for name, cfg in planned]
    except (ConfigError, PolicyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print()
    print(write_outputs(out, starts, results, differing))
    print(f"\nwrote {out / 'comparison.md'}, {out / 'comparison.png'} and {out / 'comparison.json'}")
    return 0


def refuse_training_options(args: argparse.Namespace) -> list[str]:
    """The ``--runs`` folders; raises, naming them, where training mode's options are given too."""
    from seed_rl.config import ConfigError

    given = [
        option
        for option, value in (
            ("--config", args.config),
            ("--arms", args.arms),
            ("--train-seeds", args.train_seeds),
            ("--data-fractions", args.data_fractions),
        )
        if value is not None
    ] + list(args.overrides)
    if given:
        raise ConfigError(
            f"--runs compares finished runs as they were trained; it takes none of training mode's --config, "
            f"--arms, --train-seeds, --data-fractions or KEY=VALUE overrides (given: {', '.join(given)})"
        )
    return args.runs
