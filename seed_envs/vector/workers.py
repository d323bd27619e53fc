"""Workers that hold several envs each: in this process, or in a child process.

A worker answers batched commands over the envs it holds. One env's exception is
caught in the worker, reported for that env, and the env is rebuilt; the worker
keeps serving the others. A child process that dies (killed, segfault) or stops
answering is detected by its parent, which builds a fresh one.

Commands (``kind``, ``items``), each item addressed to a slot of the worker:

- ``("reset", [(slot, seed, options)])`` -> ``("ok", (obs, info))`` per item;
- ``("step",  [(slot, action)])``        -> ``("ok", (obs, reward, terminated, truncated, info))``;
- ``("call",  [(slot, name, args)])``    -> ``("ok", value)`` (a method of ``env.unwrapped``);

or ``("error", traceback_text)`` for an item whose env raised. Before any command, a child
sends ``("ready", pid)``, or ``("boot-error", traceback_text)`` if it could not load its
factories; how children are started is in :mod:`seed_envs.vector.launch`.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, Protocol

import gymnasium as gym

from seed_envs.vector.launch import WorkerStartError, import_main, plan_launch, start_process

__all__ = [
    "EnvGroup",
    "InProcessWorker",
    "ProcessWorker",
    "Worker",
    "WorkerDied",
    "WorkerStartError",
    "make_registered_env",
    "serve",
]

EnvFactory = Callable[[], gym.Env]
Result = tuple[str, Any]


class WorkerDied(RuntimeError):
    """The worker process exited or did not answer in time; its env state is lost."""


class Worker(Protocol):
    """What the vector env needs of a worker; a new backend (e.g. Ray actors) implements this."""

    restarts: int

    def send(self, kind: str, items: Sequence[tuple]) -> None:
        """Start a batched command; raise :class:`WorkerDied` if the worker is gone."""

    def receive(self) -> list[Result]:
        """The command's results, one per item; raise :class:`WorkerDied` on death or timeout."""

    def restart(self) -> None:
        """Replace the worker with a fresh one holding freshly built envs."""

    def close(self) -> None:
        """Stop the worker and close its envs."""


def make_registered_env(env_id: str, kwargs: dict[str, Any]) -> gym.Env:
    """Build a registered env (importing seed_envs first so the ids exist in any process)."""
    import seed_envs  # noqa: F401  (registers the ids)

    return gym.make(env_id, **kwargs)


class EnvGroup:
    """The envs of one worker and the code that runs commands on them."""

    def __init__(self, factories: Sequence[EnvFactory]) -> None:
        self.factories = list(factories)
        self.envs: list[gym.Env | None] = [None] * len(self.factories)

    def env(self, slot: int) -> gym.Env:
        env = self.envs[slot]
        if env is None:
            env = self.envs[slot] = self.factories[slot]()
        return env

    def run(self, kind: str, items: Sequence[tuple]) -> list[Result]:
        if kind == "step" and len(items) > 1:
            self._prefetch(items)
        results: list[Result] = []
        for item in items:
            slot = item[0]
            try:
                env = self.env(slot)
                if kind == "reset":
                    _, seed, options = item
                    results.append(("ok", env.reset(seed=seed, options=options)))
                elif kind == "step":
                    results.append(("ok", env.step(item[1])))
                elif kind == "call":
                    _, name, args = item
                    results.append(("ok", getattr(env.unwrapped, name)(*args)))
                else:
                    raise ValueError(f"unknown worker command {kind!r}")
            except Exception:
                results.append(("error", traceback.format_exc()))
                self._rebuild(slot)
        return results

    def _prefetch(self, items: Sequence[tuple]) -> None:
        """Let each env class batch the shared work of these steps (``SeedEnv.prefetch_batch``)."""
        by_class: dict[type, tuple[list[gym.Env], list[object]]] = {}
        for slot, action in items:
            env = self.envs[slot]
            hook = getattr(type(env.unwrapped), "prefetch_batch", None) if env is not None else None
            if hook is not None:
                envs, actions = by_class.setdefault(type(env.unwrapped), ([], []))
                envs.append(env)
                actions.append(action)
        for cls, (envs, actions) in by_class.items():
            with contextlib.suppress(Exception):  # each step still runs, and reports its own errors
                cls.prefetch_batch(envs, actions)

    def _rebuild(self, slot: int) -> None:
        env, self.envs[slot] = self.envs[slot], None
        if env is not None:
            with contextlib.suppress(Exception):
                env.close()

    def close(self) -> None:
        for slot in range(len(self.envs)):
            self._rebuild(slot)


class InProcessWorker:
    """Runs its envs in the calling process (the ``sync`` backend)."""

    def __init__(self, factories: Sequence[EnvFactory]) -> None:
        self.group = EnvGroup(factories)
        self.restarts = 0
        self._pending: list[Result] | None = None

    def send(self, kind: str, items: Sequence[tuple]) -> None:
        self._pending = self.group.run(kind, items)

    def receive(self) -> list[Result]:
        assert self._pending is not None, "receive() without send()"
        results, self._pending = self._pending, None
        return results

    def restart(self) -> None:
        self.group.close()

    def close(self) -> None:
        self.group.close()


def serve(conn: Connection, factories: bytes | Sequence[EnvFactory], main: tuple[str, str] | None = None) -> None:
    """A worker process's loop: build the envs, say ``ready`` (or why not), then answer commands.

    ``factories`` arrive pickled (except under ``fork``); they are unpickled here, after
    ``main`` (the user's main module, when a factory lives there) has been imported.
    """
    try:
        if main is not None:
            import_main(main)
        if isinstance(factories, bytes):
            factories = pickle.loads(factories)
        group = EnvGroup(factories)
    except (Exception, SystemExit):
        with contextlib.suppress(OSError):
            conn.send(("boot-error", traceback.format_exc()))
        conn.close()
        return
    try:
        conn.send(("ready", os.getpid()))
        while True:
            kind, items = conn.recv()
            if kind == "close":
                break
            conn.send(group.run(kind, items))
    except (EOFError, OSError, KeyboardInterrupt):
        pass
    finally:
        group.close()
        conn.close()


class ProcessWorker:
    """Runs its envs in a child process; survives the child's death by starting a new one.

    ``context=None`` starts a fresh interpreter on this package's entry point (see
    :mod:`seed_envs.vector.launch`); a multiprocessing start method name uses that instead.
    Problems that a restart cannot fix raise :class:`WorkerStartError`: at once where they
    can be seen in this process, else when the child reports them.
    """

    def __init__(
        self, factories: Sequence[EnvFactory], context: str | None = None, timeout: float | None = None
    ) -> None:
        self.factories = list(factories)
        self.plan = plan_launch(self.factories, context)
        self.timeout = timeout
        # Starting may take longer than a step (imports, data loading): at least a minute.
        self.start_timeout = None if timeout is None else max(timeout, 60.0)
        self.restarts = 0
        self._start()

    def _start(self) -> None:
        self.process, self.conn = start_process(self.plan, serve)
        self._ready = False

    def send(self, kind: str, items: Sequence[tuple]) -> None:
        try:
            self.conn.send((kind, list(items)))
        except (BrokenPipeError, ConnectionResetError, EOFError, OSError) as exc:
            if not self._ready:
                self._await_ready()  # raises WorkerStartError if the child never got going
            raise WorkerDied(f"worker pid {self.process.pid} is gone ({exc})") from None

    def receive(self) -> list[Result]:
        """Wait for the answer; raise :class:`WorkerDied` if the child exits or times out."""
        if not self._ready:
            self._await_ready()
        state = self._wait(self.timeout)
        if state == "timeout":
            raise WorkerDied(f"worker pid {self.process.pid} did not answer within {self.timeout:.0f} s")
        if state == "exited":
            raise WorkerDied(f"worker pid {self.process.pid} exited with code {self.process.exitcode}")
        try:
            return self.conn.recv()
        except (EOFError, ConnectionResetError, OSError) as exc:
            raise WorkerDied(f"worker pid {self.process.pid} closed its pipe ({exc})") from None

    def _wait(self, timeout: float | None) -> str:
        """Wait for the child: ``"data"`` (its pipe is readable), ``"exited"`` or ``"timeout"``."""
        sentinel = self.process.sentinel
        ready = wait([self.conn] if sentinel is None else [self.conn, sentinel], timeout)
        if not ready:
            return "timeout"
        if self.conn not in ready and not self.conn.poll(0):  # exited, unless it answered just before
            self.process.join(timeout=5)
            return "exited"
        return "data"

    def _await_ready(self) -> None:
        """Read the child's first message; raise :class:`WorkerStartError` unless it is ``ready``."""
        pid = self.process.pid
        state = self._wait(self.start_timeout)
        if state == "timeout":
            self._kill()
            raise WorkerStartError(f"worker pid {pid} did not start within {self.start_timeout:.0f} s")
        try:
            if state == "exited":
                raise EOFError
            status, value = self.conn.recv()
        except (EOFError, ConnectionResetError, OSError):
            self._kill()
            raise WorkerStartError(
                f"worker pid {pid} exited with code {self.process.exitcode} before its envs were built; "
                "its error is printed above (on stderr)"
            ) from None
        if status != "ready":
            self._kill()
            raise WorkerStartError(
                f"worker pid {pid} failed to start (importing the main module or unpickling "
                f"its env factories):\n{value}"
            )
        self._ready = True

    def restart(self) -> None:
        self._kill()
        self.restarts += 1
        self._start()

    def _kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()

    def close(self) -> None:
        if self.process.is_alive():
            try:
                self.conn.send(("close", []))
                self.process.join(timeout=5)
            except (BrokenPipeError, OSError):
                pass
        self._kill()
