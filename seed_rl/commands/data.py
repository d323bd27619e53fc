"""``seed data <env>``: download real benchmark data, or generate it offline."""

from __future__ import annotations

import argparse

from seed_envs.cli import add_env_commands

#: env name -> its cli module (``add_data_arguments`` and ``run_data``; see :mod:`seed_envs.cli`).
DATA_TARGETS: dict[str, str] = {
    "alfworld": "seed_envs.alfworld.cli",
    "search": "seed_envs.searchqa.cli",
    "webshop": "seed_envs.webshop.cli",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    add_env_commands(subparsers, "data", "Download or generate benchmark data.", DATA_TARGETS)
