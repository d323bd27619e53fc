"""What one update collects before its optimizer step, and how data-parallel processes' parts of
it are joined back into the whole update's batch for the metrics and the logs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from seed_agent.skills import SkillResult
from seed_rl.rollout import Episode
from seed_rl.skill_pass import SkillReport
from seed_rl.update import TrainRow


@dataclass
class UpdateBatch:
    """What one update collected before the optimizer step (a process's share of it, under torchrun)."""

    episodes: list[Episode]
    rewards: list[float]
    advantages: list[float]
    skills: list[SkillResult | None] = field(default_factory=list)
    skill_report: SkillReport | None = None
    rows: list[TrainRow] = field(default_factory=list)


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
    whole = UpdateBatch(episodes=[], rewards=[], advantages=[])
    for part in parts:
        offset = len(whole.episodes)
        for episode in part.episodes:
            rows = [replace(row, episode=row.episode + offset) for row in episode.rows]
            whole.episodes.append(replace(episode, index=episode.index + offset, rows=rows))
        whole.rewards += part.rewards
        whole.advantages += part.advantages
        whole.skills += part.skills
        whole.rows += [replace(row, episode=row.episode + offset) for row in part.rows]
    whole.skill_report = merge_reports([p.skill_report for p in parts])
    return whole


def slowest_seconds(parts: Sequence[dict[str, float]]) -> dict[str, float]:
    """Per phase, the seconds of the slowest process: what the update waited for."""
    phases = {phase for part in parts for phase in part}
    return {phase: max(part.get(phase, 0.0) for part in parts) for phase in phases}
