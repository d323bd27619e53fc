"""Scripted agents that need no model: a uniform-random agent and the env's expert.

They give every env a floor (random) and a ceiling (expert) to compare learned
agents against, and they exercise the envs end to end in tests and demos.
"""

from __future__ import annotations

import random
from typing import Any, Protocol

#: What the random agent says where an env offers no list of actions.
FALLBACK_ACTIONS = ("look", "help", "<answer>unknown</answer>")


class BaselineAgent(Protocol):
    name: str

    def start(self, info: dict[str, Any], expert_plan: list[str] | None) -> None: ...

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str: ...


class RandomAgent:
    """Picks uniformly among ``info["available_actions"]`` (or a fixed fallback list)."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def start(self, info: dict[str, Any], expert_plan: list[str] | None) -> None:
        pass

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str:
        return self.rng.choice(info.get("available_actions") or FALLBACK_ACTIONS)


class ExpertAgent:
    """Replays the plan that ``env.expert_plan()`` gave at reset; random once it runs out."""

    name = "expert"

    def __init__(self, seed: int = 0) -> None:
        self.fallback = RandomAgent(seed)
        self.plan: list[str] = []

    def start(self, info: dict[str, Any], expert_plan: list[str] | None) -> None:
        self.plan = list(expert_plan or [])

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str:
        return self.plan.pop(0) if self.plan else self.fallback.act(observation, info)


AGENTS = {"random": RandomAgent, "expert": ExpertAgent}
