"""The generation engine's log-probs on a device against the CPU's in float32, for the same weights.

One model (``--model``, built on the CPU in float32: ``random:PRESET`` and ``tiny-random`` draw
their weights from ``--seed``, nothing is downloaded) is copied to ``--device`` in each ``--dtypes``;
there it samples a reply to each of a few Sokoban prompts of different lengths (so the batch is
really left-padded), and the same tokens are scored three ways:

- ``sampled``: the log-probs the engine recorded while sampling (its KV-cache decode loop);
- ``rescored``: a teacher-forced pass on the device (``TransformersPolicy.score``, as the learner scores);
- ``cpu_fp32``: the same pass by the CPU float32 original.

Each pair's largest absolute difference is held against the dtype's tolerance
(:data:`TOLERANCES`); the check passes where every pair is within it. Writes a JSON report and
exits 1 where a pair is not within tolerance.

    python scripts/gpu_logprobs.py --device cuda --model random:qwen2.5-0.5b --out runs/gpu_logprobs.json
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from seed_agent.history import EpisodeHistory
from seed_agent.models import load_named_policy, resolve_device
from seed_agent.policies.base import SamplingParams
from seed_agent.policies.hf import TransformersPolicy
from seed_agent.prompts import PromptBuilder, prompt_spec

#: Largest allowed |difference| of two log-probs of one token, per weight dtype on the device and
#: pair (:data:`PAIRS`). In float32 only the order of the sums differs between kernels. In bfloat16
#: the weights and every activation are rounded to 8 bits of mantissa: on the random
#: ``qwen2.5-0.5b`` preset, the CPU's own bfloat16 log-probs differ from its float32 ones by up to
#: 0.039 (measured, 4 Sokoban prompts of 487-597 tokens, 8 sampled tokens each), and two bfloat16
#: passes whose kernels round differently (a KV-cache decode step against a whole-row pass) may
#: differ by as much as each does from float32: hence 5e-2 within the device and 1e-1 against the CPU.
#: A wrong position, mask or padding moves a log-prob by far more (the preset's spread over tokens
#: is about 1 nat).
TOLERANCES: dict[str, dict[str, float]] = {
    "float32": {"sampled_vs_rescored": 1e-3, "rescored_vs_cpu_fp32": 1e-3, "sampled_vs_cpu_fp32": 1e-3},
    "bfloat16": {"sampled_vs_rescored": 5e-2, "rescored_vs_cpu_fp32": 1e-1, "sampled_vs_cpu_fp32": 1e-1},
}

#: The three ways the same tokens are scored, compared pairwise.
PAIRS = (("sampled", "rescored"), ("rescored", "cpu_fp32"), ("sampled", "cpu_fp32"))


def sokoban_prompts(n: int) -> list:
    """``n`` Sokoban prompts, each one turn of history longer than the one before."""
    builder = PromptBuilder(prompt_spec("sokoban"), style="act")
    prompts = []
    for i in range(n):
        history = EpisodeHistory()
        for j in range(i):
            history.add(f"the player stands at row {j}, column {j + 1}", "up")
        prompts.append(builder.build("Push the box onto the target.", "#_P_#\n" * (i + 1), ["up", "down"], history))
    return prompts


def on_device(reference: TransformersPolicy, device: str, dtype: str) -> TransformersPolicy:
    """A copy of ``reference``'s model (same weights) cast to ``dtype`` on ``device``."""
    model = copy.deepcopy(reference.model).to(device=torch.device(device), dtype=getattr(torch, dtype))
    return TransformersPolicy(model.eval(), reference.tokenizer, batch_size=reference.batch_size)


def max_gap(a: list[list[float]], b: list[list[float]]) -> float:
    return max(abs(x - y) for row_a, row_b in zip(a, b, strict=True) for x, y in zip(row_a, row_b, strict=True))


def compare_dtype(
    reference: TransformersPolicy, prompts: list, device: str, dtype: str, max_new_tokens: int, seed: int
) -> dict[str, Any]:
    """Sample on ``device`` in ``dtype``, score the same tokens three ways, and compare them."""
    start = time.perf_counter()
    policy = on_device(reference, device, dtype)
    completions = policy.generate(prompts, sampling=SamplingParams(max_new_tokens=max_new_tokens, seed=seed))
    kept = [(p, c) for p, c in zip(prompts, completions, strict=True) if c.token_ids]
    if not kept:
        raise RuntimeError("every sampled reply was empty: nothing to compare")
    rows, replies = [p for p, _ in kept], [c.token_ids for _, c in kept]
    scores = {
        "sampled": [c.logprobs for _, c in kept],
        "rescored": policy.score(rows, replies),
        "cpu_fp32": reference.score(rows, replies),
    }
    tolerance = TOLERANCES[dtype]
    gaps = {f"{a}_vs_{b}": max_gap(scores[a], scores[b]) for a, b in PAIRS}
    over = sorted(name for name, gap in gaps.items() if gap > tolerance[name])
    del policy
    if device == "cuda":
        torch.cuda.empty_cache()
    return {
        "dtype": dtype,
        "replies": len(replies),
        "tokens": sum(len(r) for r in replies),
        "max_abs_diff": gaps,
        "tolerance": tolerance,
        "over_tolerance": over,
        "passed": not over,
        "seconds": time.perf_counter() - start,
    }


def parse_shape(items: list[str]) -> dict[str, int]:
    """``--shape KEY=VALUE`` items as a random preset's integer overrides (``num_hidden_layers=2``)."""
    shape = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not value.isdigit():
            raise ValueError(f"--shape {item!r}: expected KEY=INTEGER, e.g. num_hidden_layers=2")
        shape[key] = int(value)
    return shape


def check(
    model: str,
    device: str,
    dtypes: list[str],
    *,
    replies: int = 4,
    max_new_tokens: int = 8,
    seed: int = 0,
    shape: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Every dtype's comparison against one CPU float32 reference model (``shape``: a random
    preset's overrides, which shrink it for a dry run)."""
    reference = load_named_policy(model, dtype="float32", device="cpu", seed=seed, **(shape or {}))
    prompts = sokoban_prompts(replies)
    results = [compare_dtype(reference, prompts, device, dtype, max_new_tokens, seed) for dtype in dtypes]
    return {
        "model": model,
        "shape": shape or {},
        "device": device,
        "device_name": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
        "reference": "cpu float32",
        "prompt_tokens": [reference.count_tokens(p) for p in prompts],
        "comparisons": results,
        "passed": all(r["passed"] for r in results),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="random:qwen2.5-0.5b", help="random:PRESET (seed_agent/random_models.py)")
    parser.add_argument(
        "--shape", action="append", default=[], help="KEY=VALUE: a random preset's size override (repeatable)"
    )
    parser.add_argument("--device", default="cuda", choices=("cpu", "cuda", "auto"))
    parser.add_argument("--dtypes", default="float32,bfloat16", help=f"comma-separated: {', '.join(TOLERANCES)}")
    parser.add_argument("--replies", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch's CPU threads (0: torch's default)")
    parser.add_argument("--out", default="runs/gpu_logprobs.json")
    args = parser.parse_args(argv)
    try:
        device = resolve_device(args.device)
        shape = parse_shape(args.shape)
    except ValueError as error:
        parser.error(str(error))
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    dtypes = args.dtypes.split(",")
    unknown = sorted(set(dtypes) - set(TOLERANCES))
    if unknown:
        parser.error(f"unknown dtypes {unknown}; allowed: {', '.join(TOLERANCES)}")
    report = check(
        args.model,
        device,
        dtypes,
        replies=args.replies,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
        shape=shape,
    )
    for result in report["comparisons"]:
        verdict = "ok" if result["passed"] else f"over tolerance: {', '.join(result['over_tolerance'])}"
        print(f"{device} {result['dtype']}, {result['tokens']} tokens, max |diff| (tolerance):")
        for name, gap in result["max_abs_diff"].items():
            print(f"  {name}: {gap:.2e} ({result['tolerance'][name]:g})")
        print(f"  {verdict}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
