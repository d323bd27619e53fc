"""``seed play``: run a policy on an env split and print each episode's transcript.

Policies: ``random``, ``expert``, an offline model name (``smollm2``; fetch it first
with ``seed models fetch smollm2``), ``hf:PATH`` (a transformers model folder),
``vllm:PATH`` (needs vLLM), or ``http:URL`` / ``http:URL#MODEL`` (an OpenAI-compatible API).
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    doc = (__doc__ or "").strip()
    parser = subparsers.add_parser(
        "play", help=doc.splitlines()[0], description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", required=True, help="env id, e.g. seed/Sokoban-v0")
    parser.add_argument(
        "--policy", default="random", help="random | expert | smollm2 | tiny-random | hf:PATH | vllm:PATH | http:URL"
    )
    parser.add_argument("--split", default="valid_unseen", help="train, valid_seen or valid_unseen")
    parser.add_argument("--episodes", type=int, default=1)
    parser.add_argument("--start-index", type=int, default=0, help="index of the first task in the split")
    parser.add_argument(
        "--style",
        choices=("think", "act"),
        default=None,
        help="reply style (default: act for the tiny offline models, think otherwise)",
    )
    parser.add_argument("--no-example", action="store_true", help="leave out the one-shot example turn")
    parser.add_argument("--visual", action="store_true", help="show the env's image to a VLM policy")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show-prompts", action="store_true", help="print every prompt in full")
    parser.add_argument(
        "--env-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra keyword for gym.make (repeatable); values are parsed as Python literals",
    )
    parser.set_defaults(func=run)


def parse_env_args(pairs: list[str]) -> dict[str, Any]:
    import ast

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--env-arg expects KEY=VALUE, got {pair!r}")
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
    return out


def make_agent(args: argparse.Namespace) -> Any:
    from seed_agent.agent import LLMAgent, ScriptedAgent
    from seed_agent.models import MODELS, load_named_policy
    from seed_agent.policies.base import SamplingParams
    from seed_agent.prompts import PromptBuilder, prompt_spec

    name = args.policy
    if name in ("random", "expert"):
        return ScriptedAgent(name, args.seed)
    tiny = name in (*MODELS, "tiny-random") or name.startswith("random:")
    if tiny or name.startswith("hf:"):
        policy = load_named_policy(name, vlm=args.visual, seed=args.seed)
    elif name.startswith("vllm:"):
        from seed_agent.policies.vllm_backend import VLLMPolicy

        policy = VLLMPolicy(name[5:], vlm=args.visual)
    elif name.startswith("http:"):
        from seed_agent.policies.http import HttpPolicy

        url, _, model = name[5:].partition("#")
        policy = HttpPolicy(url, model or "default")
    else:
        raise SystemExit(f"unknown policy {name!r}; see `seed play --help`")
    style = args.style or ("act" if tiny else "think")
    builder = PromptBuilder(prompt_spec(args.env), style=style, one_shot=not args.no_example, visual=args.visual)
    sampling = SamplingParams(temperature=args.temperature, max_new_tokens=args.max_new_tokens, seed=args.seed)
    return LLMAgent(policy, builder, sampling)


def run(args: argparse.Namespace) -> int:
    from seed_agent.models import ModelNotFetched
    from seed_envs.vector import make_vec
    from seed_rl.records.transcript import format_transcript
    from seed_rl.rollout import EpisodeStart, run_episodes
    from seed_rl.train.setup.run_setup import env_kwargs

    kwargs = env_kwargs(args.env, args.split, args.visual, parse_env_args(args.env_arg))
    try:
        agent = make_agent(args)
    except ModelNotFetched as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    starts = [
        EpisodeStart(options={"split": args.split, "index": args.start_index + i}, seed=args.seed + i)
        for i in range(args.episodes)
    ]
    with make_vec(args.env, args.episodes, backend="sync", **kwargs) as vec:
        episodes = run_episodes(vec, agent, starts, env_id=args.env)
    for episode in episodes:
        print(format_transcript(episode, show_prompts=args.show_prompts), flush=True)
    won = sum(e.won for e in episodes)
    steps = [len(e.rows) for e in episodes]
    parse_rates = [e.parse_rate for e in episodes if not math.isnan(e.parse_rate)]
    summary = f"\n{args.episodes} episode(s) of {args.env} [{args.split}] with {args.policy}: won {won}/{args.episodes}"
    summary += f", mean steps {sum(steps) / len(steps):.1f}"
    if parse_rates:
        summary += f", parse rate {sum(parse_rates) / len(parse_rates):.2f}"
    print(summary)
    return 0
