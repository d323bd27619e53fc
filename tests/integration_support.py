"""What the framework adapter tests share: the envs they play, and a scripted player.

The scripted player stands in for a model: it recognizes a task by its opening text (the task
and first observation, as :class:`EpisodeSession` writes them) and plays a fixed list of
actions for it, one per model turn. The lists come from the env's own expert, so a task it
plays to the end is won, and a list can be given extra actions after the end or wrong ones.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import pytest

from seed_envs.integrations.session import EpisodeSession

#: (env id, gym.make keywords): the procedural envs in their text mode, with short tasks.
TEXT_ENVS = [
    pytest.param("seed/Sokoban-v0", {"observation_mode": "text", "max_solution_moves": 2}, id="sokoban"),
    pytest.param("seed/EZPoints-v0", {"observation_mode": "text"}, id="ezpoints"),
    pytest.param("seed/Corridor-v0", {}, id="corridor"),
    pytest.param(
        "seed/SearchQA-v0",
        {"dataset": "world-easy"},
        id="searchqa",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("bm25s") is None, reason="the search extra (bm25s) is not installed"
        ),
    ),
]

Script = dict[str, list[str]]


def expert_plans(env_id: str, split: str, ids: list[str], env_kwargs: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """For each task, in order: its opening text and the env's expert plan."""
    plans = []
    for task_id in ids:
        session = EpisodeSession(env_id, split, **env_kwargs)
        opening = session.reset(task_id=task_id)
        plan = session.env.unwrapped.expert_plan()
        assert plan, f"no expert plan for {task_id}"
        plans.append((opening, list(plan)))
        session.close()
    return plans


def expert_script(
    env_id: str,
    split: str,
    ids: list[str],
    env_kwargs: dict[str, Any],
    extra: Callable[[list[str]], list[str]] = lambda plan: plan,
) -> Script:
    """For each task: its opening text -> the actions to play (``extra`` edits the expert's plan)."""
    return {opening: extra(plan) for opening, plan in expert_plans(env_id, split, ids, env_kwargs)}


def expert_outcome(env_id: str, split: str, task_id: str, env_kwargs: dict[str, Any], actions: list[str]) -> dict:
    """Play ``actions`` on a fresh env: the outcome an adapter must report for them."""
    session = EpisodeSession(env_id, split, **env_kwargs)
    session.reset(task_id=task_id)
    for action in actions:
        session.act(action)
    outcome = {"won": session.won, "score": session.score, "total_reward": session.total_reward}
    session.close()
    return outcome


def scripted_action(script: Script, conversation_text: str, turn: int) -> str | None:
    """The action for the ``turn``-th model turn of the conversation (None once the list is spent)."""
    matches = [plan for opening, plan in script.items() if opening in conversation_text]
    assert len(matches) == 1, f"the conversation matches {len(matches)} scripted tasks"
    plan = matches[0]
    return plan[turn] if turn < len(plan) else None
