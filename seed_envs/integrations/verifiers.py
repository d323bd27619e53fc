"""verifiers: a seed env's split as a verifiers taskset, played turn by turn by its env.

verifiers (0.4) splits an environment into a *taskset* (the tasks, :class:`SeedTaskset`: one
per task id of a split) and an *env* (how one task becomes an episode, :class:`SeedPlayerEnv`).
The env steps the seed env host-side as the conversation's user: the opening message is the
task and first observation, each model reply is one action (its ``<action>`` tag, else the whole
reply), the next observation is the next user turn, and the episode's end ends the exchange.
The trace's reward is the env's own score (``score``); ``won`` and ``steps`` are metrics::

    from seed_envs.integrations.verifiers import load_environment

    env = load_environment("seed/Sokoban-v0", split="valid_seen", env_kwargs={"observation_mode": "text"})

The player runs verifiers' tool-less chat harness (``null``) in a local subprocess by default.
verifiers finds a taskset by importing the module named by its id, so the taskset id is
:data:`TASKSET_ID`, the top-level module ``seed_envs_verifiers`` that re-exports the two classes
(``vf-eval seed-envs-verifiers --env.taskset.env-id seed/Corridor-v0`` on the command line).
In visual envs each observation carries the frame as a PNG image part.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from seed_envs.extras import require_extra

require_extra("verifiers", "verifiers", what="the verifiers adapter")

import verifiers.v1 as vf  # noqa: E402
from pydantic import Field, model_validator  # noqa: E402

from seed_envs.core import check_split  # noqa: E402
from seed_envs.images import png_data_url  # noqa: E402
from seed_envs.integrations.session import (  # noqa: E402
    REPLY_INSTRUCTIONS,
    EpisodeSession,
    action_from_reply,
    check_env_id,
    iter_task_ids,
    make_env,
)

#: The id verifiers imports the taskset by (the top-level module ``seed_envs_verifiers``).
TASKSET_ID = "seed-envs-verifiers"


class SeedTasksetConfig(vf.TasksetConfig):
    """Which tasks: a seed env id, its split, and where in the split to start. The env id
    defaults to the toy corridor (verifiers builds a taskset's config from its id alone first)."""

    env_id: str = "seed/Corridor-v0"
    split: str = "train"
    #: Index of the first task in the split.
    start: int = Field(0, ge=0)
    #: Keywords of ``gym.make`` (``observation_mode``, ``max_episode_steps``, ...).
    env_kwargs: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_env(self) -> SeedTasksetConfig:
        check_env_id(self.env_id)
        check_split(self.split)
        return self


class SeedTaskData(vf.TaskData):
    """One task: the env to make and the task id to reset it to."""

    env_id: str
    split: str
    task_id: str
    env_kwargs: dict[str, Any] = Field(default_factory=dict)


class SeedTask(vf.Task[SeedTaskData, vf.State, vf.TaskConfig]):
    """A seed task; its key is the env id and task id, stable across runs."""

    @property
    def key(self) -> str:
        return f"{self.data.env_id}:{self.data.task_id}"


class SeedTaskset(vf.Taskset[SeedTask, SeedTasksetConfig]):
    """The tasks of a split from ``start`` on, in the env's order; endless for an unbounded
    split (a procedural env's ``train``), which verifiers bounds with ``take``/``include``."""

    def __init__(self, config: SeedTasksetConfig) -> None:
        super().__init__(config)
        env = make_env(config.env_id, config.split, **config.env_kwargs)
        try:
            self.INFINITE = env.unwrapped.task_count(config.split) is None
        finally:
            env.close()

    def load(self) -> Iterator[SeedTask]:
        config = self.config
        for task_id in iter_task_ids(config.env_id, config.split, config.start, **config.env_kwargs):
            data = SeedTaskData(
                id=task_id,
                name=task_id,
                prompt=None,  # the env opens the exchange with the task and first observation
                system_prompt=REPLY_INSTRUCTIONS,
                env_id=config.env_id,
                split=config.split,
                task_id=task_id,
                env_kwargs=config.env_kwargs,
            )
            yield SeedTask(data, config.task)


def default_player() -> vf.AgentConfig:
    """The seat's default: verifiers' tool-less chat harness, run as a local subprocess."""
    return vf.AgentConfig(harness={"id": "null"}, runtime=vf.SubprocessConfig())


class SeedPlayerEnvConfig(vf.EnvConfig):
    """The env's config: one seat, ``player``."""

    player: vf.AgentConfig = default_player()


class SeedPlayerEnv(vf.Env[SeedPlayerEnvConfig]):
    """Plays a seed task: the seed env is the user, the model's replies are its actions."""

    async def run(self, task: SeedTask, agents: vf.Agents) -> None:
        data = task.data
        session = await asyncio.to_thread(EpisodeSession, data.env_id, data.split, **data.env_kwargs)
        try:
            opening = await asyncio.to_thread(session.reset, data.task_id)
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn(user_turn(opening, session.image))
                while not segment.terminated:
                    step = await asyncio.to_thread(session.act, action_from_reply(segment.last_reply))
                    if step.done:
                        break  # the episode is over: the exchange ends here
                    segment = await interaction.turn(user_turn(step.text, step.image))
            trace = interaction.trace
            trace.record_reward("score", session.score)
            trace.record_metric("won", float(session.won))
            trace.record_metric("steps", float(session.steps))
            trace.info["task_id"] = session.task_id
            trace.info["outcome"] = session.outcome()
        finally:
            session.close()


def user_turn(text: str, image: Any = None) -> str | vf.Messages:
    """A user turn: the text, or (visual envs) one message with the frame and the text."""
    if image is None:
        return text
    parts = [
        vf.ImageUrlContentPart(image_url=vf.ImageUrlSource(url=png_data_url(image))),
        vf.TextContentPart(text=text),
    ]
    return [vf.UserMessage(content=parts)]


def load_environment(
    env_id: str,
    split: str = "train",
    *,
    start: int = 0,
    env_kwargs: dict[str, Any] | None = None,
    player: vf.AgentConfig | dict[str, Any] | None = None,
) -> SeedPlayerEnv:
    """The verifiers env that plays ``env_id``'s ``split`` (tasks from index ``start`` on).

    ``player`` overrides the seat (harness, runtime, ``max_turns``, ...); verifiers' own
    ``load_environment`` builds it, so it is the env the ``vf`` tools would build from the
    same config."""
    config = SeedPlayerEnvConfig(
        taskset={
            "id": TASKSET_ID,
            "env_id": env_id,
            "split": split,
            "start": start,
            "env_kwargs": dict(env_kwargs or {}),
        },
        player=default_player() if player is None else player,
    )
    env = vf.load_environment(config)
    if not isinstance(env, SeedPlayerEnv):
        raise TypeError(f"verifiers built a {type(env).__name__} for {TASKSET_ID!r}, not a SeedPlayerEnv")
    return env
