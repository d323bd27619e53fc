"""TRL: a seed env as an ``environment_factory`` environment of ``GRPOTrainer``.

TRL builds one environment per rollout with the factory, calls ``reset(**row)`` with the
rollout's dataset row, and exposes the environment's public methods as tools; here there is
one, ``act(action)``. The reward functions read each rollout's environment (TRL passes them as
``environments``)::

    from trl import GRPOConfig, GRPOTrainer
    from seed_envs.integrations.trl import environment_factory, score_reward, task_dataset

    trainer = GRPOTrainer(
        model=model,
        args=GRPOConfig(num_generations=4, max_steps=10),
        train_dataset=task_dataset("seed/Corridor-v0", "train", count=16),
        environment_factory=environment_factory("seed/Corridor-v0"),
        reward_funcs=[score_reward],
    )

``task_dataset`` gives every row a ``task_id``, so the rollouts of one GRPO group play the
same task (without it, each ``reset`` draws its own task). In visual envs ``reset`` and
``act`` return the image as well as the text (TRL's multimodal tool responses); give a text
model the env's text observation instead (``observation_mode="text"`` for Sokoban and
EZPoints).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from seed_envs.extras import require_extra

require_extra("trl", "trl", "datasets", what="the TRL adapter")

from datasets import Dataset  # noqa: E402
from PIL import Image  # noqa: E402

from seed_envs.integrations.session import EpisodeSession, StepResult, task_ids  # noqa: E402

#: The instruction each row's prompt starts with; ``reset`` appends the task and first observation.
TOOL_INSTRUCTIONS = (
    "You are playing a text environment. Take each action by calling the `act` tool with the action; "
    "it answers with what happened and the next observation. Keep acting until the episode is over."
)

Content = str | list[dict[str, Any]]


class SeedToolEnv:
    """One rollout's seed env, as TRL's ``environment_factory`` expects it.

    Its only public methods are ``reset`` and the tool ``act``: TRL offers every public method
    as a tool. The outcome is read through the properties ``won``, ``score``, ``total_reward``
    and ``steps``.
    """

    def __init__(self, env_id: str, split: str = "train", **env_kwargs: Any) -> None:
        self._session = EpisodeSession(env_id, split, **env_kwargs)

    def reset(self, task_id: str | None = None, **row: Any) -> Content:
        """Start the row's task (``task_id``; a task drawn at random without one) and return the
        task and first observation, which TRL appends to the prompt. The row's other columns
        (``prompt``, ...) are ignored."""
        text = self._session.reset(task_id=task_id)
        return self._content(text, self._session.image)

    def act(self, action: str) -> Content:
        """Take one action in the environment and see what happens.

        Args:
            action: The action to take, written as the environment names it (for example "left").

        Returns:
            What the action did and the next observation, or that the episode is over.
        """
        if not self._session.started:
            raise RuntimeError("act() was called before reset(): no task has been started")
        step: StepResult = self._session.act(action)
        return self._content(step.text, step.image)

    @property
    def won(self) -> bool:
        return self._session.won

    @property
    def score(self) -> float:
        """The benchmark's own score of the episode (0.0 before any action)."""
        return self._session.score

    @property
    def total_reward(self) -> float:
        """The sum of the env's per-step rewards."""
        return self._session.total_reward

    @property
    def steps(self) -> int:
        return self._session.steps

    @property
    def actions(self) -> list[str]:
        """The actions played this episode, in order."""
        return list(self._session.actions)

    @property
    def done(self) -> bool:
        return self._session.done

    @property
    def task_id(self) -> str | None:
        return self._session.task_id

    @staticmethod
    def _content(text: str, image: Any) -> Content:
        """Text alone, or (visual envs) TRL's content blocks: the image, then the text."""
        if image is None:
            return text
        return [{"type": "image", "image": Image.fromarray(image)}, {"type": "text", "text": text}]


def environment_factory(env_id: str, split: str = "train", **env_kwargs: Any) -> Callable[[], SeedToolEnv]:
    """A factory of :class:`SeedToolEnv` for ``GRPOTrainer(environment_factory=...)``.

    The first env is built here, so a wrong id, split or keyword fails now, not in training."""
    SeedToolEnv(env_id, split, **env_kwargs)._session.close()

    def make() -> SeedToolEnv:
        return SeedToolEnv(env_id, split, **env_kwargs)

    make.__name__ = f"seed_tool_env_{env_id.split('/')[-1]}"
    return make


def task_dataset(
    env_id: str,
    split: str = "train",
    count: int = 64,
    start: int = 0,
    instructions: str = TOOL_INSTRUCTIONS,
    examples: int = 0,
    **env_kwargs: Any,
) -> Dataset:
    """A dataset of ``count`` tasks of a split, one row each: ``prompt`` and ``task_id``.

    The prompt is a system message with ``instructions`` and an empty user message that
    ``reset`` fills with the task. ``examples=n`` puts n worked moves between them, as earlier
    turns (:func:`example_turns`, on tasks of another split): small models need them to call
    the tool at all."""
    ids = task_ids(env_id, split, count, start, **env_kwargs)
    other = "valid_seen" if split == "valid_unseen" else "valid_unseen"
    turns = [turn for index in range(examples) for turn in example_turns(env_id, other, index, **env_kwargs)]
    prompt = [{"role": "system", "content": instructions}, *turns, {"role": "user", "content": ""}]
    return Dataset.from_dict({"prompt": [prompt] * len(ids), "task_id": ids})


def example_turns(env_id: str, split: str, index: int = 0, **env_kwargs: Any) -> list[dict[str, Any]]:
    """One worked move as two chat turns: the opening of task ``index`` of ``split`` (its text),
    then an assistant turn calling ``act`` with the env's expert move. The tool's answer is left
    out: shown one, a small model goes on to write tool answers itself instead of calls."""
    session = EpisodeSession(env_id, split, **env_kwargs)
    try:
        opening = session.reset(index=index)
        plan = session.env.unwrapped.expert_plan()
    finally:
        session.close()
    if not plan:
        raise ValueError(f"{env_id} has no expert plan for task {session.task_id}, so no example to show")
    call = {"type": "function", "function": {"name": "act", "arguments": {"action": plan[0]}}}
    return [{"role": "user", "content": opening}, {"role": "assistant", "content": "", "tool_calls": [call]}]


def score_reward(environments: Sequence[SeedToolEnv], **_: Any) -> list[float]:
    """Reward function: each rollout's score, the benchmark's own (0.0 if it never acted)."""
    return [_seed_env(env).score for env in environments]


def won_reward(environments: Sequence[SeedToolEnv], **_: Any) -> list[float]:
    """Reward function: 1.0 for each rollout that won its task, else 0.0."""
    return [float(_seed_env(env).won) for env in environments]


def return_reward(environments: Sequence[SeedToolEnv], **_: Any) -> list[float]:
    """Reward function: the sum of the env's per-step rewards in each rollout (0.0 if it never acted)."""
    return [_seed_env(env).total_reward for env in environments]


def _seed_env(env: object) -> SeedToolEnv:
    if not isinstance(env, SeedToolEnv):
        raise TypeError(
            f"a seed reward function got a {type(env).__name__}; it reads the envs that "
            "seed_envs.integrations.trl.environment_factory makes"
        )
    return env
