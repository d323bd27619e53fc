"""``seed demo``: scripted agents (random, expert) on every env's unseen split, as a table.

It runs each env through the vector workers exactly as training will, so it
doubles as an end-to-end check of a fresh install. No model is needed.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from typing import Any

from seed_agent.agent import ScriptedAgent
from seed_envs.baselines import AGENTS
from seed_envs.registration import env_ids as registered_env_ids
from seed_envs.vector import make_vec
from seed_rl.rollout import Episode, EpisodeStart, run_episodes

#: Env options for the demo: small settings where first use (generation, planning) takes seconds.
DEMO_SETTINGS: dict[str, dict[str, Any]] = {
    "seed/ALFWorld-v0": {"difficulty": "tiny"},
}


@dataclass
class DemoRow:
    env_id: str
    agent: str
    settings: dict[str, Any]
    episodes: list[Episode] = field(default_factory=list)
    seconds: float = 0.0


def run_agent(
    env_id: str,
    agent_name: str,
    episodes: int,
    split: str,
    workers: int,
    env_kwargs: dict[str, Any],
) -> DemoRow:
    """Play ``episodes`` tasks of ``split`` (indices 0..episodes-1), all at once, one env per task."""
    started = time.perf_counter()
    starts = [EpisodeStart(options={"split": split, "index": i}) for i in range(episodes)]
    with make_vec(env_id, episodes, workers=workers, split=split, **env_kwargs) as vec:
        played = run_episodes(vec, ScriptedAgent(agent_name), starts, env_id=env_id)
    return DemoRow(env_id, agent_name, env_kwargs, played, time.perf_counter() - started)


def format_rows(rows: list[DemoRow]) -> str:
    from seed_rl.stats import mean_ci, proportion_ci
    from seed_rl.tables import markdown_table

    table = []
    for row in rows:
        eps = row.episodes
        steps = sum(len(e.rows) for e in eps)
        table.append(
            [
                row.env_id + "".join(f" {k}={v}" for k, v in row.settings.items()),
                row.agent,
                len(eps),
                proportion_ci(sum(e.won for e in eps), len(eps)).percent(),
                str(mean_ci([sum(r.env_reward for r in e.rows) for e in eps])),
                f"{steps / len(eps):.1f}",
                f"{100 * sum(e.invalid_steps for e in eps) / max(steps, 1):.1f}",
                sum(e.lost is not None for e in eps),
                f"{steps / row.seconds:.0f}",
            ]
        )
    headers = [
        "env",
        "agent",
        "episodes",
        "success % [95% CI]",
        "return [95% CI]",
        "steps/ep",
        "invalid %",
        "lost",
        "env steps/s",
    ]
    return markdown_table(headers, table)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--envs", nargs="*", default=None, help="env ids (default: every registered seed env)")
    parser.add_argument("--agents", nargs="*", default=["random", "expert"], choices=sorted(AGENTS))
    parser.add_argument("--episodes", type=int, default=16, help="tasks per env and agent")
    parser.add_argument("--split", default="valid_unseen")
    parser.add_argument("--workers", type=int, default=2)


def missing_extra(env_id: str, settings: dict[str, Any]) -> str | None:
    """Why the env cannot be built here (an optional extra is not installed), else None."""
    import gymnasium as gym

    try:
        gym.make(env_id, **settings).close()
    except ImportError as error:
        return str(error)
    return None


def run(args: argparse.Namespace) -> int:
    env_ids = args.envs or registered_env_ids(browser=False)
    rows, skipped = [], []
    for env_id in env_ids:
        settings = DEMO_SETTINGS.get(env_id, {})
        reason = missing_extra(env_id, settings)
        if reason is not None:
            skipped.append(f"{env_id}: {reason}")
            print(f"  skipped: {env_id} ({reason})", flush=True)
            continue
        for agent in args.agents:
            rows.append(run_agent(env_id, agent, args.episodes, args.split, args.workers, settings))
            print(f"  done: {env_id} / {agent} in {rows[-1].seconds:.1f} s", flush=True)
    print()
    if rows:
        print(format_rows(rows))
    for line in skipped:
        print(f"not run: {line}")
    return 0 if rows else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help=__doc__.splitlines()[0], description=__doc__)
    add_arguments(parser)
    parser.set_defaults(func=run)
