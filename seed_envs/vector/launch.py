"""How a worker process is started, and the checks that make a bad start fail at once.

The default (``context=None``) starts each worker as a fresh interpreter, like
multiprocessing's ``spawn`` (so no threads or locks of the parent, e.g. torch's
OpenMP pool, are inherited), but on this package's own entry point: the child
imports the user's ``__main__`` only when an env factory is defined there. An
unguarded script that calls ``make_vec`` at top level is therefore never re-run
in the workers. See ``seed_envs/vector/README.md``.

``context`` may also name a multiprocessing start method (``"spawn"``,
``"forkserver"``, ``"fork"``); those keep multiprocessing's own rules, and the
cases where they cannot work raise :class:`WorkerStartError` before any process
starts.
"""

from __future__ import annotations

import ast
import contextlib
import io
import multiprocessing as mp
import multiprocessing.process
import multiprocessing.spawn
import os
import runpy
import socket
import subprocess
import sys
import tokenize
import types
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any

MP_CONTEXTS = ("spawn", "forkserver", "fork")

_GUARD_FIX = 'put the script\'s top-level code under `if __name__ == "__main__":`'

# Set in a worker while it imports the user's main module; a vector env created then
# would start workers of its own, once per worker, so it raises instead.
_importing_main = False

# The program a default worker runs: it reads one message (sys.path, the main module to
# import or None, the pickled factories), then serves commands until told to close.
_BOOT = (
    "import sys\n"
    "from multiprocessing.connection import Connection\n"
    "conn = Connection(int(sys.argv[1]))\n"
    "path, main, payload = conn.recv()\n"
    "sys.path[:] = path\n"
    "from {module} import {name} as serve\n"
    "serve(conn, payload, main)\n"
)


class WorkerStartError(RuntimeError):
    """A worker cannot be started (or could not build its envs); retrying will not help."""


@dataclass(frozen=True)
class LaunchPlan:
    """What a worker needs to start: its start method, its factories, the main module to import."""

    context: str | None
    payload: bytes | list[Any]  # pickled factories, or the factories themselves for "fork"
    main: tuple[str, str] | None  # ("path" | "module", where) for the default launcher


def plan_launch(factories: Sequence[Any], context: str | None) -> LaunchPlan:
    """Check that workers can start with ``context`` and pickle the factories once.

    Raises :class:`WorkerStartError` naming the cause and the fix where they cannot.
    """
    if _importing_main:
        raise WorkerStartError(
            "a vector env was created while a worker imported the main script, which would start "
            f"workers without end; {_GUARD_FIX}"
        )
    if context is not None and context not in MP_CONTEXTS:
        raise ValueError(f"context must be None (the default) or one of {MP_CONTEXTS}, got {context!r}")
    if context is None and os.name != "posix":
        context = "spawn"  # the launcher hands the child a socket with pass_fds, which needs POSIX
    if context == "fork":
        return LaunchPlan(context, list(factories), None)
    payload, main_objects = _pickle_factories(factories)
    if context is not None:
        _check_mp_context(context)
        return LaunchPlan(context, payload, None)
    if not main_objects:
        return LaunchPlan(None, payload, None)
    # A factory lives in __main__, so the worker must import the user's main module.
    what = _describe(main_objects[0])
    main = _main_source()
    if main is None:
        raise WorkerStartError(
            f"env factory {what} is defined in __main__, and this program has no file a worker could "
            "import (python -c, stdin or an interactive session). Define the factory in a module, pass a "
            "registered env id to make_vec, or use backend='sync'"
        )
    line = _unguarded_main_line()
    if line is not None:
        raise WorkerStartError(
            f"env factory {what} is defined in the main script {main[1]}, so each worker must import "
            f"that script, and the script creates this vector env at top level (line {line}), so the "
            f"workers would run it again. Move the factory into a module, or {_GUARD_FIX}"
        )
    return LaunchPlan(None, payload, main)


def start_process(plan: LaunchPlan, serve: Callable[..., None]) -> tuple[Any, Connection]:
    """Start one worker process running ``serve`` (the worker loop); returns (process handle,
    the parent's end of its pipe). The fresh-interpreter path names the loop in its boot code."""
    if plan.context is not None:
        ctx = mp.get_context(plan.context)
        parent, child = ctx.Pipe()
        process = ctx.Process(target=serve, args=(child, plan.payload, None), daemon=True)
        process.start()
        child.close()
        return process, parent
    parent_sock, child_sock = socket.socketpair()
    try:
        fd = child_sock.fileno()
        boot = _BOOT.format(module=serve.__module__, name=serve.__qualname__)
        command = [multiprocessing.spawn.get_executable(), *_interpreter_flags(), "-c", boot, str(fd)]
        popen = subprocess.Popen(command, pass_fds=(fd,), close_fds=True)
    except BaseException:
        parent_sock.close()
        raise
    finally:
        child_sock.close()
    conn = Connection(parent_sock.detach())
    process = ChildProcess(popen)
    with contextlib.suppress(OSError):  # if the child is gone already, the first receive says how
        conn.send((_child_sys_path(), plan.main, plan.payload))
    return process, conn


class ChildProcess:
    """A default worker: a ``subprocess.Popen`` with the part of ``mp.Process``'s API used here."""

    def __init__(self, popen: subprocess.Popen) -> None:
        self.popen = popen
        self.pid = popen.pid
        pidfd = None
        if hasattr(os, "pidfd_open"):
            with contextlib.suppress(OSError):
                pidfd = os.pidfd_open(popen.pid)
        # Readable once the child exits; without it the pipe's EOF tells the same.
        self.sentinel = pidfd
        self._finalizer = weakref.finalize(self, _reap, popen, pidfd)

    @property
    def exitcode(self) -> int | None:
        return self.popen.poll()

    def is_alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.popen.kill()

    def join(self, timeout: float | None = None) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout)
        if self.popen.returncode is not None:
            self._finalizer()  # closes the pidfd
            self.sentinel = None


def _reap(popen: subprocess.Popen, pidfd: int | None) -> None:
    """Stop a worker still running when its handle goes (at the latest, at interpreter exit)."""
    if popen.poll() is None:
        with contextlib.suppress(OSError):
            popen.terminate()
        try:
            popen.wait(2)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                popen.kill()
            popen.wait()
    if pidfd is not None:
        os.close(pidfd)


def import_main(main: tuple[str, str]) -> None:
    """In a worker: import the user's main module as ``__mp_main__`` and alias it to ``__main__``.

    This is what multiprocessing's spawn does, so objects pickled as ``__main__.X`` resolve.
    """
    global _importing_main
    kind, where = main
    _importing_main = True
    try:
        if kind == "module":
            namespace = runpy.run_module(where, run_name="__mp_main__", alter_sys=True)
        else:
            namespace = runpy.run_path(where, run_name="__mp_main__")
    finally:
        _importing_main = False
    module = types.ModuleType("__mp_main__")
    module.__dict__.update(namespace)
    sys.modules["__main__"] = sys.modules["__mp_main__"] = module


# ------------------------------------------------------------------ checks
class _Pickler(ForkingPickler):
    """Pickles like multiprocessing does, and notes the objects that live in ``__main__``."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file)
        self.main_objects: list[Any] = []

    def reducer_override(self, obj: Any) -> Any:
        if getattr(obj, "__module__", None) == "__main__":
            self.main_objects.append(obj)
        return NotImplemented


def _pickle_factories(factories: Sequence[Any]) -> tuple[bytes, list[Any]]:
    buffer = io.BytesIO()
    pickler = _Pickler(buffer)
    try:
        pickler.dump(list(factories))
    except Exception as exc:
        bad = next((f for f in factories if not _picklable(f)), None)
        what = _describe(bad) if bad is not None else "of this vector env"
        raise WorkerStartError(
            f"env factory {what} cannot be pickled to send to a worker process "
            f"({type(exc).__name__}: {exc}). Define it as a module-level function (or a "
            "functools.partial of one), pass a registered env id to make_vec, or use backend='sync'"
        ) from exc
    return buffer.getvalue(), pickler.main_objects


def _picklable(obj: Any) -> bool:
    try:
        ForkingPickler.dumps(obj)
    except Exception:
        return False
    return True


def _describe(obj: Any) -> str:
    name = getattr(obj, "__qualname__", None)
    return repr(name) if isinstance(name, str) else repr(obj)[:100]


def _check_mp_context(method: str) -> None:
    """Fail before starting if ``spawn``/``forkserver`` would re-run an unguarded main script."""
    target = _main_reimport_target()
    if target is None:
        return
    kind, where = target
    if kind == "path" and not os.path.isfile(where):
        raise WorkerStartError(
            f"context={method!r} cannot start workers from a program that has no script file "
            f"({os.path.basename(where)}): multiprocessing's {method} re-runs the main script in each "
            "worker. Leave context unset (the default launcher does not import the main script)"
        )
    line = _unguarded_main_line()
    if line is not None:
        raise WorkerStartError(
            f"context={method!r} re-runs the main script {where} in each worker, and that script "
            f"creates this vector env at top level (line {line}, not under an "
            '`if __name__ == "__main__":` guard), so every worker would start workers of its own. '
            f"Leave context unset (the default launcher does not import the script), or {_GUARD_FIX}"
        )


def _main_reimport_target() -> tuple[str, str] | None:
    """What multiprocessing's spawn re-runs in a child: ("module", name), ("path", file) or None."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None:
        return None if name == "__main__" or name.endswith(".__main__") else ("module", name)
    path = getattr(main, "__file__", None)
    if path is None or os.path.splitext(os.path.basename(path))[0] == "ipython":
        return None
    return "path", os.path.normpath(os.path.join(multiprocessing.process.ORIGINAL_DIR or "", path))


def _main_source() -> tuple[str, str] | None:
    """How a default worker can import the main module, or None if it has no file."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None:
        return "module", name
    path = getattr(main, "__file__", None)
    if path is None:
        return None
    path = os.path.abspath(path)
    return ("path", path) if os.path.isfile(path) else None


def _unguarded_main_line() -> int | None:
    """The line of the main module's top-level code running now, unless it is under a main guard.

    Re-importing the main module re-runs its top-level statements, except the body of
    ``if __name__ == "__main__":``. If this call comes (through any functions) from such a
    statement, the import would create the vector env again: returns that statement's line.
    None if the call does not come from the main module's top level, or its source is unreadable.
    """
    main_globals = getattr(sys.modules.get("__main__"), "__dict__", None)
    top = None  # the outermost frame of main's top-level code: the script itself, not an exec in it
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals is main_globals:
            top = frame
        frame = frame.f_back
    if top is None:
        return None
    frame = top
    line = frame.f_lineno
    try:
        with tokenize.open(frame.f_code.co_filename) as file:
            tree = ast.parse(file.read())
    except (OSError, SyntaxError, ValueError):
        return None
    return None if _guarded(tree.body, line) else line


def _guarded(statements: Sequence[ast.stmt], line: int) -> bool:
    """Whether ``line`` lies in the body of an ``if __name__ == "__main__":`` among ``statements``."""
    for statement in statements:
        if not statement.lineno <= line <= (statement.end_lineno or statement.lineno):
            continue
        if isinstance(statement, ast.If) and (test := _main_test(statement.test)) is not None:
            guarded, unguarded = (statement.body, statement.orelse) if test else (statement.orelse, statement.body)
            if _within(guarded, line):
                return True
            return _guarded(unguarded, line)
        blocks = [getattr(statement, field, []) for field in ("body", "orelse", "finalbody")]
        blocks += [handler.body for handler in getattr(statement, "handlers", [])]
        blocks += [case.body for case in getattr(statement, "cases", [])]
        return any(_guarded(block, line) for block in blocks)
    return False


def _main_test(test: ast.expr) -> bool | None:
    """True for ``__name__ == "__main__"``, False for ``!=``, None for any other test."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq | ast.NotEq)):
        return None
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    mains = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    if not (names and mains):
        return None
    return isinstance(test.ops[0], ast.Eq)


def _within(block: Sequence[ast.stmt], line: int) -> bool:
    return bool(block) and block[0].lineno <= line <= (block[-1].end_lineno or block[-1].lineno)


def _child_sys_path() -> list[str]:
    """``sys.path`` for a worker: the parent's, with ``""`` read as the directory it started in."""
    start_dir = multiprocessing.process.ORIGINAL_DIR
    return [start_dir if entry == "" and start_dir else entry for entry in sys.path]


def _interpreter_flags() -> list[str]:
    """The parent's interpreter options (-O, -W, -X ...), as multiprocessing passes them."""
    flags = getattr(subprocess, "_args_from_interpreter_flags", None)
    return list(flags()) if flags is not None else []
