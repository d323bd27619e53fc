"""vLLM engines as Ray actors: rollouts sampled on other GPUs or nodes, kept in step with the
learner the same way as the in-process engine (:mod:`seed_agent.policies.vllm_backend`).

Each actor holds one :class:`VLLMPolicy`. A batch of prompts is cut into one contiguous share
per actor and the shares run at once. A sync needs no shared file system: an adapter's files
travel as bytes and each actor writes them into its own temporary folder before naming them in
a new ``LoRARequest``; full weights travel once through Ray's object store to every actor.

The actors join the cluster the process is attached to (``RAY_ADDRESS``, or ``ray.init``), or a
private local instance (:func:`seed_envs.vector.ray_worker.ensure_ray`). Each asks for one GPU
where the cluster has GPUs, and one CPU otherwise, unless ``actor_options`` says otherwise.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from seed_agent.chat import ChatPrompt
from seed_agent.policies.base import Completion, PromptImages, SamplingParams


class EngineActor:
    """The body of one Ray actor: a vLLM engine and the adapter folders written for it."""

    def __init__(self, model: str, engine_kwargs: dict[str, Any]) -> None:
        from seed_agent.policies.vllm_backend import VLLMPolicy

        self.policy = VLLMPolicy(model, **engine_kwargs)
        self.folder = Path(tempfile.mkdtemp(prefix="seed-vllm-adapters-"))

    def generate(
        self, prompts: Sequence[ChatPrompt], images: Sequence[PromptImages | None] | None, sampling: SamplingParams
    ) -> list[Completion]:
        return self.policy.generate(prompts, images, sampling)

    def use_adapter_files(self, files: dict[str, bytes]) -> int:
        """Write an adapter's files here and sample with them from the next request on."""
        target = self.folder / f"sync-{self.policy.syncs + 1:06d}"
        target.mkdir()
        for name, data in files.items():
            (target / name).write_bytes(data)
        used = self.policy.use_adapter(target)
        for old in sorted(p for p in self.folder.iterdir() if p.name < target.name):
            shutil.rmtree(old, ignore_errors=True)
        return used

    def load_weights(self, weights: list[tuple[str, Any]]) -> None:
        self.policy.load_weights(weights)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class RayVLLMPolicy:
    """``engines`` vLLM engines in Ray actors, behind one :class:`~seed_agent.policies.base.Policy`."""

    def __init__(
        self,
        model: str,
        *,
        engines: int = 1,
        actor_options: dict[str, Any] | None = None,
        seed: int = 0,
        **engine_kwargs: Any,
    ) -> None:
        from seed_envs.vector.ray_worker import ensure_ray

        if engines < 1:
            raise ValueError(f"engines must be >= 1, got {engines}")
        self._ray = ensure_ray()
        options = actor_options
        if options is None:
            options = {"num_gpus": 1} if self._ray.cluster_resources().get("GPU", 0) >= 1 else {"num_cpus": 1}
        actor = self._ray.remote(EngineActor).options(**options)
        self.actors = [actor.remote(model, {**engine_kwargs, "seed": seed + i}) for i in range(engines)]
        self.syncs = 0

    def generate(
        self,
        prompts: Sequence[ChatPrompt],
        images: Sequence[PromptImages | None] | None = None,
        sampling: SamplingParams | None = None,
    ) -> list[Completion]:
        sampling = sampling or SamplingParams()
        n, k = len(prompts), len(self.actors)
        bounds = [round(i * n / k) for i in range(k + 1)]
        calls = []
        for actor, start, stop in zip(self.actors, bounds, bounds[1:], strict=False):
            if stop > start:
                share = None if images is None else list(images[start:stop])
                # request i keeps seed + i, as in one engine
                seeded = sampling
                if sampling.seed is not None:
                    seeded = dataclasses.replace(sampling, seed=sampling.seed + start)
                calls.append(actor.generate.remote(list(prompts[start:stop]), share, seeded))
        return [completion for part in self._ray.get(calls) for completion in part]

    def use_adapter(self, folder: str | Path) -> int:
        """Send the PEFT adapter in ``folder`` to every engine; each samples with it from its next
        request on (a new ``LoRARequest`` id there)."""
        files = {path.name: path.read_bytes() for path in Path(folder).iterdir() if path.is_file()}
        self._ray.get([actor.use_adapter_files.remote(files) for actor in self.actors])
        self.syncs += 1
        return self.syncs

    def load_weights(self, weights: Iterable[tuple[str, Any]]) -> None:
        """Send full weights (Hugging Face names) to every engine, once through the object store."""
        shared = self._ray.put([(name, tensor.detach().cpu()) for name, tensor in weights])
        self._ray.get([actor.load_weights.remote(shared) for actor in self.actors])
        self.syncs += 1

    def close(self) -> None:
        try:
            self._ray.get([actor.close.remote() for actor in self.actors])
        finally:
            for actor in self.actors:
                self._ray.kill(actor)
            self.actors = []
