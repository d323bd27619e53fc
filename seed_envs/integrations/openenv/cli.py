"""``seed serve env``: serve a registered seed env as an OpenEnv environment.

    seed serve env --env seed/Sokoban-v0 [--port 8000] [--host 127.0.0.1] [--max-sessions 64]
                   [--idle-timeout 600] [--env-kwargs '{"split": "valid_seen"}']

One env per session (``gym.make(ENV, **ENV_KWARGS)``), at most ``--max-sessions`` at once,
each closed after ``--idle-timeout`` seconds without a request. Binds 127.0.0.1 unless
``--host`` says otherwise. Clients: OpenEnv's (``SeedEnvClient``) or Gymnasium's
(``gym.make("seed/Remote-v0", url=...)``). This module imports nothing heavy (the ``seed``
command builds its help from it); the server loads when the command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from seed_envs.cli import main
from seed_envs.core import MissingDataError
from seed_envs.registration import env_ids


def _env_kwargs(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not JSON: {error}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {type(value).__name__}")
    return value


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        value = kind(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    return parse


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--env", required=True, metavar="ID", help="a registered env id, e.g. seed/Sokoban-v0")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    parser.add_argument(
        "--max-sessions", type=_positive(int), default=64, metavar="N", help="sessions open at once (default 64)"
    )
    parser.add_argument(
        "--idle-timeout",
        type=_positive(float),
        default=600.0,
        metavar="S",
        help="close a session after S seconds without a request (default 600)",
    )
    parser.add_argument(
        "--env-kwargs", type=_env_kwargs, default={}, metavar="JSON", help="keyword arguments of gym.make, as JSON"
    )


def run_serve(args: argparse.Namespace) -> int:
    """Serve a registered seed env as an OpenEnv environment (one env per session) on 127.0.0.1."""
    if args.env not in env_ids():
        print(f"error: unknown env {args.env!r}; the seed envs are {', '.join(env_ids())}", file=sys.stderr)
        return 2
    try:
        from seed_envs.integrations.openenv.server import SeedOpenEnv, bind, create_app, serve, url_of

        SeedOpenEnv(args.env, args.env_kwargs).close()  # fail now, not in the first session
    except (ImportError, MissingDataError, TypeError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    app = create_app(args.env, args.env_kwargs, max_sessions=args.max_sessions, idle_timeout_s=args.idle_timeout)
    try:
        sock = bind(args.host, args.port)
    except OSError as error:
        print(f"error: cannot listen on {args.host}:{args.port}: {error}", file=sys.stderr)
        return 2
    print(
        f"serving {args.env} over OpenEnv at {url_of(sock)} "
        f"(at most {args.max_sessions} sessions, closed after {args.idle_timeout:g} s idle)",
        flush=True,
    )
    try:
        serve(app, sock)
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.modules[__name__]))
