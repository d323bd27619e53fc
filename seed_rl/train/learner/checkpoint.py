"""Checkpoints: everything a run needs to continue as if it had never stopped.

A checkpoint is a directory ``<run>/checkpoints/update-NNNNNN`` (N: updates completed),
written in a staging directory and renamed into place, so a run killed while saving
leaves the previous checkpoint intact. It holds:

- ``trainable.safetensors``: the adapters (LoRA) or every weight (full fine-tuning);
- ``optimizer.pt``: the optimizer's state;
- ``rng.pt``: the states of Python's, NumPy's and torch's global generators;
- ``state.json``: the update count, the skill library, and the number of metric lines
  written so far (``metrics.jsonl`` is cut back to it on resume).

Rollout sampling and task choice are seeded from ``(seed, update)``, so the update count
is also the data loader's position.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seed_envs.files import staged_dir
from seed_rl.train.learner.learner import Learner

_NAME = re.compile(r"^update-(\d{6})$")
#: What a checkpoint holds beside its weights and ``state.json``, which only continuing the run reads
#: (``seed pack --resumable`` copies them; a pack of the weights alone does not resume).
RESUME_FILES = ("optimizer.pt", "rng.pt")


def checkpoint_dir(run_dir: Path, update: int) -> Path:
    return Path(run_dir) / "checkpoints" / f"update-{update:06d}"


def list_checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """Complete checkpoints of a run, oldest first."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    found = []
    for path in root.iterdir():
        match = _NAME.match(path.name)
        if match and (path / "state.json").is_file():
            found.append((int(match.group(1)), path))
    return sorted(found)


def latest_checkpoint(run_dir: Path) -> Path | None:
    found = list_checkpoints(run_dir)
    return found[-1][1] if found else None


def save_checkpoint(
    run_dir: Path,
    update: int,
    learner: Learner,
    state: dict[str, Any],
    keep: int = 2,
    *,
    weights: dict[str, torch.Tensor] | None = None,
    optimizer_state: dict[str, Any] | None = None,
) -> Path:
    """Write the checkpoint after ``update`` completed updates; keep the newest ``keep``. Under FSDP
    every process gathers ``weights`` and ``optimizer_state`` (the learner's, whole) and the main
    process passes them here."""
    from safetensors.torch import save_file

    weights = learner.trainable_state() if weights is None else weights
    optimizer_state = learner.optimizer_state() if optimizer_state is None else optimizer_state
    target = checkpoint_dir(run_dir, update)
    with staged_dir(target, replace=True) as staging:
        save_file({k: v.contiguous() for k, v in weights.items()}, str(staging / "trainable.safetensors"))
        torch.save(optimizer_state, staging / "optimizer.pt")
        torch.save(
            {
                "python": random.getstate(),
                "numpy": np.random.get_state(),
                "torch": torch.get_rng_state(),
                "optimizer_steps": learner.optimizer_steps,
            },
            staging / "rng.pt",
        )
        (staging / "state.json").write_text(json.dumps({"update": update, **state}, indent=1), encoding="utf-8")
    for _, old in list_checkpoints(run_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return target


def load_checkpoint(path: Path, learner: Learner) -> dict[str, Any]:
    """Restore the learner and the global generators from ``path``; returns ``state.json``."""
    from safetensors.torch import load_file

    learner.load_trainable_state(load_file(str(path / "trainable.safetensors")))
    # (read onto the CPU: the optimizer moves its state to its parameters' device, so that a run saved
    # on a GPU resumes on a machine without one)
    learner.load_optimizer_state(torch.load(path / "optimizer.pt", weights_only=False, map_location="cpu"))
    rng = torch.load(path / "rng.pt", weights_only=False)
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])
    torch.set_rng_state(rng["torch"])
    learner.optimizer_steps = int(rng["optimizer_steps"])
    return json.loads((path / "state.json").read_text(encoding="utf-8"))
