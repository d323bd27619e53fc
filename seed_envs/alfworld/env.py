"""``seed/ALFWorld-v0``: ALFWorld's text games on the upstream engine.

>>> import gymnasium as gym, seed_envs
>>> env = gym.make("seed/ALFWorld-v0", difficulty="easy")      # generated games, small rooms
>>> env = gym.make("seed/ALFWorld-v0", data_dir="~/alfworld")  # the real release

Rules (as upstream): the observation is the engine's text, starting with the room
description and "Your task is to: ..."; the admissible commands are in
``info["available_actions"]``; a command that is not admissible answers
"Nothing happens." and changes nothing; the episode is won (reward 1, terminated)
when the goal holds. ``max_episode_steps`` is 30 (the SEED setting).

Where games come from:

- ``data_dir=`` (or ``$ALFWORLD_DATA`` when no ``difficulty`` is given): a directory in
  the upstream layout, listed as upstream's ``AlfredTWEnv`` lists it;
- otherwise the generator, at ``difficulty`` ``"easy"``, ``"medium"`` or ``"full"`` (the
  default, ALFWorld-sized rooms), each game generated into the cache the first time
  it is played.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from seed_envs.alfworld import vocab
from seed_envs.alfworld.sources import DirectorySource, GeneratedSource, split_of, task_type_of
from seed_envs.core import SeedEnv, TaskStart, Transition

TASK_PREFIX = "Your task is to: "


def task_sentence(intro: str) -> str:
    """The instruction in an intro text: what follows "Your task is to: "."""
    _, found, rest = intro.rpartition(TASK_PREFIX)
    return rest.strip() if found else intro.strip()


class ALFWorldEnv(SeedEnv):
    """ALFWorld text games (see the module docstring).

    Arguments:
        split: ``train``, ``valid_seen`` or ``valid_unseen``.
        data_dir: a directory in the upstream layout (``json_2.1.1/...`` under it).
        difficulty: ``easy``, ``medium`` or ``full``: play generated games of that size.
        task_types: keep only these families (names from ``vocab.TASK_TYPES``).
        expert: put the planner's plan from the current state in ``info["expert_plan"]``
            at every step (costly in large rooms: a planner search per new state).
        generator_seed: the seed of the generated set.
        game_cache: an :class:`engine.GameCache` to share translations between envs.
    """

    max_text_length: ClassVar[int] = 8_192
    max_action_length: ClassVar[int] = 1_024

    def __init__(
        self,
        split: str = "train",
        data_dir: str | Path | None = None,
        difficulty: str | None = None,
        task_types: Sequence[str] | None = None,
        expert: bool = False,
        generator_seed: int = 0,
        game_cache: Any = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(split=split, render_mode=render_mode)
        if task_types is not None:
            task_types = vocab.check_task_types([task_types] if isinstance(task_types, str) else task_types)
        if data_dir is not None and difficulty is not None:
            raise ValueError("difficulty= chooses generated games; it cannot be combined with data_dir=")
        if data_dir is None and difficulty is None and os.environ.get("ALFWORLD_DATA"):
            data_dir = os.environ["ALFWORLD_DATA"]
        if data_dir is not None:
            self.source: DirectorySource | GeneratedSource = DirectorySource(data_dir, task_types)
            self.source.listing(self.split)  # fail now, naming the path and the command, if there is no data
        else:
            self.source = GeneratedSource(difficulty or "full", generator_seed, task_types)
        self.expert = bool(expert)

        from seed_envs.alfworld import engine  # the engine is imported only when an env is built

        self._engine = engine
        self._game_env = engine.make_game_env(engine.request_infos(expert=self.expert), cache=game_cache)
        self._loaded_file: str | None = None
        self._state: Any = None
        self._task_type = ""

    # -------------------------------------------------------------- tasks
    def task_count(self, split: str) -> int | None:
        return self.source.count(split)

    def task_id_for(self, split: str, index: int) -> str:
        return self.source.task_id(split, index)

    def _start_task(self, task_id: str, rng: np.random.Generator) -> TaskStart:
        split = split_of(task_id)
        game_file = str(self.source.game_file(task_id))
        if game_file != self._loaded_file:
            self._game_env.load(game_file)
            self._loaded_file = game_file
        self._state = self._game_env.reset()
        self._task_type = task_type_of(task_id)
        text = self._state.feedback
        return TaskStart(text=text, task=task_sentence(text), split=split, extra_info=self._extra_info())

    def _play(self, action: str) -> Transition:
        valid = action.strip() in self._state["admissible_commands"]
        self._state, score, done = self._game_env.step(action)
        won = bool(self._state["won"])
        return Transition(
            text=self._state.feedback,
            reward=float(score),
            terminated=bool(done),
            action_valid=valid,
            won=won,
            score=1.0 if won else 0.0,
            extra_info=self._extra_info(),
        )

    def _available_actions(self) -> list[str] | None:
        return list(self._state["admissible_commands"]) if self._state is not None else None

    def _extra_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"task_type": self._task_type, "gamefile": self._loaded_file}
        if self.expert:
            info["expert_plan"] = list(self._state["policy_commands"])
        return info

    def expert_plan(self) -> list[str] | None:
        """The planner's plan from the current state (upstream's ``policy_commands``)."""
        if self._state is None:
            return None
        if self.expert:
            return list(self._state["policy_commands"])
        return self._game_env.unwrapped.replan()

    @property
    def engine_env(self) -> Any:
        """The textworld environment underneath (alfworld's wrappers around our cached PddlEnv)."""
        return self._game_env

    def close(self) -> None:
        if self._game_env is not None:
            self._engine.close_game_env(self._game_env)
            self._game_env = None
        super().close()
