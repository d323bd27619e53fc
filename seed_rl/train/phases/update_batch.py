"""What one update collects before its optimizer step, and how data-parallel processes' parts of
it are joined back into the whole update's batch for the metrics and the logs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from seed_agent.skills import Skill, SkillResult
from seed_rl.algo.advantages import grpo_advantages
from seed_rl.algo.gigpo import StepCredit, gigpo_advantages, step_credit
from seed_rl.config import TrainConfig
from seed_rl.records.rows import TrainRow
from seed_rl.rollout import Episode
from seed_rl.train.phases.collapse import action_metrics
from seed_rl.train.phases.group_filter import differing_groups
from seed_rl.train.phases.skill_pass import SkillReport
from seed_rl.train.phases.skill_probe import probe_metrics


@dataclass
class UpdateBatch:
    """What one update collected before the optimizer step (a process's share of it, under torchrun)."""

    episodes: list[Episode]
    rewards: list[float]
    #: Per episode, per step: the advantage on the step's action tokens (GRPO: the episode's
    #: ``A``, on every step alike; GiGPO: ``A_E + w * A_S``).
    step_advantages: list[list[float]]
    #: GiGPO's step returns, anchor-state groups and ``A_S`` (where the run uses them).
    credit: StepCredit | None = None
    skills: list[SkillResult | None] = field(default_factory=list)
    skill_report: SkillReport | None = None
    #: Per episode, with ``skill_probe``: whether its task was won when played again with the
    #: episode's skill in context (None where it got no skill); empty where not probed.
    skill_probe_won: list[bool | None] = field(default_factory=list)
    rows: list[TrainRow] = field(default_factory=list)
    #: With ``filter_groups``: whether each episode played but left out of the batch was won.
    left_out_won: list[bool] = field(default_factory=list)


def invalid_penalties(episode: Episode) -> float:
    """The invalid-action penalties the rollout added to the episode's step rewards (0 or less)."""
    return sum(row.reward - row.env_reward for row in episode.rows)


def task_outcome(episode: Episode, kind: str) -> float:
    """What the episode achieved at its task: ``R`` (:func:`outcome_reward`) without the
    invalid-action penalties (the env's own return, won or score). Dynamic sampling compares groups
    by it, as DAPO compares them by accuracy, so a group whose episodes differ only in their invalid
    actions is not taken for one whose outcomes differ. Read from the episode, not computed as
    ``R`` less the penalties, so that equal outcomes compare equal to the last bit."""
    if kind == "return":
        return sum(row.env_reward for row in episode.rows)
    return float(episode.won) if kind == "won" else episode.score


def outcome_reward(episode: Episode, kind: str) -> float:
    """The trajectory's outcome reward ``R``: its shaped return, or won / score plus the
    invalid-action penalties the rollout applied."""
    if kind == "return":
        return episode.ret
    return task_outcome(episode, kind) + invalid_penalties(episode)


def advantage_batch(episodes: list[Episode], cfg: TrainConfig) -> UpdateBatch:
    """The update batch of a rollout: each episode's outcome reward and each step's advantage, GRPO's
    (``advantage=grpo``) or GiGPO's (``advantage=gigpo``). GiGPO's step credit is also computed
    where critical-step skills need its anchor-state groups (``step_skills=true``)."""
    rewards = [outcome_reward(e, cfg.reward) for e in episodes]
    groups = [e.group for e in episodes]
    credit = None
    if cfg.advantage == "gigpo" or (cfg.algo == "seed" and cfg.step_skills):
        credit = step_credit(
            groups,
            [[row.reward for row in e.rows] for e in episodes],
            [[row.anchor for row in e.rows] for e in episodes],
            gamma=cfg.gamma,
            normalize_std=cfg.normalize_std,
        )
    if cfg.advantage == "gigpo":
        assert credit is not None
        steps = gigpo_advantages(
            rewards, groups, credit, step_weight=cfg.step_advantage_w, normalize_std=cfg.normalize_std
        )
    else:
        episode = grpo_advantages(rewards, groups, normalize_std=cfg.normalize_std).tolist()
        steps = [[a] * len(e.rows) for a, e in zip(episode, episodes, strict=True)]
    return UpdateBatch(episodes, rewards, steps, credit)


def merge_reports(reports: Sequence[SkillReport | None]) -> SkillReport | None:
    """One report over every process's analyses (seconds: the slowest process's)."""
    present = [r for r in reports if r is not None]
    if not present:
        return None
    return SkillReport(
        analyzed=sum(r.analyzed for r in present),
        parsed=sum(r.parsed for r in present),
        mentions=sum(r.mentions for r in present),
        generated_tokens=sum(r.generated_tokens for r in present),
        skill_tokens=[n for r in present for n in r.skill_tokens],
        seconds=max(r.seconds for r in present),
        failures=[f for r in present for f in r.failures],
    )


def merge_batches(parts: Sequence[UpdateBatch]) -> UpdateBatch:
    """The whole update's batch from the processes' parts, in rank order. Episodes are renumbered
    so that their indices (and their rows' and train rows' references to them) run over the whole
    batch, as one process would have numbered them; the parts themselves are not changed."""
    if len(parts) == 1:
        return parts[0]
    whole = UpdateBatch(episodes=[], rewards=[], step_advantages=[])
    for part in parts:
        offset = len(whole.episodes)
        for episode in part.episodes:
            rows = [replace(row, episode=row.episode + offset) for row in episode.rows]
            whole.episodes.append(replace(episode, index=episode.index + offset, rows=rows))
        whole.rewards += part.rewards
        whole.step_advantages += part.step_advantages
        whole.skills += part.skills
        whole.skill_probe_won += part.skill_probe_won
        whole.left_out_won += part.left_out_won
        whole.rows += [replace(row, episode=row.episode + offset) for row in part.rows]
    whole.skill_report = merge_reports([p.skill_report for p in parts])
    whole.credit = merge_credit([p.credit for p in parts])
    return whole


def merge_credit(parts: Sequence[StepCredit | None]) -> StepCredit | None:
    """One step credit over every process's episodes (anchor ids kept apart: each process has its
    own groups)."""
    present = [c for c in parts if c is not None]
    if not present:
        return None
    returns, ids, sizes, advantages, offset = [], [], [], [], 0
    for credit in present:
        returns += credit.returns
        ids += [[a + offset for a in steps] for steps in credit.anchor_ids]
        sizes += credit.anchor_sizes
        advantages += credit.step_advantages
        offset += 1 + max((a for steps in credit.anchor_ids for a in steps), default=-1)
    return StepCredit(returns=returns, anchor_ids=ids, anchor_sizes=sizes, step_advantages=advantages)


def slowest_seconds(parts: Sequence[dict[str, float]]) -> dict[str, float]:
    """Per phase, the seconds of the slowest process: what the update waited for."""
    phases = {phase for part in parts for phase in part}
    return {phase: max(part.get(phase, 0.0) for part in parts) for phase in phases}


def update_metrics(
    batch: UpdateBatch,
    stats: dict[str, float],
    seconds: dict[str, float],
    *,
    update: int,
    tokens_scored: int,
) -> dict[str, Any]:
    """The metrics line of one update: outcomes, token counts (``tokens_scored``: what the learner's
    passes computed, the teacher pass's added here), the optimizer's ``stats``, skill quality, the
    sampler gap (where the learner's old log-probs replaced the sampler's), and the seconds per phase."""
    episodes, rows = batch.episodes, [r for e in batch.episodes for r in e.rows]
    teacher_tokens = sum(r.score.length for r in batch.rows if r.skill_logp is not None)
    opd_rows = sum(r.skill_logp is not None for r in batch.rows)
    won = [e.won for e in episodes]
    out: dict[str, Any] = {
        "update": update,
        "success": float(np.mean(won + batch.left_out_won)),  # over every episode played
        "episodes_played": len(won) + len(batch.left_out_won),
        "score": float(np.mean([e.score for e in episodes])),
        "return": float(np.mean(batch.rewards)),
        "invalid_rate": sum(not r.valid for r in rows) / max(len(rows), 1),
        "episode_length": float(np.mean([len(e.rows) for e in episodes])),
        "lost_episodes": sum(e.lost is not None for e in episodes),
        "groups_with_signal": differing_groups(episodes, batch.rewards) / max(len({e.group for e in episodes}), 1),
        "rows": len(batch.rows),
        "tokens_generated": sum(len(r.token_ids) for r in rows),
        "tokens_generated_analyzer": 0,
        "tokens_scored": tokens_scored + teacher_tokens,
        "tokens_scored_teacher": teacher_tokens,
        "opd_rows": opd_rows,
        "opd_step_skill_share": sum(r.step_skill for r in batch.rows) / max(opd_rows, 1),
        **action_metrics(rows),
    }
    if batch.left_out_won:  # filter_groups: the kept batch's success, beside that of every episode played
        out["success_kept"] = float(np.mean(won))
    out.update(stats)
    if batch.credit is not None:  # GiGPO's effective signal: steps that share their state with others
        out["anchored_step_share"] = batch.credit.anchored_share
        out["step_advantage_abs_mean"] = batch.credit.mean_abs_step_advantage
    if batch.skill_report is not None:
        out.update(batch.skill_report.metrics())
        out["tokens_generated"] += batch.skill_report.generated_tokens
        out["tokens_generated_analyzer"] = batch.skill_report.generated_tokens
        with_skill = sum(isinstance(s, Skill) for s in batch.skills)
        out["opd_trajectories"] = with_skill / max(len(episodes), 1)
    if batch.skill_probe_won:
        out.update(probe_metrics([e.won for e in episodes], batch.skill_probe_won))
    learners = [r for r in batch.rows if r.tokens and r.old_is_learners and r.sampler_logp is not None]
    if learners:  # the sampler's log-probs against the learner's, before the update (every process's rows)
        diffs = [(r.sampler_logp - r.old_logp.cpu()).abs() for r in learners]
        out["sampler_gap_max"] = max((float(d.max()) for d in diffs), default=math.nan)
        out["sampler_gap_mean"] = float(torch.cat(diffs).mean()) if diffs else math.nan
    for phase in ("rollout", "analysis", "probe", "teacher", "rescore", "reference", "update", "sync"):
        out[f"seconds_{phase}"] = seconds.get(phase, 0.0)
    out["seconds_total"] = sum(seconds.values())
    return out


def skill_log_rows(batch: UpdateBatch, update: int) -> list[dict[str, Any]]:
    """The ``skills.jsonl`` lines of an update: each analysed episode's skill, or why it has none."""
    rows = []
    for episode, skill in zip(batch.episodes, batch.skills, strict=False):
        if skill is None:
            continue
        parsed = isinstance(skill, Skill)
        row: dict[str, Any] = {
            "update": update,
            "episode": episode.index,
            "task_id": episode.task_id,
            "won": episode.won,
            "parsed": parsed,
        }
        row["skill" if parsed else "reason"] = skill.episode_skill if parsed else skill.reason
        if parsed and skill.step_skills:
            row["step_skills"] = [[step, text] for step, text in skill.step_skills]
        rows.append(row)
    return rows
