"""Tokens and seconds of a GRPO update with the history rendered whole (``history_format=full``) or
as a window of past actions (``history_format=actions``), on the same episodes, back to back.

The episodes follow the noisy expert's path (``seed_rl/train/stage1/expert.py``: the expert's plan,
a random admissible action at rate ``--noise``), the same for both formats, so that the prompts hold
ALFWorld's real observations (an untrained model's invalid actions would show only "Nothing
happens." and flatter the full history) and differ only in how they render the history. At each step
the run's policy samples its reply to that prompt, batched over the episodes still going, as a
rollout samples (shared prefixes kept, frozen states recorded): the rollout's model work, on the
expert's path. The reply is recorded on the step; the env takes the expert's action. Then the update
as ``Trainer.update`` runs it (``train_rows``, ``optimize``), each episode rewarded by its index in
its group (``scripts/bench_throughput.py`` ``spread_rewards``) so that every row trains, as in a
group that does not tie. Seconds per phase from the run's phase timer.

Tokens are counted twice: over the timed update's rows (prompt and reply tokens as the learner
scores them), and, cheaply, over ``--count-episodes`` more expert episodes rendered by both builders
(prompt tokens of every step, and of each section of the prompt alone, plus the reply the builder
writes for the expert's action).

    python scripts/bench_history_format.py [--config alfworld_warm] [--noise 0.2] [--count-episodes 96]
        [--out runs/bench_history_format.json] [key=value ...]

The overrides apply to both formats (``dtype=float32``, ``threads=2``); ``warm_start=none`` is
always added: the bench times one update of the model it loads. ``--dtypes float32,bfloat16`` times
each format in each dtype, in one process (the report's keys are then ``FORMAT/DTYPE``); the expert
path, and so every prompt, is the same in all of them, and only the policy's sampled replies differ.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shlex
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from bench_throughput import spread_rewards

from seed_agent.agent import AgentStep
from seed_agent.policies.base import keeping_frozen_states, reusing_prefixes
from seed_agent.prompts.base import join_prefill
from seed_envs.vector import make_vec
from seed_rl.config import load_config
from seed_rl.rollout import EpisodeStart, run_episodes
from seed_rl.train.phases.phase_timer import PhaseTimer
from seed_rl.train.phases.train_rows import train_rows
from seed_rl.train.phases.update import optimize
from seed_rl.train.phases.update_batch import advantage_batch
from seed_rl.train.setup.run_setup import run_env_kwargs, run_sampling
from seed_rl.train.stage1.expert import NoisyExpertAgent
from seed_rl.train.trainer import FROZEN_STATES_SHARE, Trainer

FORMATS = ("full", "actions")


class ExpertPathAgent:
    """The noisy expert decides every action; the policy samples its reply to each prompt (batched)."""

    needs_expert_plan = False

    def __init__(self, policy: Any, builder: Any, sampling: Any, noise: float, seed: int, env_id: str) -> None:
        self.policy = policy
        self.builder = builder
        self.sampling = replace(sampling, stop=builder.stop)
        self.expert = NoisyExpertAgent(builder, (noise,), seed, env_id=env_id)
        self.calls = 0

    def reset(self, slot: int, info: dict[str, Any], expert_plan: list[str] | None = None) -> None:
        self.expert.reset(slot, info, expert_plan)

    def act(self, slots, observations, infos) -> list[AgentStep]:
        steps = self.expert.act(slots, observations, infos)
        if not steps:
            return []
        sampling = replace(self.sampling, seed=None if self.sampling.seed is None else self.sampling.seed + self.calls)
        self.calls += 1
        completions = self.policy.generate([s.prompt for s in steps], sampling=sampling)
        out = []
        for step, info, completion in zip(steps, infos, completions, strict=True):
            parsed = self.builder.parse(completion.text, info.get("available_actions"))
            response = join_prefill(step.prompt.prefill, completion.text)
            out.append(AgentStep(step.action, response, parsed, step.prompt, completion))
        return out


def rollout(trainer: Trainer, noise: float) -> list[Any]:
    """``Trainer.rollout``'s update 0 (same tasks, groups, sampling seed), on the expert's path."""
    cfg = trainer.cfg
    starts = [
        EpisodeStart(options={"split": cfg.split, "index": index}, group=k)
        for k, index in enumerate(trainer.tasks(0))
        for _ in range(cfg.group_size)
    ]
    sampling = run_sampling(cfg, sampling_seed=cfg.seed * 1_000_003 % 2**31)
    agent = ExpertPathAgent(trainer.rollout_policy, trainer.builder, sampling, noise, cfg.seed, cfg.env)
    room = int(FROZEN_STATES_SHARE * cfg.memory_budget_gb * 1e9)
    with torch.no_grad(), reusing_prefixes(trainer.rollout_policy), keeping_frozen_states(trainer.rollout_policy, room):
        return run_episodes(trainer.vec, agent, starts, env_id=cfg.env, penalty=cfg.penalty, record_expert=True)


def timed_update(trainer: Trainer, noise: float) -> dict[str, Any]:
    cfg = trainer.cfg
    timer = PhaseTimer(trainer.policy.device)
    with timer("rollout"):
        episodes = rollout(trainer, noise)
    batch = spread_rewards(advantage_batch(episodes, cfg), cfg.normalize_std)
    batch.rows = train_rows(trainer.learner, batch, trainer.losses, trainer.row_passes, timer)
    layout = trainer.learner.layout([r.score for r in batch.rows])
    with timer("update"):
        optimize(
            trainer.learner,
            batch.rows,
            trainer.losses,
            minibatches=cfg.minibatches,
            epochs=cfg.epochs,
            rng=np.random.default_rng([cfg.seed, 0, 1]),
        )
    prompt = sum(len(r.score.prompt_ids) for r in batch.rows)
    reply = sum(len(r.score.token_ids) for r in batch.rows)
    return {
        "episodes": len(episodes),
        "rows": len(batch.rows),
        "steps_per_episode": statistics.mean(len(e.rows) for e in episodes),
        "expert_won": sum(bool(e.won) for e in episodes),
        "prompt_tokens": prompt,
        "reply_tokens": reply,
        "tokens": prompt + reply,
        "tokens_per_row": (prompt + reply) / max(1, len(batch.rows)),
        "max_row_tokens": max(r.score.length for r in batch.rows),
        "batch_shared_prefix_tokens": layout.shared,
        "seconds": {k: round(v, 2) for k, v in timer.seconds.items()},
        "total_s": round(sum(timer.seconds.values()), 2),
    }


def counted_tokens(trainer: Trainer, count: int, noise: float) -> dict[str, Any]:
    """Prompt and reply tokens of ``count`` expert episodes (no model call) rendered by the run's builder."""
    cfg, builder = trainer.cfg, trainer.builder
    rng = np.random.default_rng([cfg.seed, 30_000])
    indices = [int(i) for i in rng.choice(trainer.task_count, size=count, replace=trainer.task_count < count)]
    starts = [EpisodeStart(options={"split": "train", "index": i}, group=k) for k, i in enumerate(indices)]
    agent = NoisyExpertAgent(builder, (noise,), cfg.seed, env_id=cfg.env)
    with make_vec(cfg.env, min(count, 16), backend="sync", **run_env_kwargs(cfg, "train")) as vec:
        episodes = run_episodes(vec, agent, starts, env_id=cfg.env, penalty=cfg.penalty, record_expert=True)
    count_text = trainer.policy.count_text_tokens
    prompts = [trainer.learner.count_tokens(row.prompt) for e in episodes for row in e.rows]
    replies = [count_text(builder.reply(row.action)) - count_text(builder.prefill) for e in episodes for row in e.rows]
    last = [trainer.learner.count_tokens(e.rows[-1].prompt) for e in episodes if len(e.rows) >= 4]
    sections: dict[str, int] = {}
    for section in (s for e in episodes for row in e.rows for s in row.prompt.sections):
        sections[section.name] = sections.get(section.name, 0) + count_text(section.text)
    return {
        "episodes": len(episodes),
        "steps": len(prompts),
        "prompt_tokens_per_step": statistics.mean(prompts),
        # each section's text alone (the chat template's own tokens and the system message are the rest)
        "section_tokens_per_step": {name: round(total / len(prompts), 1) for name, total in sections.items()},
        "reply_tokens_per_step": statistics.mean(replies),
        "max_prompt_tokens": max(prompts),
        "prompt_tokens_at_last_step_of_episodes_of_4_plus_steps": statistics.mean(last) if last else None,
    }


def row_label(name: str, code: bool = True) -> str:
    """A timed update's name as its table row shows it: ``full/float32`` becomes "`full`, float32" (the
    format as code, the value a config writes; a slash inside backticks would read as a path)."""
    fmt, _, dtype = name.partition("/")
    shown = f"`{fmt}`" if code else fmt
    return f"{shown}, {dtype}" if dtype else shown


def result_table(report: dict[str, Any], names: list[str], machine: str) -> dict[str, Any]:
    """The timed updates of ``report`` as a ``docs/results/`` table (``scripts/result_kinds.py``): a row
    per format and dtype, then each later row's seconds as a ratio of the first's. ``update s`` is
    every phase after the rollout (the passes that score the rows, and the optimizer steps)."""
    updates = {name: report[name]["update"] for name in names}
    first = names[0]
    config = report["config"]

    def seconds(update: dict[str, Any]) -> tuple[float, float, float]:
        rollout = update["seconds"].get("rollout", 0.0)
        return rollout, update["total_s"] - rollout, update["total_s"]

    rows = []
    for name, update in updates.items():
        rollout, after, total = seconds(update)
        rows.append(
            [
                row_label(name),
                f"{update['tokens']:,} ({update['prompt_tokens']:,} + {update['reply_tokens']:,})"
                f" over {update['rows']} rows",
                f"{update['tokens_per_row']:.0f}",
                f"{rollout:.0f}",
                f"{after:.0f}",
                f"**{total:.0f}**",
            ]
        )
    for name in names[1:]:
        pairs = zip(seconds(updates[first]), seconds(updates[name]), strict=True)
        ratios = [b / a if a else float("nan") for a, b in pairs]
        tokens = updates[name]["tokens"] / updates[first]["tokens"]
        ratio_label = f"{row_label(name, code=False)} / {row_label(first, code=False)}"
        rows.append([ratio_label, f"{tokens:.2f}", "", *(f"{r:.2f}" for r in ratios)])
    entry = report[first]
    return {
        "kind": "table",
        "date": report["date"],
        "machine": machine,
        "command": report["command"],
        "columns": [
            f"`{config}`, {entry['tasks']} tasks x {entry['group']}, format, dtype",
            "tokens per update (prompt + reply)",
            "tokens per row",
            "rollout s",
            "update s",
            "total s",
        ],
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="alfworld_warm")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--noise", type=float, default=0.2, help="the expert's random-action rate")
    parser.add_argument("--count-episodes", type=int, default=96, help="expert episodes whose tokens are counted")
    parser.add_argument("--no-timing", action="store_true", help="count tokens only (no model pass)")
    parser.add_argument("--dtypes", default="", help="comma-separated dtypes, each format timed in each")
    parser.add_argument("--out", default="runs/bench_history_format.json")
    parser.add_argument("--result", default=None, help="also write the timings as a docs/results/ table here")
    parser.add_argument("--machine", default="", help="with --result: what it ran on")
    parser.add_argument("overrides", nargs="*", help="key=value, for both formats")
    args = parser.parse_args(argv)
    if args.result and (args.no_timing or not args.machine):
        parser.error("--result needs the timed updates (no --no-timing) and --machine")
    report: dict[str, Any] = {
        "command": shlex.join(["python", "scripts/bench_history_format.py", *(sys.argv[1:] if argv is None else argv)]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "config": args.config,
        "overrides": args.overrides,
        "noise": args.noise,
    }
    dtypes = [d for d in args.dtypes.split(",") if d]
    names: list[str] = []
    for fmt, dtype in itertools.product(args.formats.split(","), dtypes or [None]):
        name = fmt if dtype is None else f"{fmt}/{dtype}"
        run_dir = Path(tempfile.mkdtemp()) / fmt
        extra = ["warm_start=none", "progress=false", f"history_format={fmt}", f"run_dir={run_dir}"]
        cfg = load_config(args.config, [*args.overrides, *extra, *([f"dtype={dtype}"] if dtype else [])])
        trainer = Trainer(cfg)
        try:
            entry: dict[str, Any] = {"dtype": trainer.cfg.dtype, "tasks": cfg.tasks_per_update, "group": cfg.group_size}
            entry["counted"] = counted_tokens(trainer, args.count_episodes, args.noise)
            print(f"{name}: counted {entry['counted']}", flush=True)
            if not args.no_timing:
                entry["update"] = timed_update(trainer, args.noise)
                print(f"{name}: update {entry['update']}", flush=True)
        finally:
            trainer.close()
        report[name] = entry
        names.append(name)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"wrote {args.out}")
    if args.result:
        Path(args.result).write_text(json.dumps(result_table(report, names, args.machine), indent=1) + "\n")
        print(f"wrote {args.result}")
    return report


if __name__ == "__main__":
    main()
