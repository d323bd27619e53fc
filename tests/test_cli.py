"""The ``seed`` command line: help, and the demo end to end."""

from __future__ import annotations

import subprocess
import sys

from seed_rl.cli import build_parser, main


def test_help_lists_every_command():
    text = build_parser().format_help()
    for command in ("demo", "data", "serve"):
        assert command in text


def test_demo_prints_a_table_with_both_agents(capsys):
    assert main(["demo", "--envs", "seed/Sokoban-v0", "seed/EZPoints-v0", "--episodes", "4", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    table = [line for line in out.splitlines() if line.startswith("| seed/")]
    assert len(table) == 4
    expert_rows = [line for line in table if "| expert |" in line]
    assert all("| 100.0 [" in line for line in expert_rows)  # the expert solves every task


def test_seed_is_installed_as_a_command():
    result = subprocess.run([sys.executable, "-m", "seed_rl.cli", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "demo" in result.stdout


def test_serve_env_without_the_openenv_extra_names_it(monkeypatch, capsys):
    for name in [m for m in sys.modules if m.startswith("seed_envs.integrations.openenv.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "openenv", None)  # as if the extra were not installed
    assert main(["serve", "env", "--env", "seed/Corridor-v0"]) == 2
    assert "'openenv' extra" in capsys.readouterr().err
