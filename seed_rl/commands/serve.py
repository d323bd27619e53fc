"""``seed serve <thing>``: run a local server (WebShop site, retrieval API, any env over OpenEnv). Binds 127.0.0.1."""

from __future__ import annotations

import argparse

from seed_envs.cli import add_env_commands

#: server name -> the cli module of its env (``add_serve_arguments`` and ``run_serve``; see :mod:`seed_envs.cli`).
SERVE_TARGETS: dict[str, str] = {
    "retriever": "seed_envs.searchqa.cli",
    "webshop": "seed_envs.webshop.cli",
    "env": "seed_envs.integrations.openenv.cli",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    add_env_commands(subparsers, "serve", "Run a local server on 127.0.0.1.", SERVE_TARGETS)
