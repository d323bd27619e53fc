"""Corridor prompt (the toy env for tests that trainers learn): short, so tiny models train fast.

The observation says how many cells away the exit is and on which side; the action is
``left`` or ``right``. The current observation is all the agent needs, so runs may set
``history_length: 0``.
"""

from __future__ import annotations

from seed_agent.prompts.base import EnvPromptSpec, PromptExample, action_instructions

SPEC = EnvPromptSpec(
    name="corridor",
    env_id="seed/Corridor-v0",
    role="You are in a corridor.",
    action_help="Each step, name the side of the exit to walk one cell toward it.",
    example=PromptExample(
        task="Walk out of the corridor.",
        observation="The exit is 1 cell to the right.",
        available_actions=None,
        think="The exit is to the right.",
        action="right",
    ),
    history_length=2,
    observation_chars=300,
    history_observation_chars=100,
    instructions=action_instructions("the side of the exit"),
)
