"""Render the READMEs' result tables from the committed result files under ``docs/results/``.

A table in a README that reports a measurement stands between two markers:

    <!-- results: skill_precondition -->
    ... (written by this script) ...
    <!-- /results -->

and is rendered from ``docs/results/skill_precondition.json`` by the renderer of that file's
``"kind"`` (``scripts/result_kinds.py``: ``table`` for a table as a run reported it, and two kinds
that recompute a comparison). Every result file names the command that made it (``"command"``),
when (``"date"``) and, where the README said, on what (``"machine"``); the rendered block ends with
them, so a reader can remake the figures. A file whose runs are gone holds the figures the runs
reported and says so in ``"quoted"`` (the block names it); its success rates are stored as counts,
and every interval is recomputed from them with ``seed_rl``'s own functions, so a table follows the
statistics of today's code.

    python scripts/render_results.py          # rewrite every block in place
    python scripts/render_results.py --check  # exit 1 naming each block that differs (a test runs this)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from result_kinds import RENDERERS

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
#: The documents whose tables are rendered.
DOCUMENTS = ("README.md", "seed_rl/README.md")
BLOCK = re.compile(r"(<!-- results: (?P<name>[a-z0-9_]+) -->\n)(?P<body>.*?)(<!-- /results -->)", re.DOTALL)


def render(name: str, results: Path = RESULTS) -> str:
    """The block for ``docs/results/<name>.json``: its table, then the command, date and machine it came from."""
    path = results / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: a README block names it ({name!r}); commit the result file")
    result = json.loads(path.read_text(encoding="utf-8"))
    kind = result.get("kind", name)
    if kind not in RENDERERS:
        raise ValueError(f"{path}: no renderer for kind {kind!r}; known: {', '.join(sorted(RENDERERS))}")
    lines = RENDERERS[kind](result)
    quoted = f" ({result['quoted']})" if result.get("quoted") else ""
    machine = f" on {result['machine']}" if result.get("machine") else ""
    source = f"`docs/results/{name}.json`{quoted}, made {result['date']}{machine} by:"
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
