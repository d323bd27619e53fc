"""Benchmarks of the transformers back end, as ratios against baselines run in the same process.

1. Sampling: our decode loop (explicit positions, per-token log-probs, stop strings) against
   ``model.generate`` producing the same number of tokens (sampled, no log-probs).
2. Scoring: our teacher-forced pass (logits kept only for completion positions) against a full
   forward that computes logits for every position.

Model: the offline SmolLM2-135M if fetched (``seed models fetch smollm2``), else a tiny random model.
Usage: ``python scripts/bench_agent.py [--batch 8] [--new-tokens 32] [--repeats 3]``
"""

from __future__ import annotations

import argparse

import torch
from bench_common import median_rounds

from seed_agent.policies.base import SamplingParams
from seed_agent.prompts import PromptBuilder, prompt_spec


def load():
    from seed_agent.models import is_fetched, load_policy

    if is_fetched("smollm2"):
        return "smollm2", load_policy("smollm2")
    from seed_agent.tiny_models import tiny_random_policy

    return "tiny random llama", tiny_random_policy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    name, policy = load()
    policy.batch_size = args.batch
    builder = PromptBuilder(prompt_spec("alfworld"), style="think")
    prompts = [
        builder.build("put a clean mug in coffeemachine.", "You see a cabinet 1. " * (5 + i), ["look"])
        for i in range(args.batch)
    ]
    sampling = SamplingParams(temperature=1.0, max_new_tokens=args.new_tokens, seed=0)
    ids, _ = policy.encode(prompts)
    batch = policy.engine.batch(ids, [{}] * len(ids))

    def ours() -> None:
        policy.generate(prompts, sampling=sampling)

    def baseline():
        with torch.inference_mode():
            policy.model.generate(
                input_ids=batch.input_ids,
                attention_mask=batch.attention_mask,
                do_sample=True,
                max_new_tokens=args.new_tokens,
                min_new_tokens=args.new_tokens,
                pad_token_id=policy.engine.pad_id,
            )

    token_ids = [c.token_ids for c in policy.generate(prompts, sampling=sampling)]
    sampling_times = median_rounds({"ours": ours, "generate": baseline}, args.repeats)
    t_ours, t_base = sampling_times["ours"], sampling_times["generate"]
    tokens = sum(len(t) for t in token_ids)

    def score() -> None:
        policy.score(prompts, token_ids)

    def full_forward():
        sequences = [p + c for p, c in zip(ids, token_ids, strict=True)]
        full = policy.engine.batch(sequences, [{}] * len(sequences))
        with torch.inference_mode():
            logits = policy.model(
                input_ids=full.input_ids, attention_mask=full.attention_mask, position_ids=full.position_ids
            ).logits.float()
            torch.log_softmax(logits, -1)

    scoring_times = median_rounds({"score": score, "full": full_forward}, args.repeats)
    t_score, t_full = scoring_times["score"], scoring_times["full"]
    print(f"model: {name}; batch {args.batch}; prompt tokens {sum(map(len, ids))}; new tokens {tokens}")
    print(
        f"sampling: ours {t_ours:.2f} s ({tokens / t_ours:.1f} tok/s), model.generate {t_base:.2f} s; "
        f"ratio ours/generate = {t_ours / t_base:.2f}"
    )
    print(f"scoring: ours {t_score:.2f} s, full-logits forward {t_full:.2f} s; ratio = {t_score / t_full:.2f}")


if __name__ == "__main__":
    main()
