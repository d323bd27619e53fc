"""The OpenEnv server of a seed env: OpenEnv's own FastAPI app, with a session cap and idle expiry.

:func:`create_app` builds OpenEnv's ``HTTPEnvServer`` routes (``/ws`` sessions, ``/reset``,
``/step``, ``/state``, ``/schema``, ``/metadata``, ``/health``) over :class:`SeedOpenEnv`, one env
per session, and adds what a shared server needs:

- at most ``max_sessions`` sessions: a session asked for beyond the cap is refused with HTTP 503
  before the WebSocket opens (OpenEnv's own check stays behind it, for a race at the cap);
- sessions idle for ``idle_timeout_s`` expire (OpenEnv's reaper; a later request on one is
  answered with an error that says it expired);
- clear HTTP errors for what a caller can fix: 422 for malformed JSON or an action of the wrong
  type (FastAPI's validation), 400 for bad reset arguments, 409 for a step with no episode (OpenEnv's
  HTTP ``/step`` is stateless). Over a session these come as OpenEnv error messages (``INVALID_JSON``,
  ``VALIDATION_ERROR``, ``EXECUTION_ERROR``, the last also for a request to an expired session), and
  the session goes on.

:func:`serve` runs the app with uvicorn (the ``seed serve env`` command); :class:`ServerThread`
runs it on a thread of this process, for tests and benchmarks.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from seed_envs.extras import require_extra

require_extra("openenv", "openenv", "uvicorn", "fastapi", what="the OpenEnv server (seed serve env)")

import uvicorn  # noqa: E402
from fastapi import FastAPI, Request  # noqa: E402
from fastapi.responses import JSONResponse  # noqa: E402
from openenv.core.env_server.http_server import HTTPEnvServer  # noqa: E402
from openenv.core.env_server.types import ConcurrencyConfig  # noqa: E402
from starlette.types import ASGIApp, Receive, Scope, Send  # noqa: E402
from starlette.websockets import WebSocket, WebSocketDisconnect  # noqa: E402

from seed_envs.integrations.openenv.environment import InvalidRequestError, NoEpisodeError, SeedOpenEnv  # noqa: E402
from seed_envs.integrations.openenv.models import SeedAction, SeedObservation  # noqa: E402

DEFAULT_HOST = "127.0.0.1"
DEFAULT_MAX_SESSIONS = 64
DEFAULT_IDLE_TIMEOUT_S = 600.0
#: The largest WebSocket message the server reads (an action far over any env's limit fits).
MAX_MESSAGE_BYTES = 16 * 2**20
SESSION_PATH = "/ws"

#: HTTP status of the errors a caller can fix (raised by the env of a stateless request).
ERROR_STATUS: dict[type[Exception], int] = {InvalidRequestError: 400, NoEpisodeError: 409}


class SessionCap:
    """ASGI middleware: refuse a new session with HTTP 503 while ``server`` holds its maximum.

    It also keeps a session whose client left first from being logged as a server error
    (OpenEnv 0.3.0 closes the WebSocket after its client's ``close`` message, when the client
    may have closed the connection already).
    """

    def __init__(self, app: ASGIApp, server: HTTPEnvServer) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and scope["path"] == SESSION_PATH:
            active, cap = self.server.active_sessions, self.server.max_concurrent_envs
            if active >= cap:
                detail = f"server at capacity: {active}/{cap} sessions are open; retry when one closes or expires"
                response = JSONResponse({"detail": detail}, status_code=503, headers={"Retry-After": "5"})
                await WebSocket(scope, receive, send).send_denial_response(response)
                return
            with contextlib.suppress(WebSocketDisconnect):  # the client left; its session is closed
                await self.app(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _error_response(_: Request, error: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(error)}, status_code=ERROR_STATUS[type(error)])


def create_app(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
) -> FastAPI:
    """OpenEnv's app serving ``gym.make(env_id, **env_kwargs)``, one env per session; the
    sessions' envs are called one at a time.

    ``app.state.openenv`` is the ``HTTPEnvServer`` (its ``active_sessions`` count the open ones).
    """
    if max_sessions < 1:
        raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
    if not idle_timeout_s > 0:
        raise ValueError(f"idle_timeout_s must be positive, got {idle_timeout_s}")
    # One lock for all sessions' envs: see SeedOpenEnv (some engines share process-wide state).
    factory = functools.partial(SeedOpenEnv, env_id, dict(env_kwargs or {}), idle_timeout_s, threading.Lock())
    server = HTTPEnvServer(
        factory,
        SeedAction,
        SeedObservation,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout_s),
    )
    app = FastAPI(
        title=f"{env_id} over OpenEnv",
        description=f"The seed env {env_id}, one env per session (WebSocket {SESSION_PATH}); "
        f"at most {max_sessions} sessions, each expiring after {idle_timeout_s:g} s idle.",
    )
    server.register_routes(app)
    app.add_middleware(SessionCap, server=server)
    for error_type in ERROR_STATUS:
        app.add_exception_handler(error_type, _error_response)
    app.state.openenv = server
    return app


def bind(host: str = DEFAULT_HOST, port: int = 0) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket) -> str:
    """The ``http://host:port`` a client reaches a bound socket at."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def uvicorn_server(app: FastAPI) -> uvicorn.Server:
    config = uvicorn.Config(app, log_level="warning", ws_max_size=MAX_MESSAGE_BYTES, timeout_graceful_shutdown=5)
    return uvicorn.Server(config)


def serve(app: FastAPI, sock: socket.socket) -> None:
    """Serve ``app`` on a bound socket until interrupted."""
    uvicorn_server(app).run(sockets=[sock])


class ServerThread:
    """``app`` served on a free loopback port from a thread of this process; a context manager.

    >>> with ServerThread(create_app("seed/Corridor-v0")) as server:
    ...     server.url  # 'http://127.0.0.1:<port>'
    """

    def __init__(self, app: FastAPI, host: str = DEFAULT_HOST, start_timeout_s: float = 30.0) -> None:
        self.app = app
        self.host = host
        self.start_timeout_s = start_timeout_s
        self._server = uvicorn_server(app)
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def start(self) -> ServerThread:
        self._sock = bind(self.host)
        self.url = url_of(self._sock)
        self._thread = threading.Thread(target=self._run, name="openenv-server", daemon=True)
        self._thread.start()
        waited = 0.0
        while not self._server.started:
            if not self._thread.is_alive() or waited > self.start_timeout_s:
                self.stop()
                raise RuntimeError(f"the server at {self.url} did not start")
            self._thread.join(0.02)
            waited += 0.02
        return self

    def _run(self) -> None:
        assert self._sock is not None
        asyncio.run(self._server.serve(sockets=[self._sock]))

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
        if self._sock is not None:
            self._sock.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
