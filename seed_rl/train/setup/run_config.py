"""A run folder's config: what a new run records, and what a resumed run may change.

``seed train`` writes the resolved config to ``run_dir/config.yaml``; ``seed train --resume``
continues only under a config that trains the same thing.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from seed_agent.models import resolve_device, resolve_dtype
from seed_rl.config import ConfigError, TrainConfig

#: Config keys that may change when a run is resumed (the rest must match the run's config.yaml).
RESUMABLE_KEYS = (
    "updates",
    "progress",
    "run_dir",
    "tensorboard",
    "wandb",
    "workers",
    "env_backend",
    "threads",
    "vllm_memory_utilization",
    "device",
)


def inert_keys(saved: dict[str, Any], now: dict[str, Any]) -> set[str]:
    """Keys that cannot change what a run trains: Stage 1's settings (``sft_*``) in a run without
    Stage 1, before and now (so that retuning SEED's Stage 1 in a shared config leaves the GRPO
    runs of that config resumable and reusable)."""
    if saved.get("sft", False) or now.get("sft", False):
        return set()
    return {key for key in now if key.startswith("sft_")}


def resolve_run_config(cfg: TrainConfig, run_dir: Path, *, resume: bool) -> TrainConfig:
    """The config a run in ``run_dir`` trains with, written to its ``config.yaml``: ``device`` and
    ``dtype`` resolved where they say ``auto`` (so the run records, and resumes with, what was
    chosen here). A new run refuses a folder that holds one; a resumed run refuses a config whose
    keys differ from the saved one's, apart from :data:`RESUMABLE_KEYS` and :func:`inert_keys`."""
    try:  # before any work: device=cuda where torch sees no GPU is refused here
        device = resolve_device(cfg.device)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    if cfg.device == "auto":  # the run records, and resumes with, what auto chose here
        cfg = dataclasses.replace(cfg, device=device)
        print(f"device=auto: {device}", flush=True)
    if cfg.dtype == "auto":  # the run records, and resumes with, what auto chose here
        cfg = dataclasses.replace(cfg, dtype=resolve_dtype(cfg.dtype, device))
        native = "this machine computes bf16 natively" if cfg.dtype == "bfloat16" else "no native bf16 here"
        print(f"dtype=auto: {cfg.dtype} ({native})", flush=True)
    saved = run_dir / "config.yaml"
    if resume:
        if not saved.is_file():
            raise ConfigError(f"--resume: {saved} does not exist; start the run without --resume")
        before = yaml.safe_load(saved.read_text(encoding="utf-8"))
        now, defaults = cfg.to_dict(), TrainConfig().to_dict()
        # a key the run's config lacks (added to the library since) had its default then
        may_change = {*RESUMABLE_KEYS, *inert_keys(before, now)}
        changed = [k for k in now if k not in may_change and before.get(k, defaults[k]) != now[k]]
        if changed:
            raise ConfigError(
                f"--resume: these keys differ from {saved}: {', '.join(changed)}; only "
                f"{', '.join(RESUMABLE_KEYS)} may change when resuming"
            )
    elif (run_dir / "metrics.jsonl").is_file():
        raise ConfigError(f"{run_dir} already holds a run; pass --resume to continue it, or another run_dir")
    run_dir.mkdir(parents=True, exist_ok=True)
    saved.write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False), encoding="utf-8")
    return cfg
