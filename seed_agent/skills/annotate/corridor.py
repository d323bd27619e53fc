"""Corridor phrasing: the exit is on one side; every step toward it walks one cell closer.

In hindsight the side is known (the winning step took it, or the expert's action names it), so a
success's skill states it plainly and names no other side (a failure's says which step went the
wrong way, and then the same rule): a small model can follow the skill by reading one
word (the learning tests of SEED's distillation rely on that).
"""

from __future__ import annotations

from seed_agent.skills.annotate.base import Context, Divergence, Phrasing, fold


class CorridorPhrasing(Phrasing):
    """Walk out of a corridor by naming the side of its exit, every step."""

    def goal(self, ctx: Context) -> str:
        return "walk out of the corridor"

    def exit_side(self, ctx: Context) -> str | None:
        """The side of the exit: the expert's action for any step, else the winning step's action."""
        known = next((fold(a).lower() for a in ctx.expected if a), None)
        if known is None and ctx.trajectory.won and ctx.trajectory.steps:
            known = fold(ctx.trajectory.steps[-1].action).lower()
        return known or None

    def describe(self, ctx: Context, number: int | None, action: str | None) -> str:
        move = fold(action).lower().strip(".")
        return f"walk {move}" if move in ("left", "right") else super().describe(ctx, number, action)

    def workflow(self, ctx: Context) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
        side = self.exit_side(ctx)
        if side is None:
            return super().workflow(ctx)
        return [(0, f"The exit is to the {side}: walk {side} every step until you reach it.")], []

    def rules(self, ctx: Context, d: Divergence) -> list[str]:
        side = self.exit_side(ctx)
        return [f"The exit is to the {side}: walk {side} every step."] if side else []
