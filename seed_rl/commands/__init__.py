"""Subcommands of the ``seed`` CLI, one module each."""

from __future__ import annotations

import sys
from typing import Any


def read_run_episodes(run: str) -> list[dict[str, Any]] | None:
    """A run's episode records for ``seed audit``, ``seed export`` and ``seed view``, with a
    cut-off last line reported as a warning; None, after printing the error (the missing folder
    or file, or the bad line), where they cannot be read: the command then exits with status 2."""
    from seed_rl.records.episode_log import EpisodeLogError, read_episodes

    try:
        return read_episodes(run, on_warning=lambda message: print(f"warning: {message}", file=sys.stderr))
    except EpisodeLogError as error:
        print(f"error: {error}", file=sys.stderr)
        return None
