"""``SeedVectorEnv``: N seed envs spread over worker processes, stepped in batches.

Observations are text (and images), so results come back as Python lists, one
entry per addressed env, rather than stacked arrays. Calls may address a subset
of envs (``env_ids``): multi-turn rollouts keep stepping only the live episodes.

Failure handling: if a worker dies, every episode it held is lost. The envs that
were addressed come back ``truncated=True`` with ``info["worker_failure"]`` (their
last observation is repeated); envs of that worker that were not addressed are
reported the same way the next time they are stepped. A fresh worker takes over,
and a reset after a failure works as usual. An exception raised by one env is
reported the same way for that env alone.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from seed_envs.vector.workers import (
    EnvFactory,
    InProcessWorker,
    ProcessWorker,
    Worker,
    WorkerDied,
    WorkerStartError,
    make_registered_env,
)

BACKENDS = ("process", "sync", "ray")


class SeedVectorEnv:
    """Several seed envs behind one batched ``reset`` / ``step``.

    ``backend``: ``"process"`` (worker processes on this machine), ``"sync"`` (in this process)
    or ``"ray"`` (Ray actors, on the cluster this process joined or a local one; see
    :mod:`seed_envs.vector.ray_worker`, whose actors ``ray_actor_options`` configures).
    ``context`` picks how worker processes start: ``None`` (the default) runs a fresh
    interpreter on this package's worker entry point, which works from any script, guarded
    or not; ``"spawn"``, ``"forkserver"`` or ``"fork"`` use that multiprocessing start method.
    A worker that cannot start raises :class:`~seed_envs.vector.launch.WorkerStartError`
    (naming the cause and the fix) and closes the vector env.
    """

    def __init__(
        self,
        env_fns: Sequence[EnvFactory],
        workers: int | None = None,
        backend: str = "process",
        step_timeout: float | None = 600.0,
        context: str | None = None,
        max_restarts: int = 10,
        ray_actor_options: dict[str, Any] | None = None,
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if not env_fns:
            raise ValueError("need at least one env")
        self.num_envs = len(env_fns)
        n_workers = 1 if backend == "sync" else min(workers or os.cpu_count() or 1, self.num_envs)
        # Envs are dealt to workers in contiguous blocks.
        self.placement: list[tuple[int, int]] = []  # env id -> (worker, slot)
        blocks = np.array_split(np.arange(self.num_envs), n_workers)
        self.workers: list[Worker] = []
        try:
            for w, block in enumerate(blocks):
                factories = [env_fns[i] for i in block]
                self.placement.extend((w, slot) for slot in range(len(block)))
                if backend == "sync":
                    self.workers.append(InProcessWorker(factories))
                elif backend == "ray":
                    from seed_envs.vector.ray_worker import RayWorker

                    self.workers.append(RayWorker(factories, timeout=step_timeout, actor_options=ray_actor_options))
                else:
                    self.workers.append(ProcessWorker(factories, context=context, timeout=step_timeout))
        except BaseException:
            for worker in self.workers:
                worker.close()
            raise
        self.backend = backend
        self.max_restarts = max_restarts
        self.failures: list[dict[str, Any]] = []
        self._last_obs: list[dict[str, Any] | None] = [None] * self.num_envs
        self._last_info: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        self._lost: dict[int, dict[str, Any]] = {}  # env id -> failure, until its next reset
        self._closed = False

    # ------------------------------------------------------------- public
    def reset(
        self,
        task_ids: Sequence[str | None] | None = None,
        env_ids: Sequence[int] | None = None,
        seeds: Sequence[int | None] | None = None,
        options: Sequence[dict[str, Any] | None] | None = None,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Reset the addressed envs (all by default); ``task_ids[i]`` picks env i's task.

        A reset lost to a dying worker is retried on the fresh worker.
        """
        ids = self._ids(env_ids)
        n = len(ids)
        task_ids = _per_env(task_ids, n, "task_ids")
        seeds = _per_env(seeds, n, "seeds")
        options = _per_env(options, n, "options")
        items = []
        for i, env_id in enumerate(ids):
            opts = dict(options[i] or {})
            if task_ids[i] is not None:
                opts["task_id"] = task_ids[i]
            items.append((env_id, (seeds[i], opts or None)))
        results = self._run("reset", items, retry=True)
        observations, infos = [], []
        for env_id, (status, value) in zip(ids, results, strict=True):
            if status != "ok":
                raise RuntimeError(f"reset of env {env_id} failed: {value['reason']}\n{value['error'] or ''}")
            obs, info = value
            self._lost.pop(env_id, None)
            self._remember(env_id, obs, info)
            observations.append(obs)
            infos.append(info)
        return observations, infos

    def step(
        self, actions: Sequence[str], env_ids: Sequence[int] | None = None
    ) -> tuple[list[dict[str, Any]], np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Step the addressed envs (all by default) with one action each."""
        ids = self._ids(env_ids)
        if len(actions) != len(ids):
            raise ValueError(f"got {len(actions)} actions for {len(ids)} envs")
        results: dict[int, tuple] = {}
        items = []
        for env_id, action in zip(ids, actions, strict=True):
            if env_id in self._lost:
                results[env_id] = self._lost_episode(env_id, self._lost[env_id])
            else:
                items.append((env_id, (action,)))
        for (env_id, _), (status, value) in zip(items, self._run("step", items), strict=True):
            if status == "ok":
                self._remember(env_id, value[0], value[4])
                results[env_id] = value
            else:
                results[env_id] = self._lost_episode(env_id, value)
        ordered = [results[env_id] for env_id in ids]
        return (
            [r[0] for r in ordered],
            np.array([r[1] for r in ordered], dtype=np.float64),
            np.array([r[2] for r in ordered], dtype=bool),
            np.array([r[3] for r in ordered], dtype=bool),
            [r[4] for r in ordered],
        )

    def call(self, name: str, *args: Any, env_ids: Sequence[int] | None = None) -> list[Any]:
        """Call ``env.unwrapped.<name>(*args)`` on the addressed envs; raises if one fails."""
        ids = self._ids(env_ids)
        results = self._run("call", [(env_id, (name, args)) for env_id in ids])
        out = []
        for env_id, (status, value) in zip(ids, results, strict=True):
            if status != "ok":
                raise RuntimeError(f"{name}() on env {env_id} failed: {value['reason']}\n{value['error'] or ''}")
            out.append(value)
        return out

    def close(self) -> None:
        if not self._closed:
            for worker in self.workers:
                worker.close()
            self._closed = True

    def __enter__(self) -> SeedVectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # ------------------------------------------------------------ helpers
    def _ids(self, env_ids: Sequence[int] | None) -> list[int]:
        if self._closed:
            raise RuntimeError("the vector env is closed")
        ids = list(range(self.num_envs)) if env_ids is None else [int(i) for i in env_ids]
        bad = [i for i in ids if not 0 <= i < self.num_envs]
        if bad:
            raise IndexError(f"env ids {bad} out of range 0..{self.num_envs - 1}")
        if len(set(ids)) != len(ids):
            raise ValueError("env ids must be distinct")
        return ids

    def _run(self, kind: str, items: list[tuple[int, tuple]], retry: bool = False) -> list[tuple[str, Any]]:
        """Send each worker its share, then collect; failures become ``("error", failure)``.

        With ``retry``, the share of a worker that died is sent once more to its replacement.
        """
        by_worker: dict[int, list[tuple[int, int, tuple]]] = {}
        for position, (env_id, payload) in enumerate(items):
            worker, slot = self.placement[env_id]
            by_worker.setdefault(worker, []).append((position, env_id, (slot, *payload)))
        try:
            return self._run_shares(kind, items, by_worker, retry)
        except WorkerStartError:
            self.close()  # the other workers' answers are left unread: this env cannot go on
            raise

    def _run_shares(
        self, kind: str, items: list[tuple[int, tuple]], by_worker: dict[int, list[tuple[int, int, tuple]]], retry: bool
    ) -> list[tuple[str, Any]]:
        deaths: dict[int, WorkerDied] = {}
        for w, share in by_worker.items():
            try:
                self.workers[w].send(kind, [payload for _, _, payload in share])
            except WorkerDied as exc:
                deaths[w] = exc
        results: list[tuple[str, Any]] = [("error", None)] * len(items)
        for w, share in by_worker.items():
            try:
                if w in deaths:
                    raise deaths[w]
                answers = self.workers[w].receive()
            except WorkerDied as exc:
                failures = self._worker_failed(w, kind, str(exc))
                positions = [position for position, _, _ in share]
                if retry:
                    retried = self._run(kind, [items[p] for p in positions])
                    for position, answer in zip(positions, retried, strict=True):
                        results[position] = answer
                else:
                    for position, env_id, _ in share:
                        results[position] = ("error", failures[env_id])
                continue
            for (position, env_id, _), (status, value) in zip(share, answers, strict=True):
                if status == "ok":
                    results[position] = ("ok", value)
                else:
                    results[position] = ("error", self._record(env_id, w, f"the env raised during {kind}", value))
        return results

    def _worker_failed(self, w: int, kind: str, reason: str) -> dict[int, dict[str, Any]]:
        """Restart worker ``w``; mark every env it held as lost until reset. Returns env id -> failure."""
        worker = self.workers[w]
        if worker.restarts >= self.max_restarts:
            raise RuntimeError(f"worker {w} failed {worker.restarts + 1} times; giving up. Last failure: {reason}")
        worker.restart()
        failures = {}
        for env_id, (holder, _) in enumerate(self.placement):
            if holder == w:
                failures[env_id] = self._lost[env_id] = self._record(
                    env_id, w, f"worker died during {kind}: {reason}", None
                )
        return failures

    def _record(self, env_id: int, worker: int, reason: str, error: str | None) -> dict[str, Any]:
        failure = {
            "env_id": env_id,
            "worker": worker,
            "reason": reason,
            "error": error,
            "task_id": self._last_info[env_id].get("task_id"),
        }
        self.failures.append(failure)
        return failure

    def _lost_episode(self, env_id: int, failure: dict[str, Any]) -> tuple:
        """The result reported for an episode that a failure ended: truncated, reward 0."""
        info = dict(self._last_info[env_id])
        info["worker_failure"] = failure
        info["action_valid"] = False
        self._lost[env_id] = failure
        obs = self._last_obs[env_id] or {"text": ""}
        return obs, 0.0, False, True, info

    def _remember(self, env_id: int, obs: dict[str, Any], info: dict[str, Any]) -> None:
        self._last_obs[env_id] = obs
        self._last_info[env_id] = info


def _per_env(values: Sequence[Any] | None, n: int, name: str) -> list[Any]:
    if values is None:
        return [None] * n
    values = list(values)
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} entries for {n} envs")
    return values


def make_vec(
    env_id: str,
    num_envs: int,
    workers: int | None = None,
    backend: str = "process",
    step_timeout: float | None = 600.0,
    context: str | None = None,
    ray_actor_options: dict[str, Any] | None = None,
    **env_kwargs: Any,
) -> SeedVectorEnv:
    """``num_envs`` copies of a registered env over ``workers`` processes (``sync``: in-process;
    ``ray``: Ray actors).

    Each worker builds its envs with ``gym.make(env_id, **env_kwargs)``; data that an
    env module caches per process (catalogs, indexes) is thus loaded once per worker.
    ``context`` is as for :class:`SeedVectorEnv`; the default works from any script.
    """
    factory = functools.partial(make_registered_env, env_id, env_kwargs)
    return SeedVectorEnv(
        [factory] * num_envs,
        workers=workers,
        backend=backend,
        step_timeout=step_timeout,
        context=context,
        ray_actor_options=ray_actor_options,
    )
