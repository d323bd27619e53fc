"""EZPoints phrasing: make 12 from two cards, one token per step, then submit with =."""

from __future__ import annotations

import re

from seed_agent.skills.annotate.base import INVALID, Context, Divergence, Phrasing, fold, short

_CARD_NUMBERS = re.compile(r"\(numbers ([0-9, ]+)\)")
_FORMULA = re.compile(r"Current formula: (.*)")
_TOKENS = {str(n) for n in range(1, 11)} | {"+", "*", "="}


class EZPointsPhrasing(Phrasing):
    """Make 12 from two cards' numbers, one token (1-10, +, *) per step, then submit with =."""

    def goal(self, ctx: Context) -> str:
        numbers = self.numbers(ctx)
        return "make 12 from the two cards" + (f" ({' and '.join(map(str, numbers))})" if numbers else "")

    def numbers(self, ctx: Context) -> list[int]:
        for step in ctx.trajectory.steps:
            match = _CARD_NUMBERS.search(step.observation)
            if match:
                return [int(n) for n in match.group(1).replace(",", " ").split()]
        return [int(t) for t in ctx.plan if t.isdigit()]

    def literal(self, action: str | None) -> str:
        return short(fold(action), 6)

    def invalid(self, ctx: Context, action: str | None) -> str:
        token, numbers = fold(action), self.numbers(ctx)
        if token.isdigit() and numbers:
            return f"Enter only numbers of cards not used yet ({' and '.join(map(str, numbers))}); {token} is not one."
        return super().invalid(ctx, action)

    def describe(self, ctx: Context, number: int | None, action: str | None) -> str:
        token = fold(action)
        return "submit with =" if token == "=" else f"enter {token}" if token in _TOKENS else short(token, 6)

    def sign(self, ctx: Context, number: int) -> str:
        match = _FORMULA.search(ctx.step(number).observation)
        numbers = self.numbers(ctx)
        cards = " and ".join(map(str, numbers)) if numbers else "two numbers"
        return f"the cards show {cards} and the formula is {match.group(1).strip() if match else '(unknown)'}"

    def workflow(self, ctx: Context) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
        tokens = [(n, fold(s.action)) for n, s in ctx.valid_steps()]
        entered = [t for _, t in tokens if t != "="]
        sentences = [
            (
                0,
                f"To {self.goal(ctx)}: read both numbers, pick the operator that gives 12 "
                f"({' '.join(entered)} = 12), then enter {', '.join(entered)} one token per step and "
                "submit with =.",
            ),
            (1, "Use + when the two numbers add up to 12 and * when they multiply to 12; J, Q and K count as 10."),
        ]
        ops = [(n, t) for n, t in tokens if t in ("+", "*")]
        return sentences, [(n, f"Enter {t} here: {' '.join(entered)} = 12.") for n, t in ops[:1]]

    def rules(self, ctx: Context, d: Divergence) -> list[str]:
        token, numbers = fold(d.action), self.numbers(ctx)
        out = []
        value = (numbers[0] + numbers[1] if token == "+" else numbers[0] * numbers[1]) if len(numbers) == 2 else 0
        if token in ("+", "*") and fold(d.expert_action) in ("+", "*") and value != 12:
            out.append(f"Check the operator before you enter it: {numbers[0]} {token} {numbers[1]} = {value}, not 12.")
        elif token in ("+", "*"):
            out.append("Enter an operator only between the two numbers, right after the first one.")
        elif token == "=":
            out.append("Submit with = only when the formula uses both numbers and equals 12.")
        elif token.isdigit() and d.kind != INVALID:
            out.append("Put an operator between the two numbers: two numbers in a row read as one number.")
        out.append("Use + when the two numbers add up to 12 and * when they multiply to 12.")
        return out
