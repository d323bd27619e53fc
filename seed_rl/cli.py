"""The ``seed`` command line.

Each subcommand lives in its own module under :mod:`seed_rl.commands` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` on it. Heavy
imports (torch, engines) happen inside the commands, so ``seed --help`` is instant.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Subcommand modules, in the order ``seed --help`` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "seed_rl.commands.demo",
    "seed_rl.commands.data",
    "seed_rl.commands.serve",
    "seed_rl.commands.play",
    "seed_rl.commands.warmstart",
    "seed_rl.commands.train",
    "seed_rl.commands.compare",
    "seed_rl.commands.eval",
    "seed_rl.commands.pack",
    "seed_rl.commands.export",
    "seed_rl.commands.view",
    "seed_rl.commands.audit",
    "seed_rl.commands.models",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seed", description="Train and evaluate LLM agents with GRPO and SEED.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
