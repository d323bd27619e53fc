"""Sokoban phrasing: the grid is read from the text observation to tell walks from pushes."""

from __future__ import annotations

from dataclasses import dataclass

from seed_agent.skills.annotate.base import Context, Divergence, Phrasing, cap, fold, short

_MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
_GRID_CHARS = frozenset("#_OX*PS")


@dataclass(frozen=True)
class _Room:
    """A Sokoban grid read from a text observation."""

    walls: frozenset[tuple[int, int]]
    boxes: frozenset[tuple[int, int]]
    targets: frozenset[tuple[int, int]]
    player: tuple[int, int]

    @classmethod
    def read(cls, observation: str) -> _Room | None:
        rows = [line.strip() for line in observation.splitlines() if line.strip() and set(line.strip()) <= _GRID_CHARS]
        cells = {(r, c): ch for r, row in enumerate(rows) for c, ch in enumerate(row)}
        players = [cell for cell, ch in cells.items() if ch in "PS"]
        if len(players) != 1:
            return None
        pick = lambda chars: frozenset(cell for cell, ch in cells.items() if ch in chars)  # noqa: E731
        return cls(pick("#"), pick("X*"), pick("O*S"), players[0])

    def ahead(self, move: str, steps: int = 1) -> tuple[int, int]:
        dr, dc = _MOVES[move]
        return self.player[0] + steps * dr, self.player[1] + steps * dc

    def pushes(self, move: str) -> bool:
        return self.ahead(move) in self.boxes

    def blocked(self, move: str) -> bool:
        one, two = self.ahead(move), self.ahead(move, 2)
        return one in self.walls or (one in self.boxes and (two in self.walls or two in self.boxes))

    def corner(self, cell: tuple[int, int]) -> bool:
        r, c = cell
        return (
            cell not in self.targets
            and ((r - 1, c) in self.walls or (r + 1, c) in self.walls)
            and ((r, c - 1) in self.walls or (r, c + 1) in self.walls)
        )


def _offset(a: tuple[int, int], b: tuple[int, int], whom: str) -> str:
    """Where ``b`` is from ``a`` (called ``whom``): "1 below and 2 left of you", "1 above you"."""
    dr, dc = b[0] - a[0], b[1] - a[1]
    parts = [f"{abs(dr)} {'below' if dr > 0 else 'above'}"] * (dr != 0)
    parts += [f"{abs(dc)} {'right' if dc > 0 else 'left'} of"] * (dc != 0)
    return f"{' and '.join(parts)} {whom}" if parts else f"level with {whom}"


def _distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


class SokobanPhrasing(Phrasing):
    """Push boxes onto targets with up/down/left/right (a move into a box pushes it)."""

    def goal(self, ctx: Context) -> str:
        return fold(ctx.trajectory.task).rstrip(".").lower()

    def describe(self, ctx: Context, number: int | None, action: str | None) -> str:
        move = self.canonical(action)
        if move not in _MOVES:
            return short(fold(action), 8)
        room = _Room.read(ctx.step(number).observation) if number else None
        return f"push {move}" if room and room.pushes(move) else f"move {move}" if room else move

    def sign(self, ctx: Context, number: int) -> str:
        observation = ctx.step(number).observation
        room = _Room.read(observation)
        if room is None or not room.boxes:
            return super().sign(ctx, number)
        loose = (room.boxes - room.targets) or room.boxes
        box = min(loose, key=lambda cell: (_distance(room.player, cell), cell))
        free = (room.targets - room.boxes) or room.targets
        target = min(free, key=lambda cell: (_distance(box, cell), cell))
        text = f"the box is {_offset(room.player, box, 'you')} and the target {_offset(box, target, 'the box')}"
        return ("your last move was blocked; " + text) if "blocked" in observation.split("\n", 1)[0] else text

    def workflow(self, ctx: Context) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
        runs: list[list] = []
        pushes = []
        for number, step in ctx.valid_steps():
            move = self.describe(ctx, number, step.action)
            if move.startswith("push"):
                pushes.append((number, move))
            if runs and runs[-1][0] == move:
                runs[-1][1] += 1
            else:
                runs.append([move, 1])
        times = {1: "", 2: " twice"}
        moves = ", ".join(f"{move}{times.get(count, f' {count} times')}" for move, count in runs)
        sentences = [
            (
                1,
                f"To {self.goal(ctx)}: find the box (X) and the target (O), walk to the side of the box "
                "away from the target, then push toward it; walk around the box to change direction.",
            ),
            (0, f"Moves that solved it: {moves}."),
        ]
        keys = dict([pushes[0], pushes[-1]]) if pushes else {}
        return sentences, [(n, f"{cap(self.sign(ctx, n))}: {move}.") for n, move in keys.items()]

    def rules(self, ctx: Context, d: Divergence) -> list[str]:
        out = []
        move = self.canonical(d.action)
        room = _Room.read(d.observation)
        if room and move in _MOVES:
            if room.blocked(move):
                out.append(
                    "Look at the next cell before you move: a wall (#) blocks you, and so does a box "
                    "with a wall or another box behind it."
                )
            elif room.pushes(move) and room.corner(room.ahead(move, 2)):
                out.append("Never push a box into a corner without a target: it can never be pushed out again.")
        out.append("Push a box only from the side opposite the way it must go.")
        return out
