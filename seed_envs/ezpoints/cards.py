"""EZPoints' cards and the rule for scoring a formula (deals are :mod:`.generate`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

SUITS = ("H", "D", "S", "C")
SUIT_NAMES = {"H": "hearts", "D": "diamonds", "S": "spades", "C": "clubs"}
RANK_NAMES = {"A": "ace", "T": "10", "J": "jack", "Q": "queen", "K": "king"}
TARGET = 12
NUMBER_TOKENS = tuple(str(n) for n in range(1, 11))
OPERATOR_TOKENS = ("+", "*", "=")
TOKENS = NUMBER_TOKENS + OPERATOR_TOKENS


@dataclass(frozen=True)
class Card:
    suit: str  # H, D, S or C
    rank: str  # A, 2..9, T, J, Q, K

    @property
    def face(self) -> str:
        return self.suit + self.rank

    @property
    def number(self) -> int:
        """The card's value in the game: A=1, T/J/Q/K=10."""
        return {"A": 1, "T": 10, "J": 10, "Q": 10, "K": 10}.get(self.rank) or int(self.rank)

    def describe(self) -> str:
        return f"{RANK_NAMES.get(self.rank, self.rank)} of {SUIT_NAMES[self.suit]}"


def rank_for(value: int) -> str:
    """Rank symbol for 1..13 (1=A, 10=T, 11=J, 12=Q, 13=K)."""
    return {1: "A", 10: "T", 11: "J", 12: "Q", 13: "K"}.get(value, str(value))


def evaluate(formula: list[str]) -> int | None:
    """Value of the formula tokens joined as upstream joins them, or None if malformed.

    Tokens are concatenated without spaces (``["7", "5"]`` reads as ``75``) and read
    as a Python arithmetic expression over integers with ``+`` and ``*`` (so ``**``
    is a power and a leading ``+`` is unary), exactly as gym-cards' ``eval`` reads
    them, but through a whitelist of AST nodes instead of ``eval``.
    """
    source = "".join(formula)
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError):
        return None
    return _value(tree.body)


def _value(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
        return _value(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult, ast.Pow)):
        left, right = _value(node.left), _value(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Mult):
            return left * right
        if right > 64:  # only card numbers (<= 10) can appear; refuse anything larger
            return None
        return left**right
    return None


def solution(cards: tuple[Card, Card]) -> list[str]:
    """A token sequence that wins: ``a + b =`` or ``a * b =``."""
    a, b = (card.number for card in cards)
    op = "+" if a + b == TARGET else "*"
    return [str(a), op, str(b), "="]
