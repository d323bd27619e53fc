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

Prints one line per step and writes ``metrics.jsonl`` (TRL's log of each step) and
``rollouts.jsonl`` (each rollout's task, actions, score and return) under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
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
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (default: torch's choice)")
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

    if args.threads:
        torch.set_num_threads(args.threads)
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
        def on_log(self, _args, state, _control, logs=None, **_):
            if logs and "loss" in logs:
                print(
                    f"step {state.global_step}: loss {logs['loss']:.4f}, "
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
        gradient_checkpointing=False,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=not torch.cuda.is_available(),
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


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


if __name__ == "__main__":
    main(sys.argv[1:])
