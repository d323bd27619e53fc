"""Render the READMEs' result tables from the committed result files under ``docs/results/``.

A table in a README that reports a measurement stands between two markers:

    <!-- results: skill_precondition -->
    ... (written by this script) ...
    <!-- /results -->

and is rendered from ``docs/results/skill_precondition.json`` by the renderer of that file's
``"kind"`` (:data:`RENDERERS`). Every result file names the command that made it (``"command"``)
and when (``"date"``); the rendered block ends with both, so a reader can remake the figures. A
file whose runs are gone holds the figures the runs reported, says so in ``"quoted"`` (the block
names it), and its renderer recomputes every interval from those figures with ``seed_rl``'s own
functions, so a table follows the statistics of today's code.

    python scripts/render_results.py          # rewrite every block in place
    python scripts/render_results.py --check  # exit 1 naming each block that differs (a test runs this)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seed_rl.compare.arm_summary import ArmResult, ArmSummary, paired_difference, seed_differences
from seed_rl.config import TrainConfig
from seed_rl.stats import Estimate, format_percent, proportion_ci

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
#: The documents whose tables are rendered.
DOCUMENTS = ("README.md", "seed_rl/README.md")
BLOCK = re.compile(r"(<!-- results: (?P<name>[a-z0-9_]+) -->\n)(?P<body>.*?)(<!-- /results -->)", re.DOTALL)


def skill_precondition(result: dict[str, Any]) -> list[str]:
    """SEED's precondition, per model: greedy success with no skill, with each task's oracle skill,
    and with the scripted skill of the model's own no-skill episode (``scripts/measure_skill_prompt.py``)."""
    lines = [
        "| model | no skill | oracle skill | own episode's skill | oracle - no skill (points) "
        "| rooms the oracle wins / loses against no skill |",
        "|---|---|---|---|---|---|",
    ]
    for model in result["models"]:
        arms = model["arms"]
        none, oracle, own = arms["none"], arms["oracle"], arms["own"]
        gain = 100 * (oracle["won"] / oracle["n"] - none["won"] / none["n"])
        cells = [format_percent(a["won"] / a["n"], a["low"], a["high"]) for a in (none, oracle, own)]
        lines.append(
            f"| {model['label']} | {' | '.join(cells)} | {gain:+.1f} | {oracle['gains']} / {oracle['losses']} |"
        )
    return lines


def row(cells: list[str]) -> str:
    """A markdown table row; an empty cell is one space: ``| untrained | | 18.8 |``."""
    return "|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|"


def points(value: float) -> str:
    """A difference of rates in percentage points, signed: ``+34.4``, ``-9.4``, ``0.0``."""
    text = f"{100 * value:+.1f}"
    return "0.0" if text in ("+0.0", "-0.0") else text


def points_interval(estimate: Estimate) -> str:
    """``+16.4 [-6.0, +38.8]``."""
    return f"{points(estimate.mean)} [{points(estimate.low)}, {points(estimate.high)}]"


def seed_arms(result: dict[str, Any]) -> dict[str, ArmSummary]:
    """Each arm of a ``compare_seeds`` file as ``seed compare`` holds it: one run per training seed,
    whose evaluation after ``E`` training episodes is its split ``"E"`` (``won`` of ``rooms``,
    with Wilson's interval as an evaluation stores it)."""
    rooms = result["rooms"]
    arms = {}
    for arm in result["arms"]:
        runs = []
        for i, seed in enumerate(result["seeds"]):
            evaluation = {}
            for episodes in map(str, result["episodes"]):
                rate = proportion_ci(arm["won"][episodes][i], rooms)
                evaluation[episodes] = {
                    "success": rate.mean,
                    "success_low": rate.low,
                    "success_high": rate.high,
                    "episodes": rooms,
                }
            runs.append(ArmResult(arm["name"], TrainConfig(seed=seed), [], evaluation))
        arms[arm["name"]] = ArmSummary(arm["name"], 1.0, runs)
    return arms


def compare_seeds(result: dict[str, Any]) -> list[str]:
    """Arms of ``seed compare`` over several training seeds, evaluated after a few training budgets
    (``--eval-every``): per arm, the mean success over seeds with its interval
    (:meth:`~seed_rl.compare.arm_summary.ArmSummary.success`: Student's over seeds, never narrower than
    Wilson's for the pooled episodes), each seed's success, the training signals and costs as the
    runs logged them; then each compared pair's differences paired by training seed
    (:func:`~seed_rl.compare.arm_summary.paired_difference`: Student's over seeds, never narrower than
    Newcombe's) with how many seeds the arm was ahead, tied and behind. Only the per-seed counts and
    the logged columns are stored; every interval is computed here, by ``seed_rl``'s own functions."""
    arms = seed_arms(result)
    budgets = [str(e) for e in result["episodes"]]
    first, last = result["train_updates"]
    reference = result["arms"][0]
    header = [
        "arm",
        "what differs",
        *[f"after {e} episodes" for e in budgets],
        *[f"per seed, after {e}" for e in budgets],
        f"train success, update {first} -> {last}",
        "s / update (rollout + analysis + teacher + update)",
        f"train s, Stage 1 included (x {reference['name']})",
    ]
    untrained = proportion_ci(result["untrained_won"], result["rooms"])
    lines = [row(header), "|" + "---|" * len(header)]
    lines.append(row(["untrained", "", f"{untrained.percent()} (Wilson)", *[""] * (len(header) - 3)]))
    for arm in result["arms"]:
        summary = arms[arm["name"]]
        start, end = arm["train_success_percent"]
        phases = arm["seconds_per_update"]
        parts = " + ".join(str(phases[p]) for p in ("rollout", "analysis", "teacher", "update"))
        ratio = arm["train_seconds"] / reference["train_seconds"]
        lines.append(
            row(
                [
                    arm["name"],
                    arm["differs"],
                    *[summary.success(e).percent() for e in budgets],
                    *[", ".join(f"{100 * v:.1f}" for v in summary.per_seed(e)) for e in budgets],
                    f"{start} -> {end}%",
                    f"{phases['total']} ({parts})",
                    f"{arm['train_seconds']} ({ratio:.2f}x)",
                ]
            )
        )
    lead = (
        "Paired by training seed (the runs of a seed share its train tasks, sampling seed and rooms), with "
        f"Student's 95% interval over the {len(result['seeds'])} seeds' differences, never narrower than "
        "Newcombe's interval for the difference of the two arms' pooled rates:"
    )
    lines += ["", *textwrap.wrap(lead, width=100), ""]
    header = ["difference", f"after {budgets[0]} episodes: per seed", "mean [95% CI]", "ahead / tied / behind"]
    for e in budgets[1:]:
        header += [f"after {e} episodes: mean [95% CI]", "ahead / tied / behind"]
    lines += [row(header), "|" + "---|" * len(header)]
    for pair in result["differences"]:
        arm, other = arms[pair["arm"]], arms[pair["reference"]]
        label = f"{pair['arm']} - {pair['reference']}" + (f" ({pair['note']})" if pair.get("note") else "")
        cells = [label]
        for i, e in enumerate(budgets):
            by_seed = seed_differences(arm, other, e)
            estimate = paired_difference(arm, other, e)
            if estimate is None:
                raise ValueError(f"{label}: fewer than two common seeds")
            ahead, behind = sum(d > 0 for d in by_seed), sum(d < 0 for d in by_seed)
            if i == 0:
                cells.append(", ".join(points(d) for d in by_seed))
            cells += [points_interval(estimate), f"{ahead} / {len(by_seed) - ahead - behind} / {behind}"]
        lines.append(row(cells))
    return lines


#: How each kind of result file becomes table lines.
RENDERERS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "skill_precondition": skill_precondition,
    "compare_seeds": compare_seeds,
}


def render(name: str, results: Path = RESULTS) -> str:
    """The block for ``docs/results/<name>.json``: its table, then the command and date it came from."""
    path = results / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: a README block names it ({name!r}); commit the result file")
    result = json.loads(path.read_text(encoding="utf-8"))
    kind = result.get("kind", name)
    if kind not in RENDERERS:
        raise ValueError(f"{path}: no renderer for kind {kind!r}; known: {', '.join(sorted(RENDERERS))}")
    lines = RENDERERS[kind](result)
    quoted = f" ({result['quoted']})" if result.get("quoted") else ""
    source = f"`docs/results/{name}.json`{quoted}, made {result['date']} by:"
    return "\n".join([*lines, "", source, "", "```bash", result["command"], "```", ""])


def rendered(text: str, results: Path = RESULTS) -> str:
    """``text`` with every results block rendered afresh."""
    return BLOCK.sub(lambda m: m.group(1) + render(m.group("name"), results) + m.group(4), text)


def stale_blocks(root: Path = ROOT, results: Path = RESULTS) -> list[str]:
    """``document: block`` for every block whose text differs from what its result file renders."""
    stale = []
    for document in DOCUMENTS:
        text = (root / document).read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            block = match.group(0)
            if rendered(block, results) != block:
                stale.append(f"{document}: {match.group('name')}")
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report blocks that differ (exit 1)")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_blocks()
        for line in stale:
            print(f"stale: {line} (run python scripts/render_results.py)", file=sys.stderr)
        return 1 if stale else 0
    for document in DOCUMENTS:
        path = ROOT / document
        text = path.read_text(encoding="utf-8")
        path.write_text(rendered(text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
