"""One episode of a seed env played in text: what every framework adapter shares.

An adapter turns a framework's calls into :class:`EpisodeSession` calls:

- ``reset(task_id=...)`` starts a task and returns the opening text (the task, the first
  observation and, where the env lists them, the admissible actions);
- ``act(action)`` steps the env and returns a :class:`StepResult` whose ``text`` is what the
  model reads next; the step that ends the episode says so, and an action after the end is
  not played (its text says the episode is over);
- ``won``, ``score`` (the benchmark's own score) and ``total_reward`` are the outcome.

The env is ``gym.make(env_id, split=split, **env_kwargs)``, so the registered step limit
applies (``max_episode_steps=`` in ``env_kwargs`` changes it). Only the seed env ids are
accepted (:func:`seed_envs.env_ids`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from seed_envs.core import check_split
from seed_envs.registration import env_ids

#: The last ``<action>...</action>`` of a reply, if it has one.
ACTION_TAG = re.compile(r"<action>(.*?)</action>", re.DOTALL | re.IGNORECASE)

#: How a model is told to reply when its whole reply is the action (verifiers, SkyRL-gym).
REPLY_INSTRUCTIONS = (
    "You are playing a text environment. Each of your replies is one action: write it inside "
    "<action> </action>, for example <action>left</action>. The environment answers with what "
    "happened and the next observation, until the episode ends."
)


@dataclass(frozen=True)
class StepResult:
    """What one action led to: the text the model reads next, and the env's reward."""

    text: str
    reward: float
    #: The episode is over (won, lost, or the step limit reached).
    done: bool
    #: The env accepted the action (an invalid action changes nothing and the episode goes on).
    action_valid: bool
    #: The current frame (HxWx3 uint8) in visual envs, else None.
    image: np.ndarray | None = None


def check_env_id(env_id: str) -> str:
    """Return ``env_id`` if it is a seed env id, else raise a ValueError that lists them."""
    known = env_ids()
    if env_id not in known:
        raise ValueError(f"unknown env id {env_id!r}; the seed envs are: {', '.join(known)}")
    return env_id


def make_env(env_id: str, split: str = "train", **env_kwargs: Any) -> gym.Env:
    """``gym.make`` of a seed env id on ``split``, with clear errors for a wrong id or split."""
    return gym.make(check_env_id(env_id), split=check_split(split), **env_kwargs)


def iter_task_ids(env_id: str, split: str = "train", start: int = 0, **env_kwargs: Any) -> Iterator[str]:
    """The ids of a split's tasks from index ``start`` on, in the env's order (endless for an
    unbounded split such as the procedural envs' ``train``)."""
    if start < 0:
        raise ValueError(f"start must be >= 0, got {start}")
    env = make_env(env_id, split, **env_kwargs)
    seed_env = env.unwrapped
    count = seed_env.task_count(split)
    try:
        for index in itertools.count(start) if count is None else range(start, count):
            yield seed_env.task_id_for(split, index)
    finally:
        env.close()


def task_ids(env_id: str, split: str = "train", count: int = 1, start: int = 0, **env_kwargs: Any) -> list[str]:
    """The ids of tasks ``start`` .. ``start + count - 1`` of a split, in the env's order."""
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    ids = list(itertools.islice(iter_task_ids(env_id, split, start, **env_kwargs), count))
    if len(ids) < count:
        asked = f"tasks {start}..{start + count - 1} were asked for"
        raise ValueError(f"split {split!r} of {env_id} has {start + len(ids)} tasks; {asked}")
    return ids


def action_from_reply(reply: str) -> str:
    """The action in a model's reply: the text of its last ``<action>`` tag, else the whole reply."""
    tagged = ACTION_TAG.findall(reply)
    return (tagged[-1] if tagged else reply).strip()


def actions_line(available_actions: list[str] | None) -> str:
    """``Admissible actions: a, b, c`` (empty where the env does not list its actions)."""
    if not available_actions:
        return ""
    return "Admissible actions: " + ", ".join(available_actions)


class EpisodeSession:
    """A seed env played one action at a time in text (see the module docstring)."""

    def __init__(self, env_id: str, split: str = "train", **env_kwargs: Any) -> None:
        self.env_id = env_id
        self.split = split
        self.env = make_env(env_id, split, **env_kwargs)
        self.max_steps: int | None = self.env.spec.max_episode_steps if self.env.spec else None
        self.task: str | None = None
        self.task_id: str | None = None
        self.image: np.ndarray | None = None
        self._info: dict[str, Any] = {}
        self._reset_state()

    def _reset_state(self) -> None:
        #: The actions played this episode, in order (an action after the end is not played).
        self.actions: list[str] = []
        self.steps = 0
        self.total_reward = 0.0
        self.done = False
        self.truncated = False

    @property
    def started(self) -> bool:
        return self.task_id is not None

    @property
    def visual(self) -> bool:
        """The env's observations carry an image."""
        return getattr(self.env.unwrapped, "image_shape", None) is not None

    @property
    def won(self) -> bool:
        return bool(self._info.get("won", False))

    @property
    def score(self) -> float:
        """The benchmark's own score of the episode so far (1.0 for a won task in most envs)."""
        return float(self._info.get("score", 0.0))

    def reset(self, task_id: str | None = None, index: int | None = None, seed: int | None = None) -> str:
        """Start a task (by id, by index in the split, or drawn with ``seed``); return the opening text."""
        options: dict[str, Any] = {}
        if task_id is not None:
            options["task_id"] = str(task_id)
        elif index is not None:
            options["index"] = int(index)
        obs, info = self.env.reset(seed=seed, options=options)
        self._reset_state()
        self._info = info
        self.task = str(info["task"])
        self.task_id = str(info["task_id"])
        self.image = obs.get("image")
        return _join(f"Your task is to: {self.task}", obs["text"], actions_line(info.get("available_actions")))

    def act(self, action: str) -> StepResult:
        """Play one action; after the episode's end, nothing is played and the text says so."""
        if not self.started:
            raise RuntimeError("call reset() before act(): no task has been started")
        if self.done:
            return StepResult(
                text=f"The episode is already over ({self.outcome()}); no more actions are taken.",
                reward=0.0,
                done=True,
                action_valid=False,
                image=self.image,
            )
        obs, reward, terminated, truncated, info = self.env.step(str(action))
        self.actions.append(str(action))
        self._info = info
        self.image = obs.get("image")
        self.steps += 1
        self.total_reward += float(reward)
        self.done = bool(terminated or truncated)
        self.truncated = bool(truncated and not terminated)
        if self.done:
            ending = self._ending()
            text = _join(obs["text"], ending)
        else:
            text = _join(obs["text"], actions_line(info.get("available_actions")))
        return StepResult(
            text=text,
            reward=float(reward),
            done=self.done,
            action_valid=bool(info.get("action_valid", True)),
            image=self.image,
        )

    def outcome(self) -> str:
        """``won, score 1.00`` or ``not won, score 0.00``."""
        return f"{'won' if self.won else 'not won'}, score {self.score:.2f}"

    def _ending(self) -> str:
        limit = f": the step limit of {self.max_steps} was reached" if self.truncated else ""
        return f"The episode is over{limit} ({self.outcome()})."

    def close(self) -> None:
        self.env.close()


def _join(*parts: str) -> str:
    return "\n\n".join(part for part in parts if part)
