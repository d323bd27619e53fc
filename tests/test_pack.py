"""``seed pack``: a run's policy, with the adapters merged before RL, in a folder any machine evaluates."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from corridor_support import TINY_CORRIDOR  # noqa: E402

from seed_rl.cli import main  # noqa: E402
from seed_rl.config import load_config  # noqa: E402
from seed_rl.train.saved_policy import PolicyError, load_eval_policy  # noqa: E402
from seed_rl.train.trainer import train  # noqa: E402

RUN = [*TINY_CORRIDOR, "updates=1", "tasks_per_update=2", "group_size=2", "checkpoint_every=1"]
WARM = ["warm_start=expert", "warm_start_demos=4", "warm_start_epochs=1"]


def weights(spec: str) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in load_eval_policy(spec, "seed/Corridor-v0").policy.model.state_dict().items()}


def test_a_packed_run_evaluates_without_the_training_machines_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "run"
    train(load_config(None, [*RUN, *WARM, f"run_dir={run}"]))
    trained = weights(str(run))
    assert main(["pack", str(run), "--out", str(tmp_path / "packed")]) == 0
    packed = tmp_path / "packed"
    names = sorted(str(p.relative_to(packed)) for p in packed.rglob("*") if p.is_file())
    assert names == [
        "adapters/warm_start_adapter.safetensors",
        "checkpoints/update-000001/state.json",
        "checkpoints/update-000001/trainable.safetensors",
        "config.yaml",
        "metrics.jsonl",
    ]
    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path / "elsewhere"))  # another machine: no cached adapter
    with pytest.raises(PolicyError, match=r"warm-start adapter .* not found .*seed pack"):
        load_eval_policy(str(run), "seed/Corridor-v0")
    again = weights(str(packed))
    assert set(again) == set(trained)
    for key, value in trained.items():
        assert torch.equal(value, again[key]), key
    (packed / "adapters" / "warm_start_adapter.safetensors").unlink()  # the packed copy is the one read
    with pytest.raises(PolicyError, match="warm-start adapter"):
        load_eval_policy(str(packed), "seed/Corridor-v0")


def test_pack_names_what_is_missing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["pack", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 2
    assert "config.yaml not found" in capsys.readouterr().err
    run = tmp_path / "run"
    train(load_config(None, [*RUN, *WARM, f"run_dir={run}"]))
    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert main(["pack", str(run), "--out", str(tmp_path / "out")]) == 2
    assert "cannot be packed from this machine" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_a_resumable_pack_continues_the_run_on_a_machine_without_its_cache(tmp_path, monkeypatch, capsys):
    """Train 2 updates at once; train 1, pack it with --resumable, and resume the pack elsewhere to 2:
    the same second update, to the bit, and the warm start read from the pack, not trained again."""
    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path / "cache"))
    skills = ["algo=seed", "analyzer=scripted"]  # the skill library travels in the checkpoint too
    whole = train(load_config(None, [*RUN, *WARM, *skills, "updates=2", f"run_dir={tmp_path / 'whole'}"]))
    run, packed = tmp_path / "run", tmp_path / "packed"
    train(load_config(None, [*RUN, *WARM, *skills, f"run_dir={run}"]))
    assert main(["pack", str(run), "--out", str(packed)]) == 0
    assert main(["train", "--resume", f"run_dir={packed}", "updates=2"]) == 2  # weights only: refused
    assert "optimizer.pt" in capsys.readouterr().err
    assert main(["pack", str(run), "--out", str(packed), "--resumable"]) == 0
    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path / "elsewhere"))  # another machine
    assert main(["train", "--resume", f"run_dir={packed}", "updates=2"]) == 0
    assert "warm start: adapter loaded from " + str(packed / "adapters") in capsys.readouterr().out
    assert not list((tmp_path / "elsewhere").rglob("*.safetensors"))  # not trained again
    resumed = [json.loads(line) for line in (packed / "metrics.jsonl").read_text().splitlines()]
    assert [m["update"] for m in resumed] == [1, 2]
    for key in ("loss", "grpo_loss", "opd_loss", "success", "grad_norm"):
        assert resumed[1][key] == whole[1][key], key  # exact, not approximate
    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path / "cache"))
    ends = weights(str(tmp_path / "whole")), weights(str(packed))
    for key, value in ends[0].items():
        assert torch.equal(value, ends[1][key]), key


def test_a_packs_adapters_go_into_another_machines_cache_for_new_runs(tmp_path, monkeypatch, capsys):
    from seed_envs.paths import cache_root
    from seed_rl.train.setup.run_setup import run_policy
    from seed_rl.train.stage1.warm_start import ADAPTER_FILE, run_warm_start, warm_start_key

    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path / "cache"))
    run, packed = tmp_path / "run", tmp_path / "packed"
    cfg = load_config(None, [*RUN, *WARM, f"run_dir={run}"])
    train(cfg)
    assert main(["pack", str(run), "--out", str(packed)]) == 0
    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path / "elsewhere"))  # another machine
    assert main(["pack", str(packed), "--into-cache"]) == 0
    cached = cache_root() / "warm_start" / warm_start_key(cfg)
    assert (cached / ADAPTER_FILE).read_bytes() == (packed / "adapters" / ADAPTER_FILE).read_bytes()
    # a new run with the pack's settings, another training seed, starts from that warm start: none is trained
    other_seed = load_config(None, [*RUN, *WARM, "seed=1", f"run_dir={tmp_path / 'seed1'}"])
    report = run_warm_start(other_seed, run_policy(other_seed))
    assert report["cached"] and report["loaded_from"] == str(cached)
    capsys.readouterr()
    assert main(["pack", str(packed), "--into-cache"]) == 0  # again: nothing to do
    assert "all there already" in capsys.readouterr().out
    (cached / ADAPTER_FILE).write_bytes(b"another adapter")
    assert main(["pack", str(packed), "--into-cache"]) == 2
    assert "already holds another warm-start adapter" in capsys.readouterr().err
    assert main(["pack", str(packed), "--into-cache", "--out", str(tmp_path / "x")]) == 2  # one or the other
