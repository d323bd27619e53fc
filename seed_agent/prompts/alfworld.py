"""ALFWorld prompt (text household tasks; alfworld 0.4.2 command syntax).

Observations come as ALFWorld writes them ("You arrive at countertop 1. On the
countertop 1, you see a apple 1, ..."); the env lists its admissible commands, which
always include ``help``, ``inventory`` and ``look``. Objects are put with
``move X to Y`` (``put X in Y`` does nothing in 0.4.2).
"""

from __future__ import annotations

from seed_agent.history import HISTORY_LENGTHS
from seed_agent.prompts.base import EnvPromptSpec, PromptExample, action_instructions

SPEC = EnvPromptSpec(
    name="alfworld",
    env_id="seed/ALFWorld-v0",
    role="You are an expert agent operating in the ALFRED embodied household environment.",
    action_help=(
        "You act with text commands such as 'go to fridge 1', 'open fridge 1', "
        "'take apple 1 from countertop 1', 'move apple 1 to fridge 1', 'clean apple 1 with sinkbasin 1', "
        "'heat apple 1 with microwave 1', 'cool apple 1 with fridge 1' and 'use desklamp 1'."
    ),
    example=PromptExample(
        task="put a clean apple in fridge.",
        observation=("You arrive at countertop 1. On the countertop 1, you see a apple 1, a bread 1, and a knife 1."),
        available_actions=(
            "examine countertop 1",
            "go to cabinet 1",
            "go to fridge 1",
            "go to sinkbasin 1",
            "help",
            "inventory",
            "look",
            "take apple 1 from countertop 1",
            "take bread 1 from countertop 1",
            "take knife 1 from countertop 1",
        ),
        think=(
            "The apple is on this countertop. I should take it first, then clean it at the sinkbasin, "
            "then put it in the fridge."
        ),
        action="take apple 1 from countertop 1",
    ),
    history_length=HISTORY_LENGTHS["alfworld"],
    observation_chars=3000,
    history_observation_chars=500,
    instructions=action_instructions("one admissible action"),
)
