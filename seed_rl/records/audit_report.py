"""The report of ``seed audit``: markdown, JSON and a PNG of the gates and parse rates."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seed_rl.records.audit import Audit, opd_tokens
from seed_rl.stats import proportion_ci

#: Flagged skills shown in the markdown report (all of them are in the JSON).
EXAMPLES = 8


def _f(value: float, digits: int = 3) -> str:
    return "" if math.isnan(value) else f"{value:.{digits}f}"


def markdown(report: Audit, run_name: str) -> str:
    rate = report.with_skill / report.analysed if report.analysed else math.nan
    lines = [
        f"# Skill audit of `{run_name}`",
        "",
        f"{report.episodes} episodes; {report.analysed} analysed; {report.with_skill} skills parsed "
        f"({_f(100 * rate, 1)}%); {report.gates['all'].episodes} episodes got OPD tokens.",
        "",
        "## Gate and Delta over OPD tokens, by outcome",
        "",
        "`Delta = log pi(a|h_skill) - log pi_old(a|h)`, `gate = sigmoid(beta * Delta)`; "
        "`Delta > 0`: the skill made the sampled token more likely.",
        "",
        "| outcome | episodes | tokens | gate mean | gate p10 / p50 / p90 | Delta mean | Delta p10 / p50 / p90 "
        "| share Delta > 0 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in ("won", "lost", "all"):
        s = report.gates[name]
        lines.append(
            f"| {name} | {s.episodes} | {s.gate.n} | {_f(s.gate.mean)} | {_f(s.gate.p10)} / {_f(s.gate.p50)} / "
            f"{_f(s.gate.p90)} | {_f(s.delta.mean)} | {_f(s.delta.p10)} / {_f(s.delta.p50)} / {_f(s.delta.p90)} "
            f"| {_f(s.delta_positive)} |"
        )
    lines += ["", "## Skill parse rate over training", "", "| update | parsed / analysed | rate [95% CI] |"]
    lines.append("|---|---|---|")
    for update, (parsed, total) in report.parse_rates.items():
        lines.append(f"| {update + 1} | {parsed} / {total} | {proportion_ci(parsed, total)} |")
    lines += [
        "",
        f"## Possible contamination: {len(report.foreign)} skills name other tasks' things",
        "",
        "Content words of the skill that other episodes' tasks contain and its own trajectory does not.",
        "",
    ]
    lines += _examples([(r, ", ".join(words)) for r, words in report.foreign], "foreign words")
    lines += [
        "",
        f"## Skills whose wording contradicts their outcome: {len(report.contradictions)}",
        "",
        "A lexical check (avoidance words on a won episode, success claims on a lost one): read them.",
        "",
    ]
    lines += _examples(report.contradictions, "why")
    return "\n".join(lines) + "\n"


def _examples(flagged: Sequence[tuple[dict[str, Any], str]], column: str) -> list[str]:
    if not flagged:
        return ["None."]
    rows = [f"| update | task | won | skill | {column} |", "|---|---|---|---|---|"]
    for record, note in flagged[:EXAMPLES]:
        skill = " ".join(str(record["skill"]).split()).replace("|", "\\|")
        task = " ".join(record["task"].split()).replace("|", "\\|")
        rows.append(f"| {record['update'] + 1} | {task[:80]} | {record['outcome']['won']} | {skill} | {note} |")
    if len(flagged) > EXAMPLES:
        rows.append(f"\n({len(flagged) - EXAMPLES} more in audit.json)")
    return rows


def as_json(report: Audit) -> dict[str, Any]:
    def brief(record: dict[str, Any]) -> dict[str, Any]:
        keys = ("update", "episode", "task_id", "task", "skill")
        return {**{k: record[k] for k in keys}, "won": record["outcome"]["won"]}

    return {
        "episodes": report.episodes,
        "analysed": report.analysed,
        "with_skill": report.with_skill,
        "gates": {name: dataclasses.asdict(s) for name, s in report.gates.items()},
        "parse_rates": {str(u): {"parsed": p, "analysed": n} for u, (p, n) in report.parse_rates.items()},
        "foreign": [{**brief(r), "words": words} for r, words in report.foreign],
        "contradictions": [{**brief(r), "why": why} for r, why in report.contradictions],
    }


def plot(path: Path, records: Sequence[dict[str, Any]], report: Audit) -> Path:
    """Gate histograms of won and lost episodes, and the parse rate per update."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (gates, rates) = plt.subplots(1, 2, figsize=(10, 3.6))
    for won, colour in ((True, "tab:green"), (False, "tab:red")):
        values = [g for r in records if r["outcome"]["won"] == won for g in opd_tokens(r)[0]]
        if values:
            gates.hist(values, bins=20, range=(0, 1), alpha=0.55, color=colour, label="won" if won else "lost")
    gates.set(xlabel="gate sigmoid(beta Delta)", ylabel="OPD tokens", title="gates by outcome")
    if gates.get_legend_handles_labels()[0]:
        gates.legend()
    updates = list(report.parse_rates)
    if updates:
        estimates = [proportion_ci(p, n) for p, n in report.parse_rates.values()]
        x = [u + 1 for u in updates]
        rates.plot(x, [e.mean for e in estimates], marker="o")
        rates.fill_between(x, [e.low for e in estimates], [e.high for e in estimates], alpha=0.2)
    rates.set(xlabel="update", ylabel="skills parsed", title="analyzer parse rate", ylim=(-0.02, 1.02))
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
