"""The trainer in one process against the same updates under torchrun, in one run: seconds per
phase and per update, and the ratio.

    python scripts/bench_torchrun.py [--config demo] [--processes 2] [--updates 1] [KEY=VALUE ...]

The single process gets every core (``threads`` = the machine's cores); each of the N processes
gets its share of them. Both train the same config from the same seed; the N processes split each
update's groups between them, so their samples differ from the single process's and only the
timings are compared.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from seed_rl.records.run_log import read_metrics
from seed_rl.tables import markdown_table

PHASES = ("rollout", "analysis", "teacher", "update", "total")


def timed_run(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:6])} ... failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="demo")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--updates", type=int, default=1)
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    base = ["--config", args.config, f"updates={args.updates}", "progress=false", "warm_start=none", *args.overrides]
    train = [sys.executable, "-m", "seed_rl.cli", "train"]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={args.processes}"]
    rows, results = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        share = f"threads={max(1, cores // args.processes)}"
        runs = {
            "1 process": ([*train, *base, f"threads={cores}", f"run_dir={tmp}/one"], Path(tmp) / "one"),
            f"{args.processes} processes (torchrun)": (
                [*torchrun, "-m", "seed_rl.cli", "train", *base, share, f"run_dir={tmp}/many"],
                Path(tmp) / "many",
            ),
        }
        for name, (command, run_dir) in runs.items():
            wall = timed_run(command, {**os.environ, "OMP_NUM_THREADS": "1"})
            metrics = read_metrics(run_dir)
            row = {phase: sum(m[f"seconds_{phase}"] for m in metrics) / len(metrics) for phase in PHASES}
            results[name] = {**row, "wall": wall}
            rows.append([name, *(f"{row[p]:.1f}" for p in PHASES), f"{wall:.0f}"])
    print(markdown_table(["run", *(f"{p} s" for p in PHASES), "wall s (with start-up)"], rows))
    one, many = results.values()
    ratio = one["total"] / many["total"]
    print(f"speed-up per update, {args.processes} processes over 1: {ratio:.2f}x")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "bench_torchrun.json").write_text(json.dumps({"runs": results, "speedup": ratio}, indent=1))


if __name__ == "__main__":
    main()
