"""Random-weight models of real shapes (``model=random:<preset>``): the presets' shapes on the meta
device (no memory), the names, and a shrunken preset end to end on the CPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from seed_agent.models import load_named_policy  # noqa: E402
from seed_agent.policies.base import SamplingParams  # noqa: E402
from seed_agent.random_models import PRESETS, preset_of, random_config, random_policy  # noqa: E402
from seed_rl.config import ConfigError, load_config  # noqa: E402

#: Each preset's sizes as the model card's config.json gives them: hidden, intermediate, layers,
#: attention heads, KV heads.
CARDS = {"qwen2.5-0.5b": (896, 4864, 24, 14, 2), "qwen2.5-1.5b": (1536, 8960, 28, 12, 2)}
#: The parameter counts the model cards state (total, non-embedding), in billions to two places.
STATED = {"qwen2.5-0.5b": (0.49, 0.36), "qwen2.5-1.5b": (1.54, 1.31)}
VOCAB = 151_936


def block_parameters(hidden: int, intermediate: int, heads: int, kv_heads: int) -> int:
    """One Qwen2 decoder layer, by hand: q/k/v with biases, o without, the gated MLP, two RMSNorms."""
    head = hidden // heads
    q = hidden * hidden + hidden
    kv = 2 * (hidden * kv_heads * head + kv_heads * head)
    o = hidden * hidden
    mlp = 3 * hidden * intermediate
    return q + kv + o + mlp + 2 * hidden


@pytest.mark.parametrize("preset", sorted(CARDS))
def test_preset_shapes_match_the_model_cards(preset: str) -> None:
    from transformers import Qwen2ForCausalLM

    hidden, intermediate, layers, heads, kv_heads = CARDS[preset]
    config = random_config(preset)
    assert (config.hidden_size, config.intermediate_size, config.num_hidden_layers) == (hidden, intermediate, layers)
    assert (config.num_attention_heads, config.num_key_value_heads) == (heads, kv_heads)
    assert config.vocab_size == VOCAB and config.tie_word_embeddings
    assert config.rope_parameters["rope_theta"] == 1_000_000.0 and config.rms_norm_eps == 1e-6
    assert config.max_position_embeddings == 32_768 and config.hidden_act == "silu"
    with torch.device("meta"):
        model = Qwen2ForCausalLM(config)
    blocks = sum(p.numel() for p in model.model.layers.parameters())
    assert blocks == layers * block_parameters(hidden, intermediate, heads, kv_heads)
    total = sum(p.numel() for p in model.parameters())  # tied: the embedding counts once
    assert total == blocks + VOCAB * hidden + hidden
    assert model.lm_head.weight is model.model.embed_tokens.weight
    assert (round(total / 1e9, 2), round(blocks / 1e9, 2)) == STATED[preset]


def test_unknown_presets_name_the_known_ones() -> None:
    with pytest.raises(KeyError, match=r"random:qwen2\.5-0\.5b, random:qwen2\.5-1\.5b"):
        preset_of("random:qwen9")
    with pytest.raises(KeyError, match=r"known: random:qwen2\.5-0\.5b"):
        load_named_policy("random:qwen9")
    with pytest.raises(ConfigError, match=r"the random presets are: random:qwen2\.5-0\.5b"):
        load_config(None, ["model=random:qwen9"])
    with pytest.raises(ConfigError, match="random:PRESET"):
        load_config(None, ["model=qwen"])
    with pytest.raises(ConfigError, match="rollout_engine=vllm needs a model on disk"):
        load_config(None, ["model=random:qwen2.5-0.5b", "rollout_engine=vllm"])
    with pytest.raises(TypeError, match="unknown preset fields"):
        random_config("qwen2.5-0.5b", hidden=8)
    assert load_config(None, ["model=random:qwen2.5-1.5b"]).model == "random:qwen2.5-1.5b"
    assert set(CARDS) == set(PRESETS)


#: qwen2.5-0.5b shrunk to two small layers; the vocabulary stays Qwen's.
SMALL = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}


def test_a_shrunken_preset_samples_and_scores_ids_beyond_the_tokenizer() -> None:
    policy = random_policy("random:qwen2.5-0.5b", seed=3, batch_size=4, **SMALL)
    again = random_policy("random:qwen2.5-0.5b", seed=3, **SMALL)
    other = random_policy("random:qwen2.5-0.5b", seed=4, **SMALL)
    weights = policy.model.model.embed_tokens.weight
    assert torch.equal(weights, again.model.model.embed_tokens.weight)
    assert not torch.equal(weights, other.model.model.embed_tokens.weight)
    assert policy.model.config.vocab_size == VOCAB > len(policy.tokenizer)
    assert policy.device.type == "cpu" and weights.dtype == torch.float32

    from seed_agent.chat import ChatPrompt

    prompts = [ChatPrompt.from_text("You see a room."), ChatPrompt.from_text("You see a box.")]
    out = policy.generate(prompts, sampling=SamplingParams(temperature=1.0, max_new_tokens=6, seed=0))
    ids = [list(c.token_ids) for c in out]
    beyond = [i for row in ids for i in row if i >= len(policy.tokenizer)]
    assert beyond, "a 151,936-wide head over a smaller tokenizer samples ids beyond it"
    known = policy.tokenizer("look", add_special_tokens=False)["input_ids"]
    # ids the tokenizer does not know decode to nothing (what the env then reads as the reply)
    assert policy.tokenizer.decode([*beyond[:3], *known], skip_special_tokens=True) == "look"
    scored = policy.completion_logprobs(prompts, ids)
    for completion, lp in zip(out, scored, strict=True):
        assert torch.allclose(lp, torch.tensor(completion.logprobs), atol=1e-4)


def test_load_named_policy_honours_dtype_and_device() -> None:
    policy = load_named_policy("random:qwen2.5-0.5b", dtype="bfloat16", device="cpu", **SMALL)
    assert policy.model.model.embed_tokens.weight.dtype == torch.bfloat16 and policy.device.type == "cpu"
    with pytest.raises(ValueError, match="no vision tower"):
        load_named_policy("random:qwen2.5-0.5b", vlm=True, **SMALL)
