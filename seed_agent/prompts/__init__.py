"""Per-env prompts, and the registry from env id (or short name) to its prompt.

>>> from seed_agent.prompts import prompt_spec, PromptBuilder
>>> builder = PromptBuilder(prompt_spec("seed/Sokoban-v0"), style="act")
"""

from __future__ import annotations

import importlib

from seed_agent.prompts.base import STYLES, EnvPromptSpec, PromptBuilder, PromptExample, task_line

#: Env id -> module that defines ``SPEC``.
PROMPT_MODULES: dict[str, str] = {
    "seed/ALFWorld-v0": "seed_agent.prompts.alfworld",
    "seed/WebShop-v0": "seed_agent.prompts.webshop",
    "seed/SearchQA-v0": "seed_agent.prompts.searchqa",
    "seed/Sokoban-v0": "seed_agent.prompts.sokoban",
    "seed/EZPoints-v0": "seed_agent.prompts.ezpoints",
    "seed/Corridor-v0": "seed_agent.prompts.corridor",
}


def prompt_spec(env: str) -> EnvPromptSpec:
    """The prompt spec of an env, by id (``seed/Sokoban-v0``, ``seed_envs:seed/Sokoban-v0``) or
    short name (``sokoban``)."""
    key = env.split(":", 1)[-1]
    module = PROMPT_MODULES.get(key)
    if module is None:
        by_name = {m.rsplit(".", 1)[-1]: m for m in PROMPT_MODULES.values()}
        module = by_name.get(key.lower())
    if module is None:
        known = ", ".join(PROMPT_MODULES)
        raise KeyError(f"no prompt for env {env!r}; known envs: {known}")
    return importlib.import_module(module).SPEC


__all__ = ["PROMPT_MODULES", "STYLES", "EnvPromptSpec", "PromptBuilder", "PromptExample", "prompt_spec", "task_line"]
