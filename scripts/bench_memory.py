"""The memory estimate of ``seed_rl/train/learner/memory.py`` against the measured peak of real passes.

Each measurement runs in a fresh process: the model and its LoRA learner are built, a short pass
warms the allocator up, then one pass over ``rows`` rows of ``T`` tokens (the last row one token
shorter, so the batch is padded and carries an attention mask, as training batches do) runs
forward and, with gradient, backward. Reported per pass:

- **estimate**: ``MemoryModel.pass_bytes`` (safety margin included);
- **saved**: the bytes of every tensor autograd saved for the backward (parameters excluded),
  counted with ``torch.autograd.graph.saved_tensors_hooks``: what the formula models exactly;
- **measured**: the process's peak RSS during the pass (``VmHWM``, reset just before) minus its RSS
  just before.

The estimate is an upper bound where ``measured / estimate`` stays below 1.

    python scripts/bench_memory.py [--models tiny-random smollm2] [--tokens 1500 3000]
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time

from bench_common import rss_mb

from seed_rl.tables import markdown_table

MODES = ("grad", "checkpointed", "no_grad")


def measure(
    model: str, mode: str, rows: int, seq_len: int, completion: int, lora_layers: int, threads: int, glibc_default: bool
) -> dict:
    """One pass in this process; returns the estimate, the saved bytes and the measured peak."""
    import torch

    from seed_agent.models import load_named_policy
    from seed_rl.records.rows import ScoreRow
    from seed_rl.train.learner.learner import Learner, LoraSettings
    from seed_rl.train.learner.memory import peak_rss_bytes, reset_peak_rss, return_freed_memory_to_os

    if not glibc_default:  # as the trainer runs where memory is tight
        return_freed_memory_to_os()
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    policy = load_named_policy(model)
    policy.engine.layout.share_prefix = False  # every row in full: the estimate's worst case
    learner = Learner(
        policy,
        finetune="lora",
        lora=LoraSettings(layers=lora_layers),
        lr=0.0,
        token_budget=10**9,
        gradient_checkpointing=mode == "checkpointed",
    )
    vocab = learner.memory.shape.vocab
    generator = torch.Generator().manual_seed(1)

    def row(length: int) -> ScoreRow:
        ids = torch.randint(3, vocab, (length,), generator=generator).tolist()
        return ScoreRow(ids[: length - completion], ids[length - completion :])

    def run(batch: list[ScoreRow]) -> None:
        logps = learner.logprobs(batch, grad=mode != "no_grad")
        if mode != "no_grad":
            torch.cat(logps).sum().backward()
            learner.optimizer.zero_grad(set_to_none=True)

    run([row(64), row(63)])  # warm-up: first passes allocate thread pools and caches
    batch = [row(seq_len) for _ in range(rows - 1)] + [row(seq_len - 1)]
    params = {p.untyped_storage().data_ptr() for p in learner.model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in params:
            saved.setdefault(storage.data_ptr(), storage.nbytes())
        return tensor

    gc.collect()
    before, peak_before = rss_mb() * 2**20, peak_rss_bytes()
    reset = reset_peak_rss()  # the pass's own peak, not the warm-up's
    started = time.perf_counter()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        run(batch)
    seconds = time.perf_counter() - started
    peak = peak_rss_bytes()
    return {
        "model": model,
        "mode": mode,
        "rows": rows,
        "seq_len": seq_len,
        "estimate": learner.memory.pass_bytes(rows, seq_len, completion + 1, mode),
        "saved": sum(saved.values()),
        "measured": peak - before,
        "exact": reset or peak > peak_before,  # False: the pass stayed under an earlier peak (a lower bound)
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=None, help="default: tiny-random, and smollm2 if fetched")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--tokens", nargs="+", type=int, default=None, help="padded tokens per pass")
    parser.add_argument("--seq-len", type=int, default=None, help="tokens per row (default: 750, tiny: 1000)")
    parser.add_argument("--completion", type=int, default=32)
    parser.add_argument("--lora-layers", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--glibc-default",
        action="store_true",
        help="keep glibc's own mmap threshold (seed_rl.train.learner.memory.MMAP_THRESHOLD)",
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # one measurement, in a fresh process
        spec = json.loads(args.child)
        options = {flag: getattr(args, flag) for flag in ("completion", "lora_layers", "threads", "glibc_default")}
        print(json.dumps(measure(**spec, **options)))
        return
    from seed_agent.models import is_fetched

    models = args.models or ["tiny-random", *(["smollm2"] if is_fetched("smollm2") else [])]
    results = []
    for model in models:
        seq_len = args.seq_len or (1000 if model == "tiny-random" else 750)
        tokens = args.tokens or ([32000, 64000, 128000] if model == "tiny-random" else [1500, 3000, 6000])
        for mode in args.modes:
            for total in tokens:
                spec = {"model": model, "mode": mode, "rows": max(2, total // seq_len), "seq_len": seq_len}
                command = [sys.executable, __file__, "--child", json.dumps(spec)]
                for flag in ("completion", "lora_layers", "threads"):
                    command += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
                command += ["--glibc-default"] if args.glibc_default else []
                done = subprocess.run(command, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    print(f"{model} {mode} {total}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
                    continue
                results.append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(json.dumps(results[-1]), flush=True)
    mb = 2**20
    table = [
        [
            r["model"],
            r["mode"],
            f"{r['rows']} x {r['seq_len']}",
            f"{r['estimate'] / mb:.0f}",
            f"{r['saved'] / mb:.0f}",
            f"{r['measured'] / mb:.0f}" + ("" if r["exact"] else " (>=)"),
            f"{r['measured'] / r['estimate']:.2f}",
            f"{r['saved'] / r['estimate']:.2f}",
            f"{r['seconds']:.1f}",
        ]
        for r in results
    ]
    headers = ["model", "mode", "rows x T", "estimate MiB", "saved MiB", "measured MiB", "measured/est", "saved/est"]
    headers.append("s")
    print(markdown_table(headers, table))


if __name__ == "__main__":
    main()
