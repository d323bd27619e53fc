"""A finished (or running) episode as the agent lived it: what it saw, said and did."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class StepRecord:
    """One step: the observation the agent acted on, its full reply, and the outcome.

    ``error`` names why the reply was invalid (a parsing error code, or the env's
    rejection), empty when it was valid. ``has_image`` marks steps whose observation
    included an image (the analyzer's visual variant shows a placeholder for it).
    ``expert_action`` is the first action of the env's expert plan from the state the
    agent acted on, where the rollout asked for it (the scripted skill annotator uses it).
    """

    observation: str
    response: str
    action: str | None
    valid: bool
    reward: float = 0.0
    error: str = ""
    has_image: bool = False
    expert_action: str | None = None


@dataclass
class Trajectory:
    """One episode of one task."""

    env: str
    task: str
    task_id: str = ""
    steps: list[StepRecord] = field(default_factory=list)
    won: bool = False
    score: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def total_reward(self) -> float:
        return sum(step.reward for step in self.steps)

    @property
    def invalid_steps(self) -> int:
        return sum(not step.valid for step in self.steps)
