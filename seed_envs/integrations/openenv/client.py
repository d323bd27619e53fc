"""Clients of a served seed env: OpenEnv's (:class:`SeedEnvClient`) and Gymnasium's (:class:`RemoteSeedEnv`).

:class:`SeedEnvClient` is an OpenEnv ``EnvClient`` (async; ``.sync()`` for a blocking one) that
speaks the typed models of :mod:`seed_envs.integrations.openenv.models`. :class:`RemoteSeedEnv`
wraps it as a Gymnasium env, registered as ``seed/Remote-v0``::

    env = gym.make("seed/Remote-v0", url="http://127.0.0.1:8000")

It has the served env's spaces, ``task_count``, ``max_action_length`` and ``info`` (as JSON
carries it), and plays the same trajectory as the local env for the same seeds, options and
actions; the time limit is the server's. One env is one server session, held until ``close()``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from seed_envs.extras import require_extra

require_extra("openenv", "openenv", "websockets", what="seed/Remote-v0 (the OpenEnv client)")

from openenv.core.client_types import StepResult  # noqa: E402
from openenv.core.env_client import EnvClient  # noqa: E402
from websockets.exceptions import InvalidStatus  # noqa: E402

from seed_envs.core import check_split  # noqa: E402
from seed_envs.integrations.openenv.models import SeedAction, SeedObservation, SeedState  # noqa: E402
from seed_envs.spaces import action_space, observation_space  # noqa: E402


class SeedEnvClient(EnvClient[SeedAction, SeedObservation, SeedState]):
    """OpenEnv's client of a served seed env: one WebSocket session per client.

    ``reset(seed=..., options={...})`` and ``step(SeedAction(text=...))`` return a ``StepResult``
    whose ``observation`` is a :class:`SeedObservation` (its image already decoded); ``state()``
    a :class:`SeedState`. A server error is raised as ``RuntimeError`` with the server's message.
    """

    async def connect(self) -> SeedEnvClient:
        try:
            await super().connect()
        except ConnectionError as error:
            refusal = error.__cause__
            if isinstance(refusal, InvalidStatus):  # an HTTP answer instead of a session: say why
                body = refusal.response.body.decode("utf-8", "replace") if refusal.response.body else ""
                raise ConnectionError(f"{error} {body}".strip()) from refusal
            raise
        return self

    def _step_payload(self, action: SeedAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[SeedObservation]:
        observation = SeedObservation.model_validate(
            {**payload.get("observation", {}), "reward": payload.get("reward"), "done": payload.get("done", False)}
        )
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> SeedState:
        return SeedState.model_validate(payload)


class RemoteSeedEnv(gym.Env[dict[str, Any], str]):
    """A seed env served over OpenEnv, as a Gymnasium env (``gym.make("seed/Remote-v0", url=...)``).

    ``render_mode="ansi"`` renders the last text, ``"rgb_array"`` the last image (visual envs).
    Actions must be strings (the action space); any string goes, the env judges it.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        url: str,
        render_mode: str | None = None,
        connect_timeout_s: float = 10.0,
        message_timeout_s: float = 120.0,
    ) -> None:
        client = SeedEnvClient(url, connect_timeout_s=connect_timeout_s, message_timeout_s=message_timeout_s).sync()
        try:
            client.connect()
            spec: SeedState = client.state()
        except BaseException:
            client.close()  # also stops the client's event-loop thread
            raise
        self._client: Any = client
        self.url = url
        #: The id of the env the server plays.
        self.remote_env_id = spec.env_id
        self.max_text_length = spec.max_text_length
        self.max_action_length = spec.max_action_length
        self.image_shape = spec.image_shape
        self._task_counts = dict(spec.task_counts)
        self.metadata = {**type(self).metadata, "render_modes": list(spec.render_modes)}
        if render_mode is not None and render_mode not in spec.render_modes:
            client.close()
            raise ValueError(
                f"render_mode {render_mode!r} not supported by {spec.env_id}; expected one of {spec.render_modes}"
            )
        self.render_mode = render_mode
        self.observation_space = observation_space(spec.max_text_length, spec.image_shape)
        self.action_space = action_space(spec.max_action_length)
        self._last: SeedObservation | None = None

    def task_count(self, split: str) -> int | None:
        """The number of tasks in ``split`` on the server's env (None: unbounded)."""
        return self._task_counts[check_split(split)]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        request: dict[str, Any] = {}
        if seed is not None:
            request["seed"] = int(seed)
        if options:
            request["options"] = dict(options)
        result = self._session().reset(**request)
        return self._unpack(result.observation), dict(result.observation.info)

    def step(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str):
            raise TypeError(f"a remote seed env takes str actions (its action space), got {type(action).__name__}")
        result = self._session().step(SeedAction(text=action))
        observation = result.observation
        reward = float(observation.reward) if observation.reward is not None else 0.0
        return self._unpack(observation), reward, observation.terminated, observation.truncated, dict(observation.info)

    def render(self) -> str | np.ndarray | None:
        if self._last is None or self.render_mode is None:
            return None
        return self._last.text if self.render_mode == "ansi" else self._last.image

    def close(self) -> None:
        """End the server session (idempotent)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def _session(self) -> Any:
        if self._client is None:
            raise RuntimeError(f"this remote env ({self.remote_env_id} at {self.url}) is closed; make a new one")
        return self._client

    def _unpack(self, observation: SeedObservation) -> dict[str, Any]:
        self._last = observation
        obs: dict[str, Any] = {"text": observation.text}
        if self.image_shape is not None:
            obs["image"] = observation.image
        return obs
