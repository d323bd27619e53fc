"""Env workers as Ray actors (``backend="ray"``): the same commands and crash semantics as the
process backend, on whatever Ray cluster this process is attached to.

Each :class:`RayWorker` owns one actor that holds an :class:`~seed_envs.vector.workers.EnvGroup`
and answers the same batched commands as a worker process. An actor that dies (killed, a
segfault, ``sys.exit``) or does not answer within the step timeout raises
:class:`~seed_envs.vector.workers.WorkerDied`; the vector env then starts a fresh actor and
reports the episodes it held as truncated, as it does for a process.

Ray is attached by :func:`ensure_ray`: if this process has called ``ray.init(address=...)``
or ``RAY_ADDRESS`` names a cluster, the actors go there, spread over its nodes; otherwise a
private local Ray instance is started, with the dashboard and usage reporting off. Ray writes
its session files under its temp dir (``/tmp/ray`` unless ``RAY_TMPDIR`` says otherwise).
Ray 2.60's gRPC servers listen on every interface whatever node address they are given
(measured here); token authentication, which :func:`ensure_ray` keeps on, guards them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from collections.abc import Sequence
from typing import Any

from seed_envs.vector.workers import EnvFactory, EnvGroup, Result, WorkerDied, WorkerStartError

#: Actor options unless the caller gives its own: no CPU reserved (an env worker mostly waits on
#: the policy), spread over the cluster's nodes.
DEFAULT_ACTOR_OPTIONS: dict[str, Any] = {"num_cpus": 0, "scheduling_strategy": "SPREAD"}


def _ray() -> Any:
    try:
        import ray
    except ImportError as error:
        raise WorkerStartError(
            "backend='ray' needs Ray, which is not installed: pip install -e '.[ray]' (or pip install 'ray>=2.9')"
        ) from error
    return ray


def ensure_ray(**init_kwargs: Any) -> Any:
    """The ``ray`` module, attached to a cluster: the one this process joined with ``ray.init``,
    or the one ``RAY_ADDRESS`` names (``auto``, ``HOST:PORT``); else a private local instance
    started with ``init_kwargs`` (e.g. ``num_cpus``), without the dashboard or usage reports.

    A private instance keeps Ray's token authentication with a fresh token held in this
    process's environment (``RAY_AUTH_TOKEN``, which Ray's processes inherit), so nothing is
    written to ``~/.ray``; a token configured by the user is left as it is.
    """
    ray = _ray()
    if ray.is_initialized():
        return ray
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no report to Ray's servers
    settings: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if not os.environ.get("RAY_ADDRESS"):
        settings["address"] = "local"
        configured = any(os.environ.get(k) for k in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"))
        if not configured and os.environ.get("RAY_AUTH_MODE", "token") != "disabled":
            os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    ray.init(**{**settings, **init_kwargs})
    return ray


class EnvActor:
    """The body of one Ray actor: the envs of a worker, answering its commands.

    The factories come pickled, with the driver's ``sys.path``: its entries that exist on the
    actor's node are added before unpickling, so a factory from a module the driver can import
    (a test helper, a script's folder) resolves here too, as it does in a worker process.
    """

    def __init__(self, payload: bytes, path: Sequence[str]) -> None:
        import ray.cloudpickle

        sys.path.extend(p for p in path if p not in sys.path and os.path.isdir(p or "."))
        self.group = EnvGroup(ray.cloudpickle.loads(payload))

    def ready(self) -> tuple[int, str]:
        """(pid, node id): the actor is up and its factories unpickled."""
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()

    def run(self, kind: str, items: Sequence[tuple]) -> list[Result]:
        return self.group.run(kind, items)

    def close(self) -> None:
        self.group.close()


class RayWorker:
    """A :class:`~seed_envs.vector.workers.Worker` backed by one Ray actor.

    ``timeout`` bounds each command, ``start_timeout`` the actor's start (scheduling, imports);
    ``actor_options`` go to ``ray.remote(...).options`` (default :data:`DEFAULT_ACTOR_OPTIONS`).
    """

    def __init__(
        self,
        factories: Sequence[EnvFactory],
        timeout: float | None = None,
        actor_options: dict[str, Any] | None = None,
        start_timeout: float | None = None,
    ) -> None:
        self.ray = ensure_ray()
        self._payload = self.ray.cloudpickle.dumps(list(factories))  # pickled once, sent at each (re)start
        self.timeout = timeout
        self.start_timeout = start_timeout if start_timeout is not None else max(timeout or 0.0, 120.0)
        options = dict(DEFAULT_ACTOR_OPTIONS if actor_options is None else actor_options)
        options["max_restarts"] = 0  # the vector env restarts, so that it can report the lost episodes
        self.actor_class = self.ray.remote(EnvActor).options(**options)
        self.restarts = 0
        self.pid = 0
        self.node = ""
        self._pending: Any = None
        self._start()

    def _start(self) -> None:
        ray = self.ray
        self.actor = self.actor_class.remote(self._payload, list(sys.path))
        try:
            self.pid, self.node = ray.get(self.actor.ready.remote(), timeout=self.start_timeout)
        except ray.exceptions.GetTimeoutError:
            self._kill()
            raise WorkerStartError(
                f"a Ray env actor did not start within {self.start_timeout:.0f} s: the cluster has no room for "
                "it (see `ray status`), or building its envs hangs"
            ) from None
        except ray.exceptions.RayError as error:
            self._kill()
            raise WorkerStartError(f"a Ray env actor could not build its envs:\n{error}") from None

    def send(self, kind: str, items: Sequence[tuple]) -> None:
        self._pending = self.actor.run.remote(kind, list(items))

    def receive(self) -> list[Result]:
        ray = self.ray
        pending, self._pending = self._pending, None
        assert pending is not None, "receive() without send()"
        try:
            return ray.get(pending, timeout=self.timeout)
        except ray.exceptions.GetTimeoutError:
            raise WorkerDied(f"Ray env actor (pid {self.pid}) did not answer within {self.timeout:.0f} s") from None
        except ray.exceptions.RayActorError as error:
            raise WorkerDied(f"Ray env actor (pid {self.pid}) died: {_first_line(error)}") from None

    def restart(self) -> None:
        self._kill()
        self.restarts += 1
        self._start()

    def _kill(self) -> None:
        with contextlib.suppress(Exception):
            self.ray.kill(self.actor, no_restart=True)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ray.get(self.actor.close.remote(), timeout=5)
        self._kill()


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
