"""Tiny randomly initialised models (``model=tiny-random``): for tests and quick checks.

A byte-level BPE tokenizer trained in-process on the project's own prompt text (the
benchmark envs' prompts and the analyzer prompt), a 2-layer Llama, and a 2-layer Qwen2.5-VL with
a tiny vision tower. Nothing is downloaded; building one takes about a second. They
learn nothing useful: they exercise every code path of sampling, scoring and training.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import torch

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}{{ '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{% else %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{{ '<|im_end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|image_pad|>",
    "<|vision_end|>",
    "<|video_pad|>",
]


#: Fixed texts of the tiny tokenizer's corpus (the analyzer prompts as they were first written).
CORPUS_FILE = Path(__file__).resolve().parent / "tiny_tokenizer_corpus.json"
#: The envs whose prompts the tiny tokenizer is trained on. Fixed, so that a new env's prompt does
#: not change the tiny model's vocabulary (and with it every tiny-random run and checkpoint).
TOKENIZER_ENVS = ("seed/ALFWorld-v0", "seed/WebShop-v0", "seed/SearchQA-v0", "seed/Sokoban-v0", "seed/EZPoints-v0")


def _corpus() -> list[str]:
    from seed_agent.prompts import PromptBuilder, prompt_spec

    texts = []
    for env in TOKENIZER_ENVS:
        for style in ("think", "act"):
            prompt = PromptBuilder(prompt_spec(env), style=style).build("find the goal", "You see a room.", ["look"])
            texts.append(prompt.render())
    # the analyzer prompts as first written: editing the analyzer prompt leaves the vocabulary as it is
    texts += json.loads(CORPUS_FILE.read_text(encoding="utf-8"))["analyzer_prompts"]
    texts.append('{"episode_summary": "...", "episode_skill": "...", "step_skills": [{"step": 1, "skill": "..."}]}')
    return texts * 4


@functools.cache
def tiny_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(_corpus(), trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tokenizer.chat_template = CHATML
    return tokenizer


def tiny_llama(seed: int = 0, max_positions: int = 4096, **shape: int):
    """A tiny random Llama and its tokenizer; ``shape`` overrides config sizes (e.g. vLLM's CPU
    attention wants ``head_dim=32``)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = tiny_tokenizer()
    sizes = {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        **shape,
    }
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        max_position_embeddings=max_positions,
        initializer_range=0.3,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=False,
        **sizes,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config).eval()
    return model, tokenizer


def tiny_qwen_vl(seed: int = 0):
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tokenizer = tiny_tokenizer()
    vocab = tokenizer.get_vocab()
    config = Qwen2_5_VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 4096,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 1, 1]},
            "initializer_range": 0.3,
            "tie_word_embeddings": False,
            "bos_token_id": None,
            "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id,
        },
        vision_config={
            "depth": 1,
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_heads": 2,
            "out_hidden_size": 32,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "window_size": 56,
            "fullatt_block_indexes": [0],
            "in_channels": 3,
        },
        image_token_id=vocab["<|image_pad|>"],
        video_token_id=vocab["<|video_pad|>"],
        vision_start_token_id=vocab["<|vision_start|>"],
        vision_end_token_id=vocab["<|vision_end|>"],
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = Qwen2_5_VLForConditionalGeneration(config).eval()
    image_processor = Qwen2VLImageProcessorPil(
        min_pixels=56 * 56, max_pixels=112 * 112, patch_size=14, merge_size=2, temporal_patch_size=2
    )
    return model, tokenizer, image_processor


def tiny_random_policy(seed: int = 0, *, vlm: bool = False, batch_size: int = 8):
    """A :class:`~seed_agent.policies.hf.TransformersPolicy` over a tiny random Llama (or Qwen2.5-VL)."""
    from seed_agent.policies.hf import TransformersPolicy

    if vlm:
        model, tokenizer, image_processor = tiny_qwen_vl(seed)
        return TransformersPolicy(
            model, tokenizer, image_processor=image_processor, batch_size=batch_size, tokens_per_image=16
        )
    model, tokenizer = tiny_llama(seed)
    return TransformersPolicy(model, tokenizer, batch_size=batch_size)
