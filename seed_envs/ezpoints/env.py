"""``seed/EZPoints-v0``: make 12 from the numbers of two playing cards shown in an image."""

from __future__ import annotations

import json
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
from seed_envs.ezpoints.cards import NUMBER_TOKENS, TARGET, TOKENS, Card, evaluate, solution
from seed_envs.ezpoints.generate import deal_for
from seed_envs.ezpoints.render import CANVAS, render_frame
from seed_envs.spaces import quote_action

TASK_PREFIX = "ezpoints"
OBSERVATION_MODES = ("image", "text", "both")
WIN_REWARD = 10.0
#: gym-cards' penalty for an invalid number, a wrong formula and an over-long one.
UPSTREAM_PENALTY = -1.0
MAX_FORMULA_LENGTH = 5

TASK = (
    "Use the numbers on the two cards, each exactly once, with + and * to make 12. "
    "J, Q and K count as 10. Build the formula one token per step from 1-10, + and *, then choose = to submit it."
)


class EZPointsEnv(SeedEnv):
    """gym-cards' EZPoints with string actions.

    Each step appends one token (``1``..``10``, ``+``, ``*``) to the formula; ``=``
    submits it. Reward ``10`` when the formula equals 12 and uses both cards' numbers,
    else ``0``. A number not on the cards (or used more often than the cards allow),
    or any other string, is invalid: the formula is unchanged and the episode goes on.
    With ``upstream_penalties=True`` the gym-cards rewards apply instead: ``-1`` for an
    invalid number (which also appends a blank to the formula), a wrong formula, or a
    formula longer than 5 tokens.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    max_text_length = 2_048
    max_action_length = 1_024
    eval_split_size = 200

    def __init__(
        self,
        split: str = "train",
        observation_mode: str = "image",
        upstream_penalties: bool = False,
        render_mode: str | None = None,
    ) -> None:
        if observation_mode not in OBSERVATION_MODES:
            raise ValueError(f"observation_mode must be one of {OBSERVATION_MODES}, got {observation_mode!r}")
        self.observation_mode = observation_mode
        self.upstream_penalties = upstream_penalties
        if observation_mode != "text":
            self.image_shape = (CANVAS[1], CANVAS[0])
        super().__init__(split=split, render_mode=render_mode)
        self.cards: tuple[Card, Card] | None = None
        self.formula: list[str] = []
        self.used_numbers: list[int] = []
        self.submitted = False

    # ------------------------------------------------------------- tasks
    def task_count(self, split: str) -> int | None:
        return None if check_split(split) == "train" else self.eval_split_size

    def task_id_for(self, split: str, index: int) -> str:
        return indexed_task_id(TASK_PREFIX, split, index)

    def _start_task(self, task_id: str, rng: np.random.Generator) -> TaskStart:
        split, index = parse_indexed_task_id(task_id, TASK_PREFIX)
        self.cards, self.formula, self.used_numbers = deal_for(split, index), [], []
        self.submitted = False
        return TaskStart(text=self._describe("New cards are dealt."), task=TASK, split=split, extra_info=self._extra())

    # --------------------------------------------------------------- play
    def _play(self, action: str) -> Transition:
        assert self.cards is not None
        token = action.strip()
        if len(self.formula) > MAX_FORMULA_LENGTH:
            return Transition(
                text=self._describe("The formula is too long; the episode ends."),
                reward=UPSTREAM_PENALTY if self.upstream_penalties else 0.0,
                truncated=True,
                action_valid=token in TOKENS,
                extra_info=self._extra(),
            )
        if token not in TOKENS:
            return self._invalid(f"Invalid action {quote_action(action)}: choose one of {', '.join(TOKENS)}.")
        if token in NUMBER_TOKENS and not self._card_allows(int(token)):
            return self._invalid(f"Invalid action {token}: no unused card has the number {token}.")
        if token == "=":
            return self._submit()
        if token in NUMBER_TOKENS:
            self.used_numbers.append(int(token))
        self.formula.append(token)
        return Transition(text=self._describe(f"You added {token}."), extra_info=self._extra())

    def _card_allows(self, number: int) -> bool:
        assert self.cards is not None
        on_cards = [card.number for card in self.cards]
        return self.used_numbers.count(number) < on_cards.count(number)

    def _invalid(self, message: str) -> Transition:
        reward = 0.0
        if self.upstream_penalties:
            self.formula.append(" ")  # gym-cards lengthens the formula on an invalid number
            reward = UPSTREAM_PENALTY
        return Transition(text=self._describe(message), reward=reward, action_valid=False, extra_info=self._extra())

    def _submit(self) -> Transition:
        self.submitted = True
        value = evaluate(self.formula)
        won = value == TARGET and len(self.used_numbers) == 2
        if won:
            reward, message = WIN_REWARD, f"{''.join(self.formula)} = 12. Correct!"
        else:
            reward = UPSTREAM_PENALTY if self.upstream_penalties else 0.0
            shown = "not a valid formula" if value is None else str(value)
            message = f"Submitted {''.join(self.formula) or '(empty)'}: {shown}. That is not 12 using both cards."
        return Transition(
            text=self._describe(message),
            reward=reward,
            terminated=True,
            won=won,
            score=1.0 if won else 0.0,
            extra_info=self._extra(),
        )

    def _available_actions(self) -> list[str] | None:
        return list(TOKENS)

    def expert_plan(self) -> list[str] | None:
        if self.cards is None:
            return None
        plan = solution(self.cards)
        done = len(self.formula)
        return plan[done:] if self.formula == plan[:done] else None

    def _anchor(self, obs: Observation) -> str:
        """The cards and the formula's tokens (and whether it was submitted), in every observation
        mode; the text's feedback line ("You added 5.") is left out. With ``upstream_penalties``
        an invalid number appends a blank token, which changes the state and so the anchor."""
        assert self.cards is not None
        faces = " ".join(card.face for card in self.cards)
        submitted = "; submitted" if self.submitted else ""
        return f"cards {faces}; formula {json.dumps(self.formula)}{submitted}"

    # --------------------------------------------------------- rendering
    def _extra(self) -> dict[str, Any]:
        assert self.cards is not None
        return {"cards": [card.face for card in self.cards], "formula": "".join(self.formula)}

    def _describe(self, feedback: str) -> str:
        assert self.cards is not None
        formula = " ".join(self.formula) if self.formula else "(empty)"
        lines = [feedback]
        if self.observation_mode != "image":
            described = " and ".join(card.describe() for card in self.cards)
            numbers = ", ".join(str(card.number) for card in self.cards)
            lines.append(f"Cards: {described} (numbers {numbers}).")
        if self.observation_mode != "text":
            lines.append("The cards are shown in the image.")
        lines.append(f"Current formula: {formula}")
        return "\n".join(lines)

    def _image(self) -> np.ndarray:
        assert self.cards is not None
        return render_frame(self.cards, self.formula)
