"""Train SmolLM2-135M on seed/Sokoban-v0 with TRL's GRPOTrainer, through the seed TRL adapter.

    pip install -e '.[trl]'
    seed models fetch smollm2            # the offline model, once
    python examples/trl_sokoban.py --steps 3 --out runs/trl_sokoban

Each step draws ``--tasks`` rooms whose shortest solution is one move and plays each
``--generations`` times: the model calls the ``act`` tool with a move, and that move ends the
episode (one move per episode; the 48-token completion budget leaves no room for the env's
answer, which TRL then drops). The rewards are the env's own: its score (fraction of boxes on
targets) and the sum of its rewards (-0.1 a move, +1 a box onto a target, +10 the room solved).

SmolLM2's chat template has no tool calls, so the tokenizer gets Qwen2.5's (the same ChatML tokens
plus tool calls), which TRL knows how to parse; and the prompt shows two worked moves, without
which a model this small hardly ever calls the tool.

Prints one line per step, with its wall time, and writes ``metrics.jsonl`` (TRL's log of each
step) and ``rollouts.jsonl`` (each rollout's task, actions, score and return) under ``--out``.

Time, on CPU. A step generates 6 completions of about 30 tokens after a 670-token prompt (TRL's
tool schema, two worked moves, the room), then trains on them in 3 micro-batches. With the defaults
the training passes take about three quarters of a step and the generation the rest; TRL's tool
loop takes no measurable time (one call; the env's answer does not fit the budget, so there is no
second turn). TRL trains in bf16 mixed precision by default, also on CPU (the weights and the
optimizer stay fp32); ``--precision auto`` keeps that where oneDNN has bf16 kernels and asks for
fp32 elsewhere. torch gets the cores idle at the start: on a shared machine, threads on busy cores
wait for one another at every operation. Measured with ``--steps 2`` on this repo's 2-core machine
(AVX512-BF16), under ``nice`` beside other training jobs: with torch's 2 threads (the code before
this choice) a step took 243 s and 326 s at load average 4 to 6 (93 s and 131 s of it generating),
and 157 s for a first step at load 2.7 to 4.2; with the defaults (1 thread there) 90 s and 111 s at
load 4 to 5 (23 s and 27 s generating); in fp32 with 1 thread the first step took 131 s. The
defaults (3 steps) ran in 209 s from start to end, 64, 67 and 70 s a step, at load 1.9 to 3. The
thread count does not change the results: both steps' losses, rewards and gradient norms were the
same with 1 thread as with 2.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

ENV_ID = "seed/Sokoban-v0"
#: Text observations (a text model), rooms one move from solved, one move per episode.
ENV_KWARGS = {"observation_mode": "text", "max_solution_moves": 1, "max_episode_steps": 1}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3, help="optimizer steps (default 3)")
    parser.add_argument("--tasks", type=int, default=1, help="rooms per step (default 1)")
    parser.add_argument("--generations", type=int, default=6, help="rollouts per room, GRPO's group (default 6)")
    parser.add_argument(
        "--max-completion-length", type=int, default=48, help="tokens per rollout, tool answers included (48)"
    )
    parser.add_argument("--micro-batch", type=int, default=2, help="rollouts per forward/backward pass (default 2)")
    parser.add_argument("--learning-rate", type=float, default=1e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--threads", type=int, default=0, help="torch CPU threads (default: the cores idle at the start, at least 1)"
    )
    parser.add_argument(
        "--precision",
        choices=["auto", "bf16", "fp32"],
        default="auto",
        help="bf16: mixed precision (bf16 matrix products, fp32 weights and optimizer), TRL's default; "
        "auto (default): bf16 where the device has bf16 kernels, else fp32",
    )
    parser.add_argument("--out", type=Path, default=Path("runs/trl_sokoban"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    args = parse_args(argv)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    from seed_agent.models import model_path
    from seed_envs.integrations.trl import environment_factory, return_reward, score_reward, task_dataset

    on_cpu = not torch.cuda.is_available()
    if args.threads or on_cpu:
        torch.set_num_threads(args.threads or _idle_cores(torch.get_num_threads()))
    bf16 = args.precision == "bf16" or (args.precision == "auto" and _native_bf16(torch))
    threads = f", CPU threads: {torch.get_num_threads()}" if on_cpu else ""
    print(f"precision: {'bf16 mixed' if bf16 else 'fp32'}{threads}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    rollouts_file = args.out / "rollouts.jsonl"
    rollouts_file.write_text("")
    folder = str(model_path("smollm2"))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = qwen2_5_chat_template
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)

    def score(environments, trainer_state, **kwargs):
        """The env's score of each rollout (score_reward), each rollout also written to rollouts.jsonl."""
        with rollouts_file.open("a") as out:
            for env in environments:
                record = {"step": trainer_state.global_step + 1, "task_id": env.task_id, "actions": env.actions}
                record |= {"won": env.won}
                record |= {"score": env.score, "return": env.total_reward}
                out.write(json.dumps(record) + "\n")
        return score_reward(environments)

    class PrintStep(TrainerCallback):
        """One line per step: its wall time (generation, rewards, training passes, optimizer) and its log."""

        started = 0.0

        def on_step_begin(self, *_, **__):
            self.started = time.perf_counter()

        def on_log(self, _args, state, _control, logs=None, **_):
            if logs and "loss" in logs:
                print(
                    f"step {state.global_step} ({time.perf_counter() - self.started:.0f} s): loss {logs['loss']:.4f}, "
                    f"score {logs['rewards/score/mean']:.3f}, return {logs['rewards/return_reward/mean']:.3f}, "
                    f"reward std {logs['reward_std']:.3f}, tool calls per rollout {logs['tools/call_frequency']:.2f}",
                    flush=True,
                )

    config = GRPOConfig(
        output_dir=str(args.out),
        num_generations=args.generations,
        per_device_train_batch_size=args.micro_batch,
        gradient_accumulation_steps=_accumulation(args.tasks * args.generations, args.micro_batch),
        max_steps=args.steps,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=ENV_KWARGS["max_episode_steps"],
        learning_rate=args.learning_rate,
        beta=0.0,
        temperature=1.0,
        bf16=bf16,
        **_no_activation_checkpointing(GRPOConfig),
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=on_cpu,
        seed=args.seed,
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=config,
        train_dataset=task_dataset(ENV_ID, "train", count=args.steps * args.tasks, examples=2, **ENV_KWARGS),
        environment_factory=environment_factory(ENV_ID, **ENV_KWARGS),
        reward_funcs=[score, return_reward],
        callbacks=[PrintStep()],
    )
    trainer.train()
    steps = [entry for entry in trainer.state.log_history if "loss" in entry]
    with (args.out / "metrics.jsonl").open("w") as out:
        for entry in steps:
            out.write(json.dumps({k: v for k, v in entry.items() if not _is_nan(v)}) + "\n")
    return steps


def _accumulation(rollouts: int, micro_batch: int) -> int:
    """Micro-batches per optimizer step, so that one step trains on one generation of every rollout."""
    if micro_batch < 1 or rollouts % micro_batch:
        raise SystemExit(f"--micro-batch ({micro_batch}) must divide the rollouts per step ({rollouts})")
    return rollouts // micro_batch


def _idle_cores(most: int) -> int:
    """The CPU cores not busy with other processes (their count less the load average of the
    last minute), at least 1 and at most ``most`` (torch's choice). On a shared machine,
    torch's threads on busy cores wait for one another (see the module's docstring)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return max(1, min(most, cores - round(load)))


def _native_bf16(torch: Any) -> bool:
    """Whether bf16 has native kernels here: a CUDA GPU that supports it, or a CPU on which
    oneDNN runs bf16 (on x86, AVX-512 and newer)."""
    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()
    return torch.ops.mkldnn._is_mkldnn_bf16_supported()


def _no_activation_checkpointing(config_class: type) -> dict[str, bool]:
    """GRPOConfig's keyword that turns activation (gradient) checkpointing off, which TRL turns
    on by default: the new name where transformers has it (the old one warns there)."""
    fields = getattr(config_class, "__dataclass_fields__", {})
    return {"activation_checkpointing" if "activation_checkpointing" in fields else "gradient_checkpointing": False}


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


if __name__ == "__main__":
    main(sys.argv[1:])
