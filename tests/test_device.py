"""The ``device`` of a run: the config key, the refusal of ``cuda`` where torch sees no GPU, and
the update's tensors placed on the device of the learner's log-probs (checked on ``meta``)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from seed_agent.models import resolve_device  # noqa: E402
from seed_rl.config import ConfigError, load_config  # noqa: E402
from seed_rl.records.rows import ScoreRow, TrainRow  # noqa: E402
from seed_rl.train.phases.phase_timer import PhaseTimer, device_sync  # noqa: E402
from seed_rl.train.phases.update import LossSettings, _loss_inputs, _sampler_gaps  # noqa: E402

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")


def test_device_key_is_validated() -> None:
    assert load_config(None, []).device == "cpu"
    assert load_config(None, ["device=auto"]).device == "auto"
    with pytest.raises(ConfigError, match="device='gpu' is not allowed; device must be one of: cpu, cuda, auto"):
        load_config(None, ["device=gpu"])
    with pytest.raises(ValueError, match="allowed: cpu, cuda, auto"):
        resolve_device("gpu")
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")


@no_cuda
def test_cuda_without_a_gpu_is_refused_before_any_work(tmp_path) -> None:
    from seed_rl.train.trainer import Trainer

    with pytest.raises(ValueError, match="device=cuda is not available: torch sees no CUDA GPU"):
        resolve_device("cuda")
    from seed_agent.models import resolve_dtype

    assert resolve_dtype("auto", "cuda") == "float32"  # dtype=auto asks the run's device
    cfg = load_config(None, ["device=cuda", f"run_dir={tmp_path / 'run'}"])  # a recorded run still loads
    with pytest.raises(ConfigError, match=r"device=cuda is not available.*allowed: cpu, cuda, auto"):
        Trainer(cfg)
    assert not (tmp_path / "run" / "config.yaml").exists()


def test_phase_timer_synchronizes_on_cuda_only() -> None:
    assert device_sync(None) is None and device_sync("cpu") is None and device_sync(torch.device("cpu")) is None
    assert callable(device_sync("cuda")) and callable(device_sync(torch.device("cuda", 0)))
    timer = PhaseTimer(torch.device("cpu"))
    with timer("update"):
        pass
    assert timer.sync is None and timer.seconds["update"] >= 0


def test_the_update_moves_cpu_tensors_to_the_device_of_the_log_probs() -> None:
    """The sampler's log-probs are CPU tensors; the learner's are on its device (``meta`` stands in
    for a GPU here): every tensor the loss reads must come out on the learner's device."""

    def row(episode: int, tokens: int) -> TrainRow:
        cpu = torch.zeros(tokens)
        return TrainRow(episode, ScoreRow([1, 2], [3] * tokens), cpu, 1.0, sampler_logp=cpu, ref_logp=cpu)

    rows = [row(0, 2), row(1, 3)]
    logps = [torch.zeros(2, device="meta"), torch.zeros(3, device="meta")]
    settings = LossSettings(kl_coef=0.01, correct_sampler=True)
    inputs = _loss_inputs(rows, logps, settings, {0: 0.2, 1: 0.2}, n_opd=0)
    tensors = {k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)}
    assert {"old_logp", "advantages", "token_weights", "is_weights", "ref_logp"} <= set(tensors)
    assert {v.device.type for v in tensors.values()} == {"meta"}
    assert [g.device.type for g in _sampler_gaps(rows, logps)] == ["meta", "meta"]
