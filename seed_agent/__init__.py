"""seed_agent: from observation to action, and from trajectory to skill.

- :mod:`seed_agent.prompts`: per-env prompts (``PromptBuilder``, ``prompt_spec``);
- :mod:`seed_agent.history`: episode history, cuts and the hard token budget;
- :mod:`seed_agent.parsing`: reply -> action, with validity and the invalid-action penalty;
- :mod:`seed_agent.skills`: the analyzer prompt, tolerant skill extraction, ``inject``
  (``h`` -> ``h_skill``) and a static skill library;
- :mod:`seed_agent.policies`: the ``Policy`` protocol and its back ends (transformers,
  vLLM, OpenAI-compatible HTTP);
- :mod:`seed_agent.models`: the offline SmolLM2-135M (``seed models fetch smollm2``);
- :mod:`seed_agent.agent`: agents that decide for a batch of episodes at once (LLM and scripted).

Importing this package needs no torch; the transformers and vLLM back ends import
their engines when used. It never imports ``seed_rl``.
"""

from seed_agent.chat import IMAGE_PLACEHOLDER, ChatPrompt, Message, Section
from seed_agent.history import HISTORY_LENGTHS, EpisodeHistory, PromptTooLong
from seed_agent.parsing import INVALID_ACTION_PENALTY, ParsedResponse, action_penalty, parse_response
from seed_agent.prompts import PromptBuilder, prompt_spec
from seed_agent.skills import NoSkill, Skill, analyzer_prompt, extract_skill, inject

__all__ = [
    "HISTORY_LENGTHS",
    "IMAGE_PLACEHOLDER",
    "INVALID_ACTION_PENALTY",
    "ChatPrompt",
    "EpisodeHistory",
    "Message",
    "NoSkill",
    "ParsedResponse",
    "PromptBuilder",
    "PromptTooLong",
    "Section",
    "Skill",
    "action_penalty",
    "analyzer_prompt",
    "extract_skill",
    "inject",
    "parse_response",
    "prompt_spec",
]
