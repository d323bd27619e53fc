"""How many bytes one pass over a micro-batch needs: an upper-bound estimate from the model's config.

Training memory is dominated by what autograd saves in the forward pass for the backward,
which grows with the tokens of the micro-batch. The estimate counts, per token and per decoder
layer the backward reaches, the tensors a Llama/Qwen-style layer saves (read off
``torch.autograd.graph.saved_tensors_hooks`` on CPU with ``sdpa`` attention), then adds the
backward's working set and the kept logits. The margins below are calibrated by
``scripts/bench_memory.py``, which measures the peak RSS of real passes against these numbers.

Notation: ``h`` hidden size, ``i`` intermediate size, ``H`` attention heads, ``d`` head size,
``V`` vocabulary, ``s`` bytes per activation (4 in fp32, 2 in bf16), ``r`` the LoRA rank, ``n``
the adapted linear layers per decoder layer, ``N`` the layers the backward reaches (all of them,
or with LoRA in the top ``lora_layers`` only, those), ``T`` the padded sequence length and ``K``
the kept logit positions of a row (its completion plus one).
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

#: The linear layers of a Llama/Qwen decoder layer, by the input they read.
ATTENTION_INPUT = ("q_proj", "k_proj", "v_proj")  # the normed residual (h)
MLP_INPUT = ("gate_proj", "up_proj")  # the normed residual (h)
LINEARS = (*ATTENTION_INPUT, "o_proj", *MLP_INPUT, "down_proj")

#: Extra layers of activations the backward holds at once: the gradients of the layer being
#: differentiated (the size of its saved activations) beside what is still saved.
BACKWARD_WORKSPACE_LAYERS = 1.0
#: float32 copies of the kept logits alive at the worst moment: the log-softmax output saved
#: for the backward, and in the backward the gradient of the gather, of the log-softmax and of
#: the temperature division.
LOGIT_COPIES = 3
#: Multiplier on the whole estimate for the allocator's slack (freed blocks it keeps, rounding);
#: the measured peak stays below the estimate with this margin (scripts/bench_memory.py).
SAFETY = 1.15
#: Bytes per element of the attention mask a padded batch carries (float, one copy per layer).
MASK_BYTES = 4
#: Allocations at least this large get a mapping of their own, returned to the OS when freed.
MMAP_THRESHOLD = 1 << 20
#: Peak RSS over the bytes in use under glibc's default allocator, per pass mode (measured by
#: ``scripts/bench_memory.py --glibc-default`` on SmolLM2: 1.6x plain, about 5x checkpointed;
#: no-grad passes are given the plain figure with room). :func:`return_freed_memory_to_os` brings
#: the peak down to the bytes in use, but a pass then runs about 1.3x slower (page faults on fresh
#: mappings), so the learner switches it on only where the default's slack would overflow the budget.
GLIBC_SLACK = {"grad": 1.6, "checkpointed": 5.0, "no_grad": 2.0}


def return_freed_memory_to_os(threshold: int = MMAP_THRESHOLD) -> bool:
    """Have glibc serve every allocation of ``threshold`` bytes or more with its own ``mmap``, so
    that a freed activation goes back to the OS at once; returns False where that is not possible
    (another C library).

    By default glibc raises its mmap threshold to the largest block freed so far (up to 32 MiB),
    after which activation-sized tensors come from the heap, whose freed middle it keeps. Measured
    by ``scripts/bench_memory.py --glibc-default`` on SmolLM2, the peak RSS of a training pass was
    then 1.6x that with this setting, and about 5x with gradient checkpointing (every recomputed
    layer left its pages behind); with it the peak RSS follows the bytes in use, but a SmolLM2
    pass took about 1.3x as long (8.8-11.4 s against 6.6-7.8 s for 4 x 750 tokens). The setting
    is process-wide.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    m_mmap_threshold = -3  # from glibc's malloc.h
    return bool(mallopt(m_mmap_threshold, int(threshold)))


def peak_rss_bytes() -> int:
    """This process's peak resident set size since it started, or since :func:`reset_peak_rss`.

    Read from ``VmHWM`` in ``/proc/self/status``, not ``getrusage``: Linux carries ``ru_maxrss``
    across ``execve``, so a subprocess spawned by a large process (a test runner that has loaded a
    model) reports its parent's peak as its own. Falls back to ``ru_maxrss`` off Linux.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB; macOS bytes


def reset_peak_rss() -> bool:
    """Start :func:`peak_rss_bytes` again from the current RSS (Linux's ``clear_refs``); returns
    False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


class MemoryBudgetError(RuntimeError):
    """A pass cannot fit in the memory budget; the message names the row, the budget and the fix."""


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a decoder-only transformer that set its activation memory."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    head_dim: int
    vocab: int
    dtype_bytes: int = 4

    @classmethod
    def from_config(cls, config: Any, dtype_bytes: int = 4) -> ModelShape:
        """From a transformers config; a vision-language config's ``text_config`` is read."""
        text = getattr(config, "text_config", None) or config
        heads = int(text.num_attention_heads)
        hidden = int(text.hidden_size)
        head_dim = getattr(text, "head_dim", None) or hidden // heads
        return cls(
            hidden=hidden,
            intermediate=int(text.intermediate_size),
            layers=int(text.num_hidden_layers),
            heads=heads,
            head_dim=int(head_dim),
            vocab=int(text.vocab_size),
            dtype_bytes=int(dtype_bytes),
        )


@dataclass(frozen=True)
class Training:
    """What the backward reaches: ``layers`` decoder layers (from the lowest trained one up),
    the linear layers whose weights (``lora_rank=0``: full fine-tuning) or adapters train."""

    layers: int
    trained: frozenset[str]
    lora_rank: int = 0
    adapter_bytes: int = 4  # LoRA weights stay fp32; a bf16 input is cast to fp32 per adapter

    @classmethod
    def lora(cls, shape: ModelShape, targets: Collection[str], rank: int, top_layers: int = 0) -> Training:
        reached = top_layers if 0 < top_layers < shape.layers else shape.layers
        return cls(layers=reached, trained=frozenset(targets), lora_rank=int(rank))

    @classmethod
    def full(cls, shape: ModelShape) -> Training:
        return cls(layers=shape.layers, trained=frozenset((*LINEARS, "lm_head")))


def layer_bytes(shape: ModelShape, training: Training) -> int:
    """Bytes autograd saves per token in one decoder layer (the attention mask aside)::

        s * (2h + 2        the two RMSNorms' inputs and 1/rms
             + 4Hd + H     attention: q, k, v (repeated to H heads under a padding mask), its
                           output (also o_proj's input) and the log-sum-exp
             + 3i          the MLP: gate (the SiLU's input), SiLU output, up
             + h [q, k or v trained] + h [gate or up trained] + i [down trained])
                           the inputs of trained linears not counted above
        + 4 * r * n        each adapter's low-rank activation (fp32)

    When activations are narrower than the fp32 adapters, each adapter casts its input to fp32
    and saves that copy instead: ``4 * width`` per adapted linear.
    """
    h, i, s = shape.hidden, shape.intermediate, shape.dtype_bytes
    attention = shape.heads * shape.head_dim
    trained = training.trained
    elements = 2 * h + 2 + 4 * attention + shape.heads + 3 * i
    widths = {**dict.fromkeys(ATTENTION_INPUT, h), "o_proj": 0, **dict.fromkeys(MLP_INPUT, h), "down_proj": i}
    total = s * elements
    lora = training.lora_rank > 0
    if lora and training.adapter_bytes > s:  # a cast copy per adapter (o_proj's too)
        widths["o_proj"] = attention
        total += sum(training.adapter_bytes * widths[name] for name in LINEARS if name in trained)
    else:
        groups = (ATTENTION_INPUT, MLP_INPUT, ("down_proj",))
        total += sum(s * widths[group[0]] for group in groups if trained.intersection(group))
    if lora:
        total += training.adapter_bytes * training.lora_rank * sum(name in trained for name in LINEARS)
    return total


@dataclass(frozen=True)
class MemoryModel:
    """Upper-bound bytes of a pass over ``rows`` rows padded to ``seq_len`` tokens, keeping ``kept``
    logit positions per row, in three modes:

    - ``grad``: ``SAFETY * rows * (T * [(N + w) * (layer_bytes + 4T) + s(h + 1)] + c * 4KV)``:
      the saved activations of ``N`` layers plus ``w = BACKWARD_WORKSPACE_LAYERS`` layers of
      backward workspace, each with its float mask copy (``4T`` per token), the final norm, and
      ``c = LOGIT_COPIES`` float copies of the kept logits;
    - ``checkpointed`` (gradient checkpointing): ``N`` saved layer inputs (``s*h`` per token)
      plus one layer recomputed with its full activations and the workspace:
      ``SAFETY * rows * (T * [s*h*N + (1 + w) * (layer_bytes + 4T) + s(h + 1)] + c * 4KV)``;
    - ``no_grad``: one layer's activations live at a time, next to the residual stream:
      ``SAFETY * rows * (T * [layer_bytes + 4T + 2sh] + c * 4KV)``.
    """

    shape: ModelShape
    training: Training

    def pass_bytes(self, rows: int, seq_len: int, kept: int, mode: str = "grad") -> int:
        per_row = seq_len * self.bytes_per_token(seq_len, mode) + self.logit_bytes(kept)
        return math.ceil(SAFETY * rows * per_row)

    def bytes_per_token(self, seq_len: int, mode: str = "grad") -> float:
        """Activation bytes per padded token (logits excluded), before the safety margin."""
        shape, s = self.shape, self.shape.dtype_bytes
        layer = layer_bytes(shape, self.training) + MASK_BYTES * seq_len
        head = s * (shape.hidden + 1)  # the final norm's input and 1/rms
        if mode == "grad":
            return (self.training.layers + BACKWARD_WORKSPACE_LAYERS) * layer + head
        if mode == "checkpointed":
            return s * shape.hidden * self.training.layers + (1 + BACKWARD_WORKSPACE_LAYERS) * layer + head
        if mode == "no_grad":
            return layer + 2 * s * shape.hidden
        raise ValueError(f"mode must be grad, checkpointed or no_grad, got {mode!r}")

    def logit_bytes(self, kept: int) -> int:
        """The float32 kept logits of one row, times the copies alive at once."""
        return LOGIT_COPIES * 4 * self.shape.vocab * kept

    def tokens_that_fit(self, budget: float, seq_len: int, kept_share: float, mode: str = "grad") -> int:
        """Padded tokens whose pass stays within ``budget`` bytes, for rows of at most ``seq_len``
        tokens that keep at most ``kept_share`` logits per token (``max(K / T)`` over the rows)."""
        per_token = SAFETY * (self.bytes_per_token(seq_len, mode) + kept_share * self.logit_bytes(1))
        return max(0, math.floor(budget / per_token))


@dataclass(frozen=True)
class Plan:
    """How a pass over some rows fits: ``tokens`` padded tokens per micro-batch, and whether it
    needs gradient checkpointing (``reason`` says why, when it was not on already)."""

    tokens: int
    checkpointed: bool
    reason: str = ""


def plan_micro_batch(
    memory: MemoryModel,
    *,
    budget: float,
    static: float,
    longest: int,
    kept_share: float,
    grad: bool,
    checkpointed: bool,
) -> Plan:
    """The padded tokens per micro-batch that fit in ``budget`` bytes beside ``static`` bytes (the
    weights and optimizer state), for rows of at most ``longest`` tokens keeping at most
    ``kept_share`` logits per token.

    A pass with gradient whose longest row does not fit plainly but fits checkpointed gets
    ``checkpointed=True``; one that fits in neither way raises :class:`MemoryBudgetError`.
    """
    free = budget - static
    mode = "no_grad" if not grad else "checkpointed" if checkpointed else "grad"
    fits = memory.tokens_that_fit(free, longest, kept_share, mode)
    reason = ""
    if fits < longest and mode == "grad":
        plain_gb = _row_gb(memory, longest, kept_share, "grad")
        mode, fits = "checkpointed", memory.tokens_that_fit(free, longest, kept_share, "checkpointed")
        reason = (
            f"a row of {longest} tokens needs {plain_gb:.2f} GB to train, over the {free / 1e9:.2f} GB that "
            f"memory_budget_gb={budget / 1e9:g} leaves beside the weights "
            f"(checkpointed: {_row_gb(memory, longest, kept_share, 'checkpointed'):.2f} GB)"
        )
    if fits < longest:
        need = _row_gb(memory, longest, kept_share, mode) + static / 1e9
        how = {"checkpointed": "to train, even with gradient checkpointing", "no_grad": "to score"}[mode]
        raise MemoryBudgetError(
            f"a row of {longest} tokens does not fit in memory_budget_gb={budget / 1e9:g} {how}: it needs "
            f"about {need:.2f} GB with the weights and optimizer state. Raise memory_budget_gb to at least "
            f"{math.ceil(need * 10) / 10:g}, or shorten the prompts (history_length, max_steps)"
            + (", or train fewer layers (lora_layers)" if grad else "")
        )
    return Plan(tokens=fits, checkpointed=mode == "checkpointed", reason=reason)


def _row_gb(memory: MemoryModel, length: int, kept_share: float, mode: str) -> float:
    return memory.pass_bytes(1, length, math.ceil(kept_share * length), mode) / 1e9
