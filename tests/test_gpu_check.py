"""``scripts/gpu_check.sh``, the prepared GPU check: its dry run (the CUDA run's commands on the CPU
at tiny shapes) writes a summary where every step is ``ok`` with its fields, and a step that fails
or runs past its budget is recorded while the others still run."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("train_grpo", "train_seed", "logprobs", "bench_train")


@pytest.fixture
def gpu_check(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    import gpu_check

    return gpu_check


def test_dry_run_writes_every_step_ok(tmp_path: Path, gpu_check) -> None:
    out = tmp_path / "x.json"
    done = subprocess.run(
        [str(ROOT / "scripts" / "gpu_check.sh"), "--dry-run", "--out", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(out.read_text())
    assert summary["dry_run"] is True and summary["device"] == "cpu" and summary["status"] == "ok"
    assert summary["failed"] == [] and list(summary["steps"]) == list(STEPS)
    steps = summary["steps"]
    for name, record in steps.items():
        assert record["status"] == "ok", (name, record)
        assert 0 < record["seconds"] <= record["budget_s"]
        assert Path(record["log"]).is_file() and Path(record["log"]).parent == tmp_path / "x_logs"
    for algo in ("grpo", "seed"):
        train = steps[f"train_{algo}"]
        assert train["algo"] == algo and train["device"] == "cpu" and train["rows_trained"] > 0
        assert {"rollout", "reference", "update", "total"} <= set(train["phase_seconds"])
        assert train["losses_finite"] and all(math.isfinite(v) for v in train["losses"].values())
    seed = steps["train_seed"]
    assert seed["opd_rows"] > 0 and seed["losses"]["opd_loss"] > 0 and seed["phase_seconds"]["teacher"] > 0
    logprobs = steps["logprobs"]
    assert logprobs["passed"] and [c["dtype"] for c in logprobs["comparisons"]] == ["float32", "bfloat16"]
    for comparison in logprobs["comparisons"]:
        assert comparison["tokens"] > 0 and set(comparison["max_abs_diff"]) == set(comparison["tolerance"])
        assert all(gap <= comparison["tolerance"][k] for k, gap in comparison["max_abs_diff"].items())
    bench = steps["bench_train"]
    assert bench["device"] == "cpu" and bench["ratios"]["seed_vs_grpo_update"] > 0
    assert bench["ratios"]["update_vs_grpo"]["grpo"] == 1.0 and bench["ratios"]["batched_generation_ratio"] > 0
    assert (tmp_path / "x_logs" / "logprobs.json").is_file() and (tmp_path / "x_logs" / "bench_train.json").is_file()


def test_the_dry_run_differs_from_the_cuda_run_in_device_and_shape_only(gpu_check) -> None:
    allowed = {
        ("cpu", "cuda"),
        ("device=cpu", "device=cuda"),
        ("tiny-random", "random:qwen2.5-0.5b"),
        ("model=tiny-random", "model=random:qwen2.5-0.5b"),
        ("threads=1", "threads=0"),
        ("1", "0"),  # --threads
    }
    dry_steps, cuda_steps = gpu_check.steps_of(gpu_check.DRY), gpu_check.steps_of(gpu_check.CUDA)
    assert [s.name for s in dry_steps] == [s.name for s in cuda_steps] == list(STEPS)
    for dry, cuda in zip(dry_steps, cuda_steps, strict=True):
        shape = list(gpu_check.DRY.logprob_shape)
        dry_command = [part for part in dry.command if part not in ("--shape", *shape)]
        assert len(dry_command) == len(cuda.command)
        assert {(a, b) for a, b in zip(dry_command, cuda.command, strict=True) if a != b} <= allowed
    assert gpu_check.CUDA.logprob_shape == ()  # the CUDA run's log-prob model is the whole preset


def test_a_failing_or_slow_step_is_recorded(tmp_path: Path, gpu_check) -> None:
    def read(work: Path) -> dict:
        value = float((work / "value.txt").read_text())
        if not math.isfinite(value):
            raise gpu_check.CheckFailed("value not finite", {"value": value})
        return {"value": value}

    def step(name: str, code: str):
        return gpu_check.Step(name, [sys.executable, "-c", code], read)

    write = "import sys, pathlib; pathlib.Path(sys.argv[1], 'value.txt').write_text('{}')"
    logs = tmp_path / "logs"
    logs.mkdir()
    records = {
        s.name: gpu_check.run_step(s, budget, logs, tmp_path / "work")
        for s, budget in (
            (step("crash", "print('going down'); raise SystemExit(3)"), 30),
            (step("slow", "import time; time.sleep(60)"), 6),
            (gpu_check.Step("nan", [sys.executable, "-c", write.format("nan"), "{work}"], read), 30),
            (gpu_check.Step("fine", [sys.executable, "-c", write.format("1.5"), "{work}"], read), 30),
            (
                gpu_check.Step("wrote", [sys.executable, "-c", write.format("inf") + "; sys.exit(1)", "{work}"], read),
                30,
            ),
            (step("late", "pass"), 2),
        )
    }
    assert records["crash"]["status"] == "failed" and records["crash"]["error"] == "RuntimeError: exit status 3"
    assert "going down" in records["crash"]["log_tail"]
    assert records["slow"]["status"] == "timeout" and records["slow"]["seconds"] < 30
    assert records["nan"]["status"] == "failed" and records["nan"]["error"] == "value not finite"
    assert math.isnan(records["nan"]["value"])
    assert records["fine"]["status"] == "ok" and records["fine"]["value"] == 1.5
    # a command that exits 1 after writing its report: the report's fields are kept
    assert records["wrote"]["status"] == "failed" and records["wrote"]["error"] == "exit status 1: value not finite"
    assert records["wrote"]["value"] == math.inf
    assert records["late"]["status"] == "skipped"
