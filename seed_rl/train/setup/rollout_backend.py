"""vLLM as the rollout backend (config ``rollout_engine=vllm``): it samples the rollouts and writes the
skills, and receives the learner's weights after every update. The engine runs in this process,
or, with ``vllm_engines=N``, as N Ray actors (:mod:`seed_agent.policies.vllm_ray`).

- **LoRA** (``finetune=lora``): after each update the learner's adapter is saved under
  ``<run>/rollout_adapters/rank<R>/update-NNNNNN`` (the newest two kept) and named to the engine in a
  new ``LoRARequest`` (:meth:`VLLMPolicy.use_adapter`).
- **Full fine-tuning**: every weight goes to the engine's model with ``load_weights``.
- **Base weights the engine did not load from disk** (Stage 1 merges its adapter into the base
  model before RL) are sent once, with ``load_weights``, before the first rollout.

The learner re-scores every sampled token (``rescore=auto`` treats vLLM as a different sampler),
so the importance-sampling correction covers what remains of the precision gap.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from seed_agent.models import MODELS, is_fetched, model_dir
from seed_envs.core import MissingDataError
from seed_rl.train.learner.distributed import whole

ADAPTERS_DIR = "rollout_adapters"


def model_path(name: str) -> str:
    """The folder vLLM loads ``model`` from (an offline model must be fetched first)."""
    if name.startswith("hf:"):
        return name[3:]
    if name in MODELS:
        if not is_fetched(name):
            raise MissingDataError(model_dir(name), f"seed models fetch {name}", what=f"the {name} model")
        return str(model_dir(name))
    raise ValueError(f"rollout_engine=vllm cannot load model {name!r} from disk; use smollm2 or hf:PATH")


def base_weights(model: torch.nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """The model's own weights under their Hugging Face names, without the LoRA adapters that peft
    injected (``...q_proj.base_layer.weight`` is ``...q_proj.weight``); sharded ones gathered whole."""
    for name, tensor in model.state_dict().items():
        if "lora_" in name:
            continue
        yield name.replace(".base_layer.", "."), whole(tensor)


class VLLMRolloutBackend:
    """A :class:`~seed_agent.policies.vllm_backend.VLLMPolicy` kept in step with a learner."""

    def __init__(
        self,
        learner: Any,
        *,
        model: str,
        run_dir: Path,
        settings: dict[str, Any],
        rank: int = 0,
        ray_engines: int = 0,
    ) -> None:
        self.learner = learner
        self.lora = learner.peft_model is not None
        self.adapters = Path(run_dir) / ADAPTERS_DIR / f"rank{rank}"  # one engine (or set) per process
        lora_rank = int(learner.peft_model.peft_config["default"].r) if self.lora else 0
        self.policy: Any
        if ray_engines > 0:
            from seed_agent.policies.vllm_ray import RayVLLMPolicy

            self.policy = RayVLLMPolicy(model_path(model), engines=ray_engines, max_lora_rank=lora_rank, **settings)
        else:
            from seed_agent.policies.vllm_backend import VLLMPolicy

            self.policy = VLLMPolicy(model_path(model), max_lora_rank=lora_rank, **settings)

    def push_base_weights(self) -> None:
        """Send the learner's base weights (e.g. after Stage 1 merged an adapter into them)."""
        self.policy.load_weights(base_weights(self.learner.model))

    def sync(self, update: int) -> None:
        """Give the engine the learner's weights after ``update`` completed updates."""
        if not self.lora:
            trained = self.learner.model.named_parameters()
            self.policy.load_weights((name, whole(p)) for name, p in trained if p.requires_grad)
            return
        root = self.adapters
        folder = root / f"update-{update:06d}"
        if folder.exists():
            shutil.rmtree(folder)
        # the adapters whole (under FSDP every process gathers them), named as the PeftModel names them
        adapters = {f"base_model.model.{name}": p for name, p in self.learner.trainable_state().items()}
        self.learner.peft_model.save_pretrained(str(folder), state_dict=adapters)
        self.policy.use_adapter(folder)
        for old in sorted(p for p in root.iterdir() if p.name < folder.name)[:-1]:
            shutil.rmtree(old, ignore_errors=True)  # the newest two stay: the one in use and the last

    def close(self) -> None:
        close = getattr(self.policy, "close", None)
        if close is not None:
            close()


def start_rollout_backend(cfg: Any, learner: Any, run_dir: Path, *, rank: int = 0) -> VLLMRolloutBackend:
    """The run's rollout backend (``cfg``: a :class:`~seed_rl.config.TrainConfig`), started from the model's
    folder, with the weights Stage 1 merged sent to it."""
    settings = {
        "dtype": cfg.vllm_dtype,
        "seed": cfg.seed + rank,
        "max_model_len": learner.context_length,
        "gpu_memory_utilization": cfg.vllm_memory_utilization if torch.cuda.is_available() else None,
    }
    backend = VLLMRolloutBackend(
        learner, model=cfg.model, run_dir=run_dir, settings=settings, rank=rank, ray_engines=cfg.vllm_engines
    )
    if cfg.sft:
        backend.push_base_weights()
    return backend
