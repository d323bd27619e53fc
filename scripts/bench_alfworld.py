"""Benchmark: our ALFWorld env against upstream's ``AlfredTWEnv`` on the same games.

For small (``easy``) and ALFWorld-sized (``full``) generated games, in one process:

- reset time: upstream ``AlfredTWEnv(...).init_env(batch_size=1).reset()`` against
  ``ALFWorldEnv.reset`` on the same games, ours on a game's first visit in the process
  ("cold": translation and grammar parse included), on a first visit with the
  translation found in the disk cache, where the generator left it ("disk", what an env
  meets by default), and on later visits ("warm");
- step time over the same commands (the walkthrough, plus random admissible and
  invalid commands);
- memory per env: the RSS growth of a fresh process after it builds one env and plays
  its games, and after a second env, for ours and for upstream.

``run_benchmark(quick=False) -> dict`` returns the figures (ratios are ours / upstream);
``python scripts/bench_alfworld.py [--quick] [--json out.json]`` prints a table too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench_common import rss_mb

SETTINGS = {"small": "easy", "alfworld_sized": "full"}


def _upstream_config(data_path: str, max_steps: int) -> dict[str, Any]:
    from alfworld.info import ALFRED_PDDL_PATH, ALFRED_TWL2_PATH

    return {
        "env": {
            "goal_desc_human_anns_prob": 0,
            "task_types": [1, 2, 3, 4, 5, 6],
            "domain_randomization": False,
            "expert_type": "handcoded",
        },
        "dataset": {
            "data_path": data_path,
            "eval_id_data_path": data_path,
            "eval_ood_data_path": data_path,
            "num_train_games": -1,
            "num_eval_games": -1,
        },
        "general": {"training_method": "dqn"},
        "rl": {"training": {"max_nb_steps_per_episode": max_steps}},
        "logic": {"domain": ALFRED_PDDL_PATH, "grammar": ALFRED_TWL2_PATH},
    }


def _upstream_env(split_dir: str) -> Any:
    import contextlib
    import io

    from alfworld.agents.environment.alfred_tw_env import AlfredTWEnv

    # Upstream prints counts and progress bars.
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        tw = AlfredTWEnv(_upstream_config(split_dir, 1000), train_eval="train")
        return tw.init_env(batch_size=1)


def _commands(walkthrough: list[str], admissible: list[str], rng: random.Random) -> list[str]:
    extra = [rng.choice(admissible) for _ in range(4)] + ["put mug in sink", "jump"]
    return extra[:2] + walkthrough + extra[2:]


def _make_games(root: Path, difficulty: str, n: int) -> Path:
    from seed_envs.alfworld.dataset import generate_dataset

    generate_dataset(root, {"train": n}, difficulty=difficulty, seed=12345)
    return root / "json_2.1.1" / "train"


def _time_setting(split_dir: Path, passes: int, disk_dir: Path) -> dict[str, Any]:
    import gymnasium as gym

    import seed_envs  # noqa: F401  (registers the ids)
    from seed_envs.alfworld.engine import GameCache

    data_root = str(split_dir.parent.parent)
    ours = gym.make("seed/ALFWorld-v0", data_dir=data_root, game_cache=GameCache()).unwrapped
    task_ids = ours.task_ids("train")
    upstream = _upstream_env(str(split_dir))
    n = len(task_ids)

    # Upstream cycles through its games in its own shuffled order; pair each reset with that game.
    up_reset, up_step, our_cold, our_warm, our_step = [], [], [], [], []
    rng = random.Random(0)
    scripts: dict[str, list[str]] = {}
    for visit in range(passes * n):
        t = time.perf_counter()
        _, infos = upstream.reset()
        up_reset.append(time.perf_counter() - t)
        gamefile = infos["extra.gamefile"][0]
        task_id = str(Path(gamefile).parent.relative_to(split_dir.parent))
        t = time.perf_counter()
        _, info = ours.reset(options={"task_id": task_id})
        (our_cold if visit < n else our_warm).append(time.perf_counter() - t)
        if task_id not in scripts:
            walkthrough = json.loads(Path(gamefile).read_text())["walkthrough"]
            scripts[task_id] = _commands(walkthrough, info["available_actions"], rng)
        for command in scripts[task_id]:
            t = time.perf_counter()
            _, _, dones, _ = upstream.step([command])
            up_step.append(time.perf_counter() - t)
            t = time.perf_counter()
            _, _, terminated, _, info = ours.step(command)
            our_step.append(time.perf_counter() - t)
            if dones[0] or terminated:
                break
    upstream.close()
    ours.close()

    # First visits in a fresh process-like cache that finds each translation on disk, where
    # the generator left it (as every env does by default for generated games, and for a
    # release after `seed data alfworld --precompile`).
    disk_cache = GameCache(disk_dir=disk_dir)
    fresh = gym.make("seed/ALFWorld-v0", data_dir=data_root, game_cache=disk_cache).unwrapped
    our_disk = []
    for task_id in task_ids:
        t = time.perf_counter()
        fresh.reset(options={"task_id": task_id})
        our_disk.append(time.perf_counter() - t)
    fresh.close()

    def mean(xs: list[float]) -> float:
        return statistics.fmean(xs) if xs else float("nan")

    return {
        "games": n,
        "passes": passes,
        "upstream_reset_s": mean(up_reset),
        "ours_reset_cold_s": mean(our_cold),
        "ours_reset_warm_s": mean(our_warm),
        "ours_reset_first_visit_disk_cache_s": mean(our_disk),
        "upstream_step_s": mean(up_step),
        "ours_step_s": mean(our_step),
        "reset_ratio_warm": mean(our_warm) / mean(up_reset),
        "reset_ratio_cold": mean(our_cold) / mean(up_reset),
        "reset_ratio_first_visit_disk_cache": mean(our_disk) / mean(up_reset),
        "step_ratio": mean(our_step) / mean(up_step),
        "steps_timed": len(our_step),
        "disk_hits": disk_cache.stats["disk_hits"],
    }


def _memory_child(kind: str, split_dir: str, queue: Any) -> None:
    import gymnasium as gym

    import seed_envs  # noqa: F401
    from seed_envs.alfworld import engine  # noqa: F401  (imports counted in the baseline)

    def build() -> Any:
        if kind == "ours":
            env = gym.make("seed/ALFWorld-v0", data_dir=str(Path(split_dir).parent.parent)).unwrapped
            for task_id in env.task_ids("train"):
                env.reset(options={"task_id": task_id})
            return env
        env = _upstream_env(split_dir)
        for _ in range(len(os.listdir(split_dir))):
            env.reset()
        return env

    base = rss_mb()
    first = build()
    one = rss_mb()
    second = build()
    two = rss_mb()
    queue.put({"first_env_mb": one - base, "second_env_mb": two - one})
    del first, second


def _memory(kind: str, split_dir: Path) -> dict[str, float]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_memory_child, args=(kind, str(split_dir), queue))
    proc.start()
    result = queue.get(timeout=1800)
    proc.join()
    return result


@contextlib.contextmanager
def _translations_in(tmp: Path) -> Iterator[Path]:
    """Point the env's disk cache at ``tmp/translations`` (not the user's cache) while the block runs;
    the generator leaves each game's translation there."""
    from seed_envs.alfworld.engine import DISK_CACHE_ENV

    before = os.environ.get(DISK_CACHE_ENV)
    os.environ[DISK_CACHE_ENV] = str(tmp / "translations")
    try:
        yield tmp / "translations"
    finally:
        if before is None:
            os.environ.pop(DISK_CACHE_ENV, None)
        else:
            os.environ[DISK_CACHE_ENV] = before


def run_benchmark(quick: bool = False) -> dict[str, Any]:
    """Time and size our env against upstream's on freshly generated games; return the figures."""
    counts = {"small": 2, "alfworld_sized": 2} if quick else {"small": 6, "alfworld_sized": 4}
    passes = 2 if quick else 3
    results: dict[str, Any] = {"quick": quick, "settings": {}}
    with tempfile.TemporaryDirectory(prefix="bench-alfworld-") as tmp, _translations_in(Path(tmp)) as disk_dir:
        for name, difficulty in SETTINGS.items():
            t = time.perf_counter()
            split_dir = _make_games(Path(tmp) / name, difficulty, counts[name])
            generation_s = time.perf_counter() - t
            figures = _time_setting(split_dir, passes, disk_dir)
            figures["difficulty"] = difficulty
            figures["generation_games_per_s"] = counts[name] / generation_s
            figures["memory_ours"] = _memory("ours", split_dir)
            figures["memory_upstream"] = _memory("upstream", split_dir)
            results["settings"][name] = figures
    return results


def format_table(results: dict[str, Any]) -> str:
    from seed_rl.tables import markdown_table

    headers = [
        "setting",
        "games",
        "upstream reset",
        "ours reset: first ever / from disk / revisit (ratio to upstream)",
        "upstream step",
        "ours step (ratio)",
        "mem/env ours vs upstream (MB, 2nd env)",
    ]
    rows = [
        [
            f"{name} ({f['difficulty']})",
            f["games"],
            f"{f['upstream_reset_s'] * 1e3:.0f} ms",
            f"{f['reset_ratio_cold']:.3f}x / {f['reset_ratio_first_visit_disk_cache']:.3f}x "
            f"/ {f['reset_ratio_warm']:.3f}x",
            f"{f['upstream_step_s'] * 1e3:.1f} ms",
            f"{f['ours_step_s'] * 1e3:.1f} ms ({f['step_ratio']:.2f}x)",
            f"{f['memory_ours']['second_env_mb']:.1f} vs {f['memory_upstream']['second_env_mb']:.1f}",
        ]
        for name, f in results["settings"].items()
    ]
    return markdown_table(headers, rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer games and passes")
    parser.add_argument("--json", default="bench_alfworld.json", help="where to write the figures")
    args = parser.parse_args(argv)
    results = run_benchmark(quick=args.quick)
    print(format_table(results))
    Path(args.json).write_text(json.dumps(results, indent=2))
    print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
