"""Training-speed benchmarks, as ratios against baselines run in the same process.

1. **Optimized against naive** (``naive``): one update of the naive path and one of the default
   path, each with its own rollout (same tasks, same seed), and both updates trained on the same
   batch (the default path's rollout). The naive path is what a new user would first write: fp32
   weights, no shared prefix in sampling or scoring, two rows per micro-batch, LoRA in every layer
   (so no pass starts from the sampler's states below the trained layers) (:data:`NAIVE`).
   Seconds per phase, peak RSS of each path, and the ratio.
2. **SEED against GRPO** (``seed``): from the default path's rollout, the GRPO update and the SEED
   update (analysis, teacher pass, update) from the same starting weights, after Stage 1 (as SEED
   runs; its adapter is cached after the first run, whose seconds and parse rates are reported;
   ``--no-stage1`` skips it). SEED is timed as it runs (only parsed skills get a teacher pass) and
   with every episode given a skill (the scripted annotator's, where the policy's did not parse).
   Each phase is also given as a ratio against GRPO's update (everything after the rollout), and
   the analyzer's tokens per second against the rollout's. Last, SEED's floor (``scripts/bench_floor.py``):
   the least SEED can cost here without changing what it computes (the analysis pass's prefill
   alone, plus the teacher pass), against GRPO and the CPU target of 1.4x.
3. **Batched sampling** (``sampling``): one ``generate`` over 8 envs' prompts against 8 calls of one.
4. **The teacher pass, shared per episode** (``teacher``): on the same rows (every episode given the
   scripted annotator's skill, with and without its step skills), the teacher pass that runs every
   row whole past the batch's shared prefix against the one that also computes each episode's
   shared ``h_skill`` prefix once (``share_groups``), alternating with a GRPO update from the same
   weights; the median of ``--rounds``, each pass as a ratio against the other and against GRPO's update.
5. **Frozen-layer states, prefix shared** (``states``): the pass over the layers below the first
   trained one that Stage 1 and the warm start make once before their epochs
   (``GenerationEngine.states_of``), over the rollout's steps as (prompt, reply) rows: the prefix
   every row shares run once against every row run whole (``share_prefix=false``), the median of
   ``--rounds``, with the largest difference of the states.

The ``seed`` section also reports throughput (``scripts/bench_throughput.py``): sampling, scoring
(the teacher pass) and training tokens per second, SEED's update against GRPO's as a ratio against
the paper-scale target of 1.15x, and on CUDA the peak memory (every clock read after
``torch.cuda.synchronize``).

Model: SmolLM2-135M if fetched (``seed models fetch smollm2``), else the tiny random model;
``--model random:qwen2.5-0.5b`` (or ``random:qwen2.5-1.5b``) builds that architecture from its
config with random weights, in-process (``seed_agent/random_models.py``; nothing is downloaded).
``--device cuda`` runs everything on the GPU (refused, exit status 2, where torch sees none).
A random model wins nothing, so every group ties and GRPO trains no row: ``--spread-rewards`` gives
each episode its index in its group as reward, so that every row trains.
Writes ``runs/bench_train.json``.

    python scripts/bench_train.py [--config demo] [--tasks 4] [--group 4] [--max-steps 15]
        [--sections naive,seed,sampling,teacher] [--device cpu|cuda|auto] [--model NAME]

On a GPU machine (prepared, not yet run: no GPU was at hand when it was written):

    python scripts/bench_train.py --device cuda --model random:qwen2.5-0.5b --sections seed \
        --no-stage1 --spread-rewards --tasks 8 --group 8 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path

import torch
from bench_common import median_rounds
from bench_floor import analysis_prefill_seconds, print_floor, seed_floor
from bench_throughput import (
    clock,
    generated_tokens,
    peak_memory_bytes,
    print_throughput,
    require_device,
    reset_peak_memory,
    spread_rewards,
    throughput_report,
    trained_tokens,
)

from seed_agent.models import is_fetched
from seed_agent.policies.base import SamplingParams
from seed_agent.skills import Skill
from seed_agent.skills.annotate import annotate
from seed_rl.config import load_config
from seed_rl.rollout import Episode
from seed_rl.tables import markdown_table
from seed_rl.train.learner.memory import peak_rss_bytes, reset_peak_rss
from seed_rl.train.phases.phase_timer import PhaseTimer
from seed_rl.train.phases.skill_pass import teacher_logprobs, teacher_rows
from seed_rl.train.phases.train_rows import encode_steps, train_rows
from seed_rl.train.phases.update import optimize
from seed_rl.train.phases.update_batch import UpdateBatch, advantage_batch
from seed_rl.train.trainer import Trainer

PHASES = ("analysis", "teacher", "rescore", "reference", "update")
#: The naive path (every key reachable by config): fp32, no shared prefix, 2 rows per micro-batch,
#: LoRA in every layer, every pass from the first layer.
NAIVE = ["dtype=float32", "share_prefix=false", "micro_batch_rows=2", "lora_layers=0", "reuse_frozen_states=false"]
SECTIONS = ("naive", "seed", "sampling", "teacher", "states")


def timed_update(trainer: Trainer, batch: UpdateBatch, start_state: tuple | None = None) -> dict[str, float]:
    """The phases after the rollout on ``batch``, from ``start_state`` (weights, optimizer) if given."""
    if start_state is not None:
        weights, optimizer = start_state
        trainer.learner.load_trainable_state(weights)
        trainer.learner.optimizer.load_state_dict(optimizer)
    timer = PhaseTimer(trainer.policy.device)
    batch.rows = train_rows(trainer.learner, batch, trainer.losses, trainer.row_passes, timer)
    with timer("update"):
        optimize(trainer.learner, batch.rows, trainer.losses, minibatches=trainer.cfg.minibatches)
    return dict(timer.seconds)


def median_phases(runs: list[dict[str, float]]) -> dict[str, float]:
    return {phase: statistics.median(run.get(phase, 0.0) for run in runs) for phase in {p for r in runs for p in r}}


def timed_rollout(trainer: Trainer) -> tuple[list[Episode], float]:
    now = clock(trainer.cfg.device)
    started = now()
    episodes, _ = trainer.rollout(0)
    return episodes, now() - started


def naive_against_default(default: Trainer, episodes: list[Episode], rollout: float, base: list[str]) -> dict:
    """Section 1: the naive path's own rollout, then both paths' updates on the default's batch."""
    reset_peak_rss()
    default_update = timed_update(default, advantage_batch(episodes, default.cfg))
    default_peak = peak_rss_bytes()
    naive = Trainer(load_config(base[0], [*base[1:], *NAIVE, f"run_dir={Path(tempfile.mkdtemp()) / 'naive'}"]))
    reset_peak_rss()
    naive_episodes, naive_rollout = timed_rollout(naive)
    naive_update = timed_update(naive, advantage_batch(episodes, naive.cfg))
    naive_peak = peak_rss_bytes()
    naive.close()
    paths = {
        "naive": (naive_rollout, naive_episodes, naive_update, naive_peak),
        "default": (rollout, episodes, default_update, default_peak),
    }
    totals = {name: r + sum(u.values()) for name, (r, _, u, _) in paths.items()}
    table, report = [], {}
    for name, (r, eps, update, peak) in paths.items():
        steps = sum(len(e.rows) for e in eps)
        row = {"rollout": r, **{p: update.get(p, 0.0) for p in PHASES}, "total": totals[name]}
        report[name] = {**row, "env_steps": steps, "peak_rss_mb": peak / 2**20}
        table.append(
            [
                name,
                str(steps),
                *[f"{v:.1f}" for v in row.values()],
                f"{peak / 2**30:.2f}",
                f"{totals['naive'] / totals[name]:.2f}x",
            ]
        )
    header = ["path", "env steps", "rollout", *PHASES, "total s", "peak RSS GiB", "speed-up"]
    print(markdown_table(header, table))
    update_ratio = report["naive"]["update"] / report["default"]["update"]
    rollout_ratio = (naive_rollout / report["naive"]["env_steps"]) / (rollout / report["default"]["env_steps"])
    print(f"update on the same batch: {update_ratio:.2f}x; rollout per env step: {rollout_ratio:.2f}x", flush=True)
    report["speedup_total"] = totals["naive"] / totals["default"]
    report["speedup_update_same_batch"] = update_ratio
    report["speedup_rollout_per_step"] = rollout_ratio
    return report


def seed_against_grpo(
    trainer: Trainer, episodes: list[Episode], rollout: float, rounds: int, spread: bool = False
) -> dict:
    """Section 2: the GRPO update against SEED's, from the same weights, on one rollout batch
    (``spread``: every episode rewarded by its index in its group, :func:`spread_rewards`)."""
    rollout_tokens = generated_tokens(episodes)
    start_state = (trainer.learner.trainable_state(), trainer.learner.optimizer.state_dict())
    now = clock(trainer.cfg.device)

    def advantages() -> UpdateBatch:
        b = advantage_batch(episodes, trainer.cfg)
        return spread_rewards(b, trainer.cfg.normalize_std) if spread else b

    started = now()
    skills, skill_report = trainer.analyze(advantages(), 0)
    analysis = now() - started
    every = [
        s if isinstance(s, Skill) else annotate(e.trajectory(), e.expert_plan)
        for e, s in zip(episodes, skills, strict=True)
    ]

    def batch(with_skills=None) -> UpdateBatch:
        b = advantages()
        if with_skills is not None:
            b.skills, b.skill_report = with_skills, skill_report
        return b

    batches = {
        "grpo": lambda: batch(),
        "seed (as run)": lambda: batch(skills),
        "seed (every episode with a skill)": lambda: batch(every),
    }
    timed_update(trainer, batches["grpo"](), start_state)  # warm-up: first passes allocate
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in batches}
    last: dict[str, UpdateBatch] = {}
    for _ in range(rounds):  # interleaved, so machine load hits every variant alike
        for name, make in batches.items():
            last[name] = make()
            runs[name].append(timed_update(trainer, last[name], start_state))
    variants = {name: median_phases(values) for name, values in runs.items()}
    for name in ("seed (as run)", "seed (every episode with a skill)"):
        variants[name]["analysis"] = analysis
    grpo_total = rollout + sum(variants["grpo"].values())
    table = []
    for name, phases in variants.items():
        total = rollout + sum(phases.values())
        seconds = [f"{phases.get(p, 0.0):.1f}" for p in PHASES]
        table.append([name, f"{rollout:.1f}", *seconds, f"{total:.1f}", f"{total / grpo_total:.2f}x"])
    print(markdown_table(["update", "rollout", *PHASES, "total s", "vs grpo"], table))
    grpo_update = sum(variants["grpo"].values())
    ratios = []
    for name, phases in variants.items():
        cells = [f"{phases.get(p, 0.0) / grpo_update:.2f}" for p in PHASES]
        ratios.append([name, *cells, f"{sum(phases.values()) / grpo_update:.2f}x"])
    print("\nEach phase against GRPO's update (everything after the rollout):")
    print(markdown_table(["update", *PHASES, "update vs grpo's"], ratios))
    analyzer_rate = skill_report.generated_tokens / analysis if analysis else 0.0
    rollout_rate = rollout_tokens / rollout
    print(
        f"analyzer: {skill_report.generated_tokens} tokens in {analysis:.1f} s ({analyzer_rate:.1f}/s) against the "
        f"rollout's {rollout_tokens} in {rollout:.1f} s ({rollout_rate:.1f}/s): {analyzer_rate / rollout_rate:.2f}x; "
        f"parse rate {skill_report.parse_rate:.2f}",
        flush=True,
    )
    every_name = "seed (every episode with a skill)"
    places = [(e, s) for e, ep in enumerate(episodes) for s, row in enumerate(ep.rows) if row.token_ids]
    scored = teacher_rows(
        trainer.learner,
        episodes,
        every,
        places,
        lambda steps, prompts: encode_steps(trainer.learner, steps, prompts),
        max_prompt_tokens=trainer.row_passes.max_prompt_tokens,
    ).rows
    throughput = throughput_report(
        rollout_s=rollout,
        rollout_tokens=rollout_tokens,
        grpo=variants["grpo"],
        seed=variants[every_name],
        teacher_rows=scored,
        training_tokens=trained_tokens(last["grpo"].rows, trainer.losses),
        peak_bytes=peak_memory_bytes(trainer.cfg.device),
    )
    print_throughput(throughput, trainer.cfg.device, every_name)
    prefill = analysis_prefill_seconds(trainer.learner.policy, trainer.analyzer, episodes, now, rounds)
    as_run = variants["seed (as run)"]
    floor = seed_floor(
        rollout_s=rollout, grpo_update_s=grpo_update, prefill_s=prefill, teacher_s=as_run.get("teacher", 0.0)
    )
    print_floor(floor, (rollout + sum(as_run.values())) / grpo_total)
    return {
        "throughput": throughput,
        "floor": floor,
        "variants": {name: {"rollout": rollout, **phases} for name, phases in variants.items()},
        "update_vs_grpo": {name: sum(phases.values()) / grpo_update for name, phases in variants.items()},
        "skill_parse_rate": skill_report.parse_rate,
        "analyzer_tokens_per_s": analyzer_rate,
        "rollout_tokens_per_s": rollout_rate,
    }


def batched_sampling(trainer: Trainer, episodes: list[Episode]) -> float:
    """Section 3: one ``generate`` over 8 envs' prompts against 8 calls of one prompt."""
    policy = trainer.learner.policy
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
    return ratio


def shared_states(trainer: Trainer, episodes: list[Episode], rounds: int) -> dict:
    """Section 5: ``states_of`` over the rollout's steps, the shared prefix run once against every row whole."""
    engine = trainer.learner.policy.engine
    rows = [r for e in episodes for r in e.rows if r.token_ids and r.prompt_ids]
    prompts, replies = [r.prompt_ids for r in rows], [r.token_ids for r in rows]
    out: dict[str, list] = {}
    configured = engine.layout.share_prefix

    def states(share: bool) -> None:
        engine.layout.share_prefix = share
        try:
            out[str(share)] = engine.states_of(prompts, replies)
        finally:
            engine.layout.share_prefix = configured

    timing = median_rounds({"prefix once": lambda: states(True), "every row whole": lambda: states(False)}, rounds)
    if out["True"] is None:
        print("states: no frozen layers (lora_layers=0 or a model without a plain decoder stack)")
        return {}
    gap = max(float((a.span(0) - b.span(0)).abs().max()) for a, b in zip(out["True"], out["False"], strict=True))
    ratio = timing["every row whole"] / timing["prefix once"]
    tokens = sum(len(p) + len(r) - 1 for p, r in zip(prompts, replies, strict=True))
    shared = out["True"][0].prefix.shape[0]
    print(
        f"frozen-layer states of {len(rows)} rows ({tokens} tokens, {shared} shared by all): prefix once "
        f"{timing['prefix once']:.2f} s, every row whole {timing['every row whole']:.2f} s: {ratio:.2f}x; "
        f"max |state gap| {gap:.1e}"
    )
    return {"rows": len(rows), "tokens": tokens, "shared_prefix": shared, **timing, "speedup": ratio, "max_gap": gap}


def gap_between(a: dict, b: dict) -> float:
    """The largest difference of two teacher passes' log-probs (:func:`teacher_logprobs`' results)."""
    return max((float((a[i][0] - b[i][0]).abs().max()) for i in a), default=0.0)


def teacher_sharing(trainer: Trainer, episodes: list[Episode], rounds: int) -> dict:
    """Section 4: the teacher pass with every row whole past the batch prefix, against each episode's
    shared ``h_skill`` prefix computed once, on the same rows; a GRPO update beside them for scale."""
    learner, passes = trainer.learner, trainer.row_passes
    layout = learner.policy.engine.layout
    start_state = (learner.trainable_state(), learner.optimizer.state_dict())
    scripted = [annotate(e.trajectory(), e.expert_plan) for e in episodes]
    variants = {
        "episode skills": [replace(s, step_skills=()) for s in scripted],
        "with step skills": scripted,
    }
    places = [(e, s) for e, ep in enumerate(episodes) for s, row in enumerate(ep.rows) if row.token_ids]
    outputs: dict[str, dict] = {}

    def encode(steps: list, prompts: list) -> list:
        return encode_steps(learner, steps, prompts)

    def teacher(skills: list, share: bool, name: str):
        def run() -> None:
            layout.share_groups = share
            outputs[name] = teacher_logprobs(
                learner,
                episodes,
                skills,
                places,
                encode,
                max_prompt_tokens=passes.max_prompt_tokens,
                temperature=passes.temperature,
            )

        return run

    def grpo_update() -> float:
        return sum(timed_update(trainer, advantage_batch(episodes, trainer.cfg), start_state).values())

    methods: dict = {"grpo update": grpo_update}
    for variant, skills in variants.items():
        methods[f"{variant}: whole rows"] = teacher(skills, False, f"{variant}: whole rows")
        methods[f"{variant}: shared per episode"] = teacher(skills, True, f"{variant}: shared per episode")
    for method in methods.values():  # warm-up: first passes allocate
        method()
    timing = median_rounds(methods, rounds)
    # the float noise to read the gaps against: the default pass against one that shares no prefix
    unshared = "episode skills: no shared prefix"
    layout.share_prefix = False
    teacher(variants["episode skills"], False, unshared)()
    layout.share_prefix = layout.share_groups = True
    grpo = timing["grpo update"]
    baseline_gap = gap_between(outputs["episode skills: whole rows"], outputs[unshared])
    report: dict = {"grpo_update_s": grpo, "rows": len(places), "episodes": len(episodes)}
    report["max_logprob_gap_whole_vs_no_shared_prefix"] = baseline_gap
    table = []
    for variant, skills in variants.items():
        whole, shared = outputs[f"{variant}: whole rows"], outputs[f"{variant}: shared per episode"]
        gap = gap_between(whole, shared)
        rows = teacher_rows(learner, episodes, skills, places, encode, max_prompt_tokens=passes.max_prompt_tokens).rows
        laid_out = learner.layout(rows)
        batch_prefix, ends = laid_out.shared, laid_out.ends
        segment = statistics.mean(end - batch_prefix for end in ends) if ends else 0.0
        seconds = {kind: timing[f"{variant}: {kind}"] for kind in ("whole rows", "shared per episode")}
        report[variant] = {
            **{f"{k}_s": v for k, v in seconds.items()},
            "speedup": seconds["whole rows"] / seconds["shared per episode"],
            "max_logprob_gap": gap,
            "mean_row_tokens": statistics.mean(r.length for r in rows),
            "batch_prefix_tokens": batch_prefix,
            "mean_episode_prefix_tokens_past_it": segment,
        }
        table.append(
            [
                variant,
                f"{len(rows)} / {statistics.mean(r.length for r in rows):.0f} / {batch_prefix} / {segment:.0f}",
                f"{seconds['whole rows']:.2f} ({seconds['whole rows'] / grpo:.2f})",
                f"{seconds['shared per episode']:.2f} ({seconds['shared per episode'] / grpo:.2f})",
                f"{report[variant]['speedup']:.2f}x",
                f"{gap:.1e}",
            ]
        )
    header = [
        "skills",
        "rows / tokens per row / batch prefix / episode prefix past it",
        "whole rows s (x grpo update)",
        "shared per episode s (x grpo update)",
        "speed-up",
        "max |log-prob gap|",
    ]
    print(f"teacher pass over {len(episodes)} episodes; GRPO's update on the same batch: {grpo:.2f} s")
    print(markdown_table(header, table))
    print(f"float noise: whole rows against a pass sharing no prefix at all: max |log-prob gap| {baseline_gap:.1e}")
    return report


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="demo", help="the base config (demo: the README's CPU run)")
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="timed repeats of each SEED/GRPO variant (median)")
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated: {', '.join(SECTIONS)}")
    parser.add_argument("--model", default=None, help="default: smollm2 if fetched, else tiny-random")
    parser.add_argument("--no-stage1", action="store_true", help="SEED without Stage 1 (its analyzer rarely parses)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"), help="auto: cuda where available")
    parser.add_argument(
        "--spread-rewards", action="store_true", help="seed section: reward each episode by its index in its group"
    )
    parser.add_argument("--out", default="runs/bench_train.json")
    args = parser.parse_args(argv)
    device = require_device(parser, args.device)
    sections = args.sections.split(",")
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown sections {unknown}; allowed: {', '.join(SECTIONS)}")
    model = args.model or ("smollm2" if is_fetched("smollm2") else "tiny-random")
    base = [
        args.config,
        f"model={model}",
        f"tasks_per_update={args.tasks}",
        f"group_size={args.group}",
        f"max_steps={args.max_steps}",
        "sft=false",
        "warm_start=none",  # (the demo config warm-starts: the bench times updates only)
        "progress=false",
        f"threads={args.threads}",
        "max_new_tokens=8",
        f"device={device}",
    ]
    stage1 = "sft=false" if args.no_stage1 else "sft=true"
    cfg = load_config(base[0], [*base[1:], "algo=seed", stage1, f"run_dir={Path(tempfile.mkdtemp()) / 'bench'}"])
    reset_peak_memory(device)
    trainer = Trainer(cfg)
    report: dict = {"model": model, "dtype": trainer.cfg.dtype, "tasks": args.tasks, "group": args.group}
    report["device"] = device
    report["max_steps"] = args.max_steps
    if trainer.stage1_report is not None:
        report["stage1"] = {
            k: trainer.stage1_report.get(k)
            for k in ("seconds", "phase_seconds", "cached", "parse_rate_before", "parse_rate_after")
        }
        print(f"Stage 1: {report['stage1']}", flush=True)
    episodes, rollout = timed_rollout(trainer)
    steps = sum(len(e.rows) for e in episodes)
    print(f"rollout ({trainer.cfg.dtype}): {len(episodes)} episodes, {steps} steps, {rollout:.1f} s", flush=True)
    if "naive" in sections:
        report["naive_vs_default"] = naive_against_default(trainer, episodes, rollout, base)
    if "seed" in sections:
        report["seed_vs_grpo"] = seed_against_grpo(trainer, episodes, rollout, args.rounds, args.spread_rewards)
    if "teacher" in sections:
        report["teacher_sharing"] = teacher_sharing(trainer, episodes, args.rounds)
    if "states" in sections:
        report["frozen_states"] = shared_states(trainer, episodes, args.rounds)
    if "sampling" in sections:
        report["batched_generation_ratio"] = batched_sampling(trainer, episodes)
    trainer.close()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"wrote {args.out}")
    return report


if __name__ == "__main__":
    main()
