"""A run's trajectories: one JSON line per episode in ``<run_dir>/episodes.jsonl``.

The trainer appends every update's episodes after the update (:func:`append_episodes`); on
resume the file is cut back to the updates the checkpoint holds (:func:`truncate_episodes`),
so no update is duplicated or lost. ``seed export`` and ``seed view`` read it with
:func:`read_episodes`.

A record (every key always present, so each row has the same schema)::

    {"update": 0, "episode": 3, "group": 1, "env": "seed/Sokoban-v0", "task_id": "...",
     "task": "...", "split": "train",
     "outcome": {"won": false, "score": 0.0, "return": -0.3, "reward": -0.3, "steps": 3, "lost": false},
     "skill": "..." | null, "skill_error": "..." | null,
     "steps": [{"step": 1, "observation": "...", "response": "...", "action": "...",
                "reply_valid": true, "action_valid": true, "valid": true, "env_reward": 0.0,
                "reward": 0.0, "error": "", "image": null | "data:image/png;base64,...",
                "opd": null | {"tokens": ["..."], "delta": [0.1], "gate": [0.6]}}]}

``update`` is 0-based (the update that produced the episode); ``reward`` in ``outcome`` is
the outcome reward ``R`` the advantages used. ``opd`` is set on the steps that got on-policy
distillation: per sampled token its text, ``Delta = log pi(a|h_skill) - log pi_old(a|h)`` and
the gate ``sigmoid(beta_opd * Delta)``, both rounded to 6 decimals.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seed_envs.images import png_data_url
from seed_rl.records.run_log import truncate_jsonl

if TYPE_CHECKING:  # the readers (seed export, seed view) need neither torch nor the trainer
    from seed_agent.skills import SkillResult
    from seed_rl.records.rows import TrainRow
    from seed_rl.rollout import Episode, StepRow

EPISODES_FILE = "episodes.jsonl"
#: Decimals kept of each token's Delta and gate (the log stays small; the viewer shows 3).
DIGITS = 6
#: The longest side of the thumbnail kept for a visual step.
THUMBNAIL_SIDE = 96


class EpisodeLogError(Exception):
    """A run folder whose episode log is missing or unreadable; the message names the file."""


def episodes_path(run_dir: str | os.PathLike[str]) -> Path:
    return Path(run_dir) / EPISODES_FILE


# ------------------------------------------------------------------ writing
def episode_records(
    update: int,
    episodes: Sequence[Episode],
    rewards: Sequence[float],
    skills: Sequence[SkillResult | None],
    rows: Sequence[TrainRow],
    *,
    split: str,
    beta_opd: float,
    decode_tokens: Callable[[list[int]], list[str]],
    visual: bool = False,
) -> list[dict[str, Any]]:
    """One record per episode of update ``update`` (0-based).

    ``rows`` are the update's train rows: one per step that sampled tokens, in step order
    within each episode (``row.episode`` is the episode's position in ``episodes``).
    ``decode_tokens`` turns token ids into one string each.
    """
    from seed_agent.skills import Skill

    by_episode: dict[int, list[TrainRow]] = defaultdict(list)
    for row in rows:
        by_episode[row.episode].append(row)
    records = []
    for e, episode in enumerate(episodes):
        skill = skills[e] if e < len(skills) else None
        sampled = [step for step in episode.rows if step.token_ids]
        opd = {
            step.step: _opd_tokens(step, row, beta_opd, decode_tokens)
            for step, row in zip(sampled, by_episode.get(e, []), strict=True)
            if row.skill_logp is not None
        }
        records.append(
            {
                "update": update,
                "episode": episode.index,
                "group": episode.group,
                "env": episode.env_id,
                "task_id": episode.task_id,
                "task": episode.task,
                "split": split,
                "outcome": {
                    "won": bool(episode.won),
                    "score": _number(episode.score),
                    "return": _number(episode.ret),
                    "reward": _number(rewards[e]),
                    "steps": len(episode.rows),
                    "lost": episode.lost is not None,
                },
                "skill": skill.episode_skill if isinstance(skill, Skill) else None,
                "skill_error": None if skill is None or isinstance(skill, Skill) else skill.reason,
                "steps": [_step(step, opd.get(step.step), visual) for step in episode.rows],
            }
        )
    return records


def append_episodes(run_dir: str | os.PathLike[str], records: Sequence[dict[str, Any]]) -> None:
    """Append records to the run's episode log, in one write, flushed before returning."""
    text = "".join(json.dumps(record, allow_nan=False) + "\n" for record in records)
    with open(episodes_path(run_dir), "a", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()


def truncate_episodes(run_dir: str | os.PathLike[str], updates_done: int) -> None:
    """Keep only the episodes of updates ``0 .. updates_done - 1`` (what a checkpoint holds)."""
    truncate_jsonl(episodes_path(run_dir), lambda r: isinstance(r.get("update"), int) and r["update"] < updates_done)


def _step(step: StepRow, opd: dict[str, list[Any]] | None, visual: bool) -> dict[str, Any]:
    return {
        "step": step.step,
        "observation": step.observation,
        "response": step.response,
        "action": step.action,
        "reply_valid": bool(step.reply_valid),
        "action_valid": bool(step.action_valid),
        "valid": bool(step.valid),
        "env_reward": _number(step.env_reward),
        "reward": _number(step.reward),
        "error": step.error,
        "image": _thumbnail(step.images[0]) if visual and step.images else None,
        "opd": opd,
    }


def _opd_tokens(
    step: StepRow, row: TrainRow, beta: float, decode_tokens: Callable[[list[int]], list[str]]
) -> dict[str, list[Any]]:
    import torch

    assert row.skill_logp is not None
    delta = (row.skill_logp.float() - row.old_logp.float()).tolist()
    gate = torch.sigmoid(beta * torch.tensor(delta, dtype=torch.float32)).tolist()
    return {
        "tokens": decode_tokens(list(step.token_ids)),
        "delta": [_number(d, DIGITS) for d in delta],
        "gate": [_number(g, DIGITS) for g in gate],
    }


def _number(value: float, digits: int | None = None) -> float | None:
    """A float for JSON, rounded to ``digits`` decimals if given; None where it is not finite
    (strict JSON has no NaN)."""
    value = float(value)
    if not math.isfinite(value):
        return None
    return round(value, digits) if digits is not None else value


def _thumbnail(image: Any) -> str | None:
    """A small PNG data URL of an image (an array or a PIL image), or None if it cannot be made."""
    try:
        import numpy as np
        from PIL import Image

        picture = image if isinstance(image, Image.Image) else Image.fromarray(np.asarray(image))
        picture = picture.convert("RGB")
        picture.thumbnail((THUMBNAIL_SIDE, THUMBNAIL_SIDE))
        return png_data_url(picture, optimize=True)
    except Exception:  # an image the log cannot shrink is skipped, never fatal to training
        return None


# ------------------------------------------------------------------ reading
def read_episodes(
    run_dir: str | os.PathLike[str], *, on_warning: Callable[[str], None] | None = None
) -> list[dict[str, Any]]:
    """Every episode record of a run, in order.

    Raises :class:`EpisodeLogError` when the folder or its ``episodes.jsonl`` is missing, or a
    line is not an episode record. A cut-off last line (a run killed while writing it) is
    skipped, with a message to ``on_warning``.
    """
    run = Path(run_dir)
    if not run.is_dir():
        raise EpisodeLogError(f"{run} is not a run folder (it does not exist)")
    path = episodes_path(run)
    if not path.is_file():
        raise EpisodeLogError(
            f"{path} does not exist: the run has finished no update yet, or was made before "
            "episodes were logged (train it again, or --resume it, to write one)"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise EpisodeLogError(f"{path} cannot be read: {error}") from error
    lines = text.splitlines()
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            if number == len(lines) and not text.endswith("\n"):
                if on_warning is not None:
                    on_warning(f"{path}: skipped line {number}, cut off (the run was killed while writing it)")
                continue
            raise EpisodeLogError(f"{path}: line {number} is not valid JSON ({error.msg})") from error
        if not isinstance(record, dict) or not isinstance(record.get("steps"), list) or "update" not in record:
            raise EpisodeLogError(f"{path}: line {number} is not an episode record")
        records.append(record)
    return records
