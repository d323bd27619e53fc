"""The memory budget of training micro-batches: the estimate against a hand count and against the
tensors autograd really saves, micro-batches that shrink with the budget, gradient checkpointing
as the fallback, the error when nothing fits, and updates that do not depend on the budget."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
import textwrap
import time
from types import SimpleNamespace

import pytest

from seed_rl.config import ConfigError, load_config
from seed_rl.train.learner.memory import (
    BACKWARD_WORKSPACE_LAYERS,
    LOGIT_COPIES,
    MASK_BYTES,
    SAFETY,
    MemoryBudgetError,
    MemoryModel,
    ModelShape,
    Training,
    layer_bytes,
    plan_micro_batch,
)

TINY = SimpleNamespace(hidden_size=8, intermediate_size=12, num_hidden_layers=3, num_attention_heads=2, vocab_size=50)


def test_the_estimate_equals_a_hand_count_on_a_tiny_config():
    shape = ModelShape.from_config(TINY)
    assert (shape.head_dim, shape.layers, shape.dtype_bytes) == (4, 3, 4)
    lora = Training.lora(shape, ["q_proj", "v_proj"], rank=2, top_layers=2)
    assert lora.layers == 2
    # per token and layer, fp32: norms 2*8+2, attention 4*2*4+2, MLP 3*12, the q/v input 8
    assert layer_bytes(shape, lora) == 4 * (18 + 34 + 36 + 8) + 4 * 2 * 2
    full = Training.full(shape)
    assert full.layers == 3
    assert layer_bytes(shape, full) == 4 * (18 + 34 + 36 + 8 + 8 + 12)  # + the MLP input and down's input
    model = MemoryModel(shape, lora)
    seq, rows, kept = 10, 3, 4
    layer = 400 + MASK_BYTES * seq
    head = 4 * 9  # the final norm's input and 1/rms
    grad_per_token = (2 + BACKWARD_WORKSPACE_LAYERS) * layer + head
    assert model.bytes_per_token(seq, "grad") == grad_per_token
    logits = LOGIT_COPIES * 4 * 50 * kept
    assert model.pass_bytes(rows, seq, kept) == math.ceil(SAFETY * rows * (seq * grad_per_token + logits))
    checkpointed = 4 * 8 * 2 + (1 + BACKWARD_WORKSPACE_LAYERS) * layer + head
    assert model.bytes_per_token(seq, "checkpointed") == checkpointed
    assert model.bytes_per_token(seq, "no_grad") == layer + 2 * 4 * 8
    # the tokens that fit: the largest count whose per-token cost stays within the budget
    budget = 10**6
    fits = model.tokens_that_fit(budget, seq, kept_share=0.4)
    per_token = SAFETY * (grad_per_token + 0.4 * LOGIT_COPIES * 4 * 50)
    assert fits * per_token <= budget < (fits + 1) * per_token


def test_a_vision_language_config_is_read_from_its_text_config():
    config = SimpleNamespace(text_config=SimpleNamespace(**vars(TINY), head_dim=16), vision_config=None)
    shape = ModelShape.from_config(config, dtype_bytes=2)
    assert (shape.hidden, shape.head_dim, shape.dtype_bytes) == (8, 16, 2)
    bf16 = Training.lora(shape, ["q_proj", "o_proj"], rank=2)
    # bf16 activations: each fp32 adapter saves its own fp32 copy of its input (q: 8, o: 2*16)
    assert layer_bytes(shape, bf16) == 2 * (18 + 4 * 32 + 2 + 36) + 4 * (8 + 32) + 4 * 2 * 2


def test_checkpointing_needs_less_than_a_plain_pass():
    shape = ModelShape.from_config(TINY)
    model = MemoryModel(shape, Training.lora(shape, ["q_proj"], rank=4))
    for seq in (16, 256, 4096):
        assert model.bytes_per_token(seq, "no_grad") < model.bytes_per_token(seq, "checkpointed")
        assert model.bytes_per_token(seq, "checkpointed") < model.bytes_per_token(seq, "grad")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM and clear_refs are Linux's")
def test_a_subprocess_of_a_large_process_reports_its_own_peak():
    """Linux carries ``ru_maxrss`` across exec, so a child of a process holding 400 MB would report
    400 MB; ``peak_rss_bytes`` reads the child's own, and ``reset_peak_rss`` starts it again."""
    held = bytearray(400 * 2**20)
    held[::4096] = b"x" * len(held[::4096])  # touch every page: resident, not just reserved
    child = (
        "from seed_rl.train.learner.memory import peak_rss_bytes, reset_peak_rss\n"
        "import resource\n"
        "print(peak_rss_bytes(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)\n"
        "big = bytearray(300 * 2**20); big[::4096] = b'x' * len(big[::4096])\n"
        "grown = peak_rss_bytes(); del big; reset_peak_rss()\n"
        "print(grown, peak_rss_bytes())\n"
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True)
    (own, inherited), (grown, after_reset) = [map(int, line.split()) for line in done.stdout.splitlines()]
    assert own < 200 * 2**20 <= len(held) <= inherited  # the child's own start, under the parent's 400 MB
    assert grown >= own + 300 * 2**20 > after_reset
    del held


def test_memory_budget_gb_is_validated():
    assert load_config("demo").memory_budget_gb == 8.0
    assert load_config("demo", ["memory_budget_gb=2"]).memory_budget_gb == 2.0
    for bad in ("0", "-1.5"):
        with pytest.raises(ConfigError, match="memory_budget_gb must be > 0"):
            load_config("demo", [f"memory_budget_gb={bad}"])


# ----------------------------------------------------------------- with the tiny random model
torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from seed_agent.tiny_models import tiny_random_policy  # noqa: E402
from seed_rl.records.rows import ScoreRow, TrainRow  # noqa: E402
from seed_rl.train.learner.learner import Learner  # noqa: E402
from seed_rl.train.phases.update import LossSettings, optimize  # noqa: E402


def score_rows(n: int, seed: int, length: tuple[int, int] = (40, 120)) -> list[ScoreRow]:
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for _ in range(n):
        size = int(torch.randint(*length, (1,), generator=gen))
        prompt = torch.randint(5, 500, (size,), generator=gen).tolist()
        rows.append(ScoreRow(prompt, torch.randint(5, 500, (int(torch.randint(2, 8, (1,), generator=gen)),)).tolist()))
    return rows


def budget_gb(learner: Learner, rows: list[ScoreRow], mode: str, rows_per_batch: float) -> float:
    """A budget that leaves room for about ``rows_per_batch`` of the longest row's pass."""
    longest = max(rows, key=lambda r: r.length)
    kept = math.ceil(max((len(r.token_ids) + 1) / r.length for r in rows) * longest.length)
    one = learner.memory.pass_bytes(1, longest.length, kept, mode)
    return (learner.static_bytes + rows_per_batch * one) / 1e9


def test_the_estimate_bounds_what_autograd_saves():
    """Counted with saved-tensor hooks on a padded batch: within the estimate's saved part, and
    not far below it (the formula models the layers, not a loose constant)."""
    learner = Learner(tiny_random_policy(seed=1), finetune="lora", lr=0.0, token_budget=10**6)
    learner.policy.engine.layout.share_prefix = False
    rows = score_rows(6, seed=2, length=(150, 300))
    params = {p.untyped_storage().data_ptr() for p in learner.model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in params:
            saved.setdefault(storage.data_ptr(), storage.nbytes())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        logps = learner.logprobs(rows, grad=True)
    torch.cat(logps).sum().backward()
    memory, seq = learner.memory, max(r.length for r in rows)
    kept = max(len(r.token_ids) for r in rows)  # the log-softmax output: one float copy
    layers = memory.training.layers
    modelled = len(rows) * (seq * layers * (layer_bytes(memory.shape, memory.training) + MASK_BYTES * seq))
    modelled += len(rows) * (seq * 4 * (memory.shape.hidden + 1) + 4 * memory.shape.vocab * kept)
    assert 0.9 * modelled <= sum(saved.values()) <= modelled
    assert sum(saved.values()) < memory.pass_bytes(len(rows), seq, kept + 1)


def test_micro_batches_shrink_with_the_budget():
    learner = Learner(tiny_random_policy(seed=3), finetune="lora", lr=0.0, token_budget=10**6)
    rows = score_rows(12, seed=4)
    counts = []
    for room in (40.0, 8.0, 3.0, 1.2):
        learner.memory_budget = budget_gb(learner, rows, "grad", room) * 1e9
        batches = learner.micro_batches(rows)
        assert sorted(i for b in batches for i in b) == list(range(len(rows)))
        for batch in batches:
            longest = max(rows[i].length for i in batch)
            kept = max(len(rows[i].token_ids) for i in batch) + 1
            need = learner.static_bytes + learner.memory.pass_bytes(len(batch), longest, kept)
            assert need <= learner.memory_budget
        counts.append(len(batches))
    assert counts[0] == 1 and all(a < b for a, b in itertools.pairwise(counts)) and counts[-1] > len(rows) // 2
    assert not learner.gradient_checkpointing
    # token_budget stays the explicit cap: a large memory budget does not lift it
    learner.memory_budget, learner.token_budget = 10**12, 2 * max(r.length for r in rows)
    assert learner.micro_batch_tokens(rows) == learner.token_budget
    for batch in learner.micro_batches(rows):
        assert len(batch) * max(rows[i].length for i in batch) <= learner.token_budget


def test_freed_memory_goes_back_to_the_os_only_where_the_budget_is_tight(monkeypatch, capsys):
    """glibc's faster default keeps freed activations (GLIBC_SLACK); the learner switches to
    returning them only where that slack over a micro-batch would overflow the budget."""
    import seed_rl.train.learner.learner as learner_module

    calls = []
    monkeypatch.setattr(learner_module, "return_freed_memory_to_os", lambda: calls.append(1) or True)
    rows = score_rows(12, seed=4)
    roomy = Learner(tiny_random_policy(seed=3), finetune="lora", lr=0.0, token_budget=10**6)
    roomy.memory_budget = budget_gb(roomy, rows, "grad", 3 * len(rows)) * 1e9  # 3x what one batch of all needs
    roomy.micro_batches(rows)
    assert not calls and not roomy.returning_freed_memory
    tight = Learner(tiny_random_policy(seed=3), finetune="lora", lr=0.0, token_budget=10**6)
    tight.memory_budget = budget_gb(tight, rows, "grad", 1.2) * 1e9  # the budget, not token_budget, binds
    tight.micro_batches(rows)
    tight.micro_batches(rows)
    assert calls == [1] and tight.returning_freed_memory  # once, and said
    assert "back to the OS" in capsys.readouterr().out
    # a budget that token_budget-sized micro-batches would overflow switches it on from the start,
    # before the rollout, whose freed memory then goes back too
    calls.clear()
    Learner(tiny_random_policy(seed=3), finetune="lora", lr=0.0, token_budget=10**6, memory_budget_gb=0.1)
    assert calls == [1]
    calls.clear()
    Learner(tiny_random_policy(seed=3), finetune="lora", lr=0.0, token_budget=256, memory_budget_gb=8.0)
    assert not calls


def test_gradient_checkpointing_switches_on_when_one_row_needs_it(capsys):
    learner = Learner(tiny_random_policy(seed=5), finetune="lora", lr=0.0, token_budget=10**6)
    rows = score_rows(4, seed=6, length=(600, 900))
    plain, checkpointed = (budget_gb(learner, rows, mode, 1.0) for mode in ("grad", "checkpointed"))
    assert checkpointed < plain
    learner.memory_budget = (plain + checkpointed) / 2 * 1e9
    assert learner.micro_batches(rows, grad=False)  # scoring without gradient fits: nothing changes
    assert not learner.gradient_checkpointing
    batches = learner.micro_batches(rows)
    assert learner.gradient_checkpointing and len(batches) == len(rows)
    model = learner.model
    assert getattr(model, "is_activation_checkpointing", None) or model.is_gradient_checkpointing
    out = capsys.readouterr().out
    assert out.count("gradient checkpointing on") == 1 and f"a row of {max(r.length for r in rows)} tokens" in out
    logps = learner.logprobs(rows[:1], grad=True)  # and training still runs
    torch.cat(logps).sum().backward()
    assert any(p.grad is not None for p in learner.trainable)
    learner.micro_batches(rows)
    assert "gradient checkpointing on" not in capsys.readouterr().out  # said once


def test_a_row_that_fits_in_no_way_is_an_error_naming_the_fix():
    learner = Learner(tiny_random_policy(seed=7), finetune="lora", lr=0.0)
    rows = score_rows(3, seed=8, length=(600, 900))
    learner.memory_budget = budget_gb(learner, rows, "checkpointed", 0.5) * 1e9
    longest = max(r.length for r in rows)
    with pytest.raises(
        MemoryBudgetError, match=rf"a row of {longest} tokens .*memory_budget_gb=.*Raise memory_budget_gb"
    ):
        learner.micro_batches(rows)
    with pytest.raises(MemoryBudgetError, match="does not cover the model's own weights"):
        Learner(tiny_random_policy(seed=7), finetune="lora", memory_budget_gb=learner.static_bytes / 2e9)
    # the suggested budget is enough
    message = ""
    try:
        plan_micro_batch(
            learner.memory,
            budget=learner.memory_budget,
            static=learner.static_bytes,
            longest=longest,
            kept_share=max((len(r.token_ids) + 1) / r.length for r in rows),
            grad=True,
            checkpointed=False,
        )
    except MemoryBudgetError as error:
        message = str(error)
    suggested = float(message.split("at least ")[1].split(",")[0])
    learner.memory_budget = suggested * 1e9
    assert learner.micro_batches(rows)


def train_rows(learner: Learner, rows: list[ScoreRow]) -> list[TrainRow]:
    gen = torch.Generator().manual_seed(9)
    out = []
    for i, score in enumerate(rows):
        with torch.no_grad():
            old = learner.logprobs([score], grad=False)[0]
        out.append(TrainRow(i // 2, score, old + 0.01 * torch.randn(len(old), generator=gen), float(i % 3) - 1.0))
    return out


def one_step(learner: Learner, rows: list[TrainRow]) -> tuple[list[torch.Tensor], dict[str, torch.Tensor], int]:
    """The log-probs of one micro-batched pass, and the gradient of one update (not applied)."""
    logps = [t.detach() for t in learner.logprobs([r.score for r in rows], grad=True)]
    learner.optimizer.zero_grad(set_to_none=True)
    captured = {}

    def keep() -> float:
        captured.update({n: p.grad.detach().clone() for n, p in learner.model.named_parameters() if p.requires_grad})
        learner.optimizer.zero_grad(set_to_none=True)
        return 0.0

    learner.step = keep
    optimize(learner, rows, LossSettings(kl_coef=0.0, lambda_opd=0.0))
    return logps, captured, len(learner.micro_batches([r.score for r in rows]))


def test_a_small_budget_trains_exactly_as_a_large_one():
    runs = []
    for room in (1000.0, 1.5):
        torch.manual_seed(0)  # peft draws the LoRA A matrices from torch's global generator
        learner = Learner(tiny_random_policy(seed=11), finetune="lora", lr=0.0, token_budget=10**6)
        with torch.no_grad():
            for name, p in learner.model.named_parameters():
                if "lora_B" in name:
                    p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(len(name))) * 0.5)
        scores = score_rows(10, seed=12)
        learner.memory_budget = budget_gb(learner, scores, "grad", room) * 1e9
        runs.append(one_step(learner, train_rows(learner, scores)))
        assert not learner.gradient_checkpointing
    (lp_big, grad_big, n_big), (lp_small, grad_small, n_small) = runs
    assert n_big == 1 and n_small >= 5
    for a, b in zip(lp_big, lp_small, strict=True):
        assert float((a - b).abs().max()) < 1e-5
    assert any(float(g.abs().max()) > 0 for g in grad_big.values())
    for name, g in grad_big.items():
        assert float((g - grad_small[name]).abs().max()) <= 1e-5 * max(1.0, float(g.abs().max())), name


# ------------------------------------------------------------------------------ slow, SmolLM2
RUN_ONE_UPDATE = textwrap.dedent(
    """
    import json, os, sys
    from seed_rl.config import load_config
    from seed_rl.train.learner.memory import peak_rss_bytes, reset_peak_rss
    from seed_rl.train.trainer import Trainer

    def rss():
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    cfg = load_config("demo", sys.argv[1:])
    trainer = Trainer(cfg)
    start = rss()
    reset_peak_rss()  # the peak of training, not of loading the weights
    batches = []
    packer = trainer.learner.micro_batches

    def counted(rows, *, grad=True):
        out = packer(rows, grad=grad)
        if grad:
            batches.append((len(out), len(rows), max((r.length for r in rows), default=0)))
        return out

    trainer.learner.micro_batches = counted
    trainer.run()
    micro, rows, longest = max(batches)
    print(json.dumps({
        "start": start,
        "peak": peak_rss_bytes(),
        "micro_batches": micro,
        "rows": rows,
        "longest": longest,
    }))
    """
)


@pytest.mark.slow
def test_one_long_history_update_of_smollm2_stays_within_the_budget(tmp_path, user_cache):
    """One update of SmolLM2 with whole histories in the prompts, no token cap, and a budget that
    holds a few rows per micro-batch: the peak RSS stays under the budget plus what the process
    held before training began (interpreter, libraries, the weights)."""
    from seed_agent.models import is_fetched

    if not is_fetched("smollm2"):
        pytest.skip("SmolLM2 is not fetched (seed models fetch smollm2)")
    budget = 1.2
    overrides = [
        "model=smollm2",
        "history_length=-1",
        "warm_start=none",
        "max_steps=4",
        "tasks_per_update=1",
        "group_size=2",
        "updates=1",
        "epochs=1",
        "minibatches=1",
        "progress=false",
        f"memory_budget_gb={budget}",
        "token_budget=100000",
        "threads=2",
        f"run_dir={tmp_path / 'run'}",
    ]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", RUN_ONE_UPDATE, *overrides], env=dict(os.environ), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"one update in {time.perf_counter() - started:.0f} s: {report['rows']} rows of up to {report['longest']} "
        f"tokens in {report['micro_batches']} micro-batches; peak RSS {report['peak'] / 1e9:.2f} GB, "
        f"{report['start'] / 1e9:.2f} GB before training"
    )
    assert report["micro_batches"] > 1  # the budget, not token_budget, sized the micro-batches
    assert report["peak"] <= report["start"] + budget * 1e9
