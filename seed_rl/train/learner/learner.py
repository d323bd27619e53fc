"""The trainable policy: a transformers causal LM with LoRA adapters (peft) or full fine-tuning.

One model object serves three roles:

- **sampling** from the current weights: :attr:`Learner.policy` is a
  :class:`~seed_agent.policies.hf.TransformersPolicy` over the very model being trained;
- **scoring with gradient** (:meth:`Learner.logprobs` with ``grad=True``) and **without**
  (``grad=False``: old log-probs, SEED's teacher pass under ``h_skill``), batched into
  micro-batches bounded by a token budget (:func:`pack_by_tokens`), not a row count: the
  smaller of ``token_budget`` and the tokens whose pass fits in ``memory_budget_gb``
  (:mod:`seed_rl.train.learner.memory`), with gradient checkpointing switched on when a single row needs it;
- the **reference** of the KL term (:meth:`Learner.reference`): with LoRA, the same model
  with its adapters disabled (no extra memory); with full fine-tuning, a frozen copy.

With LoRA, a new adapter starts at zero (peft initialises ``B = 0``), so the reference
and the "frozen initial" analyzer are the model as it was when RL began.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from seed_agent.chat import ChatPrompt
from seed_agent.policies.base import PromptImages
from seed_agent.policies.hf import GroupLayout, TransformersPolicy
from seed_rl.config import TrainConfig
from seed_rl.records.rows import ScoreRow
from seed_rl.train.learner.distributed import max_over_processes, sum_gradients, whole
from seed_rl.train.learner.memory import (
    GLIBC_SLACK,
    MemoryBudgetError,
    MemoryModel,
    ModelShape,
    Training,
    plan_micro_batch,
    return_freed_memory_to_os,
)
from seed_rl.train.learner.packing import pack_by_tokens

FINETUNE_MODES = ("lora", "full")
#: The attention projections of Llama/Qwen-style models.
DEFAULT_LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")


@dataclass(frozen=True)
class LoraSettings:
    """LoRA adapters on ``targets``; ``layers`` > 0 puts them in the top ``layers`` decoder layers
    only, so the backward pass stops there (cheaper on CPU)."""

    rank: int = 16
    alpha: int = 32
    targets: tuple[str, ...] = DEFAULT_LORA_TARGETS
    dropout: float = 0.0
    layers: int = 0

    @classmethod
    def from_config(cls, cfg: TrainConfig) -> LoraSettings:
        """A run's adapters (rank, alpha, target modules, the top layers they go in)."""
        return cls(cfg.lora_rank, cfg.lora_alpha, tuple(cfg.lora_targets), layers=cfg.lora_layers)


class Learner:
    """Owns the model being trained, its optimizer, and every pass over it."""

    def __init__(
        self,
        policy: TransformersPolicy,
        *,
        finetune: str = "lora",
        lora: LoraSettings | None = None,
        lr: float = 1e-5,
        weight_decay: float = 0.0,
        grad_clip: float = 1.0,
        token_budget: int = 4096,
        micro_batch_rows: int = 0,
        memory_budget_gb: float | None = None,
        gradient_checkpointing: bool = False,
        keep_reference: bool = True,
        fsdp: bool = False,
        reuse_frozen_states: bool = True,
    ) -> None:
        if finetune not in FINETUNE_MODES:
            raise ValueError(f"finetune must be one of {FINETUNE_MODES}, got {finetune!r}")
        self.finetune = finetune
        self.token_budget = int(token_budget)
        #: > 0: micro-batches of exactly this many rows, whatever their length or the memory budget
        #: (the naive path ``scripts/bench_train.py`` times); 0: bounded by tokens and memory.
        self.micro_batch_rows = int(micro_batch_rows)
        #: Bytes for the weights, the optimizer state and one micro-batch's pass; None: no limit
        #: but ``token_budget``.
        self.memory_budget = None if memory_budget_gb is None else float(memory_budget_gb) * 1e9
        self.grad_clip = float(grad_clip)
        model = policy.model
        shape = ModelShape.from_config(model.config, dtype_bytes=_dtype_bytes(model))
        self._reference_model: Any = None
        if finetune == "lora":
            from peft import LoraConfig, get_peft_model

            settings = lora or LoraSettings()
            total = total_layers(model)
            only_top: dict[str, Any] = {}
            if settings.layers > 0:
                only_top = {
                    "layers_to_transform": list(range(max(0, total - settings.layers), total)),
                    "layers_pattern": "layers",
                }
            config = LoraConfig(
                r=settings.rank,
                lora_alpha=settings.alpha,
                lora_dropout=settings.dropout,
                target_modules=list(settings.targets),
                bias="none",
                **only_top,
            )
            with warnings.catch_warnings():
                # peft's PeftModel reads the model's `is_gradient_checkpointing`, which transformers 5
                # deprecates (FutureWarning) for `is_activation_checkpointing`: peft's call, not ours
                warnings.filterwarnings(
                    "ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning
                )
                self.peft_model = get_peft_model(model, config)  # injects the adapters into `model` itself
            if reuse_frozen_states and 0 < settings.layers < total and not fsdp:
                policy.engine.frozen_layers = total - settings.layers
            training = Training.lora(shape, settings.targets, settings.rank, settings.layers)
        else:
            self.peft_model = None
            training = Training.full(shape)
            for parameter in model.parameters():
                parameter.requires_grad_(True)
            if keep_reference:
                self._reference_model = copy.deepcopy(model).eval().requires_grad_(False)
        self.model = model
        self.policy = policy
        self.gradient_checkpointing = False
        if gradient_checkpointing:
            self._enable_checkpointing()
        model.eval()  # no dropout anywhere: sampling, scoring and training see the same function
        #: Parameters sharded over the data-parallel processes (FSDP2's ``fully_shard``).
        self.fsdp = bool(fsdp)
        if self.fsdp:
            shard_model(model)
            policy.engine.layout.share_prefix = False  # its extra prefix pass would break the processes' lockstep
        self.trainable = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.trainable, lr=lr, weight_decay=weight_decay)
        self.optimizer_steps = 0
        self.memory = MemoryModel(shape, training)
        #: What stays in memory whatever the batch: weights (and a reference copy), and per
        #: trained weight its gradient and AdamW's two moments.
        self.static_bytes = _weight_bytes(model) + 3 * sum(p.numel() * p.element_size() for p in self.trainable)
        if self._reference_model is not None:
            self.static_bytes += _weight_bytes(self._reference_model)
        if self.memory_budget is not None and self.memory_budget <= self.static_bytes:
            raise MemoryBudgetError(
                f"memory_budget_gb={self.memory_budget / 1e9:g} does not cover the model's own weights and "
                f"optimizer state ({self.static_bytes / 1e9:.2f} GB); raise memory_budget_gb"
            )
        #: Whether glibc now returns freed activations at once (switched on where memory is tight).
        self.returning_freed_memory = False
        # a budget tighter than token_budget: from the start, so that the rollout's freed memory goes
        # back too (not for fixed-row micro-batches, which the memory budget does not size)
        if self.memory_budget is not None and not self.micro_batch_rows:
            seq = max(1, min(self.token_budget, self.context_length))
            probe = [ScoreRow(list(range(seq - 1)), [0])]
            self._return_freed_memory_if_tight(probe, self.token_budget, grad=True)

    def _enable_checkpointing(self) -> None:
        model = self.model
        if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5.2
            model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        self.gradient_checkpointing = True

    # ------------------------------------------------------------ encoding
    def encode(
        self,
        prompts: Sequence[ChatPrompt],
        images: Sequence[PromptImages | None] | None = None,
    ) -> list[tuple[list[int], dict[str, torch.Tensor]]]:
        ids, vision = self.policy.encode(prompts, images)
        return list(zip(ids, vision, strict=True))

    def count_tokens(self, prompt: ChatPrompt) -> int:
        return self.policy.count_tokens(prompt)

    @property
    def context_length(self) -> int:
        return self.policy.context_length

    # ------------------------------------------------------------- scoring
    def logprobs(
        self, rows: Sequence[ScoreRow], *, grad: bool, temperature: float = 1.0, reference: bool = False
    ) -> list[torch.Tensor]:
        """Per-token log-probs of each row's completion; ``reference`` scores under the KL reference.

        Without ``grad`` the result is detached. With ``grad`` the tensors carry the graph of
        their whole micro-batch: call it on one micro-batch at a time (:meth:`micro_batches`).
        """
        out: list[torch.Tensor | None] = [None] * len(rows)
        mode = contextlib.nullcontext() if grad else torch.no_grad()
        with mode, self._scoring_model(reference) as policy, self._training_mode(grad):
            batches = self.micro_batches(rows, grad=grad)
            # (with grad the caller goes one micro-batch at a time and keeps the lockstep itself)
            for _ in range(0 if grad else self.lockstep_passes(len(batches))):
                policy.score_ids([[0]], [[0]], [{}], temperature)  # another process has more to score
            for batch in batches:
                scored = policy.score_ids(
                    [rows[i].prompt_ids for i in batch],
                    [rows[i].token_ids for i in batch],
                    [rows[i].vision for i in batch],
                    temperature,
                    states=[rows[i].states for i in batch],
                    groups=[rows[i].group for i in batch],
                )
                for i, lp in zip(batch, scored, strict=True):
                    out[i] = lp if grad else lp.detach()
        return [t if t is not None else torch.zeros(0) for t in out]

    def passes_with_gradient(
        self, rows: Sequence[ScoreRow], *, temperature: float = 1.0
    ) -> Iterator[tuple[list[int], list[torch.Tensor]]]:
        """The passes with gradient over ``rows``, one micro-batch at a time (:meth:`micro_batches`:
        the token budget and the memory plan). Yields each micro-batch's row indices and their
        log-probs with gradient; the caller back-propagates its loss before taking the next, so
        gradients accumulate and one micro-batch's activations live at a time. Under FSDP every
        process runs as many passes."""
        batches = self.micro_batches(rows)
        for _ in range(self.lockstep_passes(len(batches))):  # FSDP: as many passes as every process
            self.idle_pass(temperature)
        for batch in batches:
            yield batch, self.logprobs([rows[i] for i in batch], grad=True, temperature=temperature)

    def lockstep_passes(self, passes: int) -> int:
        """How many passes this process must add to its ``passes`` so that every process runs as
        many: under FSDP each pass gathers the sharded weights with the others (0 otherwise)."""
        if not self.fsdp:
            return 0
        (most,) = max_over_processes([passes])
        return int(most) - passes

    def idle_pass(self, temperature: float = 1.0) -> None:
        """A pass with gradient over one token, adding nothing to the gradient: the share of a
        micro-batch this process does not have, so that FSDP's gathers and reductions line up."""
        with self._training_mode(True):
            (lp,) = self.policy.score_ids([[0]], [[0]], [{}], temperature)
            (lp.sum() * 0.0).backward()

    @contextlib.contextmanager
    def _training_mode(self, grad: bool) -> Iterator[None]:
        """``train()`` for passes with gradient (gradient checkpointing runs only in training mode;
        the models have no dropout, so nothing else changes), ``eval()`` otherwise."""
        self.model.train(grad)
        try:
            yield
        finally:
            self.model.eval()

    def micro_batches(self, rows: Sequence[ScoreRow], *, grad: bool = True) -> list[list[int]]:
        """Row indices per micro-batch: ``token_budget`` bounds the tokens each computes (a prefix
        every row shares, or a group of rows shares, counts once: :meth:`layout`), and
        :meth:`micro_batch_tokens` their padded size."""
        if self.micro_batch_rows:
            n = self.micro_batch_rows
            return [list(range(start, min(start + n, len(rows)))) for start in range(0, len(rows), n)]
        lengths = [row.length for row in rows]
        layout = self.layout(rows)
        if layout.shared:  # many rows fit the token budget: bound their padded size by memory, with
            # room for glibc's slack where there is (the faster allocator setting then stays)
            fit = self.memory_tokens(rows, grad=grad)
            if fit is not None and not self.returning_freed_memory:
                fit = min(fit, max(self._tokens_within_slack(rows, grad), max(lengths)))
            batches = pack_by_tokens(
                lengths,
                self.token_budget,
                shared=layout.shared,
                padded_cap=fit,
                groups=layout.group_of_rows(),
                ends=layout.ends,
            )
        else:
            batches = pack_by_tokens(lengths, self.micro_batch_tokens(rows, grad=grad))
        padded = max((len(b) * max(lengths[i] for i in b) for b in batches), default=0)
        self._return_freed_memory_if_tight(rows, padded, grad)
        return batches

    def layout(self, rows: Sequence[ScoreRow]) -> GroupLayout:
        """How the policy's engine lays a pass over all ``rows`` out (the engine's
        ``layout.of_rows``): the prefix every row shares (``shared``, 0: none) and, where rows of
        one group share more, each row's group and where its own tokens begin. For packing
        (:func:`pack_by_tokens`): an estimate over all ``rows``, since each micro-batch's pass lays
        its own rows out."""
        if not rows:
            return GroupLayout(0, (), ())
        own = max(len(row.token_ids) for row in rows) + 1
        sequences = [row.prompt_ids + row.token_ids for row in rows]
        vision = [row.vision for row in rows]
        return self.policy.engine.layout.of_rows(sequences, vision, [row.group for row in rows], own=own)

    def micro_batch_tokens(self, rows: Sequence[ScoreRow], *, grad: bool = True) -> int:
        """The padded-token budget of a micro-batch of ``rows`` that shares no prefix: ``token_budget``,
        or fewer where a pass over that many tokens would not fit in the memory budget
        (:meth:`memory_tokens`)."""
        fit = self.memory_tokens(rows, grad=grad)
        return self.token_budget if fit is None else min(self.token_budget, fit)

    def memory_tokens(self, rows: Sequence[ScoreRow], *, grad: bool = True) -> int | None:
        """The most padded tokens a micro-batch of ``rows`` may hold for its pass to fit in the memory
        budget beside the weights and optimizer (None: no memory budget). Counted as if no prefix
        were shared, which bounds a shared one too.

        For a pass with gradient where even the longest row does not fit, gradient checkpointing is
        switched on (for the rest of the run); where it does not fit checkpointed either,
        :class:`~seed_rl.train.learner.memory.MemoryBudgetError` says by how much."""
        if self.memory_budget is None or not rows:
            return None
        plan = plan_micro_batch(
            self.memory,
            budget=self.memory_budget,
            static=self.static_bytes,
            longest=max(row.length for row in rows),
            kept_share=max((len(row.token_ids) + 1) / max(1, row.length) for row in rows),
            grad=grad,
            checkpointed=self.gradient_checkpointing,
        )
        if plan.checkpointed and grad and not self.gradient_checkpointing:
            if self.fsdp:  # one process recomputing layers the others do not would break the lockstep
                raise MemoryBudgetError(
                    f"{plan.reason}; under FSDP gradient checkpointing is not switched on for one process "
                    "alone: set gradient_checkpointing=true"
                )
            print(f"gradient checkpointing on: {plan.reason}", flush=True)
            self._enable_checkpointing()
        return plan.tokens

    def _return_freed_memory_if_tight(self, rows: Sequence[ScoreRow], tokens: int, grad: bool) -> None:
        """Switch glibc to returning freed activations at once (slower) only where its default
        slack (:data:`~seed_rl.train.learner.memory.GLIBC_SLACK`) over the largest micro-batch (``tokens`` padded
        tokens) would overflow the budget; a budget with room keeps the faster default. (Not on a GPU:
        its activations are not glibc's.)"""
        if self.returning_freed_memory or self.memory_budget is None or not rows or self.policy.device.type != "cpu":
            return
        if tokens > self._tokens_within_slack(rows, grad) and return_freed_memory_to_os():
            self.returning_freed_memory = True
            print("memory budget: freed activations now go back to the OS at once (slower, smaller peak)", flush=True)

    def _tokens_within_slack(self, rows: Sequence[ScoreRow], grad: bool) -> int:
        """Padded tokens of a micro-batch of ``rows`` that fit in the memory budget with glibc's
        default slack on top (so the faster allocator setting can stay)."""
        assert self.memory_budget is not None
        mode = "no_grad" if not grad else "checkpointed" if self.gradient_checkpointing else "grad"
        free = (self.memory_budget - self.static_bytes) / GLIBC_SLACK[mode]
        longest = max(row.length for row in rows)
        kept_share = max((len(row.token_ids) + 1) / max(1, row.length) for row in rows)
        return self.memory.tokens_that_fit(free, longest, kept_share, mode)

    @contextlib.contextmanager
    def _scoring_model(self, reference: bool) -> Iterator[TransformersPolicy]:
        if not reference:
            yield self.policy
        elif self.peft_model is not None:
            with self.peft_model.disable_adapter():
                yield self.policy
        elif self._reference_model is not None:
            ref = TransformersPolicy(
                self._reference_model, self.policy.tokenizer, image_processor=self.policy.image_processor
            )
            yield ref
        else:
            raise RuntimeError("this learner keeps no reference model (keep_reference=False)")

    @contextlib.contextmanager
    def initial_weights(self) -> Iterator[TransformersPolicy]:
        """The policy as it was when training began (LoRA: adapters off; full: the frozen copy)."""
        with self._scoring_model(reference=True) as policy:
            yield policy

    # ------------------------------------------------------------ updating
    def step(self) -> float:
        """Clip the accumulated gradient, take one optimizer step, zero the gradient; returns the
        gradient norm before clipping."""
        if not self.fsdp:  # FSDP has summed (reduce-scattered) them already
            sum_gradients(
                self.trainable
            )  # over data-parallel processes (seed_rl.train.learner.distributed); a no-op alone
        norm = torch.nn.utils.clip_grad_norm_(self.trainable, self.grad_clip if self.grad_clip > 0 else float("inf"))
        norm = whole(norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.optimizer_steps += 1
        return float(norm)

    # --------------------------------------------------------------- state
    def trainable_state(self) -> dict[str, torch.Tensor]:
        """The trained weights by name (the adapters, or every parameter with full fine-tuning)."""
        return {name: whole(p).detach().clone() for name, p in self.model.named_parameters() if p.requires_grad}

    def optimizer_state(self) -> dict[str, Any]:
        """The optimizer's state, whole (under FSDP gathered from every process, which must all ask)."""
        if not self.fsdp:
            return self.optimizer.state_dict()
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

        options = StateDictOptions(full_state_dict=True, cpu_offload=True)
        return get_optimizer_state_dict(self.model, self.optimizer, options=options)

    def load_optimizer_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`optimizer_state` returned (under FSDP each process keeps its shard)."""
        if not self.fsdp:
            self.optimizer.load_state_dict(state)
            return
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

        options = StateDictOptions(full_state_dict=True)
        set_optimizer_state_dict(self.model, self.optimizer, optim_state_dict=state, options=options)

    def load_trainable_state(self, state: dict[str, torch.Tensor]) -> None:
        params = dict(self.model.named_parameters())
        missing = [name for name, p in params.items() if p.requires_grad and name not in state]
        if missing:
            raise KeyError(f"the checkpoint lacks {len(missing)} trained weights, e.g. {missing[0]}")
        with torch.no_grad():
            for name, tensor in state.items():
                target = params[name]
                if hasattr(target, "device_mesh"):  # sharded: this process keeps its own shard
                    from torch.distributed.tensor import distribute_tensor

                    tensor = distribute_tensor(tensor.to(target.dtype), target.device_mesh, target.placements)
                target.copy_(tensor)


def shard_model(model: torch.nn.Module) -> None:
    """FSDP2 over the data-parallel processes: each decoder layer, then the rest of the model, keeps
    1/N of its weights and gathers the others for its passes. Gradients are reduce-scattered as sums
    (divide factor 1): every loss is already a mean over the tokens of all processes."""
    from torch.distributed.fsdp import fully_shard

    layers = next(
        (m for name, m in model.named_modules() if name.endswith("layers") and isinstance(m, torch.nn.ModuleList)),
        None,
    )
    if layers is None:
        raise ValueError("fsdp: found no decoder layers (a ModuleList named ...layers) to shard")
    for module in [*layers, model]:
        fully_shard(module)
        module.set_gradient_divide_factor(1.0)  # each sharded module reduces its own gradients ...
        module.set_force_sum_reduction_for_comms(True)  # ... with a plain SUM (gloo has no PREMUL_SUM)


def _dtype_bytes(model: Any) -> int:
    """Bytes per activation: those of the model's (base) weights."""
    return int(getattr(model, "dtype", torch.float32).itemsize)


def _weight_bytes(model: Any) -> int:
    tensors = [*model.parameters(), *model.buffers()]
    return sum(t.numel() * t.element_size() for t in tensors)


def total_layers(model: Any) -> int:
    """The decoder layers of ``model`` (of its text model, for a vision-language model)."""
    config = getattr(model.config, "text_config", None) or model.config
    return int(config.num_hidden_layers)
