"""The Ray env backend against the process backend, in one run: env throughput as a ratio, and
the cost of one round trip to a worker.

For each env: ``VECTOR_ENVS`` envs over 2 workers stepped by scripted agents
(``bench_envs.vector_rate``), first with worker processes, then with Ray actors on a local Ray
instance; then the median time of one ``call`` to one worker (the per-step overhead a backend
adds, whatever the env does), over interleaved rounds. Ray's start-up is reported on its own.

    python scripts/bench_ray.py [--envs seed/Sokoban-v0 seed/EZPoints-v0] [--steps 2000]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench_common import median_rounds
from bench_envs import vector_rate

from seed_envs.vector import make_vec
from seed_envs.vector.ray_worker import ensure_ray
from seed_rl.tables import markdown_table


def round_trip_seconds(env_id: str, calls: int) -> dict[str, float]:
    """Median seconds of one ``call`` to one worker, per backend (same env, same method)."""
    vecs = {backend: make_vec(env_id, 2, workers=2, backend=backend) for backend in ("process", "ray")}
    try:
        for vec in vecs.values():
            vec.reset(seeds=[0, 1])

        def one(backend: str) -> None:
            vecs[backend].call("task_count", "train", env_ids=[0])

        return median_rounds({b: (lambda b=b: one(b)) for b in vecs}, rounds=calls)
    finally:
        for vec in vecs.values():
            vec.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=["seed/Sokoban-v0", "seed/EZPoints-v0"])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--out", default="runs/bench_ray.json")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    ensure_ray()
    report: dict = {"ray_start_s": time.perf_counter() - started, "envs": {}}
    rows = []
    for env_id in args.envs:
        process = vector_rate(env_id, 2, args.steps, backend="process")
        ray_rate = vector_rate(env_id, 2, args.steps, backend="ray")
        trip = round_trip_seconds(env_id, args.calls)
        report["envs"][env_id] = {
            "process_steps_per_s": process,
            "ray_steps_per_s": ray_rate,
            "ray_vs_process": ray_rate / process,
            "round_trip_ms": {b: 1000 * t for b, t in trip.items()},
        }
        rows.append(
            [
                env_id,
                f"{process:.0f}",
                f"{ray_rate:.0f}",
                f"{ray_rate / process:.2f}x",
                f"{1000 * trip['process']:.2f}",
                f"{1000 * trip['ray']:.2f}",
            ]
        )
    headers = ["env", "process steps/s", "ray steps/s", "ray / process", "round trip ms: process", "ray"]
    print(markdown_table(headers, rows))
    print(f"\nRay start-up (local instance): {report['ray_start_s']:.1f} s")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
