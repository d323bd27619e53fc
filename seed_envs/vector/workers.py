"""Workers that hold several envs each: in this process, or in a child process.

A worker answers batched commands over the envs it holds. One env's exception is
caught in the worker, reported for that env, and the env is rebuilt; the worker
keeps serving the others. A child process that dies (killed, segfault) or stops
answering is detected by its parent, which builds a fresh one.

Commands (``kind``, ``items``), each item addressed to a slot of the worker:

- ``("reset", [(slot, seed, options)])`` -> ``("ok", (obs, info))`` per item;
- ``("step",  [(slot, action)])``        -> ``("ok", (obs, reward, terminated, truncated, info))``;
- ``("call",  [(slot, name, args)])``    -> ``("ok", value)`` (a method of ``env.unwrapped``);

or ``("error", traceback_text)`` for an item whose env raised.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, Protocol

import gymnasium as gym

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


def _serve(conn: Connection, factories: Sequence[EnvFactory]) -> None:
    group = EnvGroup(factories)
    try:
        while True:
            kind, items = conn.recv()
            if kind == "close":
                break
            conn.send(group.run(kind, items))
    except (EOFError, KeyboardInterrupt):
        pass
    finally:
        group.close()
        conn.close()


class ProcessWorker:
    """Runs its envs in a child process; survives the child's death by starting a new one."""

    def __init__(self, factories: Sequence[EnvFactory], context: str = "spawn", timeout: float | None = None) -> None:
        self.factories = list(factories)
        self.ctx = mp.get_context(context)
        self.timeout = timeout
        self.restarts = 0
        self._start()

    def _start(self) -> None:
        parent, child = self.ctx.Pipe()
        self.process = self.ctx.Process(target=_serve, args=(child, self.factories), daemon=True)
        self.process.start()
        child.close()
        self.conn = parent

    def send(self, kind: str, items: Sequence[tuple]) -> None:
        try:
            self.conn.send((kind, list(items)))
        except (BrokenPipeError, ConnectionResetError, EOFError, OSError) as exc:
            raise WorkerDied(f"worker pid {self.process.pid} is gone ({exc})") from None

    def receive(self) -> list[Result]:
        """Wait for the answer; raise :class:`WorkerDied` if the child exits or times out."""
        ready = wait([self.conn, self.process.sentinel], self.timeout)
        if self.conn not in ready:
            if not ready:
                raise WorkerDied(f"worker pid {self.process.pid} did not answer within {self.timeout:.0f} s")
            if not self.conn.poll(0):  # exited, unless it answered just before exiting
                self.process.join(timeout=5)
                raise WorkerDied(f"worker pid {self.process.pid} exited with code {self.process.exitcode}")
        try:
            return self.conn.recv()
        except (EOFError, ConnectionResetError, OSError) as exc:
            raise WorkerDied(f"worker pid {self.process.pid} closed its pipe ({exc})") from None

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
