"""``scripts/bench_history_format.py``: both formats play the same expert path, and the update trains on it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_history_format
import result_kinds


def test_both_formats_time_one_update_on_the_same_expert_path(tmp_path):
    out = tmp_path / "bench.json"
    argv = ["--config", "sokoban_grpo", "--count-episodes", "3", "--noise", "0", "--out", str(out)]
    overrides = ["model=tiny-random", "tasks_per_update=1", "group_size=2", "max_steps=4", "history_length=3"]
    report = bench_history_format.main([*argv, *overrides])
    full, actions = report["full"], report["actions"]
    # the same episodes, rendered two ways
    assert full["counted"]["steps"] == actions["counted"]["steps"] > 0
    assert full["update"]["rows"] == actions["update"]["rows"] > 0
    assert full["update"]["steps_per_episode"] == actions["update"]["steps_per_episode"]
    assert set(full["update"]["seconds"]) >= {"rollout", "update"}
    for entry in (full, actions):
        update = entry["update"]
        assert update["tokens"] == update["prompt_tokens"] + update["reply_tokens"]
        sections = entry["counted"]["section_tokens_per_step"]
        assert {"intro", "task", "observation", "instruction"} <= set(sections)
        assert sum(sections.values()) < entry["counted"]["prompt_tokens_per_step"]  # the template's tokens beside
    # the history is the only section the two formats render differently
    assert {k: v for k, v in full["counted"]["section_tokens_per_step"].items() if k != "history"} == {
        k: v for k, v in actions["counted"]["section_tokens_per_step"].items() if k != "history"
    }
    assert out.is_file() and "sokoban_grpo" in report["command"]


def test_dtypes_time_each_format_in_each_dtype_on_the_same_prompts(tmp_path):
    argv = ["--config", "sokoban_grpo", "--formats", "full", "--dtypes", "float32,bfloat16", "--count-episodes", "2"]
    overrides = ["model=tiny-random", "tasks_per_update=1", "group_size=2", "max_steps=3", "--noise", "0"]
    result = tmp_path / "update_dtype.json"
    outputs = ["--out", str(tmp_path / "bench.json"), "--result", str(result), "--machine", "this machine"]
    report = bench_history_format.main([*argv, *outputs, *overrides])
    fp32, bf16 = report["full/float32"], report["full/bfloat16"]
    assert (fp32["dtype"], bf16["dtype"]) == ("float32", "bfloat16")
    assert "full" not in report  # one key per format and dtype
    # the expert path, and so every prompt, is the same in both dtypes
    assert fp32["update"]["rows"] == bf16["update"]["rows"] > 0
    assert fp32["update"]["prompt_tokens"] == bf16["update"]["prompt_tokens"]
    # the result file: a row per dtype, then the second's as a ratio of the first's, as render_results reads it
    table = json.loads(result.read_text())
    assert table["kind"] == "table" and table["machine"] == "this machine"
    assert [r[0] for r in table["rows"]] == ["`full`, float32", "`full`, bfloat16", "full, bfloat16 / full, float32"]
    ratio = bf16["update"]["total_s"] / fp32["update"]["total_s"]  # (the table's seconds are rounded)
    assert float(table["rows"][2][-1]) == pytest.approx(ratio, abs=0.006)
    assert len(result_kinds.table(table)) == 2 + 3


def test_a_result_file_needs_the_timings_and_the_machine(tmp_path):
    with pytest.raises(SystemExit):
        bench_history_format.main(["--no-timing", "--result", str(tmp_path / "r.json"), "--machine", "m"])
    with pytest.raises(SystemExit):
        bench_history_format.main(["--result", str(tmp_path / "r.json")])
