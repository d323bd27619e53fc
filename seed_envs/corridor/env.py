"""``seed/Corridor-v0``: walk out of a short corridor by naming the side of its exit.

This env exists to test that trainers learn. Its optimal policy is known and trivial (say the
side the observation names, every step), so a short GRPO or SEED run on a tiny model must reach
it (``tests/test_learning.py``); a trainer that does not, has a bug.

Everything about a task follows from its index: the exit is to the ``left`` on even indices and
to the ``right`` on odd ones, ``1 + (index // 2) % max_distance`` cells away. Any
``2 * max_distance`` consecutive indices hold every situation once, and half of any even number
of consecutive indices have the exit on each side, so a policy that ignores the observation wins
at most half of such a set. The three splits hold the same situations (there are no others);
they differ in their task ids only.

With ``dead_ends=False`` the wrong side is a wall instead: walking into it moves nothing and the
episode goes on, so every episode that does not run out of steps is won. Outcomes then tie within
a group and carry no signal; what differs is how many steps a win took. That is the toy of the
tests where only SEED's distillation or GiGPO's step term can teach the policy.

The env offers no list of admissible actions, and its observations name one side only (the
exit's): the words ``left`` and ``right`` then appear in a prompt only where they matter, which
lets a 2-layer random model learn to read them within a test's few seconds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from seed_envs.core import (
    Observation,
    SeedEnv,
    TaskStart,
    Transition,
    check_split,
    indexed_task_id,
    parse_indexed_task_id,
)
from seed_envs.spaces import quote_action

TASK_PREFIX = "corridor"
ACTIONS = ("left", "right")
TASK = "Walk out of the corridor."
WIN_REWARD = 1.0
DEAD_END_REWARD = -1.0


def corridor_for(index: int, max_distance: int = 3) -> tuple[str, int]:
    """The side of the exit (``left`` or ``right``) and its distance in cells, for task ``index``."""
    return ACTIONS[index % 2], 1 + (index // 2) % max_distance


class CorridorEnv(SeedEnv):
    """Each step, ``left`` or ``right`` walks one cell.

    Toward the exit: one cell closer; reaching it ends the episode with reward 1 and
    ``won=True``. Away from it: a dead end, which ends the episode with reward -1 (so a
    policy that ignores the observation earns nothing on average); with ``dead_ends=False``,
    a wall: nothing moves, the reward is 0 and the episode goes on. Any other
    string is invalid: nothing moves, the reward is 0 and the episode goes on. ``score`` is
    1.0 when won, else 0.0.
    """

    max_text_length = 1_024
    max_action_length = 256
    #: Size of the fixed evaluation splits; ``train`` is unbounded.
    eval_split_size = 200

    def __init__(
        self, split: str = "train", max_distance: int = 3, dead_ends: bool = True, render_mode: str | None = None
    ) -> None:
        if int(max_distance) < 1:
            raise ValueError(f"max_distance must be >= 1, got {max_distance!r}")
        super().__init__(split=split, render_mode=render_mode)
        self.max_distance = int(max_distance)
        self.dead_ends = bool(dead_ends)
        self.side = ACTIONS[0]
        self.distance = 0
        self.lost = False

    # ------------------------------------------------------------- tasks
    def task_count(self, split: str) -> int | None:
        return None if check_split(split) == "train" else self.eval_split_size

    def task_id_for(self, split: str, index: int) -> str:
        return indexed_task_id(TASK_PREFIX, split, index)

    def _start_task(self, task_id: str, rng: np.random.Generator) -> TaskStart:
        split, index = parse_indexed_task_id(task_id, TASK_PREFIX)
        self.side, self.distance = corridor_for(index, self.max_distance)
        self.lost = False
        return TaskStart(text=self._where(), task=TASK, split=split, extra_info=self._extra())

    # --------------------------------------------------------------- play
    def _play(self, action: str) -> Transition:
        move = action.strip().strip(".").lower()
        if move not in ACTIONS:
            return Transition(
                text=f"Invalid action {quote_action(action)}: say left or right.\n{self._where()}",
                reward=self.invalid_action_reward,
                action_valid=False,
                extra_info=self._extra(),
            )
        if move != self.side and not self.dead_ends:
            # (the move is not named: a prompt then names the exit's side only, as everywhere here)
            return Transition(text=f"You walked into a wall. {self._where()}", extra_info=self._extra())
        if move != self.side:
            self.lost = True
            return self._end(f"You walked {move}, into a dead end. The episode is over.", won=False)
        self.distance -= 1
        if self.distance == 0:
            return self._end(f"You walked {move} and reached the exit.", won=True)
        return Transition(text=f"One cell closer. {self._where()}", extra_info=self._extra())

    def _end(self, text: str, won: bool) -> Transition:
        return Transition(
            text=text,
            reward=WIN_REWARD if won else DEAD_END_REWARD,
            terminated=True,
            won=won,
            score=float(won),
            extra_info=self._extra(),
        )

    def expert_plan(self) -> list[str] | None:
        return None if self.lost else [self.side] * self.distance

    def _anchor(self, obs: Observation) -> str:
        """Where the exit is, without the feedback of the last step ("One cell closer."); once the
        episode is over, the text that ended it (a dead end keeps the distance, so its where-text
        would be the state the losing step was taken from)."""
        return self._state_text if self._episode_over else self._where()

    # --------------------------------------------------------- rendering
    def _where(self) -> str:
        cells = "cell" if self.distance == 1 else "cells"
        return f"The exit is {self.distance} {cells} to the {self.side}."

    def _extra(self) -> dict[str, Any]:
        return {"side": self.side, "distance": self.distance}
