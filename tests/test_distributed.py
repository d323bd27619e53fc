"""Data-parallel training: two gloo processes under torchrun make the update one process makes
on the whole batch (tests/ddp_update.py runs both ways)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

SCRIPT = Path(__file__).with_name("ddp_update.py")


def run(command: list[str], out: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([*command, str(out)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def test_two_processes_make_the_update_of_one_on_the_whole_batch(tmp_path):
    run([sys.executable, str(SCRIPT)], tmp_path / "one")
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    run([*torchrun, str(SCRIPT)], tmp_path / "two")
    one = torch.load(tmp_path / "one" / "rank0.pt")
    ranks = [torch.load(tmp_path / "two" / f"rank{r}.pt") for r in (0, 1)]
    stats = [json.loads((tmp_path / "two" / f"rank{r}.json").read_text()) for r in (0, 1)]
    alone = json.loads((tmp_path / "one" / "rank0.json").read_text())
    assert [s["rows"] for s in stats] == [6, 6] and alone["rows"] == 12 and stats[0]["world"] == 2
    moved = max(float((one["trained"][k] - one["initial"][k]).abs().max()) for k in one["trained"])
    assert moved > 1e-3  # the update changed the adapters
    for name, trained in one["trained"].items():
        assert torch.equal(ranks[0]["trained"][name], ranks[1]["trained"][name]), name  # the ranks agree exactly
        assert torch.equal(ranks[0]["initial"][name], one["initial"][name]), name
        # float32 sums in another order: agreement to 1e-3 of the largest change the update made
        assert float((ranks[0]["trained"][name] - trained).abs().max()) < 1e-3 * moved, name
    for key in ("loss", "grpo_loss", "kl", "opd_loss", "gate_mean", "grad_norm", "rows_trained"):
        assert stats[0][key] == pytest.approx(alone[key], rel=1e-4), key
