"""``scripts/bench_train.py``'s throughput report, from a tiny-random run on the CPU through the
code path a GPU run takes, and its refusal of ``--device cuda`` where torch sees no GPU."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_device_cuda_is_refused_without_a_gpu() -> None:
    script = SCRIPTS / "bench_train.py"
    # this checkout's packages first, whatever the environment has installed
    path = os.pathsep.join([str(SCRIPTS.parent), *filter(None, [os.environ.get("PYTHONPATH")])])
    done = subprocess.run(
        [sys.executable, str(script), "--device", "cuda", "--sections", "seed"],
        capture_output=True,
        text=True,
        cwd=SCRIPTS.parent,
        env={**os.environ, "PYTHONPATH": path},
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "--device cuda: device=cuda is not available: torch sees no CUDA GPU" in done.stderr


def test_throughput_report_of_a_tiny_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(SCRIPTS))
    import bench_train
    from bench_throughput import TARGET

    out = tmp_path / "bench.json"
    argv = ["--model", "tiny-random", "--sections", "seed", "--no-stage1", "--spread-rewards", "--device", "auto"]
    argv += ["--tasks", "1", "--group", "4", "--max-steps", "1", "--rounds", "1", "--out", str(out)]
    report = bench_train.main(argv)
    assert out.is_file() and report["device"] == ("cuda" if torch.cuda.is_available() else "cpu")
    seed = report["seed_vs_grpo"]
    rates = seed["throughput"]
    for kind in ("sampling", "scoring", "training"):
        assert rates[f"{kind}_tokens"] > 0 and rates[f"{kind}_s"] > 0
        assert rates[f"{kind}_tokens_per_s"] == pytest.approx(rates[f"{kind}_tokens"] / rates[f"{kind}_s"])
    assert rates["training_action_tokens"] > 0  # --spread-rewards: no group ties, so rows train
    # the ratio is SEED's seconds over GRPO's as the section reports them (phases after the rollout)
    variants = seed["variants"]
    grpo = sum(v for k, v in variants["grpo"].items() if k != "rollout")
    every = sum(v for k, v in variants["seed (every episode with a skill)"].items() if k != "rollout")
    assert rates["grpo_update_s"] == pytest.approx(grpo) and rates["seed_update_s"] == pytest.approx(every)
    assert rates["seed_vs_grpo_update"] == pytest.approx(every / grpo)
    assert rates["seed_vs_grpo_update"] == pytest.approx(seed["update_vs_grpo"]["seed (every episode with a skill)"])
    assert rates["target"] == TARGET == 1.15 and rates["target_met"] == (rates["seed_vs_grpo_update"] <= TARGET)
    # SEED's floor: the analysis pass's prefill, measured, and the as-run teacher pass over GRPO's seconds
    floor, as_run = seed["floor"], variants["seed (as run)"]
    assert floor["analysis_prefill_s"] > 0 and floor["teacher_s"] == pytest.approx(as_run.get("teacher", 0.0))
    rollout = variants["grpo"]["rollout"]
    expected = (rollout + grpo + floor["analysis_prefill_s"] + floor["teacher_s"]) / (rollout + grpo)
    assert floor["floor_vs_grpo"] == pytest.approx(expected)
    assert rates["training_s"] == pytest.approx(variants["grpo"]["update"])
    assert rates["scoring_s"] == pytest.approx(variants["seed (every episode with a skill)"]["teacher"])
    assert (rates["peak_cuda_memory_mb"] is None) == (report["device"] == "cpu")
    assert not math.isnan(rates["sampling_tokens_per_s"])


def test_seed_floor_against_a_hand_computation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(SCRIPTS))
    from bench_floor import CPU_TARGET, seed_floor

    # rollout 10 s, GRPO's update 5 s; SEED adds at least a 3 s prefill and a 4 s teacher pass
    floor = seed_floor(rollout_s=10.0, grpo_update_s=5.0, prefill_s=3.0, teacher_s=4.0)
    assert floor["floor_extra_s"] == pytest.approx(7.0)
    assert floor["floor_vs_grpo"] == pytest.approx(22.0 / 15.0)
    assert floor["floor_vs_grpo_update"] == pytest.approx(12.0 / 5.0)
    assert floor["cpu_target"] == CPU_TARGET == 1.4 and floor["cpu_target_within_reach"] is False
    near = seed_floor(rollout_s=10.0, grpo_update_s=5.0, prefill_s=1.0, teacher_s=2.0)
    assert near["floor_vs_grpo"] == pytest.approx(18.0 / 15.0) and near["cpu_target_within_reach"] is True
