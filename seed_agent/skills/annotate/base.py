"""What every env's phrasing shares: the divergence record, the context, the generic :class:`Phrasing`."""

from __future__ import annotations

from dataclasses import dataclass

from seed_agent.skills.quality import cut_words
from seed_agent.trajectory import StepRecord, Trajectory

#: The avoidance rule names at most this many of the expert's actions after the divergence.
REST_ACTIONS = 4

INVALID, OFF_PLAN, REPEAT, UNFINISHED = "invalid", "off_plan", "repeat", "unfinished"


@dataclass(frozen=True)
class Divergence:
    """Where a failed episode first went wrong (``step`` counts from 1).

    ``kind``: ``invalid`` (rejected or unparsed), ``off_plan`` (differs from the expert's
    action for that state), ``repeat`` (the same action in the same situation again, or a
    third time in a row, where no expert action is known) or ``unfinished`` (none of these:
    the last step, where the episode ran out).
    """

    step: int
    kind: str
    action: str
    expert_action: str | None
    observation: str


@dataclass(frozen=True)
class Context:
    """What the phrasing functions read: the trajectory, the initial plan, each step's expert action."""

    env: str
    trajectory: Trajectory
    plan: tuple[str, ...]
    expected: tuple[str | None, ...]

    def step(self, number: int) -> StepRecord:
        """Step ``number`` (from 1)."""
        return self.trajectory.steps[number - 1]

    def valid_steps(self) -> list[tuple[int, StepRecord]]:
        """``(number, step)`` of every step with a valid action."""
        return [(n, s) for n, s in enumerate(self.trajectory.steps, start=1) if s.valid and s.action]


def short(text: str, max_words: int) -> str:
    """``text`` on one line, cut to ``max_words`` words."""
    return cut_words(text, max_words)


def quoted(text: str) -> str:
    """``text`` in single quotes, unless it already holds quoted parts."""
    return text if "'" in text else f"'{text}'"


def cap(text: str) -> str:
    """``text`` with its first letter in upper case."""
    return text[:1].upper() + text[1:]


def fold(text: str | None) -> str:
    """``text`` on one line with single spaces ("" for None)."""
    return " ".join((text or "").split())


# ---------------------------------------------------------------- phrasing
class Phrasing:
    """How skills for one env are worded. This base class is the generic fallback."""

    def canonical(self, action: str | None) -> str:
        """The form in which two actions are compared (case and spacing ignored)."""
        return fold(action).lower()

    def expected(self, step: StepRecord, recorded: str | None, from_plan: str | None) -> str | None:
        """The expert's action for a step: the recorded ``expert_action`` where there is one,
        else the initial plan's action (``from_plan``: None once the agent left that plan)."""
        return recorded if recorded is not None else from_plan

    def literal(self, action: str | None) -> str:
        """``action`` as the agent wrote it, briefly (for "'X' is not an admissible action")."""
        return short(fold(action), 12)

    def invalid(self, ctx: Context, action: str | None) -> str:
        """The rule for an invalid action."""
        if not fold(action):
            return "End every reply with exactly one admissible action in the reply format."
        return f"Only reply with one of the admissible actions; {quoted(self.literal(action))} is not one."

    def goal(self, ctx: Context) -> str:
        """The task as a verb phrase ("push the box onto the target")."""
        return f"finish the task '{short(ctx.trajectory.task, 12)}'"

    def describe(self, ctx: Context, number: int | None, action: str | None) -> str:
        """``action`` (taken at step ``number``, None when no state is known) in general words."""
        return short(fold(action), 12)

    def sign(self, ctx: Context, number: int) -> str:
        """What the observation at step ``number`` showed, briefly (a clause, lower case)."""
        line = next((line for line in ctx.step(number).observation.splitlines() if line.strip()), "")
        return f"the observation read '{short(line, 15)}'" if line else ""

    def rest(self, ctx: Context, number: int) -> list[str]:
        """The initial plan's actions after step ``number``, when the agent followed it until there."""
        steps, plan = ctx.trajectory.steps, ctx.plan
        if len(plan) < number or any(
            self.canonical(s.action) != self.canonical(a) for s, a in zip(steps[: number - 1], plan, strict=False)
        ):
            return []
        if self.canonical(plan[number - 1]) != self.canonical(ctx.expected[number - 1]):
            return []
        return [self.describe(ctx, None, action) for action in plan[number : number + REST_ACTIONS]]

    def workflow(self, ctx: Context) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
        """A success's prioritised sentences and its step skills."""
        actions: list[str] = []
        for number, step in ctx.valid_steps():
            text = self.describe(ctx, number, step.action)
            if not actions or actions[-1] != text:
                actions.append(text)
        return [(0, f"To {self.goal(ctx)}: {', '.join(actions[:10])}.")], []

    def rules(self, ctx: Context, d: Divergence) -> list[str]:
        """Env-specific avoidance rules for a divergence, most important first."""
        return []
