"""``seed train``: GRPO or SEED on any env, from a YAML config with ``key=value`` overrides.

    seed train --config configs/sokoban_seed.yaml updates=20 model=smollm2
    seed train --config sokoban_grpo run_dir=runs/a --resume

A run folder holds ``config.yaml`` (fully resolved), ``metrics.jsonl`` and ``checkpoints/``;
``--resume`` continues the run in ``run_dir`` from its newest checkpoint, under the run's own
``config.yaml`` where no ``--config`` is given (``updates=`` may grow). A run packed with ``seed pack
--resumable`` continues so on another machine, from what was committed:

    seed pack runs/a --out docs/runs/a --resumable
    seed train --resume run_dir=docs/runs/a updates=40

Data parallel, N processes (each plays and trains tasks_per_update / N of the groups):

    torchrun --nproc_per_node N -m seed_rl.cli train --config sokoban_seed tasks_per_update=8
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    doc = (__doc__ or "").strip()
    parser = subparsers.add_parser(
        "train", help=doc.splitlines()[0], description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", default=None, help="a YAML file, or the name of a shipped config")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="config overrides")
    parser.add_argument("--resume", action="store_true", help="continue the run in run_dir")
    parser.add_argument("--list-configs", action="store_true", help="list the shipped configs and exit")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from seed_rl.config import CONFIG_DIR, ConfigError, load_config

    if args.list_configs:
        for path in sorted(CONFIG_DIR.glob("*.yaml")):
            print(path.stem)
        return 0
    try:
        config = args.config
        if config is None and args.resume:  # the run's own config, from the folder the overrides name
            own = Path(load_config(None, args.overrides).run_dir) / "config.yaml"
            config = str(own) if own.is_file() else None
        cfg = load_config(config, args.overrides)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from seed_rl.records.run_log import summary_line
    from seed_rl.train.trainer import Trainer

    try:
        trainer = Trainer(cfg, resume=args.resume)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    start = trainer.update_index
    processes = f" on {trainer.world_size} processes" if trainer.world_size > 1 else ""
    if trainer.main:
        print(
            f"training {cfg.algo} on {cfg.env} with {cfg.model} in {cfg.run_dir}{processes} "
            f"(updates {start + 1}..{cfg.updates})",
            flush=True,
        )
    try:
        while trainer.update_index < cfg.updates:
            line = summary_line(trainer.update())
            if trainer.main:
                print(line, flush=True)
    finally:
        trainer.close()
    return 0
