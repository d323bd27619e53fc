"""WebShop benchmark: steps/s and memory per env for 1, 8 and 32 envs in one process,
and search latency per back end (pyserini only where it is installed).

``run_benchmark(quick=False) -> dict``; ``python scripts/bench_webshop.py [--quick]`` prints JSON.
Memory per additional env = (RSS with N envs - RSS with 1 env) / (N - 1), read from /proc.
"""

from __future__ import annotations

import argparse
import json
import random
import time

from bench_common import rss_mb


def _steps_per_second(envs: list, steps: int, rng: random.Random) -> float:
    queries = ["hair extension", "bluetooth speaker", "running shoes", "coffee beans", "storage ottoman"]
    for env in envs:
        env.reset(seed=rng.randrange(10_000))
    start = time.perf_counter()
    done_steps = 0
    while done_steps < steps:
        for env in envs:
            actions = env.unwrapped._available_actions()
            action = rng.choice(actions)
            if action.startswith("search[") or rng.random() < 0.1:
                action = f"search[{rng.choice(queries)}]"
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset(seed=rng.randrange(10_000))
            done_steps += 1
    return done_steps / (time.perf_counter() - start)


def run_benchmark(quick: bool = False) -> dict:
    import gymnasium as gym

    import seed_envs  # noqa: F401
    from seed_envs.webshop.data import shared_data
    from seed_envs.webshop.search import BACKENDS, build_engine

    rng = random.Random(0)
    baseline = rss_mb()
    first = gym.make("seed/WebShop-v0", type_matcher="lexicon")
    first.reset(seed=0)
    one_env_rss = rss_mb()
    results: dict = {"catalog_and_index_mb": round(one_env_rss - baseline, 1), "envs": {}}
    steps = 300 if quick else 3000
    envs = [first]
    for count in (1, 8, 32):
        while len(envs) < count:
            env = gym.make("seed/WebShop-v0", type_matcher="lexicon")
            env.reset(seed=len(envs))
            envs.append(env)
        rate = _steps_per_second(envs, steps, rng)
        rss = rss_mb()
        per_env = (rss - one_env_rss) / (count - 1) if count > 1 else None
        results["envs"][count] = {
            "steps_per_s": round(rate, 1),
            "rss_mb": round(rss, 1),
            "mb_per_additional_env": None if per_env is None else round(per_env, 2),
        }
    data = shared_data(None, seed=0, human_goals=False, num_products=None, products_file=None,
                       attributes_file=None, human_file=None)  # fmt: skip
    queries = [" ".join(p["Title"].lower().split()[:4]) for p in data.products[: 50 if quick else 500]]
    results["search_ms"] = {}
    for name in BACKENDS:
        try:
            engine = build_engine(data.products, name)
        except (ImportError, OSError, RuntimeError) as error:
            results["search_ms"][name] = f"unavailable: {type(error).__name__}"
            continue
        start = time.perf_counter()
        for query in queries:
            engine.search(query + " x")  # a fresh query each time (the cache is bypassed)
        results["search_ms"][name] = round(1000 * (time.perf_counter() - start) / len(queries), 3)
    if isinstance(results["search_ms"].get("pyserini"), float):
        results["search_ratio_pyserini_over_bm25s"] = round(
            results["search_ms"]["pyserini"] / results["search_ms"]["bm25s"], 2
        )
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    print(json.dumps(run_benchmark(quick=parser.parse_args().quick), indent=1))
