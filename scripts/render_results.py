"""Render the READMEs' result tables from the committed result files under ``docs/results/``.

A table in a README that reports a measurement stands between two markers:

    <!-- results: skill_precondition -->
    ... (written by this script) ...
    <!-- /results -->

and is rendered from ``docs/results/skill_precondition.json`` by the renderer of that file's
``"kind"`` (:data:`RENDERERS`). Every result file names the command that made it (``"command"``)
and when (``"date"``); the rendered block ends with both, so a reader can remake the figures.

    python scripts/render_results.py          # rewrite every block in place
    python scripts/render_results.py --check  # exit 1 naming each block that differs (a test runs this)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
#: The documents whose tables are rendered.
DOCUMENTS = ("README.md", "seed_rl/README.md")
BLOCK = re.compile(r"(<!-- results: (?P<name>[a-z0-9_]+) -->\n)(?P<body>.*?)(<!-- /results -->)", re.DOTALL)


def percent(won: int, n: int, low: float, high: float) -> str:
    """``won/n`` as a percentage with its 95% interval: ``18.8 [8.9, 35.3]``."""
    return f"{100 * won / n:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


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
        cells = [percent(a["won"], a["n"], a["low"], a["high"]) for a in (none, oracle, own)]
        lines.append(
            f"| {model['label']} | {' | '.join(cells)} | {gain:+.1f} | {oracle['gains']} / {oracle['losses']} |"
        )
    return lines


#: How each kind of result file becomes table lines.
RENDERERS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "skill_precondition": skill_precondition,
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
    source = f"`docs/results/{name}.json`, made {result['date']} by:"
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
