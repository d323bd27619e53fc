"""The READMEs' result tables are rendered from the committed result files (``scripts/render_results.py``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import render_results

ARM = {"won": 3, "n": 8, "low": 0.136, "high": 0.694, "gains": 0, "losses": 0}


def precondition_file(folder: Path, oracle_won: int = 6) -> None:
    oracle = {**ARM, "won": oracle_won, "gains": 3, "losses": 1}
    result = {
        "kind": "skill_precondition",
        "date": "2026-12-06",
        "command": "python scripts/measure_skill_prompt.py --config demo",
        "models": [{"label": "untrained", "arms": {"none": ARM, "oracle": oracle, "own": ARM}}],
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "skill_precondition.json").write_text(json.dumps(result), encoding="utf-8")


def test_every_readme_table_matches_its_result_file():
    assert render_results.stale_blocks() == []


def test_a_block_is_rendered_by_hand(tmp_path):
    precondition_file(tmp_path)
    text = "before\n<!-- results: skill_precondition -->\nold\n<!-- /results -->\nafter\n"
    out = render_results.rendered(text, tmp_path)
    rows = [line for line in out.splitlines() if line.startswith("| untrained")]
    # 3/8 = 37.5%, 6/8 = 75.0%: 37.5 points, 3 rooms won and 1 lost against no skill
    assert rows == ["| untrained | 37.5 [13.6, 69.4] | 75.0 [13.6, 69.4] | 37.5 [13.6, 69.4] | +37.5 | 3 / 1 |"]
    assert out.startswith("before\n<!-- results: skill_precondition -->\n") and out.endswith(
        "<!-- /results -->\nafter\n"
    )
    assert "python scripts/measure_skill_prompt.py --config demo" in out and "made 2026-12-06" in out
    assert render_results.rendered(out, tmp_path) == out  # rendering is idempotent


def test_a_block_that_drifted_from_its_file_is_reported(tmp_path):
    precondition_file(tmp_path)
    (tmp_path / "README.md").write_text(
        render_results.rendered("<!-- results: skill_precondition -->\n<!-- /results -->\n", tmp_path)
    )
    (tmp_path / "seed_rl").mkdir()
    (tmp_path / "seed_rl" / "README.md").write_text("no tables\n")
    assert render_results.stale_blocks(tmp_path, tmp_path) == []
    precondition_file(tmp_path, oracle_won=7)  # the result file changed, the README did not
    assert render_results.stale_blocks(tmp_path, tmp_path) == ["README.md: skill_precondition"]


def test_a_missing_result_file_or_kind_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"skill_precondition\.json is missing"):
        render_results.render("skill_precondition", tmp_path)
    (tmp_path / "odd.json").write_text(json.dumps({"kind": "odd", "date": "", "command": ""}))
    with pytest.raises(ValueError, match="no renderer for kind 'odd'; known: skill_precondition"):
        render_results.render("odd", tmp_path)
