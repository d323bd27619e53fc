"""How the ``seed`` command line finds an env's commands: ``seed data <env>``, ``seed serve <name>``.

Each env that has data to fetch or a server to run keeps both commands in its own
``cli.py``. For each command ``C`` it offers (``data``, ``serve``), that module defines

- ``add_C_arguments(parser)``: the command's options;
- ``run_C(args) -> int``: the command itself (the first line of its docstring is its help).

``seed_rl`` maps names to these modules (``seed_rl.commands.data`` and ``serve``) and
calls :func:`add_env_commands`; ``python -m seed_envs.<env>.cli C ...`` runs one without
``seed``.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

COMMANDS = ("data", "serve")

AddArguments = Callable[[argparse.ArgumentParser], Any]
Run = Callable[[argparse.Namespace], int]


def env_command(module: ModuleType, command: str) -> tuple[AddArguments, Run]:
    """``(add_<command>_arguments, run_<command>)`` of an env's cli module, or a clear error."""
    if command not in COMMANDS:
        raise ValueError(f"unknown env command {command!r}; expected one of {', '.join(COMMANDS)}")
    add = getattr(module, f"add_{command}_arguments", None)
    run = getattr(module, f"run_{command}", None)
    if add is None or run is None:
        raise AttributeError(
            f"{module.__name__} has no {command!r} command (add_{command}_arguments and run_{command})"
        )
    return add, run


def _add_parser(subparsers: argparse._SubParsersAction, name: str, module: ModuleType, command: str) -> None:
    add, run = env_command(module, command)
    lines = (run.__doc__ or "").strip().splitlines()
    summary = lines[0] if lines else name
    parser = subparsers.add_parser(name, help=summary, description=summary)
    add(parser)
    parser.set_defaults(func=run)


def add_env_commands(
    subparsers: argparse._SubParsersAction, command: str, help_text: str, targets: Mapping[str, str]
) -> None:
    """Add ``seed <command> <target> ...``, one sub-parser per ``target -> cli module`` of ``targets``."""
    parser = subparsers.add_parser(command, help=help_text, description=help_text)
    target_parsers = parser.add_subparsers(dest="target", metavar="TARGET", required=True)
    for target, module_name in targets.items():
        _add_parser(target_parsers, target, importlib.import_module(module_name), command)


def main(module: ModuleType, argv: Sequence[str] | None = None) -> int:
    """``python -m seed_envs.<env>.cli <command> ...``: that module's commands, without ``seed``."""
    name = module.__spec__.name if module.__spec__ is not None else module.__name__
    parser = argparse.ArgumentParser(prog=f"python -m {name}", description=module.__doc__)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        if hasattr(module, f"run_{command}"):
            _add_parser(commands, command, module, command)
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)
