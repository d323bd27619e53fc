"""EZPoints prompt (two cards; build a formula equal to 12 one token per step).

The observation shows the two cards (text, or image in the visual variant) and the
formula so far. Actions are one token each: a number from 1 to 10, ``+``, ``*``, or
``=`` to submit the formula.
"""

from __future__ import annotations

from seed_agent.history import HISTORY_LENGTHS
from seed_agent.prompts.base import EnvPromptSpec, PromptExample, action_instructions

SPEC = EnvPromptSpec(
    name="ezpoints",
    env_id="seed/EZPoints-v0",
    role="You are an expert card game player.",
    action_help=(
        "You build a formula one token per step: a number from 1 to 10, '+' or '*'. "
        "When the formula is complete, choose '=' to submit it."
    ),
    example=PromptExample(
        task=(
            "Use the numbers on the two cards, each exactly once, with + and * to make 12. "
            "J, Q and K count as 10. Build the formula one token per step from 1-10, + and *, then "
            "choose = to submit it."
        ),
        observation=("You added 5.\nCards: 5 of hearts and 7 of clubs (numbers 5, 7).\nCurrent formula: 5"),
        available_actions=("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "+", "*", "="),
        think="5 + 7 = 12. The formula is 5, so the next token is +.",
        action="+",
    ),
    history_length=HISTORY_LENGTHS["ezpoints"],
    observation_chars=1000,
    history_observation_chars=200,
    instructions=action_instructions("one token (a number from 1 to 10, +, * or =)"),
)
