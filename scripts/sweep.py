"""One factor at a time around a recipe: what each GRPO setting does to unseen success, and what it costs.

Each variant is the base config (``--config``, the README's demo by default) with a few keys
changed; it trains as ``seed compare``'s ``grpo`` arm (same seed, same training tasks) and plays
the same fixed ``valid_unseen`` tasks of the env's manifest under the run's evaluation protocol.
The untrained model plays them too, under each protocol a variant uses (``max_steps`` or
``max_new_tokens`` change what the untrained model is measured on, so it is measured again).
Finished runs are reused, interrupted ones resume.

    python scripts/sweep.py                                  # every variant, one after another
    python scripts/sweep.py threads=1 --only recipe lr-5e-4  # some of them, one thread each
    python scripts/sweep.py --table                          # just the table of what has finished

Writes ``<out>/sweep.md`` and ``<out>/sweep.json``: per variant, success [Wilson 95%] after the
last update and the untrained model's under the same protocol, the training success of the
first and last update, the last update's token entropy, and the training wall time (the
updates only: no model load, no evaluation).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
from pathlib import Path

from seed_rl.compare.arm_summary import summary_estimate
from seed_rl.compare.comparison import arm_config, evaluate_start, evaluation_protocol, manifest_indices, run_arm
from seed_rl.compare.table import train_seconds
from seed_rl.config import TrainConfig
from seed_rl.stats import format_percent
from seed_rl.tables import markdown_table

#: Variant name -> the keys it changes from the base config; "recipe" is the base itself.
VARIANTS: dict[str, tuple[str, ...]] = {
    "recipe": (),
    # optimizer steps per update (epochs x minibatches) and the learning rate
    "epochs-1": ("epochs=1",),
    "minibatches-2": ("minibatches=2",),
    "lr-5e-4": ("lr=5e-4",),
    "lr-2e-3": ("lr=2e-3",),
    # tasks per update x group size (the same 32 episodes per update)
    "tasks-4-group-8": ("tasks_per_update=4", "group_size=8"),
    # the outcome reward and the invalid-action penalty
    "reward-return": ("reward=return",),
    "penalty-0": ("penalty=0",),
    "penalty-0.5": ("penalty=0.5",),
    # rollout sampling
    "top-k-off": ("top_k=0",),
    "top-p-0.9": ("top_k=0", "top_p=0.9"),
    "temperature-0.7": ("temperature=0.7",),
    # LoRA: rank, targets (MLP included) and layers
    "lora-rank-4": ("lora_rank=4", "lora_alpha=8"),
    "lora-mlp": ("lora_targets=[q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj]",),
    "lora-layers-4": ("lora_layers=4",),
    "max-new-tokens-8": ("max_new_tokens=8",),
    # the recipe's other choices, each undone
    "token-mean": ("loss_agg=token-mean",),
    "clip-high-0.2": ("clip_high=0.2",),
    "no-curriculum": ("train_env_kwargs={}",),
    "max-steps-6": ("max_steps=6",),
    "text-grid": ("env_kwargs={observation_mode: text}",),
}


def protocol_key(cfg: TrainConfig) -> str:
    """A short name for an evaluation protocol: runs that share it share the untrained model's row."""
    values = json.dumps(evaluation_protocol(cfg), sort_keys=True)
    return hashlib.sha1(values.encode()).hexdigest()[:10]


def variant_config(name: str, base: str, overrides: list[str], out: Path, seed: int) -> TrainConfig:
    if name not in VARIANTS:
        raise SystemExit(f"unknown variant {name!r}; variants: {', '.join(VARIANTS)}")
    cfg = arm_config("grpo", base, [*overrides, *VARIANTS[name]], out, seed=seed)
    return dataclasses.replace(cfg, run_dir=str(out / name / f"seed{seed}"))


def run_variant(name: str, cfg: TrainConfig, out: Path, episodes: int) -> dict:
    tasks = {"valid_unseen": manifest_indices(cfg, episodes)}
    protocol = out / "untrained" / protocol_key(cfg)
    protocol.mkdir(parents=True, exist_ok=True)
    untrained = evaluate_start(cfg, tasks, (0,), protocol / "untrained_evaluation.json")["valid_unseen"]
    result = run_arm("grpo", cfg, tasks, (0,))
    row = {
        "variant": name,
        "changes": list(VARIANTS[name]),
        "seed": cfg.seed,
        "untrained": untrained,
        "trained": result.evaluation["valid_unseen"],
        "metrics": result.metrics,
        "train_seconds": train_seconds(result),
    }
    (Path(cfg.run_dir) / "sweep_row.json").write_text(json.dumps(row, indent=1), encoding="utf-8")
    return row


def sweep_table(rows: list[dict]) -> str:
    headers = [
        "variant",
        "changes from the recipe",
        "untrained % [95% CI]",
        "trained % [95% CI]",
        "gain (points)",
        "train success % (first -> last update)",
        "entropy (last update)",
        "train s",
    ]
    body = []
    for row in rows:
        before, after = summary_estimate(row["untrained"]), summary_estimate(row["trained"])
        metrics = row["metrics"]
        body.append(
            [
                row["variant"],
                ", ".join(row["changes"]) or "(the recipe)",
                format_percent(before.mean, before.low, before.high),
                format_percent(after.mean, after.low, after.high),
                f"{100 * (after.mean - before.mean):+.1f}",
                f"{100 * metrics[0]['success']:.0f} -> {100 * metrics[-1]['success']:.0f}",
                f"{metrics[-1].get('entropy', float('nan')):.2f}",
                f"{row['train_seconds']:.0f}",
            ]
        )
    return markdown_table(headers, body)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--config", default="demo")
    parser.add_argument("--out", default="runs/sweep")
    parser.add_argument("--only", nargs="+", default=list(VARIANTS), metavar="VARIANT")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-episodes", type=int, default=32)
    parser.add_argument("--table", action="store_true", help="only tabulate the finished variants")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="applied to every variant")
    args = parser.parse_args()
    out = Path(args.out)
    if not args.table:
        for name in args.only:
            print(f"== variant {name}: {', '.join(VARIANTS.get(name, ())) or 'the recipe'}", flush=True)
            run_variant(
                name, variant_config(name, args.config, args.overrides, out, args.seed), out, args.eval_episodes
            )
    rows = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(out.glob("*/seed*/sweep_row.json"))]
    order = {name: i for i, name in enumerate(VARIANTS)}
    rows.sort(key=lambda r: (order.get(r["variant"], len(order)), r["seed"]))
    table = sweep_table(rows)
    (out / "sweep.md").write_text(table + "\n", encoding="utf-8")
    (out / "sweep.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
