"""The policies ``seed eval`` plays, and the settings each plays with.

A policy is named by one of:

- a **training run** folder (its ``config.yaml`` and ``checkpoints/update-NNNNNN``): the run's
  model with the latest complete checkpoint's weights (and, for runs with a warm start or
  ``sft=true``, those adapters merged first, as the trainer did: from the run's own
  ``adapters/`` folder where it has one, else from this machine's cache); prompts and sampling
  follow the run's config;
- a **packed** run (``seed pack RUN --out DIR``, :func:`pack_run`): the same, with only what
  evaluation reads (the config, the last checkpoint's weights, the merged adapters, the evaluations
  ``seed compare`` kept), a few MB that can be committed and evaluated (or compared) on any machine;
- a **checkpoint** folder of a run (``<run>/checkpoints/update-NNNNNN``): those weights;
- a **model name**: ``smollm2``, ``tiny-random`` or ``hf:PATH`` (untrained);
- an **OpenAI-compatible server**: ``http://HOST:PORT#MODEL`` (or ``https://``).

Runs are read, never written: evaluating a run that is still training is safe.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from seed_agent.models import POLICY_NAMES, is_policy_name
from seed_agent.policies.base import Policy
from seed_envs.files import atomic_write_text
from seed_rl.config import ConfigError, TrainConfig, from_dict

CHECKPOINT_FILES = ("state.json", "trainable.safetensors")
#: What ``seed compare`` keeps in a run's folder: its final policy's evaluation (without and with its
#: skills in the prompt) and its evaluations after some updates (``seed pack`` copies them with the run).
EVALUATION_FILES = ("evaluation.json", "evaluation_skill_prompt.json", "evaluation_curve.json")
ALLOWED = (
    "a run folder (with config.yaml), a checkpoint folder (<run>/checkpoints/update-NNNNNN), "
    f"{', '.join(POLICY_NAMES)}, random:PRESET, hf:PATH, or http(s)://HOST:PORT#MODEL"
)


class PolicyError(ValueError):
    """A policy cannot be loaded: the message names the value, or the missing file."""


@dataclass
class EvalPolicy:
    """A loaded policy and the settings (a run's config, or the defaults) it is evaluated with."""

    policy: Policy
    config: TrainConfig
    kind: str  # run | model | http
    checkpoint: Path | None = None


def is_http(spec: str) -> bool:
    return spec.startswith(("http://", "https://"))


def default_config(env_id: str, model: str, *, visual: bool = False, style: str = "act") -> TrainConfig:
    """The settings of a policy without a run: the config defaults, for ``env_id``."""
    return dataclasses.replace(TrainConfig(), env=env_id, model=model, visual=visual, style=style)


def run_paths(path: Path) -> tuple[Path, Path]:
    """``(run folder, checkpoint folder)`` of a run or checkpoint path; :class:`PolicyError` naming
    the missing file otherwise."""
    from seed_rl.train.learner.checkpoint import list_checkpoints

    if path.parent.name == "checkpoints" and path.name.startswith("update-"):
        run, checkpoint = path.parent.parent, path
    else:
        run = path
        if not (run / "config.yaml").is_file():
            raise PolicyError(f"{path} is not a run folder: {run / 'config.yaml'} not found")
        found = list_checkpoints(run)
        if not found:
            partial = sorted((run / "checkpoints").glob("update-*")) if (run / "checkpoints").is_dir() else []
            if partial:
                raise PolicyError(f"half-written checkpoint: {partial[-1] / 'state.json'} not found")
            raise PolicyError(f"{run} has no checkpoint: {run / 'checkpoints'} holds no update-NNNNNN/state.json")
        checkpoint = found[-1][1]
    if not (run / "config.yaml").is_file():
        raise PolicyError(f"{checkpoint} is not in a run folder: {run / 'config.yaml'} not found")
    for name in CHECKPOINT_FILES:
        if not (checkpoint / name).is_file():
            raise PolicyError(f"half-written checkpoint: {checkpoint / name} not found")
    return run, checkpoint


def run_config(run: Path) -> TrainConfig:
    path = run / "config.yaml"
    try:
        return from_dict(yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    except (ConfigError, yaml.YAMLError, TypeError) as error:
        raise PolicyError(f"{path} is not a valid run config: {error}") from None


def _read_weights(path: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    try:
        return load_file(str(path))
    except Exception as error:  # a truncated or foreign file: safetensors raises its own error types
        raise PolicyError(f"{path} cannot be read ({type(error).__name__}: {error}); it may be half-written") from None


@dataclass(frozen=True)
class Stage:
    """A supervised stage before RL: its name, adapter and report files, and its cache folder."""

    name: str
    adapter_file: str
    report_file: str
    cache: Path


def run_stages(cfg: TrainConfig, *, acting: bool = False) -> list[Stage]:
    """The stages ``cfg`` trains before RL, in merge order; ``acting``: only those merged into the
    acting policy (not Stage 1 where it was kept apart, ``sft_apart``)."""
    from seed_envs.paths import cache_root
    from seed_rl.train.stage1 import sft, warm_start

    stages = []
    if cfg.warm_start != "none":
        folder = cache_root() / "warm_start" / warm_start.warm_start_key(cfg)
        stages.append(Stage("warm-start", warm_start.ADAPTER_FILE, warm_start.REPORT_FILE, folder))
    if cfg.sft and not (acting and cfg.sft_apart):
        stages.append(
            Stage("Stage-1", sft.ADAPTER_FILE, sft.REPORT_FILE, cache_root() / "stage1" / sft.stage1_key(cfg))
        )
    return stages


def stage_adapters(cfg: TrainConfig, run: Path | None = None, *, acting: bool = False) -> list[tuple[str, Path]]:
    """``(stage, adapter file)`` for each adapter the trainer trained before RL, in merge order: the
    run's own copy (``RUN/adapters/<file>``) where it has one, else this machine's cache. ``acting``:
    only those merged into the acting policy (not Stage 1's where it was kept apart, ``sft_apart``)."""
    from seed_rl.train.stage1.supervised import ADAPTERS_FOLDER

    found = []
    for stage in run_stages(cfg, acting=acting):
        own = run / ADAPTERS_FOLDER / stage.adapter_file if run is not None else None
        found.append((stage.name, own if own is not None and own.is_file() else stage.cache / stage.adapter_file))
    return found


def cache_pack_adapters(pack: Path) -> list[Path]:
    """The reverse of :func:`pack_run` for its adapters: each one ``pack`` holds (``adapters/``)
    copied into this machine's cache, in the folder the pack's settings key, with the stage's report
    (the pack's own where it has one, else one that names the pack). Training with those settings
    then starts from these adapters instead of training new ones, which on another CPU or code
    version come out different. A folder that already holds another adapter is refused, naming it
    (:class:`PolicyError`); one that holds the same is left as it is. Returns the files written."""
    import shutil

    from seed_rl.train.stage1.supervised import ADAPTERS_FOLDER

    run, _ = run_paths(pack)  # (names a missing config.yaml or checkpoint)
    cfg = run_config(run)
    planned = [s for s in run_stages(cfg) if (run / ADAPTERS_FOLDER / s.adapter_file).is_file()]
    if not planned:
        raise PolicyError(f"{run} holds no adapters/ of a warm start or Stage 1: nothing to put in the cache")
    for stage in planned:
        cached = stage.cache / stage.adapter_file
        if cached.is_file() and cached.read_bytes() != (run / ADAPTERS_FOLDER / stage.adapter_file).read_bytes():
            raise PolicyError(
                f"the cache already holds another {stage.name} adapter under this key ({cached}); remove that "
                "folder first (runs trained from it would no longer find their own)"
            )
    written = []
    for stage in planned:
        stage.cache.mkdir(parents=True, exist_ok=True)
        target = stage.cache / stage.adapter_file
        if not target.is_file():
            shutil.copyfile(run / ADAPTERS_FOLDER / stage.adapter_file, target)
            written.append(target)
        report = stage.cache / stage.report_file
        if not report.is_file():
            if (run / stage.report_file).is_file():
                shutil.copyfile(run / stage.report_file, report)
            else:
                note = {"imported_from": str(run), "note": "the pack kept no report of its training", "cached": True}
                atomic_write_text(report, json.dumps(note, indent=1))
            written.append(report)
    return written


def merge_cached_adapters(cfg: TrainConfig, policy: Any, run: Path | None = None) -> None:
    """Merge the run's warm-start and Stage-1 adapters (where its acting policy had them) into
    ``policy.model``, in the order the trainer merged them before RL (each from :func:`stage_adapters`)."""
    from seed_rl.train.learner.learner import Learner, LoraSettings

    for name, adapter in stage_adapters(cfg, run, acting=True):
        if not adapter.is_file():
            raise PolicyError(
                f"the run's {name} adapter {adapter} not found (the trainer merges it before RL; it is kept in the "
                "cache of the machine that trained the run: copy it there, set SEED_CACHE_DIR, or evaluate a run "
                "packed there with `seed pack`)"
            )
        stage = Learner(policy, finetune="lora", lora=LoraSettings.from_config(cfg), keep_reference=False)
        stage.load_trainable_state(_read_weights(adapter))
        policy.model = stage.peft_model.merge_and_unload()


def load_run_policy(path: Path) -> EvalPolicy:
    """A run's (or checkpoint's) trained policy."""
    from seed_agent.models import ModelNotFetched, load_named_policy
    from seed_rl.train.learner.learner import Learner, LoraSettings

    run, checkpoint = run_paths(path)
    cfg = run_config(run)
    weights = _read_weights(checkpoint / "trainable.safetensors")
    try:
        policy = load_named_policy(
            cfg.model, dtype=cfg.dtype, vlm=cfg.visual, seed=cfg.seed, batch_size=cfg.sample_batch_size
        )
    except ModelNotFetched as error:
        raise PolicyError(f"the run's model: {error}") from None
    merge_cached_adapters(cfg, policy, run)
    learner = Learner(policy, finetune=cfg.finetune, lora=LoraSettings.from_config(cfg), keep_reference=False)
    try:
        learner.load_trainable_state(weights)
    except KeyError as error:
        raise PolicyError(f"{checkpoint / 'trainable.safetensors'} does not fit the run's model: {error}") from None
    return EvalPolicy(learner.policy, cfg, "run", checkpoint)


def pack_run(spec: Path, out: Path, *, resumable: bool = False) -> list[Path]:
    """Copy what evaluating a run reads into ``out``: its ``config.yaml``, its latest complete
    checkpoint's ``state.json`` and ``trainable.safetensors`` (not the optimizer's state), its
    ``metrics.jsonl``, Stage-1 report and ``seed compare`` evaluations where it has them, and the
    adapters merged before RL into ``out/adapters/``. ``out`` is then a run folder that ``seed eval
    --policy`` loads, and ``seed compare --runs`` compares, on any machine. Returns the files
    written; :class:`PolicyError` names a missing file (nothing is written then).

    With ``resumable``, also what continuing the run reads (``checkpoint.RESUME_FILES``): the checkpoint's
    optimizer state and generator states, the warm-start report and the skill log, so that ``seed train
    --resume run_dir=OUT`` (``updates=`` more) goes on, on a machine without the run's cache, exactly
    as the run would have (the supervised stages read ``OUT/adapters/``), and a Stage-1 adapter that
    the run kept apart from its acting policy (``sft_apart``: evaluation never merges it). The episode
    log stays behind: the resumed run's ``episodes.jsonl`` starts at its next update."""
    import shutil

    from seed_rl.train.learner.checkpoint import RESUME_FILES
    from seed_rl.train.stage1.sft import REPORT_FILE
    from seed_rl.train.stage1.supervised import ADAPTERS_FOLDER
    from seed_rl.train.stage1.warm_start import REPORT_FILE as WARM_START_REPORT

    run, checkpoint = run_paths(spec)
    cfg = run_config(run)
    copies = [(run / "config.yaml", out / "config.yaml")]
    checkpoint_files = CHECKPOINT_FILES + (RESUME_FILES if resumable else ())
    copies += [(checkpoint / name, out / "checkpoints" / checkpoint.name / name) for name in checkpoint_files]
    missing = [source for source, _ in copies if not source.is_file()]
    if missing:
        raise PolicyError(f"{missing[0]} not found: the checkpoint is incomplete")
    run_files = ("metrics.jsonl", REPORT_FILE, *EVALUATION_FILES)
    if resumable:
        run_files += (WARM_START_REPORT, "skills.jsonl")
    for name in run_files:
        if (run / name).is_file():
            copies.append((run / name, out / name))
    for name, adapter in stage_adapters(cfg, run, acting=not resumable):  # (a kept-apart Stage 1: a resume's)
        if not adapter.is_file():
            raise PolicyError(f"the run's {name} adapter {adapter} not found: it cannot be packed from this machine")
        copies.append((adapter, out / ADAPTERS_FOLDER / adapter.name))
    if out.resolve() == run.resolve():
        raise PolicyError(f"--out {out} is the run itself; pack into another folder")
    for source, target in copies:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return [target for _, target in copies]


def load_eval_policy(spec: str, env_id: str, *, visual: bool = False) -> EvalPolicy:
    """The policy named by ``spec`` (see the module docstring)."""
    if is_http(spec):
        from seed_agent.policies.http import HttpPolicy

        url, _, model = spec.partition("#")
        return EvalPolicy(
            HttpPolicy(url, model or "default"), default_config(env_id, spec, visual=visual, style="think"), "http"
        )
    if is_policy_name(spec):
        from seed_agent.models import ModelNotFetched, load_named_policy

        try:
            policy = load_named_policy(spec, vlm=visual)
        except ModelNotFetched as error:
            raise PolicyError(str(error)) from None
        except (OSError, ValueError, KeyError) as error:
            raise PolicyError(f"cannot load {spec}: {error.args[0] if error.args else error}") from None
        style = "act" if spec in POLICY_NAMES or spec.startswith("random:") else "think"
        return EvalPolicy(policy, default_config(env_id, spec, visual=visual, style=style), "model")
    path = Path(spec).expanduser()
    if path.exists():
        return load_run_policy(path)
    if "/" in spec or spec.startswith("."):
        raise PolicyError(f"run folder not found: {path / 'config.yaml'} (no such path {spec!r})")
    raise PolicyError(f"unknown policy {spec!r}; allowed: {ALLOWED}")
