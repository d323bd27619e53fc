"""``seed audit``: what a SEED run's skills did: gates by outcome, parse rate, suspect skills.

    seed audit runs/compare/seed                  # writes audit.md, audit.json, audit.png in the run
    seed audit runs/compare/seed --out /tmp/audit

Reads the run's ``episodes.jsonl``: the gate and Delta distributions over OPD tokens split by
the trajectory's outcome, the share of tokens where the skill raised the action's log-prob, the
skill parse rate per update, skills that name things of other trajectories only (possible
contamination), and skills whose wording contradicts their outcome.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    doc = (__doc__ or "").strip()
    parser = subparsers.add_parser(
        "audit", help=doc.splitlines()[0], description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run", metavar="RUN", help="a SEED run folder (holds episodes.jsonl)")
    parser.add_argument("--out", metavar="DIR", help="where to write audit.md, audit.json, audit.png (default: RUN)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from seed_rl.commands import read_run_episodes
    from seed_rl.records.audit import audit
    from seed_rl.records.audit_report import as_json, markdown, plot

    records = read_run_episodes(args.run)
    if records is None:
        return 2
    report = audit(records)
    if report.analysed == 0:
        print(f"error: {args.run} holds no analysed episodes: seed audit reads SEED runs (algo=seed)", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else Path(args.run)
    try:
        out.mkdir(parents=True, exist_ok=True)
        text = markdown(report, Path(args.run).resolve().name)
        (out / "audit.md").write_text(text, encoding="utf-8")
        (out / "audit.json").write_text(json.dumps(as_json(report), indent=1), encoding="utf-8")
        plot(out / "audit.png", records, report)
    except OSError as error:
        print(f"error: cannot write in {out}: {error}", file=sys.stderr)
        return 2
    print(text)
    print(f"wrote {out / 'audit.md'}, {out / 'audit.json'} and {out / 'audit.png'}")
    return 0
