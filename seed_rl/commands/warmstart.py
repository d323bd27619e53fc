"""``seed warmstart``: fine-tune on the env's expert demonstrations, then evaluate untrained vs warm-started.

    seed warmstart --config alfworld_warm
    seed warmstart --config demo warm_start_demos=32 --episodes 32 --splits valid_seen valid_unseen

The warm start (seed_rl/train/stage1/warm_start.py) plays the expert on train tasks, renders each step
with the run's prompt builder and fine-tunes LoRA on the expert's replies; it is cached, so a
later `seed train ... warm_start=expert` with the same keys starts from the same adapter. Both
rows of the table play the manifest's first N tasks of each split greedily, under the run's
evaluation protocol (the same as `seed compare`'s). Writes OUT/warm_start.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    doc = (__doc__ or "").strip()
    parser = subparsers.add_parser(
        "warmstart", help=doc.splitlines()[0], description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", default=None, help="a YAML file, or the name of a shipped config")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="config overrides")
    parser.add_argument("--episodes", type=int, default=32, help="the manifest's first N tasks of each split")
    parser.add_argument("--splits", nargs="+", default=["valid_unseen"], help="evaluation splits")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="evaluation seeds; each task once per seed")
    parser.add_argument("--out", default=None, help="output folder (default: runs/warmstart/<env name>)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from seed_rl.config import ConfigError, load_config
    from seed_rl.evaluate.manifests import ManifestError, check_split_name, env_name

    try:
        cfg = load_config(args.config, [*args.overrides, "warm_start=expert"])
        splits = [check_split_name(s) for s in args.splits]
    except (ConfigError, ManifestError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if "train" in splits:
        print("error: the warm start trains on train tasks; evaluate on valid_seen or valid_unseen", file=sys.stderr)
        return 2
    out = Path(args.out or f"runs/warmstart/{env_name(cfg.env)}")
    result = warm_start_and_evaluate(cfg, splits, args.episodes, tuple(args.seeds), out)
    print(warm_start_table(result))
    print(f"wrote {out / 'warm_start.json'}")
    return 0


def warm_start_and_evaluate(
    cfg: Any, splits: list[str], episodes: int, seeds: tuple[int, ...], out: Path
) -> dict[str, Any]:
    """The untrained model and the warm-started one on the same manifest tasks of each split."""
    from seed_envs.files import atomic_write_text
    from seed_rl.compare.comparison import evaluate_policy, evaluate_start, manifest_indices
    from seed_rl.train.setup.run_setup import run_policy
    from seed_rl.train.stage1.warm_start import run_warm_start

    tasks = {split: manifest_indices(cfg, episodes, split) for split in splits}
    base = dataclasses.replace(cfg, warm_start="none")
    untrained = evaluate_start(base, tasks, seeds, out / "untrained_evaluation.json")
    policy = run_policy(cfg)
    report = run_warm_start(cfg, policy, out)
    warm = evaluate_policy(cfg, policy, tasks, seeds)
    result = {"env": cfg.env, "model": cfg.model, "tasks": tasks, "seeds": list(seeds), "warm_start": report}
    result.update(untrained=untrained, warm_started=warm, config=cfg.to_dict())
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "warm_start.json", json.dumps(result, indent=1, default=str))
    return result


def warm_start_table(result: dict[str, Any]) -> str:
    """Untrained vs warm-started per split: success [95% CI], invalid steps, mean steps; the warm
    start's wall time and held-out demonstration loss under the table."""
    from seed_rl.tables import markdown_table

    rows = []
    for split in result["tasks"]:
        for name, by_split in (("untrained", result["untrained"]), ("warm start", result["warm_started"])):
            s = by_split[split]
            rows.append(
                [
                    split,
                    name,
                    f"{100 * s['success']:.1f} [{100 * s['success_low']:.1f}, {100 * s['success_high']:.1f}]",
                    f"{100 * s['invalid_rate']:.1f}%",
                    f"{s['mean_steps']:.1f}",
                    s["episodes"],
                ]
            )
    table = markdown_table(["split", "policy", "success % [95% CI]", "invalid steps", "steps", "episodes"], rows)
    report = result["warm_start"]
    loss = report.get("held_out_loss_before"), report.get("held_out_loss_after")
    loss_text = f", held-out demonstration loss {loss[0]:.3f} -> {loss[1]:.3f}" if None not in loss else ""
    cached = " (cached; its first run's time)" if report.get("cached") else ""
    return (
        f"{table}\n\nwarm start: {report['train_pairs']} expert steps of {report['episodes']} train episodes, "
        f"{report['seconds']:.0f} s{cached}{loss_text}"
    )
