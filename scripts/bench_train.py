"""Training-speed benchmarks, as ratios against baselines run in the same process on the same batch.

1. **SEED against GRPO**: one rollout batch, then the GRPO update and the SEED update (analysis,
   teacher pass, update) from the same starting weights; seconds per phase and the end-to-end
   ratio (rollout included). SEED is timed twice: as it runs (only parsed skills get a teacher
   pass) and with every episode given a skill (the scripted annotator's, where the policy's did
   not parse), the cost once Stage 1 works.
2. **Optimized against naive update**: the same rows trained with the naive settings (no shared
   prefix, two rows per micro-batch) and the default ones (shared prefix, token-bounded
   micro-batches).
3. **Batched sampling**: one ``generate`` over 8 envs' prompts against 8 calls of one prompt.

Model: SmolLM2-135M if fetched (``seed models fetch smollm2``), else the tiny random model.
Writes ``runs/bench_train.json``.

    python scripts/bench_train.py [--tasks 4] [--group 4] [--max-steps 15]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch
from bench_common import median_rounds

from seed_agent.models import is_fetched
from seed_agent.policies.base import SamplingParams
from seed_agent.skills import Skill
from seed_agent.skills.annotate import annotate
from seed_rl.advantages import grpo_advantages
from seed_rl.config import load_config
from seed_rl.memory import peak_rss_bytes
from seed_rl.tables import markdown_table
from seed_rl.trainer import PhaseTimer, Trainer, outcome_reward
from seed_rl.update import optimize
from seed_rl.update_batch import UpdateBatch

PHASES = ("analysis", "teacher", "rescore", "reference", "update")


def timed_update(trainer: Trainer, batch: UpdateBatch, start_state: tuple) -> dict[str, float]:
    """The phases after the rollout, from ``start_state`` (weights, optimizer), on ``batch``."""
    weights, optimizer = start_state
    trainer.learner.load_trainable_state(weights)
    trainer.learner.optimizer.load_state_dict(optimizer)
    timer = PhaseTimer()
    batch.rows = trainer.train_rows(batch, timer)
    with timer("update"):
        optimize(trainer.learner, batch.rows, trainer.losses, minibatches=trainer.cfg.minibatches)
    return dict(timer.seconds)


def median_phases(runs: list[dict[str, float]]) -> dict[str, float]:
    return {phase: statistics.median(run.get(phase, 0.0) for run in runs) for phase in {p for r in runs for p in r}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="timed repeats of each update variant (median)")
    parser.add_argument("--model", default=None, help="default: smollm2 if fetched, else tiny-random")
    parser.add_argument("--config", default="sokoban_seed", help="the base config (demo: the README's CPU run)")
    parser.add_argument("--out", default="runs/bench_train.json")
    args = parser.parse_args()
    model = args.model or ("smollm2" if is_fetched("smollm2") else "tiny-random")
    run_dir = Path(tempfile.mkdtemp()) / "bench"
    cfg = load_config(
        args.config,
        [
            f"model={model}",
            f"tasks_per_update={args.tasks}",
            f"group_size={args.group}",
            f"max_steps={args.max_steps}",
            "algo=seed",
            "sft=false",
            "progress=false",
            f"threads={args.threads}",
            f"run_dir={run_dir}",
            "max_new_tokens=8",
        ],
    )
    trainer = Trainer(cfg)
    start_state = (trainer.learner.trainable_state(), trainer.learner.optimizer.state_dict())
    report: dict = {"model": model, "tasks": args.tasks, "group": args.group, "max_steps": args.max_steps}

    # 1. one rollout batch, shared by every variant below
    started = time.perf_counter()
    episodes = trainer.rollout(0)
    rollout = time.perf_counter() - started
    rewards = [outcome_reward(e, cfg.reward) for e in episodes]
    advantages = grpo_advantages(rewards, [e.group for e in episodes], normalize_std=cfg.normalize_std).tolist()
    rows = sum(len(e.rows) for e in episodes)
    print(f"rollout: {len(episodes)} episodes, {rows} steps, {rollout:.1f} s", flush=True)

    started = time.perf_counter()
    skills, skill_report = trainer.analyze(episodes, 0)
    analysis = time.perf_counter() - started
    every = [
        s if isinstance(s, Skill) else annotate(e.trajectory(), e.expert_plan)
        for e, s in zip(episodes, skills, strict=True)
    ]
    batches = {
        "grpo": lambda: UpdateBatch(episodes, rewards, advantages),
        "seed (as run)": lambda: UpdateBatch(episodes, rewards, advantages, skills, skill_report),
        "seed (every episode with a skill)": lambda: UpdateBatch(episodes, rewards, advantages, every, skill_report),
    }
    timed_update(trainer, batches["grpo"](), start_state)  # warm-up: first passes allocate
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in batches}
    for _ in range(args.rounds):  # interleaved, so machine load hits every variant alike
        for name, make in batches.items():
            runs[name].append(timed_update(trainer, make(), start_state))
    grpo, seed, seed_all = (median_phases(runs[name]) for name in batches)
    seed["analysis"] = seed_all["analysis"] = analysis
    variants = {"grpo": grpo, "seed (as run)": seed, "seed (every episode with a skill)": seed_all}
    table = []
    for name, phases in variants.items():
        total = rollout + sum(phases.values())
        table.append(
            [
                name,
                f"{rollout:.1f}",
                *[f"{phases.get(p, 0.0):.1f}" for p in PHASES],
                f"{total:.1f}",
                f"{total / (rollout + sum(grpo.values())):.2f}x",
            ]
        )
    print(markdown_table(["update", "rollout", *PHASES, "total s", "vs grpo"], table))
    report["seed_vs_grpo"] = {name: {"rollout": rollout, **phases} for name, phases in variants.items()}
    report["skill_parse_rate"] = skill_report.parse_rate

    # 2. the naive update against the default one, on the same rows
    policy = trainer.learner.policy
    naive_budget = 2 * max(len(r.prompt_ids) + len(r.token_ids) for e in episodes for r in e.rows)
    settings = {"default": (True, cfg.token_budget), "naive": (False, naive_budget)}
    update_runs: dict[str, list[float]] = {name: [] for name in settings}
    for _ in range(args.rounds):
        for name, (share, budget) in settings.items():
            policy.share_prefix, trainer.learner.token_budget = share, budget
            batch = UpdateBatch(episodes, rewards, advantages)
            update_runs[name].append(timed_update(trainer, batch, start_state)["update"])
    update_times = {name: statistics.median(values) for name, values in update_runs.items()}
    policy.share_prefix, trainer.learner.token_budget = True, cfg.token_budget
    print(
        markdown_table(
            ["update (GRPO rows)", "seconds", "ratio"],
            [[n, f"{t:.1f}", f"{update_times['naive'] / t:.2f}x"] for n, t in update_times.items()],
        )
    )
    report["update_naive_vs_default"] = update_times

    # 3. batched sampling over 8 envs against one env at a time
    prompts = [r.prompt for e in episodes for r in e.rows if r.prompt is not None][:8]
    sampling = SamplingParams(temperature=1.0, max_new_tokens=8, seed=0)
    with torch.no_grad():
        timing = median_rounds(
            {
                "one generate over 8": lambda: policy.generate(prompts, sampling=sampling) and None,
                "8 generates of 1": lambda: [policy.generate([p], sampling=sampling) for p in prompts] and None,
            },
            rounds=3,
        )
    ratio = timing["8 generates of 1"] / timing["one generate over 8"]
    print(
        f"batched sampling over {len(prompts)} envs: {ratio:.2f}x one env at a time "
        f"({timing['one generate over 8']:.2f} s vs {timing['8 generates of 1']:.2f} s)"
    )
    report["batched_generation_ratio"] = ratio
    report["peak_rss_mb"] = peak_rss_bytes() / 2**20
    trainer.close()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"peak RSS {report['peak_rss_mb']:.0f} MiB; wrote {args.out}")


if __name__ == "__main__":
    main()
