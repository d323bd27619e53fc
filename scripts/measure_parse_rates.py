"""Parse rate of the default prompts with the offline SmolLM2-135M, per env and reply style.

For each env: build prompts from real observations (the env's ``valid_unseen`` tasks, at
step 1 and after one or two steps of its expert plan) or, for an env that cannot be
created here (ALFWorld without its package and data), from hand-written observations in
the benchmark's upstream format (listed below). Sample one reply per prompt, parse it with the
builder's own rules, and report:

- parse rate: the reply is well formed (one closed action block; ``<think>`` first in
  the ``think`` style);
- admissible rate: well formed and one of the env's admissible actions (where listed).

Usage: ``python scripts/measure_parse_rates.py [--prompts 16] [--temperature 0.7]``
(needs ``seed models fetch smollm2`` first).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import replace

from seed_agent.history import EpisodeHistory
from seed_agent.policies.base import SamplingParams
from seed_agent.prompts import PROMPT_MODULES, PromptBuilder, prompt_spec

#: (task, observation, admissible actions) in each benchmark's upstream format, for envs
#: whose real package is not installed here.
UPSTREAM_SITUATIONS = {
    "seed/ALFWorld-v0": [
        (
            "put a clean mug in coffeemachine.",
            "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you "
            "see a cabinet 1, a coffeemachine 1, a countertop 1, a fridge 1, a sinkbasin 1, and a toaster 1.",
            [
                "go to cabinet 1",
                "go to coffeemachine 1",
                "go to countertop 1",
                "go to fridge 1",
                "go to sinkbasin 1",
                "go to toaster 1",
                "help",
                "inventory",
                "look",
            ],
        ),
        (
            "heat some egg and put it in garbagecan.",
            "You arrive at fridge 1. The fridge 1 is closed.",
            [
                "close fridge 1",
                "examine fridge 1",
                "go to countertop 1",
                "go to garbagecan 1",
                "go to microwave 1",
                "help",
                "inventory",
                "look",
                "open fridge 1",
            ],
        ),
        (
            "look at bowl under the desklamp.",
            "You arrive at desk 1. On the desk 1, you see a bowl 1, a desklamp 1, and a pen 2.",
            [
                "examine desk 1",
                "go to bed 1",
                "go to shelf 1",
                "help",
                "inventory",
                "look",
                "take bowl 1 from desk 1",
                "take pen 2 from desk 1",
                "use desklamp 1",
            ],
        ),
        (
            "put two cellphone in bed.",
            "You pick up the cellphone 1 from the dresser 1.",
            [
                "examine cellphone 1",
                "go to bed 1",
                "go to drawer 1",
                "help",
                "inventory",
                "look",
                "move cellphone 1 to dresser 1",
            ],
        ),
    ],
    "seed/WebShop-v0": [
        (
            "i want a non-slip yoga mat in purple, and price lower than 30.00 dollars",
            "WebShop [SEP] Instruction: [SEP] i want a non-slip yoga mat in purple, and price lower than 30.00 "
            "dollars [SEP] Search",
            ["search[<your query>]"],
        ),
        (
            "i want a gluten free snack pack with 12 count, and price lower than 30.00 dollars",
            "Back to Search [SEP] Page 1 (Total results: 50) [SEP] Next > [SEP] B07PLJ6X4K [SEP] Gluten Free Snack "
            "Variety Pack 12 Count [SEP] $19.99 [SEP] B09KT5PQ1R [SEP] Organic Fruit Bars 24 pack [SEP] $32.5",
            ["click[back to search]", "click[next >]", "click[b07plj6x4k]", "click[b09kt5pq1r]"],
        ),
        (
            "i am looking for a red cotton t-shirt in size large, and price lower than 25.00 dollars",
            "Back to Search [SEP] < Prev [SEP] size [SEP] small [SEP] medium [SEP] large [SEP] color [SEP] red [SEP] "
            "blue [SEP] Cotton Crew T-Shirt [SEP] Price: $14.99 [SEP] Rating: N.A. [SEP] Description [SEP] "
            "Features [SEP] Reviews [SEP] Buy Now",
            [
                "click[back to search]",
                "click[< prev]",
                "click[small]",
                "click[medium]",
                "click[large]",
                "click[red]",
                "click[blue]",
                "click[description]",
                "click[features]",
                "click[reviews]",
                "click[buy now]",
            ],
        ),
    ],
    "seed/SearchQA-v0": [
        ("who got the first nobel prize in physics?", "Question: who got the first nobel prize in physics?", None),
        (
            "when did the eiffel tower open?",
            '\n\n<information>Doc 1(Title: "Eiffel Tower") The Eiffel Tower opened on 31 March 1889 for the '
            'World\'s Fair.\nDoc 2(Title: "Paris") Paris is the capital of France.</information>\n\n',
            None,
        ),
        ("what is the capital of australia?", "Question: what is the capital of australia?", None),
    ],
}


def real_situations(env_id: str, n: int, seed: int = 0):
    """Observations of a real env: its valid_unseen tasks after 0-2 steps of the expert plan
    (random admissible moves where there is no plan)."""
    from seed_rl.train.setup.run_setup import make_env

    env = make_env(env_id, "valid_unseen", visual=False, extra={})
    rng = random.Random(seed)
    out = []
    for index in range(n):
        obs, info = env.reset(options={"split": "valid_unseen", "index": index})
        history = EpisodeHistory()
        plan = list(env.unwrapped.expert_plan() or [])
        for _ in range(index % 3):
            action = plan.pop(0) if plan else rng.choice(info["available_actions"] or ["look"])
            history.add(obs["text"], action)
            obs, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        out.append((info["task"], obs["text"], info["available_actions"], history))
    return out


def situations(env_id: str, n: int):
    try:
        return real_situations(env_id, n), "real env, valid_unseen"
    except Exception as error:  # the env's package or data is missing here
        if env_id not in UPSTREAM_SITUATIONS:
            raise
        print(f"({env_id}: {type(error).__name__}; using upstream-format samples)", file=sys.stderr)
    base = UPSTREAM_SITUATIONS[env_id]
    return [(*base[i % len(base)], EpisodeHistory()) for i in range(n)], "upstream-format samples"


def measure(policy, env_id: str, style: str, n: int, sampling: SamplingParams) -> dict:
    builder = PromptBuilder(prompt_spec(env_id), style=style)
    cases, source = situations(env_id, n)
    prompts = [builder.build(task, obs, actions, history) for task, obs, actions, history in cases]
    started = time.perf_counter()
    completions = policy.generate(prompts, sampling=replace(sampling, stop=builder.stop))
    seconds = time.perf_counter() - started
    parsed = [builder.parse(c.text, case[2]) for c, case in zip(completions, cases, strict=True)]
    return {
        "env": env_id,
        "style": style,
        "n": n,
        "source": source,
        "parse_rate": sum(p.well_formed for p in parsed) / n,
        "admissible_rate": sum(p.valid for p in parsed) / n,
        "tokens": sum(len(c.token_ids) for c in completions),
        "seconds": seconds,
        "examples": [c.text[:80] for c in completions[:2]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--styles", default="act,think")
    parser.add_argument("--envs", default=",".join(PROMPT_MODULES), help="comma-separated env ids")
    args = parser.parse_args()
    from seed_agent.models import load_policy

    policy = load_policy("smollm2")
    sampling = SamplingParams(temperature=args.temperature, max_new_tokens=args.max_new_tokens, seed=0)
    print("| env | style | source | prompts | parse rate | admissible rate | tokens/s |")
    print("|---|---|---|---|---|---|---|")
    for env_id in args.envs.split(","):
        for style in args.styles.split(","):
            r = measure(policy, env_id, style, args.prompts, sampling)
            print(
                f"| {env_id} | {style} | {r['source']} | {r['n']} | {r['parse_rate']:.2f} | "
                f"{r['admissible_rate']:.2f} | {r['tokens'] / r['seconds']:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
