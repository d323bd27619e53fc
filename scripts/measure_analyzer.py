"""The analyzer's parse rate before and after Stage 1, with and without the JSON prefill.

For each setting of ``analyzer_prefill``: load the untrained model, run Stage 1 with that
setting (or load its cached adapter: the cache key includes the setting), and analyse one
fixed set of held-out ``valid_seen`` trajectories (half the untrained policy's own, half a
noisy expert's), greedy, as SEED's analysis pass does. The untrained model is measured on the
same trajectories with the same setting. Reports, per setting, the parse rate with its Wilson
95% interval, the share of parsed skills that name their trajectory's objects or actions, and
seconds per analysis.

Usage: ``python scripts/measure_analyzer.py [--config demo] [--trajectories 24] [KEY=VALUE ...]``
(needs ``seed models fetch smollm2`` first; about 15 minutes on 2 cores with no cached adapter).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from seed_agent.models import load_named_policy
from seed_rl.config import load_config
from seed_rl.stats import proportion_ci
from seed_rl.train.phases.skill_pass import AnalyzerSettings
from seed_rl.train.stage1.sft import analyzer_parse_rate, held_out_episodes, run_stage1


def measure(policy, episodes, settings) -> dict:
    started = time.perf_counter()
    result = analyzer_parse_rate(policy, episodes, settings)
    result["seconds_each"] = (time.perf_counter() - started) / len(episodes)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="demo")
    parser.add_argument("--trajectories", type=int, default=24)
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE")
    args = parser.parse_args()
    base = load_config(args.config, ["warm_start=none", *args.overrides, "progress=false"])
    episodes = held_out_episodes(base, load_named_policy(base.model), args.trajectories, offset=3)
    won = sum(e.won for e in episodes)
    print(f"{len(episodes)} held-out trajectories of {base.env} ({won} won), analysed greedily\n", flush=True)
    rows = []
    for prefill in (True, False):
        cfg = replace(base, analyzer_prefill=prefill)
        settings = replace(AnalyzerSettings.from_config(cfg), failed_only=False)
        policy = load_named_policy(cfg.model)
        before = measure(policy, episodes, settings)
        with tempfile.TemporaryDirectory() as run_dir:
            stage1 = run_stage1(cfg, policy, Path(run_dir))
        after = measure(policy, episodes, settings)
        rows.append((prefill, before, after, stage1))
    n = len(episodes)
    print(
        "\n| JSON prefill | parse before [95% CI] | parse after Stage 1 [95% CI] | naming the trajectory (after) "
        "| s / analysis (after) | Stage 1 s |"
    )
    print("|---|---|---|---|---|---|")
    for prefill, before, after, stage1 in rows:
        b = proportion_ci(round(before["parse_rate"] * n), n)
        a = proportion_ci(round(after["parse_rate"] * n), n)
        cached = " (cached)" if stage1.get("cached") else ""
        print(
            f"| {'on' if prefill else 'off'} | {100 * b.mean:.0f} [{100 * b.low:.0f}, {100 * b.high:.0f}] "
            f"| {100 * a.mean:.0f} [{100 * a.low:.0f}, {100 * a.high:.0f}] | {after['mentions']:.2f} "
            f"| {after['seconds_each']:.1f} | {stage1['seconds']:.0f}{cached} |"
        )
    for prefill, _, after, _ in rows:
        print(
            f"\nprefill {'on' if prefill else 'off'}, e.g.: {after['examples'][:2]} failures: {after['failures'][:2]}"
        )


if __name__ == "__main__":
    main()
