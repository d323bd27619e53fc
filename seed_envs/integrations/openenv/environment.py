"""A registered seed env as an OpenEnv ``Environment``: one Gymnasium env per session.

The server builds one :class:`SeedOpenEnv` per session (``gym.make(env_id, **env_kwargs)``, with
the registered time limit), so sessions share no episode. ``reset`` takes Gymnasium's ``seed`` and
``options``; ``step`` a :class:`SeedAction`. Errors a caller can fix are raised as
:class:`InvalidRequestError` (bad reset arguments), :class:`NoEpisodeError` (a step before any
reset) or :class:`SessionClosedError` (the session expired or was closed); the server answers
the first two with HTTP 400 and 409, and all three over a session with an error message.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from seed_envs.core import SPLITS, SeedEnv
from seed_envs.integrations.openenv.models import SeedAction, SeedObservation, SeedState

RESET_ARGUMENTS = ("seed", "episode_id", "options")


class InvalidRequestError(ValueError):
    """A request the env cannot serve as given (an unknown task id, split or argument)."""


class NoEpisodeError(RuntimeError):
    """A step with no episode started in this env."""


class SessionClosedError(RuntimeError):
    """A request to an env whose session expired or was closed."""


class SeedOpenEnv(Environment[SeedAction, SeedObservation, SeedState]):
    """One session's seed env behind OpenEnv's ``reset``/``step``/``state``.

    ``lock`` is held around every call into the env (building it included). The server gives
    all its sessions one lock: some envs' engines keep process-wide state that two threads must
    not use at once (ALFWorld's PDDL parser, in textworld), and Python runs one thread at a time
    anyway. ``idle_timeout_s`` only words the message of a request that arrives after the
    server expired the session (the server's reaper does the expiring).
    """

    #: Every session builds its own Gymnasium env, so sessions share no episode state.
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self,
        env_id: str,
        env_kwargs: Mapping[str, Any] | None = None,
        idle_timeout_s: float | None = None,
        lock: threading.Lock | None = None,
    ) -> None:
        super().__init__()
        self.env_id = env_id
        self.idle_timeout_s = idle_timeout_s
        # Also keeps the server's reaper from closing the env while a request runs on it.
        self._lock = lock or threading.Lock()
        with self._lock:
            # Without Gymnasium's passive checker: after a reset that raised (a bad task id, say), its
            # next step fails on the data it never got (gymnasium 1.x), which would end the session.
            env = gym.make(env_id, disable_env_checker=True, **dict(env_kwargs or {}))
            seed_env = env.unwrapped
            if not isinstance(seed_env, SeedEnv):
                env.close()
                raise TypeError(f"{env_id} is not a seed env ({type(seed_env).__name__}); serve one of env_ids()")
            self._state = SeedState(
                env_id=env_id,
                max_text_length=seed_env.max_text_length,
                max_action_length=seed_env.max_action_length,
                image_shape=seed_env.image_shape,
                render_modes=list(seed_env.metadata.get("render_modes", [])),
                task_counts={split: seed_env.task_count(split) for split in SPLITS},
            )
        self._env: gym.Env | None = env
        self._started = False

    # --------------------------------------------------------------- OpenEnv API
    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        options: dict[str, Any] | None = None,
        **unknown: Any,
    ) -> SeedObservation:
        """Start an episode: ``env.reset(seed=seed, options=options)`` (``task_id``, ``split``, ``index``)."""
        if unknown:
            raise InvalidRequestError(
                f"unknown reset argument(s) {', '.join(sorted(unknown))}; expected {', '.join(RESET_ARGUMENTS)}"
            )
        with self._lock:
            env = self._open_env()
            self._check_options(options, env)
            try:
                obs, info = env.reset(seed=seed, options=options)
            except ValueError as error:  # an unknown split or task id (SeedEnv's own checks)
                raise InvalidRequestError(f"reset failed: {error}") from error
            self._started = True
            self._state.episode_id = episode_id
            self._state.step_count = 0
            self._state.task_id = info.get("task_id")
            return self._observation(obs, info)

    def step(self, action: SeedAction, timeout_s: float | None = None, **kwargs: Any) -> SeedObservation:
        """One action; the env reports an invalid one in ``info["action_valid"]``, as it does locally."""
        with self._lock:
            env = self._open_env()
            if not self._started:
                raise NoEpisodeError(
                    "no episode in this env: reset first. OpenEnv's HTTP /step is stateless (each request gets "
                    "a fresh env); play an episode over a session (the WebSocket /ws, as the OpenEnv client does)"
                )
            obs, reward, terminated, truncated, info = env.step(action.text)
            self._state.step_count += 1
            return self._observation(obs, info, reward=reward, terminated=terminated, truncated=truncated)

    @property
    def state(self) -> SeedState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=self.env_id,
            description=f"The seed env {self.env_id} (Gymnasium) served over OpenEnv: text actions, "
            "text (and image) observations, Gymnasium's terminated/truncated and info.",
        )

    def close(self) -> None:
        with self._lock:
            if self._env is not None:
                self._env.close()
                self._env = None

    # --------------------------------------------------------------- helpers
    def _check_options(self, options: object, env: gym.Env) -> None:
        """Raise InvalidRequestError for options the env would reject with an IndexError (an
        index out of range; other bad options raise ValueError there). Unknown keys are ignored,
        as the env ignores them."""
        if options is None:
            return
        if not isinstance(options, dict):
            raise InvalidRequestError(f"reset options must be an object, got {type(options).__name__}")
        if options.get("task_id") is not None or options.get("index") is None:
            return
        split = options.get("split") or env.unwrapped.split
        count = self._state.task_counts.get(split)
        try:
            index = int(options["index"])
        except (TypeError, ValueError):
            raise InvalidRequestError(f"reset option index must be an integer, got {options['index']!r}") from None
        if count is not None and not 0 <= index < count:  # SeedEnv's own range check
            raise InvalidRequestError(f"index {index} out of range for split {split!r} with {count} tasks")

    def _open_env(self) -> gym.Env:
        if self._env is None:
            after = f" after {self.idle_timeout_s:g} s without a request" if self.idle_timeout_s else ""
            raise SessionClosedError(f"this session was closed{after}; open a new session")
        return self._env

    def _observation(
        self,
        obs: dict[str, Any],
        info: dict[str, Any],
        reward: float | None = None,
        terminated: bool = False,
        truncated: bool = False,
    ) -> SeedObservation:
        return SeedObservation(
            text=obs["text"],
            image=obs.get("image"),
            reward=None if reward is None else float(reward),
            done=bool(terminated or truncated),
            terminated=bool(terminated),
            truncated=bool(truncated),
            info=info,
        )
