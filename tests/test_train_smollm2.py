"""Training with the real offline model (slow job): GRPO gets a gradient from real groups, SEED's
teacher pass runs on real skills, and Stage 1 teaches the analyzer its JSON."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

pytestmark = pytest.mark.slow

#: One optimizer step per update (the path whose old log-probs come from the pass itself).
SMALL = [
    "model=smollm2",
    "warm_start=none",  # (the demo config warm-starts; these tests measure RL from the base model)
    "tasks_per_update=2",
    "group_size=4",
    "max_steps=4",
    "epochs=1",
    "minibatches=1",
    "progress=false",
    "threads=2",
]


@pytest.fixture
def fetched(smollm2_folder, user_cache):
    return smollm2_folder


def test_a_grpo_update_on_smollm2_learns_from_groups_that_differ(fetched, tmp_path):
    from seed_rl.config import load_config
    from seed_rl.train.trainer import train

    (m,) = train(load_config("demo", [*SMALL, "updates=1", f"run_dir={tmp_path / 'g'}"]))
    print(
        f"\nsmollm2 GRPO update: {m['seconds_total']:.0f} s, signal {m['groups_with_signal']:.2f}, "
        f"success {m['success']:.2f}, invalid {m['invalid_rate']:.2f}"
    )
    import yaml

    dtype = yaml.safe_load((tmp_path / "g" / "config.yaml").read_text())["dtype"]  # what demo's auto chose
    if dtype == "float32":
        assert m["sampler_gap_max"] < 1e-3  # the sampled log-probs are the learner's own
    elif m["rows_trained"]:  # bf16: other kernels and layouts; old log-probs come from the pass itself
        assert m["seconds_rescore"] == 0.0 and 0.0 < m["sampler_gap_max"] < 1.0
        assert m["ratio_mean"] == pytest.approx(1.0)
    if m["groups_with_signal"] > 0:
        assert m["grad_norm"] > 0 and m["rows_trained"] > 0


def test_a_seed_update_on_smollm2_with_oracle_skills(fetched, tmp_path):
    from seed_rl.config import load_config
    from seed_rl.train.trainer import train

    (m,) = train(
        load_config("demo", [*SMALL, "updates=1", "algo=seed", "analyzer=scripted", f"run_dir={tmp_path / 's'}"])
    )
    assert m["skill_parse_rate"] == 1.0 and m["opd_rows"] == m["rows"]
    assert 0.0 < m["gate_mean"] < 1.0
    print(
        f"\nsmollm2 SEED update (oracle skills): gate {m['gate_mean']:.2f}, Delta > 0 {m['delta_pos_frac']:.2f}, "
        f"teacher {m['seconds_teacher']:.0f} s of {m['seconds_total']:.0f} s"
    )


@pytest.mark.timeout(1800)  # about 200 s alone; a loaded machine made it pass 600 s
def test_stage1_raises_the_analyzer_parse_rate(fetched, tmp_path, monkeypatch):
    from seed_agent.models import load_named_policy
    from seed_rl.config import load_config
    from seed_rl.train.stage1.sft import run_stage1

    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path / "cache"))  # train it here, not from a cached adapter
    (tmp_path / "cache" / "models").mkdir(parents=True)
    (tmp_path / "cache" / "models" / fetched[0].name).symlink_to(fetched[0])
    cfg = load_config("demo", [*SMALL, f"run_dir={tmp_path / 'r'}"])
    report = run_stage1(cfg, load_named_policy("smollm2"), tmp_path / "r")
    print(
        f"\nStage 1 on smollm2: parse rate {report['parse_rate_before']:.2f} -> {report['parse_rate_after']:.2f}, "
        f"{report['seconds']:.0f} s, e.g. {report['examples_after'][:1]}"
    )
    assert report["parse_rate_after"] > report["parse_rate_before"]
    assert report["parse_rate_after"] >= 0.5
