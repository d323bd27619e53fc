"""Base success of a policy on an env split: the calibration behind the default training task.

GRPO learns only from groups whose members do not all tie, so a CPU demo needs a task where
the untrained model wins some of the time. This plays ``--episodes`` tasks of a split
through the rollout loop (the prompts training uses) and prints success with its Wilson 95%
interval, the invalid-action rate, the mean episode length, and the share of GRPO groups
of size ``--group`` that would carry a signal.

    python scripts/measure_base_success.py --env seed/Sokoban-v0 --episodes 32 --temperature 0.7
    python scripts/measure_base_success.py --env seed/ALFWorld-v0 --env-arg difficulty=tiny
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict

import torch

from seed_agent.agent import LLMAgent
from seed_agent.models import load_named_policy
from seed_agent.policies.base import SamplingParams
from seed_agent.prompts import PromptBuilder, prompt_spec
from seed_envs.vector import make_vec
from seed_rl.commands.play import parse_env_args
from seed_rl.rollout import EpisodeStart, run_episodes
from seed_rl.stats import proportion_ci
from seed_rl.train.setup.run_setup import env_kwargs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="seed/Sokoban-v0")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--split", default="valid_unseen")
    parser.add_argument("--episodes", type=int, default=32, help="distinct tasks (each played --group times)")
    parser.add_argument("--group", type=int, default=1, help="rollouts per task")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--max-steps", type=int, default=0, help="0: the env's own limit")
    parser.add_argument("--style", default="act")
    parser.add_argument("--no-example", action="store_true")
    parser.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", default=None, help="also write the result here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    policy = load_named_policy(args.model)
    builder = PromptBuilder(prompt_spec(args.env), style=args.style, one_shot=not args.no_example)
    sampling = SamplingParams(temperature=args.temperature, max_new_tokens=args.max_new_tokens, seed=args.seed)
    kwargs = env_kwargs(args.env, args.split, False, parse_env_args(args.env_arg))
    if args.max_steps:
        kwargs["max_episode_steps"] = args.max_steps
    starts = [
        EpisodeStart(options={"split": args.split, "index": i}, group=i)
        for i in range(args.episodes)
        for _ in range(args.group)
    ]
    started = time.perf_counter()
    with make_vec(args.env, min(len(starts), 32), backend="sync", **kwargs) as vec, torch.no_grad():
        episodes = run_episodes(vec, LLMAgent(policy, builder, sampling), starts, env_id=args.env)
    seconds = time.perf_counter() - started
    wins = sum(e.won for e in episodes)
    rows = [r for e in episodes for r in e.rows]
    groups = defaultdict(set)
    for e in episodes:
        groups[e.group].add(round(e.ret, 6))
    result = {
        "env": args.env,
        "env_args": args.env_arg,
        "model": args.model,
        "split": args.split,
        "temperature": args.temperature,
        "episodes": len(episodes),
        "wins": wins,
        "success": str(proportion_ci(wins, len(episodes)).percent()),
        "invalid_rate": sum(not r.valid for r in rows) / max(len(rows), 1),
        "mean_steps": len(rows) / max(len(episodes), 1),
        "groups_with_signal": sum(len(v) > 1 for v in groups.values()) / len(groups) if args.group > 1 else None,
        "seconds": round(seconds, 1),
    }
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1)


if __name__ == "__main__":
    main()
