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


@pytest.mark.parametrize("sharding", ["ddp", "fsdp"])
def test_two_processes_make_the_update_of_one_on_the_whole_batch(tmp_path, sharding):
    """Whole weights with summed gradients, or FSDP2-sharded weights with reduce-scattered ones."""
    run([sys.executable, str(SCRIPT)], tmp_path / "one")
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    flags = ["--fsdp"] if sharding == "fsdp" else []
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [*torchrun, str(SCRIPT), str(tmp_path / "two"), *flags], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    one = torch.load(tmp_path / "one" / "rank0.pt")
    ranks = [torch.load(tmp_path / "two" / f"rank{r}.pt") for r in (0, 1)]
    stats = [json.loads((tmp_path / "two" / f"rank{r}.json").read_text()) for r in (0, 1)]
    alone = json.loads((tmp_path / "one" / "rank0.json").read_text())
    assert [s["rows"] for s in stats] == [8, 4] and alone["rows"] == 12 and stats[0]["world"] == 2
    assert stats[0]["fsdp"] is (sharding == "fsdp")
    # the ranks' rows need different numbers of micro-batches: under FSDP the one with fewer adds
    # idle passes, or the weight gathers would not line up and the run would hang
    assert stats[0]["micro_batches"] != stats[1]["micro_batches"]
    moved = max(float((one["trained"][k] - one["initial"][k]).abs().max()) for k in one["trained"])
    assert moved > 1e-3  # the update changed the adapters
    for name, trained in one["trained"].items():
        assert torch.equal(ranks[0]["trained"][name], ranks[1]["trained"][name]), name  # the ranks agree exactly
        assert torch.equal(ranks[0]["initial"][name], one["initial"][name]), name
        # float32 sums in another order: agreement to 1e-3 of the largest change the update made
        assert float((ranks[0]["trained"][name] - trained).abs().max()) < 1e-3 * moved, name
    for key in ("loss", "grpo_loss", "kl", "opd_loss", "gate_mean", "grad_norm", "rows_trained"):
        assert stats[0][key] == pytest.approx(alone[key], rel=1e-4), key


TRAIN_SCRIPT = Path(__file__).with_name("ddp_train.py")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
#: SEED with oracle skills on a tiny random model: 4 tasks x 2 rollouts, 2 tasks per process.
TINY_SEED = [
    "model=tiny-random",
    "tasks_per_update=4",
    "group_size=2",
    "max_steps=3",
    "progress=false",
    "max_new_tokens=8",
    "lr=0.01",
    "analyzer=scripted",
    "lambda_opd=0.5",
    "kl_coef=0.01",
    "minibatches=2",
]


def train_run(run_dir: Path, *overrides: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [*TORCHRUN, str(TRAIN_SCRIPT), str(run_dir), *TINY_SEED, *overrides]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)


def test_the_trainer_under_torchrun_splits_the_groups_and_takes_one_step_on_every_process(tmp_path):
    from seed_rl.records.run_log import read_metrics
    from seed_rl.train.learner.checkpoint import latest_checkpoint

    done = train_run(tmp_path / "run", "updates=2")
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [torch.load(tmp_path / f"run.rank{r}.pt") for r in (0, 1)]
    assert ranks[0].keys() == ranks[1].keys()
    for name in ranks[0]:
        assert torch.equal(ranks[0][name], ranks[1][name]), name  # the processes stayed in step
    metrics = read_metrics(tmp_path / "run")
    assert [m["update"] for m in metrics] == [1, 2]
    episodes = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    for update in (0, 1):
        mine = [e for e in episodes if e["update"] == update]
        # the main process logged every episode of the update, both processes' groups, numbered as one
        assert sorted(e["episode"] for e in mine) == list(range(8))
        assert sorted({e["group"] for e in mine}) == [0, 1, 2, 3]
        line = metrics[update]
        assert 0 < line["rows"] <= sum(len(e["steps"]) for e in mine)
        assert line["opd_rows"] > 0 and line["opd_trajectories"] > 0
    assert latest_checkpoint(tmp_path / "run").name == "update-000002"

    # killed after update 1 (its checkpoint kept), resumed under torchrun: the same weights as the
    # uninterrupted run, and the same metrics
    first = train_run(tmp_path / "cut", "updates=1")
    assert first.returncode == 0, first.stderr[-3000:]
    resumed = train_run(tmp_path / "cut", "updates=2", "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    again = torch.load(tmp_path / "cut.rank0.pt")
    for name in ranks[0]:
        assert torch.equal(again[name], ranks[0][name]), name
    cut = read_metrics(tmp_path / "cut")
    assert [m["success"] for m in cut] == [m["success"] for m in metrics]
    assert [m["loss"] for m in cut] == [m["loss"] for m in metrics]


def test_a_batch_that_does_not_split_into_whole_groups_is_refused_by_every_process(tmp_path):
    """``seed train`` under torchrun: each process exits with the config error, none hangs."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    overrides = [*TINY_SEED, "tasks_per_update=3", "updates=1", f"run_dir={tmp_path / 'run'}"]
    command = [*TORCHRUN, "-m", "seed_rl.cli", "train", "--config", "sokoban_seed", *overrides]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert done.stderr.count("error: tasks_per_update=3 does not split into whole groups over 2 processes") == 2


def test_fsdp_without_a_separate_sampler_is_refused_with_the_reason():
    from seed_rl.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="fsdp=true needs rollout_engine=vllm"):
        load_config("sokoban_seed", ["fsdp=true"])
    with pytest.raises(ConfigError, match="frozen-initial"):
        load_config("sokoban_seed", ["fsdp=true", "rollout_engine=vllm", "model=smollm2", "analyzer=frozen-initial"])
    assert load_config("sokoban_seed", ["fsdp=true", "rollout_engine=vllm", "model=smollm2"]).fsdp
