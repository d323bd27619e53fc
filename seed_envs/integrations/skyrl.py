"""SkyRL-gym: every seed env as a ``BaseTextEnv``, registered under its seed id.

Importing this module registers the ids (``skyrl_gym.make("seed/Corridor-v0", ...)``). SkyRL's
generator builds one env per trajectory with ``env_config`` (the env's section of the
``skyrl_gym`` config) and ``extras`` (the dataset row's other fields), calls ``init(prompt)``
with the row's conversation, then ``step(reply)`` with each model reply:

- ``env_config``: ``split`` (default ``train``) and any ``gym.make`` keyword
  (``observation_mode``, ``max_episode_steps``, ...);
- ``extras``: the task, as ``task_id`` (or ``extra_info.task_id``); without one a task is drawn
  at random. ``max_turns`` (set by SkyRL's generator) ends the episode after that many steps;
- ``init`` appends the task and first observation to the conversation's last user message;
- ``step`` plays the reply's action (its ``<action>`` tag, else the whole reply) and returns the
  next observation as a user message. The reward is 0 until the episode ends, then the env's
  score; ``metadata`` carries ``won``, ``score``, the step's ``env_reward`` and ``action_valid``.

``BaseTextEnv`` is text in, text out, so a visual env needs its text observation mode
(``observation_mode: text`` for Sokoban and EZPoints); :func:`task_rows` builds dataset rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from seed_envs.extras import require_extra

require_extra("skyrl", "skyrl_gym", what="the SkyRL-gym adapter")

import skyrl_gym  # noqa: E402
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType  # noqa: E402

from seed_envs.integrations.session import (  # noqa: E402
    REPLY_INSTRUCTIONS,
    EpisodeSession,
    action_from_reply,
    task_ids,
)
from seed_envs.registration import env_ids  # noqa: E402

ENTRY_POINT = "seed_envs.integrations.skyrl:SeedTextEnv"


class SeedTextEnv(BaseTextEnv):
    """One trajectory of a seed env, as SkyRL's generator drives it (see the module docstring)."""

    def __init__(
        self, env_id: str, env_config: Mapping[str, Any] | None = None, extras: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__()
        config = dict(env_config or {})
        split = str(config.pop("split", "train"))
        self.extras = dict(extras or {})
        self.session = EpisodeSession(env_id, split, **config)
        if self.session.visual:
            self.session.close()
            raise ValueError(
                f"{env_id} shows its observations as images, and SkyRL-gym's BaseTextEnv is text only: "
                "set observation_mode: text in its env_config"
            )
        limit = self.extras.get("max_turns")
        self.max_turns = int(limit) if limit is not None else (self.session.max_steps or 0)
        self.over = False

    def init(self, prompt: ConversationType) -> tuple[ConversationType, dict[str, Any]]:
        """The conversation with the task and first observation appended to its last user
        message (a new user message if it has none), and the task in the metadata."""
        opening = self.session.reset(task_id=self._task_id())
        self.turns = 0
        self.over = False
        conversation = [dict(message) for message in prompt or []]
        if conversation and conversation[-1].get("role") == "user":
            last = conversation[-1]
            last["content"] = "\n\n".join(part for part in (str(last.get("content") or ""), opening) if part)
        else:
            conversation.append({"role": "user", "content": opening})
        return conversation, {"task_id": self.session.task_id, "task": self.session.task}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Play the reply's action; the step that ends the episode is rewarded with the score.
        A step after the end plays nothing, says so, and is rewarded 0."""
        if self.over:
            text = f"The episode is already over ({self.session.outcome()}); no more actions are taken."
            return BaseTextEnvStepOutput(
                observations=[{"role": "user", "content": text}],
                reward=0.0,
                done=True,
                metadata=self._metadata(env_reward=0.0, action_valid=False),
            )
        self.turns += 1
        step = self.session.act(action_from_reply(action))
        self.over = step.done or (self.max_turns > 0 and self.turns >= self.max_turns)
        text = step.text
        if self.over and not step.done:
            limit = f"the turn limit of {self.max_turns} was reached"
            text = f"{text}\n\nThe episode is over: {limit} ({self.session.outcome()})."
        return BaseTextEnvStepOutput(
            observations=[{"role": "user", "content": text}],
            reward=self.session.score if self.over else 0.0,
            done=self.over,
            metadata=self._metadata(env_reward=step.reward, action_valid=step.action_valid),
        )

    def _metadata(self, env_reward: float, action_valid: bool) -> dict[str, Any]:
        return {
            "won": self.session.won,
            "score": self.session.score,
            "env_reward": env_reward,
            "action_valid": action_valid,
            "task_id": self.session.task_id,
        }

    def get_metrics(self) -> dict[str, Any]:
        return {
            "won": float(self.session.won),
            "score": self.session.score,
            "steps": self.session.steps,
        }

    def close(self) -> None:
        self.session.close()

    def _task_id(self) -> str | None:
        task_id = self.extras.get("task_id")
        if task_id is None:
            task_id = (self.extras.get("extra_info") or {}).get("task_id")
        return None if task_id is None else str(task_id)


def register_skyrl_envs() -> None:
    """Register every seed env id in SkyRL-gym's registry (ids already there are left as they are)."""
    for env_id in env_ids():
        if env_id not in skyrl_gym.registry:
            skyrl_gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"env_id": env_id})


def task_rows(
    env_id: str, split: str = "train", count: int = 64, start: int = 0, **env_kwargs: Any
) -> list[dict[str, Any]]:
    """Dataset rows in SkyRL's format for tasks ``start`` .. ``start + count - 1`` of a split:
    ``prompt`` (a system message with the reply instructions), ``env_class`` and ``extra_info``."""
    return [
        {
            "prompt": [{"role": "system", "content": REPLY_INSTRUCTIONS}],
            "env_class": env_id,
            "extra_info": {"task_id": task_id},
        }
        for task_id in task_ids(env_id, split, count, start, **env_kwargs)
    ]


register_skyrl_envs()
