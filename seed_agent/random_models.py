"""Randomly initialised models of real shapes (``model=random:<preset>``): for throughput runs.

A preset is the architecture of a published model, written out below from the ``config.json`` of
its model card on the Hugging Face hub (``Qwen/Qwen2.5-0.5B-Instruct``, ``Qwen/Qwen2.5-1.5B-Instruct``),
and built with transformers from that config with seeded random weights: nothing is downloaded,
and no weight file travels. Such a model learns nothing (its replies are noise); it costs what the
real one costs per token in sampling, scoring and training, which is what a throughput benchmark
measures.

**Tokenizer.** SmolLM2's, from the offline model folder where it has been fetched
(``seed models fetch smollm2``), else the tiny in-process BPE tokenizer
(:func:`seed_agent.tiny_models.tiny_tokenizer`). Neither is Qwen's, and prompts encode to other
token counts than Qwen's tokenizer would give (the tiny one's pieces are shorter).

**Vocabulary.** The model keeps the card's ``vocab_size`` (151,936), wider than either tokenizer
(49,152 and 600 entries): the LM head and the log-softmax over it cost what they cost in the real
model, a large share of a 0.5B model's work. Sampled ids beyond the tokenizer decode to nothing
(fast tokenizers skip ids they do not know; ``tests/test_random_models.py`` checks it), so a reply
is mostly empty text, and the env counts it as an invalid action; the ids themselves are scored
and trained on like any other.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: The prefix of a random model's name.
PREFIX = "random:"


@dataclass(frozen=True)
class Preset:
    """A Qwen2 architecture's sizes (the ``config.json`` fields of the same names)."""

    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    vocab_size: int = 151_936
    max_position_embeddings: int = 32_768
    rope_theta: float = 1_000_000.0
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = True
    initializer_range: float = 0.02


#: From the model cards' ``config.json`` (the -Instruct models; the base models' differ only in
#: their token ids and, for 1.5B, a longer ``max_position_embeddings``). Both have q/k/v biases,
#: SiLU-gated MLPs and RMSNorm, which the transformers Qwen2 classes build in.
PRESETS: dict[str, Preset] = {
    "qwen2.5-0.5b": Preset(
        hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2
    ),
    "qwen2.5-1.5b": Preset(
        hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2
    ),
}


def preset_of(name: str) -> str:
    """The preset of ``random:<preset>`` (or of a bare preset name); a ``KeyError`` naming the
    known presets otherwise."""
    preset = name[len(PREFIX) :] if name.startswith(PREFIX) else name
    if preset not in PRESETS:
        known = ", ".join(f"{PREFIX}{p}" for p in PRESETS)
        raise KeyError(f"unknown random model {name!r}; known: {known}")
    return preset


def random_config(preset: str, *, tokenizer: Any = None, **overrides: Any) -> Any:
    """The transformers ``Qwen2Config`` of ``preset``; ``overrides`` replace preset fields (tests
    shrink the layers with them). ``tokenizer`` gives the pad and end-of-sequence ids."""
    from transformers import Qwen2Config

    fields = asdict(PRESETS[preset_of(preset)])
    unknown = sorted(set(overrides) - set(fields))
    if unknown:
        raise TypeError(f"unknown preset fields {unknown}; allowed: {', '.join(fields)}")
    fields.update(overrides)
    rope_theta = fields.pop("rope_theta")
    ids: dict[str, Any] = {"bos_token_id": None}
    if tokenizer is not None:
        ids.update(pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
        if len(tokenizer) > fields["vocab_size"]:
            raise ValueError(f"the tokenizer has {len(tokenizer)} entries, more than vocab_size={fields['vocab_size']}")
    return Qwen2Config(
        **fields,
        **ids,
        rope_parameters={"rope_type": "default", "rope_theta": rope_theta},
        use_sliding_window=False,
        hidden_act="silu",
    )


def random_tokenizer(folder: str | None = None) -> Any:
    """The tokenizer saved in ``folder`` (:func:`seed_agent.models.load_named_policy` gives SmolLM2's
    where that model has been fetched), else the tiny in-process one."""
    if folder is not None:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(folder)
    from seed_agent.tiny_models import tiny_tokenizer

    return tiny_tokenizer()


def random_model(
    preset: str,
    *,
    seed: int = 0,
    dtype: str = "float32",
    device: str = "cpu",
    tokenizer_dir: str | None = None,
    **overrides: Any,
):
    """A model of ``preset``'s shape with random weights, and its tokenizer (:func:`random_tokenizer`).

    The weights are drawn on the CPU in float32 from ``seed`` (the same weights on every device),
    then cast to ``dtype`` and moved to ``device``.
    """
    import torch
    from transformers import Qwen2ForCausalLM

    tokenizer = random_tokenizer(tokenizer_dir)
    config = random_config(preset, tokenizer=tokenizer, **overrides)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    model = model.to(device=torch.device(device), dtype=getattr(torch, dtype)).eval()
    return model, tokenizer


def random_policy(
    name: str,
    *,
    seed: int = 0,
    dtype: str = "float32",
    device: str = "cpu",
    batch_size: int = 8,
    tokenizer_dir: str | None = None,
    **overrides: Any,
):
    """A :class:`~seed_agent.policies.hf.TransformersPolicy` over :func:`random_model`."""
    from seed_agent.policies.hf import TransformersPolicy

    preset = preset_of(name)
    model, tokenizer = random_model(
        preset, seed=seed, dtype=dtype, device=device, tokenizer_dir=tokenizer_dir, **overrides
    )
    return TransformersPolicy(model, tokenizer, batch_size=batch_size)
