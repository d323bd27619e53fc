"""Benchmark the OpenEnv path: steps per second through ``seed serve env``, against in-process stepping.

For each env, one agent (random admissible actions; left/right in Corridor) steps:

- ``in_process``: ``gym.make(env)`` in this process, the baseline;
- ``remote_gym``: ``gym.make("seed/Remote-v0", url=...)``, one session through the Gymnasium client;
- ``sessions_N``: N sessions at once over OpenEnv's async client (``SeedEnvClient``), all steps counted.

The server is ``seed serve env`` in its own process on loopback (as a user runs it); every rate is
measured in this process, in interleaved rounds (median), and reported as a ratio against the
in-process rate of the same run, since the machines are noisy. Connecting is not timed.

    python scripts/bench_openenv.py [--quick] [--envs ID ...] [--sessions 1 8 64] [--out runs/bench_openenv.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import gymnasium as gym
from bench_common import median_rounds

import seed_envs  # noqa: F401  (registers the ids)
from seed_envs.integrations.openenv import SeedAction, SeedEnvClient

ENVS = ("seed/Corridor-v0", "seed/EZPoints-v0", "seed/Sokoban-v0")
#: What the agent says where the env lists no actions.
OPEN_ACTIONS = ("left", "right")


def act(info: dict[str, Any], rng: random.Random) -> str:
    return rng.choice(info["available_actions"] or OPEN_ACTIONS)


@contextmanager
def served(env_id: str, max_sessions: int) -> Iterator[str]:
    """``seed serve env`` in a child process; yields its URL."""
    command = [sys.executable, "-m", "seed_rl.cli", "serve", "env", "--env", env_id, "--port", "0"]
    server = subprocess.Popen([*command, "--max-sessions", str(max_sessions)], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        found = re.search(r"at (http://\S+) ", line)
        if not found:
            raise RuntimeError(f"seed serve env did not start: {line!r}")
        yield found.group(1)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)


def gym_stepper(env: gym.Env, steps: int, seed: int) -> Callable[[], float]:
    """A method for ``median_rounds``: ``steps`` steps of ``env`` (resetting at each episode's end)."""
    rng = random.Random(seed)
    _, info = env.reset(seed=seed)

    def run() -> float:
        nonlocal info
        started = time.perf_counter()
        for _ in range(steps):
            _, _, terminated, truncated, info = env.step(act(info, rng))
            if terminated or truncated:
                _, info = env.reset()
        return time.perf_counter() - started

    return run


async def _sessions_seconds(url: str, sessions: int, steps: int, seed: int) -> float:
    clients = [SeedEnvClient(url) for _ in range(sessions)]
    await asyncio.gather(*(client.connect() for client in clients))
    try:
        firsts = await asyncio.gather(*(client.reset(seed=seed + i) for i, client in enumerate(clients)))

        async def play(client: SeedEnvClient, info: dict[str, Any], rng: random.Random, count: int) -> None:
            for _ in range(count):
                result = await client.step(SeedAction(text=act(info, rng)))
                info = result.observation.info
                if result.done:
                    info = (await client.reset()).observation.info

        shares = [steps // sessions + (i < steps % sessions) for i in range(sessions)]
        started = time.perf_counter()
        await asyncio.gather(
            *(
                play(client, first.observation.info, random.Random(seed + i), share)
                for i, (client, first, share) in enumerate(zip(clients, firsts, shares, strict=True))
            )
        )
        return time.perf_counter() - started
    finally:
        await asyncio.gather(*(client.close() for client in clients))


def sessions_stepper(url: str, sessions: int, steps: int, seed: int) -> Callable[[], float]:
    return lambda: asyncio.run(_sessions_seconds(url, sessions, steps, seed))


def bench_env(env_id: str, steps: int, sessions: list[int], rounds: int) -> dict[str, Any]:
    with served(env_id, max_sessions=max(sessions) + 1) as url:
        local = gym.make(env_id)
        remote = gym.make("seed/Remote-v0", url=url)
        methods = {"in_process": gym_stepper(local, steps, 0), "remote_gym": gym_stepper(remote, steps, 0)}
        methods |= {f"sessions_{n}": sessions_stepper(url, n, steps, 0) for n in sessions}
        seconds = median_rounds(methods, rounds)
        remote.close()
    baseline = steps / seconds["in_process"]
    return {
        name: {"steps_per_s": steps / s, "ratio_vs_in_process": steps / s / baseline} for name, s in seconds.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer steps and rounds (a smoke run)")
    parser.add_argument("--envs", nargs="*", default=list(ENVS))
    parser.add_argument("--sessions", nargs="*", type=int, default=[1, 8, 64])
    parser.add_argument("--out", type=Path, default=Path("runs/bench_openenv.json"))
    args = parser.parse_args(argv)
    steps, rounds = (256, 1) if args.quick else (2_048, 3)

    report: dict[str, Any] = {"steps_per_method": steps, "rounds": rounds, "envs": {}}
    names = ["in_process", "remote_gym", *(f"sessions_{n}" for n in args.sessions)]
    print(f"{'env':18} " + " ".join(f"{name:>20}" for name in names))
    for env_id in args.envs:
        result = bench_env(env_id, steps, args.sessions, rounds)
        report["envs"][env_id] = result
        cells = [f"{r['steps_per_s']:8.0f} ({r['ratio_vs_in_process']:.3f}x)" for r in result.values()]
        print(f"{env_id:18} " + " ".join(f"{cell:>20}" for cell in cells), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"\nsteps/s (ratio vs in-process stepping, same run); saved {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
