"""Sokoban rooms: the grid, its symbols, and the rules of a move.

A room is a small integer grid. The fixed layer holds walls, floor and targets;
boxes and the player are positions on top of it. One move (up/down/left/right)
walks the player one cell, pushing a box if the cell beyond it is free.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WALL, FLOOR, TARGET = 0, 1, 2
# Cell codes of a rendered frame: the fixed layer plus what stands on it.
BOX, BOX_ON_TARGET, PLAYER, PLAYER_ON_TARGET = 3, 4, 5, 6

SYMBOLS = {
    WALL: "#",
    FLOOR: "_",
    TARGET: "O",
    BOX: "X",
    BOX_ON_TARGET: "*",
    PLAYER: "P",
    PLAYER_ON_TARGET: "S",
}
LEGEND = "# wall, _ floor, O target, X box, * box on a target, P you, S you on a target"

MOVES: dict[str, tuple[int, int]] = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
ACTIONS: tuple[str, ...] = tuple(MOVES)

Cell = tuple[int, int]


def walls_key(fixed: np.ndarray) -> str:
    """A fixed layer's wall layout as text (targets do not count)."""
    return "".join("#" if v == WALL else "." for v in fixed.ravel()) + f"/{fixed.shape[1]}"


def offset_text(rows: int, columns: int) -> str:
    """A cell's offset from the player in moves: ``"1 down, 2 left of you"``, or ``"where you are"``."""
    parts = [f"{abs(rows)} {'down' if rows > 0 else 'up'}"] if rows else []
    parts += [f"{abs(columns)} {'right' if columns > 0 else 'left'}"] if columns else []
    return ", ".join(parts) + " of you" if parts else "where you are"


@dataclass(frozen=True)
class Room:
    """A Sokoban position: fixed layer, box cells and the player's cell."""

    fixed: np.ndarray  # (H, W) int8 of WALL / FLOOR / TARGET
    boxes: frozenset[Cell]
    player: Cell

    def boxes_on_target(self) -> int:
        return sum(1 for r, c in self.boxes if self.fixed[r, c] == TARGET)

    def solved(self) -> bool:
        return self.boxes_on_target() == len(self.boxes)

    def walls_key(self) -> str:
        """The wall layout as text; two rooms share a layout iff these are equal."""
        return walls_key(self.fixed)

    def cells(self) -> np.ndarray:
        """The grid with boxes and player drawn in (codes in SYMBOLS)."""
        grid = self.fixed.astype(np.int8).copy()
        for r, c in self.boxes:
            grid[r, c] = BOX_ON_TARGET if self.fixed[r, c] == TARGET else BOX
        r, c = self.player
        grid[r, c] = PLAYER_ON_TARGET if self.fixed[r, c] == TARGET else PLAYER
        return grid

    def to_text(self) -> str:
        return "\n".join("".join(SYMBOLS[int(v)] for v in row) for row in self.cells())

    def positions_text(self) -> str:
        """Where the player, each box and each target are, by row and column (0 is the top row and
        the left column), and each box and target as moves away from the player."""
        pr, pc = self.player
        lines = [f"You are at row {pr}, column {pc}."]
        targets = [(int(r), int(c)) for r, c in np.argwhere(self.fixed == TARGET)]
        for kind, cells in (("Box", sorted(self.boxes)), ("Target", targets)):
            for r, c in cells:
                on = " (on a target)" if kind == "Box" and self.fixed[r, c] == TARGET else ""
                lines.append(f"{kind} at row {r}, column {c}{on}: {offset_text(r - pr, c - pc)}.")
        return "\n".join(lines)

    def move(self, action: str) -> tuple[Room, int]:
        """Apply a move; return the new room and the change in boxes on targets.

        A move into a wall, or a push against a wall or another box, leaves the room unchanged.
        """
        dr, dc = MOVES[action]
        r, c = self.player
        ahead = (r + dr, c + dc)
        if self.fixed[ahead] == WALL:
            return self, 0
        if ahead not in self.boxes:
            return Room(self.fixed, self.boxes, ahead), 0
        beyond = (r + 2 * dr, c + 2 * dc)
        if self.fixed[beyond] == WALL or beyond in self.boxes:
            return self, 0
        boxes = (self.boxes - {ahead}) | {beyond}
        delta = int(self.fixed[beyond] == TARGET) - int(self.fixed[ahead] == TARGET)
        return Room(self.fixed, frozenset(boxes), ahead), delta
