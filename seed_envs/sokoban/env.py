"""``seed/Sokoban-v0``: push every box onto a target, seen as an image, as text (the grid, or
the grid with every object's position named), or both."""

from __future__ import annotations

from typing import Any, ClassVar

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
from seed_envs.sokoban.generate import RoomConfig, generate_room
from seed_envs.sokoban.render import render_room
from seed_envs.sokoban.room import ACTIONS, LEGEND, Room
from seed_envs.sokoban.solver import solve
from seed_envs.spaces import quote_action

#: ``positions``: the grid (no legend) and each object's row, column and offset from the player.
OBSERVATION_MODES = ("image", "text", "both", "positions")

STEP_PENALTY = -0.1
BOX_ON_TARGET_REWARD = 1.0
BOX_OFF_TARGET_PENALTY = -1.0
SOLVED_REWARD = 10.0


class SokobanEnv(SeedEnv):
    """Sokoban with the rewards of the common RL setup.

    ``max_solution_moves=N`` (> 0) draws only rooms whose shortest solution takes at most N moves:
    a curriculum of short rooms for training (their task ids say so, ``sokoban-6x6-b1-m2/...``).

    Per move: ``-0.1``; ``+1`` when a box lands on a target; ``-1`` when one leaves
    a target; ``+10`` when every box is on a target, which ends the episode with
    ``won=True``. ``score`` is the fraction of boxes on targets. An unknown action
    costs the step penalty, changes nothing and is reported as invalid.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    max_text_length = 4_096
    max_action_length = 1_024
    invalid_action_reward = STEP_PENALTY
    #: Size of the fixed evaluation splits; ``train`` is unbounded.
    eval_split_size = 200

    def __init__(
        self,
        split: str = "train",
        dim_room: tuple[int, int] = (6, 6),
        num_boxes: int = 1,
        observation_mode: str = "image",
        tile_size: int = 32,
        render_mode: str | None = None,
        max_solution_moves: int = 0,
    ) -> None:
        if observation_mode not in OBSERVATION_MODES:
            raise ValueError(f"observation_mode must be one of {OBSERVATION_MODES}, got {observation_mode!r}")
        self.config = RoomConfig(
            height=int(dim_room[0]),
            width=int(dim_room[1]),
            num_boxes=int(num_boxes),
            max_solution_moves=int(max_solution_moves),
        )
        self.observation_mode = observation_mode
        self.tile_size = int(tile_size)
        if observation_mode in ("image", "both"):
            self.image_shape = (self.config.height * self.tile_size, self.config.width * self.tile_size)
        super().__init__(split=split, render_mode=render_mode)
        self.task_prefix = f"sokoban-{self.config.key}"
        self.room: Room | None = None

    # ------------------------------------------------------------- tasks
    def task_count(self, split: str) -> int | None:
        return None if check_split(split) == "train" else self.eval_split_size

    def task_id_for(self, split: str, index: int) -> str:
        return indexed_task_id(self.task_prefix, split, index)

    def _start_task(self, task_id: str, rng: np.random.Generator) -> TaskStart:
        split, index = parse_indexed_task_id(task_id, self.task_prefix)
        self.room = generate_room(self.config, split, index)
        n = self.config.num_boxes
        task = "Push the box onto the target." if n == 1 else f"Push all {n} boxes onto the targets."
        return TaskStart(
            text=self._describe("A new room."),
            task=task,
            split=split,
            extra_info={"boxes_on_target": self.room.boxes_on_target()},
        )

    # --------------------------------------------------------------- play
    def _play(self, action: str) -> Transition:
        assert self.room is not None
        move = action.strip().lower()
        if move not in ACTIONS:
            return Transition(
                text=self._describe(f"Invalid action {quote_action(action)}: choose one of {', '.join(ACTIONS)}."),
                reward=self.invalid_action_reward,
                action_valid=False,
                extra_info={"boxes_on_target": self.room.boxes_on_target()},
            )
        before = self.room
        self.room, delta = before.move(move)
        reward = STEP_PENALTY + (BOX_ON_TARGET_REWARD if delta > 0 else BOX_OFF_TARGET_PENALTY if delta < 0 else 0.0)
        solved = self.room.solved()
        if solved:
            reward += SOLVED_REWARD
        if self.room is before:
            feedback = f"You tried to move {move}, but the way is blocked."
        elif self.room.boxes != before.boxes:
            feedback = f"You moved {move} and pushed a box."
        else:
            feedback = f"You moved {move}."
        if solved:
            feedback += " Every box is on a target: solved!"
        return Transition(
            text=self._describe(feedback),
            reward=reward,
            terminated=solved,
            won=solved,
            score=self.room.boxes_on_target() / len(self.room.boxes),
            extra_info={"boxes_on_target": self.room.boxes_on_target()},
        )

    def _available_actions(self) -> list[str] | None:
        return list(ACTIONS)

    def expert_plan(self) -> list[str] | None:
        return None if self.room is None else solve(self.room)

    def _anchor(self, obs: Observation) -> str:
        """The room's grid (walls, targets, boxes and the player), in every observation mode: it
        identifies the state as exactly as the image and is cheaper, and the text's feedback
        line ("You moved left.") is left out."""
        assert self.room is not None
        return self.room.to_text()

    # --------------------------------------------------------- rendering
    def _describe(self, feedback: str) -> str:
        assert self.room is not None
        progress = f"Boxes on targets: {self.room.boxes_on_target()}/{len(self.room.boxes)}."
        if self.observation_mode == "image":
            return f"{feedback}\nThe room is shown in the image. {progress}"
        if self.observation_mode == "positions":  # (the legend is in the prompt's rules)
            return f"{feedback}\n{self.room.to_text()}\n{self.room.positions_text()}\n{progress}"
        grid = f"{self.room.to_text()}\nLegend: {LEGEND}."
        seen_as = "\nThe same room is shown in the image." if self.observation_mode == "both" else ""
        return f"{feedback}\n{grid}{seen_as}\n{progress}"

    def _image(self) -> np.ndarray:
        assert self.room is not None
        return render_room(self.room, self.tile_size)
