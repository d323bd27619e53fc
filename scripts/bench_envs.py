"""Benchmark every seed env: steps per second, single and vectorized.

For each env: one env in this process (the baseline), then ``make_vec`` with 8 envs
over 1, 2 and 4 worker processes. Figures are ratios against the single env of the
same run, since the machines are noisy. Env-specific benchmarks
(``scripts/bench_<env>.py`` with ``run_benchmark(quick)``) are run too when present.

    python scripts/bench_envs.py [--quick] [--out runs/bench_envs.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

import seed_envs
from seed_envs.baselines import BaselineAgent, ExpertAgent, RandomAgent
from seed_envs.vector import make_vec

SCRIPTS = Path(__file__).resolve().parent
VECTOR_ENVS = 8
WORKER_COUNTS = (1, 2, 4)
#: Env options for this benchmark: settings whose first use (generation) takes seconds.
SETTINGS: dict[str, dict[str, Any]] = {"seed/ALFWorld-v0": {"difficulty": "easy"}}


def scripted_agent(info: dict[str, Any], seed: int) -> BaselineAgent:
    """Random admissible actions where the env lists them; else the expert's plan (e.g. searches).

    Open-ended envs (Search QA) would reject random strings, and a benchmark of rejections
    measures nothing useful, so there the expert's plan stands in for a policy.
    """
    return (RandomAgent if info["available_actions"] else ExpertAgent)(seed)


def needs_plan(agent: BaselineAgent) -> bool:
    """Only the expert reads a plan; asking the env for one costs (ALFWorld plans with a planner)."""
    return isinstance(agent, ExpertAgent)


def single_env_rate(env_id: str, steps: int) -> float:
    env = gym.make(env_id, **SETTINGS.get(env_id, {}))
    obs, info = env.reset(seed=0)
    agent = scripted_agent(info, 0)
    agent.start(info, env.unwrapped.expert_plan() if needs_plan(agent) else None)
    started = time.perf_counter()
    for _ in range(steps):
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        if terminated or truncated:
            obs, info = env.reset()
            agent.start(info, env.unwrapped.expert_plan() if needs_plan(agent) else None)
    rate = steps / (time.perf_counter() - started)
    env.close()
    return rate


def vector_rate(env_id: str, workers: int, steps: int, backend: str = "process") -> float:
    """Steps per second of ``VECTOR_ENVS`` envs over ``workers`` workers of ``backend``."""
    every = list(range(VECTOR_ENVS))
    with make_vec(env_id, VECTOR_ENVS, workers=workers, backend=backend, **SETTINGS.get(env_id, {})) as vec:
        observations, infos = vec.reset(env_ids=every, seeds=every)
        agents = [scripted_agent(infos[0], i) for i in every]

        def start(env_ids: list[int]) -> None:
            plans = vec.call("expert_plan", env_ids=env_ids) if needs_plan(agents[0]) else [None] * len(env_ids)
            for i, plan in zip(env_ids, plans, strict=True):
                agents[i].start(infos[i], plan)

        start(every)
        done = 0
        started = time.perf_counter()
        while done < steps:
            actions = [agent.act(o, info) for agent, o, info in zip(agents, observations, infos, strict=True)]
            observations, _, terminated, truncated, infos = vec.step(actions)
            done += VECTOR_ENVS
            finished = [i for i in every if terminated[i] or truncated[i]]
            if finished:
                new_observations, new_infos = vec.reset(env_ids=finished)
                for i, o, info in zip(finished, new_observations, new_infos, strict=True):
                    observations[i], infos[i] = o, info
                start(finished)
        return done / (time.perf_counter() - started)


def bench_env(env_id: str, quick: bool) -> dict[str, Any]:
    steps = 400 if quick else 3_000
    single = single_env_rate(env_id, steps)
    result: dict[str, Any] = {"single_steps_per_s": single, "vector": {}}
    for workers in WORKER_COUNTS:
        rate = vector_rate(env_id, workers, steps)
        result["vector"][f"{workers}_workers"] = {"steps_per_s": rate, "ratio_vs_single": rate / single}
    return result


def env_specific_benchmarks(quick: bool) -> dict[str, Any]:
    """Run each ``scripts/bench_<env>.py`` that defines ``run_benchmark`` in a fresh process.

    A fresh process keeps one benchmark's caches (catalogs, indexes, games) from flattering
    the memory and load figures of the next.
    """
    results: dict[str, Any] = {}
    for path in sorted(SCRIPTS.glob("bench_*.py")):
        if path.name == Path(__file__).name or "def run_benchmark" not in path.read_text():
            continue
        code = (
            f"import json, sys; sys.path.insert(0, {str(SCRIPTS)!r}); import {path.stem} as bench; "
            f"print('@@' + json.dumps(bench.run_benchmark(quick={quick})))"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.startswith("@@")]
        if done.returncode == 0 and lines:
            results[path.stem] = json.loads(lines[-1][2:])
        else:  # an env's extra may not be installed here
            results[path.stem] = {"skipped": (done.stderr.strip().splitlines() or ["no output"])[-1]}
        print(f"{path.stem}: {results[path.stem].get('skipped', 'done')}")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer steps (a smoke run)")
    parser.add_argument("--envs", nargs="*", default=None)
    parser.add_argument("--out", type=Path, default=Path("runs/bench_envs.json"))
    parser.add_argument("--no-specific", action="store_true", help="skip scripts/bench_<env>.py")
    args = parser.parse_args(argv)

    env_ids = args.envs or seed_envs.env_ids(browser=False)
    report: dict[str, Any] = {"vector_envs": VECTOR_ENVS, "envs": {}}
    print(f"{'env':24} {'single steps/s':>15} " + " ".join(f"{f'{w} workers':>18}" for w in WORKER_COUNTS))
    for env_id in env_ids:
        try:
            result = bench_env(env_id, args.quick)
        except Exception as exc:
            report["envs"][env_id] = {"skipped": f"{type(exc).__name__}: {exc}"}
            print(f"{env_id:24} skipped: {type(exc).__name__}: {str(exc)[:80]}")
            continue
        report["envs"][env_id] = result
        cells = [f"{v['steps_per_s']:8.0f} ({v['ratio_vs_single']:.2f}x)" for v in result["vector"].values()]
        print(f"{env_id:24} {result['single_steps_per_s']:15.0f} " + " ".join(f"{c:>18}" for c in cells))
    if not args.no_specific:
        report["specific"] = env_specific_benchmarks(args.quick)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"\nsaved {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
