"""Fixed task manifests: the tasks ``seed eval`` and ``seed compare`` play, stored in the repo.

A manifest is ``seed_rl/manifests/<env-name>/<split>.json`` (``sokoban/valid_unseen.json``):
the first ``count`` tasks of a split as an env produced them when the file was made, each
with its task id, its index in the split, a digest of what the env showed at reset
(``info["task"]`` and the first observation, as text) and its family where the env names
one (ALFWorld's task types). The file also records the env, the split, the ``env_kwargs``
that define the tasks, the data source (a procedural generator and its parameters, or real
data) and the command that produces that data. ``scripts/make_manifests.py`` writes them.

Before an evaluation, :func:`check_tasks` replays the tasks to be played on the data of this
machine and refuses (:class:`ManifestMismatch`, naming the file and the data command) when an
index resolves to another id, an id is missing, or a task's digest differs: results then
always come from the manifest's tasks. Task ids are what an evaluation resets by
(``reset(options={"task_id": ...})``); the indices let index-based callers (``seed compare``
through the trainer) play the same tasks.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

import seed_envs
from seed_envs.core import SPLITS

FORMAT = 1
MANIFEST_DIR = Path(__file__).resolve().parents[1] / "manifests"
MAKE_SCRIPT = "scripts/make_manifests.py"
#: Envs whose tasks are another env's: the browser front end of WebShop plays WebShop's goals,
#: so its manifests are made and checked with the text env (no browser needed).
TASKS_OF: dict[str, str] = {"seed/WebShopBrowser-v0": "seed/WebShop-v0"}
#: How many mismatching tasks an error lists.
SHOWN_PROBLEMS = 5


class ManifestError(ValueError):
    """A manifest is missing or malformed, or an env, split or task count is not allowed."""


class ManifestMismatch(ManifestError):
    """The data on this machine does not give a manifest's tasks."""


def env_name(env_id: str) -> str:
    """The short name of an env id, as manifest folders use it: ``seed/Sokoban-v0`` -> ``sokoban``."""
    return env_id.split("/", 1)[-1].rsplit("-v", 1)[0].lower()


def env_names() -> dict[str, str]:
    """Short name -> env id, for every registered seed env."""
    return {env_name(env_id): env_id for env_id in seed_envs.env_ids()}


def resolve_env(value: str) -> str:
    """The env id for a short name (``sokoban``) or an id (``seed/Sokoban-v0``)."""
    names = env_names()
    if value in names.values():
        return value
    if value.lower() in names:
        return names[value.lower()]
    raise ManifestError(
        f"unknown env {value!r}; allowed: {', '.join(names)} (or their ids: {', '.join(names.values())})"
    )


def check_split_name(split: str) -> str:
    if split not in SPLITS:
        raise ManifestError(f"unknown split {split!r}; allowed: {', '.join(SPLITS)}")
    return split


def manifest_path(env_id: str, split: str) -> Path:
    return MANIFEST_DIR / env_name(env_id) / f"{split}.json"


def make_command(env_id: str, split: str | None = None) -> str:
    """The command that (re)writes a manifest."""
    command = f"python {MAKE_SCRIPT} --env {env_name(env_id)}"
    return command + (f" --split {split}" if split else "")


@dataclass(frozen=True)
class ManifestTask:
    task_id: str
    index: int
    digest: str
    family: str | None = None


@dataclass(frozen=True)
class Manifest:
    env: str
    split: str
    version: int
    source: dict[str, Any]
    env_kwargs: dict[str, Any]
    tasks: tuple[ManifestTask, ...]
    path: Path | None = field(default=None, compare=False)

    @property
    def count(self) -> int:
        return len(self.tasks)

    @property
    def label(self) -> str:
        """The file, relative to the repository where it is one of the shipped manifests."""
        if self.path is None:
            return f"the {env_name(self.env)}/{self.split} manifest"
        root = MANIFEST_DIR.parent.parent
        return str(self.path.relative_to(root)) if self.path.is_relative_to(root) else str(self.path)

    def first(self, n: int | None = None) -> tuple[ManifestTask, ...]:
        """The first ``n`` tasks (all of them for None); refuses an ``n`` the manifest does not hold."""
        if n is None:
            return self.tasks
        if not 1 <= n <= self.count:
            raise ManifestError(f"{self.label} holds {self.count} tasks; asked for {n} (allowed: 1..{self.count})")
        return self.tasks[:n]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": self.version,
            "env": self.env,
            "split": self.split,
            "count": self.count,
            "source": self.source,
            "env_kwargs": self.env_kwargs,
            "digest": "first 16 hex digits of sha256 over info['task'] and the first text observation",
            "tasks": [{k: v for k, v in vars(t).items() if v is not None} for t in self.tasks],
        }


def manifest_text(manifest: Manifest) -> str:
    """The manifest as its file holds it: JSON with one task per line."""
    data = manifest.to_json()
    tasks = data.pop("tasks")
    head = json.dumps(data, indent=1, ensure_ascii=False)[: -len("\n}")]
    rows = ",\n".join("  " + json.dumps(task, ensure_ascii=False) for task in tasks)
    return f'{head},\n "tasks": [\n{rows}\n ]\n}}\n'


def manifest_from_json(data: Any, path: Path | None = None) -> Manifest:
    where = path or "manifest"
    found = data.get("format") if isinstance(data, dict) else None
    if found != FORMAT:
        raise ManifestError(f"{where} is not a manifest of format {FORMAT} (format: {found!r})")
    try:
        tasks = tuple(
            ManifestTask(str(t["task_id"]), int(t["index"]), str(t["digest"]), t.get("family")) for t in data["tasks"]
        )
        manifest = Manifest(
            str(data["env"]), str(data["split"]), int(data["version"]), dict(data["source"]),
            dict(data["env_kwargs"]), tasks, path,
        )  # fmt: skip
    except (KeyError, TypeError, ValueError) as error:
        raise ManifestError(f"{where} is not a valid manifest ({type(error).__name__}: {error})") from None
    if manifest.count != data.get("count", manifest.count):
        raise ManifestError(f"{where} says count={data['count']} but lists {manifest.count} tasks")
    return manifest


def load_manifest(env: str, split: str, path: str | Path | None = None) -> Manifest:
    """The manifest of ``env`` (name or id) and ``split``, or the file at ``path``."""
    env_id = resolve_env(env)
    check_split_name(split)
    file = Path(path) if path is not None else manifest_path(env_id, split)
    if not file.is_file():
        raise ManifestError(f"no task manifest {file}; write it with `{make_command(env_id, split)}`")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ManifestError(
            f"{file} is not valid JSON ({error}); rewrite it with `{make_command(env_id, split)}`"
        ) from None
    manifest = manifest_from_json(data, file)
    if (manifest.env, manifest.split) != (env_id, split):
        raise ManifestError(f"{file} is the manifest of {manifest.env} {manifest.split}, not of {env_id} {split}")
    return manifest


def task_digest(info: dict[str, Any], observation: dict[str, Any]) -> str:
    """A short digest of a task as the env shows it at reset (text mode)."""
    text = json.dumps([str(info.get("task", "")), str(observation.get("text", ""))], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def text_env_kwargs(env_id: str, split: str, env_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """``gym.make`` keywords of the env that reads tasks: the split, text observations, no step limit."""
    kwargs = {k: v for k, v in (env_kwargs or {}).items() if k not in ("max_episode_steps", "split")}
    entry = gym.spec(env_id).entry_point
    env_class = gym.envs.registration.load_env_creator(entry) if isinstance(entry, str) else entry
    if "observation_mode" in inspect.signature(env_class).parameters:
        kwargs["observation_mode"] = "text"
    return {"split": split, **kwargs}


def _task_env(env_id: str, split: str, env_kwargs: dict[str, Any] | None) -> gym.Env:
    reader = TASKS_OF.get(env_id, env_id)
    return gym.make(reader, **text_env_kwargs(reader, split, env_kwargs))


def read_tasks(env_id: str, split: str, count: int, env_kwargs: dict[str, Any] | None = None) -> list[ManifestTask]:
    """The first ``count`` tasks of a split (fewer if the split is smaller), read from the env."""
    env = _task_env(env_id, split, env_kwargs)
    try:
        available = env.unwrapped.task_count(split)
        n = count if available is None else min(count, available)
        tasks = []
        for index in range(n):
            task_id = env.unwrapped.task_id_for(split, index)
            observation, info = env.reset(options={"task_id": task_id})
            if info["task_id"] != task_id:
                raise RuntimeError(f"{env_id}: reset to {task_id!r} gave task {info['task_id']!r}")
            family = info.get("task_type")
            tasks.append(ManifestTask(task_id, index, task_digest(info, observation), family))
        return tasks
    finally:
        env.close()


def _problem(env: gym.Env, split: str, task: ManifestTask) -> str | None:
    """What is wrong with one manifest task on this machine's data, or None."""
    try:
        here = env.unwrapped.task_id_for(split, task.index)
    except (IndexError, ValueError, KeyError):
        return f"index {task.index} ({task.task_id}) is not in this data (split of {env.unwrapped.task_count(split)})"
    if here != task.task_id:
        return f"index {task.index} is {here!r} here, the manifest says {task.task_id!r}"
    try:
        observation, info = env.reset(options={"task_id": task.task_id})
    except (IndexError, ValueError, KeyError) as error:
        return f"{task.task_id} cannot be played here ({error})"
    if info.get("task_id") != task.task_id:
        return f"reset to {task.task_id} gave task {info.get('task_id')!r}"
    digest = task_digest(info, observation)
    if digest != task.digest:
        return f"{task.task_id} is a different task here (digest {digest}, the manifest's {task.digest})"
    return None


def check_tasks(manifest: Manifest, tasks: Sequence[ManifestTask], env_kwargs: dict[str, Any] | None = None) -> None:
    """Refuse (:class:`ManifestMismatch`) unless this machine's data gives every task of ``tasks``."""
    env = _task_env(manifest.env, manifest.split, env_kwargs)
    try:
        problems = [p for p in (_problem(env, manifest.split, t) for t in tasks) if p is not None]
    finally:
        env.close()
    if not problems:
        return
    listed = "".join(f"\n  - {p}" for p in problems[:SHOWN_PROBLEMS])
    more = f"\n  ... and {len(problems) - SHOWN_PROBLEMS} more" if len(problems) > SHOWN_PROBLEMS else ""
    command = manifest.source.get("command")
    fetch = f"get the data it was made from with `{command}`" if command else "its generator runs in-process"
    raise ManifestMismatch(
        f"the data on this machine does not give the tasks of {manifest.label} "
        f"({manifest.source.get('description', 'see its source')}, env_kwargs {manifest.env_kwargs}):"
        f"{listed}{more}\n{len(problems)} of {len(tasks)} tasks differ. Use the env_kwargs above and "
        f"{fetch}; if the change is intended, rewrite the manifest with "
        f"`{make_command(manifest.env, manifest.split)}` (its version goes up)."
    )


def eval_tasks(
    env: str, split: str, n: int | None = None, env_kwargs: dict[str, Any] | None = None, path: str | Path | None = None
) -> tuple[Manifest, tuple[ManifestTask, ...]]:
    """The manifest and its first ``n`` tasks, checked against this machine's data as an env made
    with ``env_kwargs`` (by default the manifest's own) gives it: pass the keywords the
    evaluation will use."""
    manifest = load_manifest(env, split, path)
    tasks = manifest.first(n)
    check_tasks(manifest, tasks, manifest.env_kwargs if env_kwargs is None else env_kwargs)
    return manifest, tasks
