"""The Skill-Prompt baseline: one fixed skill in every prompt of an episode.

:class:`FixedSkillBuilder` builds the prompts a :class:`~seed_agent.prompts.PromptBuilder`
would, then inserts the skill after the task line (:func:`seed_agent.skills.inject.inject`),
shortening the skill, never the prompt, when a token budget is set.
"""

from __future__ import annotations

from collections.abc import Sequence

from seed_agent.chat import ChatPrompt
from seed_agent.history import EpisodeHistory
from seed_agent.prompts import PromptBuilder
from seed_agent.skills import Skill
from seed_agent.skills.inject import inject, inject_within_budget


class FixedSkillBuilder(PromptBuilder):
    """``base``'s prompts with ``skill`` injected; ``max_tokens`` bounds the prompt with the skill
    (``base`` should leave room for it: its own budget is for the prompt without the skill)."""

    def __init__(self, base: PromptBuilder, skill: str, max_tokens: int | None = None) -> None:
        super().__init__(
            base.spec,
            style=base.style,
            one_shot=base.one_shot,
            visual=base.visual,
            history_length=base.history_length,
            system=base.system,
            count_tokens=base.count_tokens,
            max_prompt_tokens=base.max_prompt_tokens,
        )
        if not skill.strip():
            raise ValueError("the skill is empty")
        self.skill = Skill(skill.strip())
        self.max_tokens = max_tokens

    def build(
        self,
        task: str,
        observation: str,
        available_actions: Sequence[str] | None,
        history: EpisodeHistory | None = None,
    ) -> ChatPrompt:
        h = super().build(task, observation, available_actions, history)
        if self.count_tokens is None or self.max_tokens is None:
            return inject(h, self.skill)
        return inject_within_budget(h, self.skill, self.count_tokens, self.max_tokens)[0]
