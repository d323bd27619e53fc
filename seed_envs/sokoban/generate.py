"""Procedural Sokoban rooms, solvable by construction, with held-out wall layouts.

Generation follows the reverse-play recipe common to Sokoban RL:

1. carve a room topology by a random walk through the interior;
2. put boxes on targets and the player on a free floor cell;
3. play *backwards*: the player walks at random and may *pull* a box it steps
   away from. Every pull is the reverse of a legal push, so the position reached
   can be pushed back to the solved one: the room is solvable;
4. keep the reached position that scores highest,
   ``score = (boxes off target) * (sum of box displacements)``, over a few
   restarts with fresh target and player cells.

Splits are disjoint by construction: a room's wall layout hashes to one of
``LAYOUT_BUCKETS`` buckets, and bucket 0 is reserved for ``valid_unseen``. So no
``valid_unseen`` layout ever appears in ``train`` or ``valid_seen``. ``train`` and
``valid_seen`` draw from the same layouts with different seeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from seed_envs.core import check_split, stable_bucket, stable_seed
from seed_envs.sokoban.room import FLOOR, MOVES, TARGET, WALL, Cell, Room, walls_key
from seed_envs.sokoban.solver import solve

LAYOUT_BUCKETS = 5
UNSEEN_BUCKET = 0
MAX_ATTEMPTS = 10_000


@dataclass(frozen=True)
class RoomConfig:
    """Room size (walls included), number of boxes and generation effort."""

    height: int = 6
    width: int = 6
    num_boxes: int = 1
    reverse_steps: int = 300
    restarts: int = 8
    pull_probability: float = 0.8
    #: > 0: only rooms whose shortest solution takes at most this many moves (a curriculum of short
    #: rooms); rooms with a longer one are drawn again.
    max_solution_moves: int = 0

    def __post_init__(self) -> None:
        if self.height < 4 or self.width < 4:
            raise ValueError(f"rooms need at least 4x4 cells (walls included), got {self.height}x{self.width}")
        if self.num_boxes < 1:
            raise ValueError("num_boxes must be >= 1")
        interior = (self.height - 2) * (self.width - 2)
        if 2 * self.num_boxes + 2 > interior:
            raise ValueError(f"{self.num_boxes} boxes do not fit a {self.height}x{self.width} room")
        if self.max_solution_moves < 0:
            raise ValueError(f"max_solution_moves must be >= 0 (0: no limit), got {self.max_solution_moves}")

    @property
    def key(self) -> str:
        """Names the room distribution (in task ids): a capped one differs from the full one."""
        cap = f"-m{self.max_solution_moves}" if self.max_solution_moves else ""
        return f"{self.height}x{self.width}-b{self.num_boxes}{cap}"

    @property
    def generator_key(self) -> str:
        """What seeds the generator: the same with a cap or without, so where a split's room passes
        the cap, the capped split holds the same room at that index."""
        return f"{self.height}x{self.width}-b{self.num_boxes}"


def layout_is_unseen(fixed: np.ndarray) -> bool:
    """True if this wall layout is held out for ``valid_unseen``."""
    return stable_bucket([walls_key(fixed)], LAYOUT_BUCKETS) == UNSEEN_BUCKET


def generate_room(config: RoomConfig, split: str, index: int) -> Room:
    """The ``index``-th room of ``split``: deterministic in (config, split, index)."""
    want_unseen = check_split(split) == "valid_unseen"
    for attempt in range(MAX_ATTEMPTS):
        rng = np.random.default_rng(stable_seed("sokoban", config.generator_key, split, index, attempt))
        fixed = _carve_topology(config, rng)
        if layout_is_unseen(fixed) != want_unseen:
            continue
        room = _place_and_pull(fixed, config, rng)
        if room is not None and _within_cap(room, config.max_solution_moves):
            return room
    raise RuntimeError(f"no {config.key} room for {split}/{index} after {MAX_ATTEMPTS} attempts")


def _within_cap(room: Room, max_moves: int) -> bool:
    if not max_moves:
        return True
    plan = solve(room)
    return plan is not None and len(plan) <= max_moves


def _place_and_pull(fixed: np.ndarray, config: RoomConfig, rng: np.random.Generator) -> Room | None:
    floor = [tuple(map(int, cell)) for cell in np.argwhere(fixed == FLOOR)]
    if len(floor) < 2 * config.num_boxes + 2:
        return None
    best: Room | None = None
    best_score = 0.0
    for _ in range(config.restarts):
        picks = rng.choice(len(floor), size=config.num_boxes + 1, replace=False)
        targets = [floor[i] for i in picks[:-1]]
        with_targets = fixed.copy()
        for cell in targets:
            with_targets[cell] = TARGET
        room, score = _reverse_play(with_targets, targets, floor[picks[-1]], config, rng)
        if room is not None and score > best_score:
            best, best_score = room, score
    return best


def _carve_topology(config: RoomConfig, rng: np.random.Generator) -> np.ndarray:
    """Walls everywhere, then floor along a random walk inside the border.

    The walk turns with probability 0.35 per step and stops once about 60% of the
    interior is floor, so rooms are open enough for a box to travel.
    """
    h, w = config.height, config.width
    fixed = np.full((h, w), WALL, dtype=np.int8)
    wanted_floor = max(2 * config.num_boxes + 4, int(0.6 * (h - 2) * (w - 2)))
    directions = list(MOVES.values())
    r, c = int(rng.integers(1, h - 1)), int(rng.integers(1, w - 1))
    dr, dc = directions[int(rng.integers(4))]
    for _ in range(20 * h * w):
        fixed[r, c] = FLOOR
        if np.count_nonzero(fixed == FLOOR) >= wanted_floor:
            break
        if rng.random() < 0.35:
            dr, dc = directions[int(rng.integers(4))]
        nr, nc = r + dr, c + dc
        if 1 <= nr < h - 1 and 1 <= nc < w - 1:
            r, c = nr, nc
        else:
            dr, dc = -dr, -dc
    return fixed


def _reverse_play(
    fixed: np.ndarray,
    targets: list[Cell],
    player: Cell,
    config: RoomConfig,
    rng: np.random.Generator,
) -> tuple[Room | None, float]:
    boxes = list(targets)  # box i starts on target i
    best: tuple[float, list[Cell], Cell] = (0.0, [], player)
    directions = list(MOVES.values())
    for _ in range(config.reverse_steps):
        dr, dc = directions[int(rng.integers(4))]
        step_to = (player[0] + dr, player[1] + dc)
        if fixed[step_to] == WALL or step_to in boxes:
            continue
        behind = (player[0] - dr, player[1] - dc)
        if behind in boxes and rng.random() < config.pull_probability:
            boxes[boxes.index(behind)] = player
        player = step_to
        off_target = sum(1 for b in boxes if fixed[b] != TARGET)
        displacement = sum(abs(b[0] - t[0]) + abs(b[1] - t[1]) for b, t in zip(boxes, targets, strict=True))
        score = off_target * displacement
        if score > best[0]:
            best = (score, list(boxes), player)
    if best[0] == 0:
        return None, 0.0
    return Room(fixed=fixed, boxes=frozenset(best[1]), player=best[2]), best[0]
