"""``seed audit``: what a SEED run's hindsight skills did, read from its ``episodes.jsonl``.

The checks the paper's critics ask for, each a pure function of the episode records
(:mod:`seed_rl.records.episode_log`):

- :func:`gate_stats`: the gate ``g = sigmoid(beta * Delta)`` and ``Delta`` over OPD tokens,
  split by the trajectory's outcome, with the share of tokens where the skill raised the
  action's log-prob (``Delta > 0``);
- :func:`parse_rate_by_update`: the share of analysed episodes whose skill parsed, per update;
- :func:`foreign_words`: words of a skill that name things of *other* episodes' tasks but
  nothing of its own trajectory (possible contamination: advice copied across tasks);
- :func:`contradicts_outcome`: a skill whose wording contradicts its episode's outcome (avoidance
  language only, for a won episode; claims of success only, for a lost one). A lexical check:
  it flags for a human to read, it does not judge.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from seed_agent.skills.quality import content_words

#: Words of failure advice (the analyzer's "mistake, warning signs, avoidance rule").
FAILURE_MARKERS = ("avoid", "mistake", "failed", "fail", "don't", "do not", "never", "wrong", "instead of")
#: Words claiming that the episode went well.
SUCCESS_MARKERS = ("succeeded", "success", "successfully", "solved", "completed", "won", "reached the goal")


@dataclass(frozen=True)
class Distribution:
    """Summary of a sample: count, mean and the 10th, 50th and 90th percentiles."""

    n: int
    mean: float
    p10: float
    p50: float
    p90: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Distribution:
        if not values:
            return cls(0, math.nan, math.nan, math.nan, math.nan)
        ordered = sorted(values)
        return cls(
            len(ordered),
            sum(ordered) / len(ordered),
            percentile(ordered, 10),
            percentile(ordered, 50),
            percentile(ordered, 90),
        )


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of sorted values, interpolated linearly between ranks
    (rank ``(n - 1) * q / 100``, as numpy's default)."""
    if not ordered:
        return math.nan
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class GateStats:
    """Gates and Deltas of the OPD tokens of one outcome group."""

    episodes: int
    gate: Distribution
    delta: Distribution
    delta_positive: float  # the share of tokens with Delta > 0: the skill raised the action's log-prob


def opd_tokens(record: dict[str, Any]) -> tuple[list[float], list[float]]:
    """(gates, deltas) of every OPD token of one episode record."""
    gates: list[float] = []
    deltas: list[float] = []
    for step in record["steps"]:
        opd = step.get("opd")
        if opd:
            gates += [float(g) for g in opd["gate"]]
            deltas += [float(d) for d in opd["delta"]]
    return gates, deltas


def gate_stats(records: Sequence[dict[str, Any]]) -> dict[str, GateStats]:
    """Gate and Delta distributions over OPD tokens, for ``won``, ``lost`` and ``all`` episodes
    (episodes without OPD tokens are left out)."""
    groups: dict[str, list[dict[str, Any]]] = {"won": [], "lost": [], "all": []}
    for record in records:
        if opd_tokens(record)[0]:
            groups["won" if record["outcome"]["won"] else "lost"].append(record)
            groups["all"].append(record)
    out = {}
    for name, members in groups.items():
        gates = [g for r in members for g in opd_tokens(r)[0]]
        deltas = [d for r in members for d in opd_tokens(r)[1]]
        positive = sum(d > 0 for d in deltas) / len(deltas) if deltas else math.nan
        out[name] = GateStats(len(members), Distribution.of(gates), Distribution.of(deltas), positive)
    return out


def analysed(record: dict[str, Any]) -> bool:
    """Whether the analyzer was asked about this episode (a skill, or a reason it has none)."""
    return record.get("skill") is not None or record.get("skill_error") is not None


def parse_rate_by_update(records: Sequence[dict[str, Any]]) -> dict[int, tuple[int, int]]:
    """Per update (0-based): (skills that parsed, episodes analysed)."""
    counts: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for record in records:
        if analysed(record):
            counts[int(record["update"])][0] += record.get("skill") is not None
            counts[int(record["update"])][1] += 1
    return {u: (parsed, total) for u, (parsed, total) in sorted(counts.items())}


def trajectory_words(record: dict[str, Any]) -> set[str]:
    """Content words of an episode's task, observations and actions."""
    texts = [record["task"]]
    for step in record["steps"]:
        texts += [step["observation"], step["action"]]
    return content_words(texts)


def foreign_words(records: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], list[str]]]:
    """Skills naming content words of *other episodes' tasks* that their own trajectory (task,
    observations, actions) does not contain, with those words: advice carried over from another
    task. Words of no task are not counted: an env's shared vocabulary (walls, cells, the rules)
    and general English name no other task."""
    task_words = {word for r in records for word in content_words(r["task"])}
    flagged = []
    for record in records:
        if record.get("skill") is None:
            continue
        own = trajectory_words(record)
        foreign = sorted(w for w in content_words(record["skill"]) - own if w in task_words)
        if foreign:
            flagged.append((record, foreign))
    return flagged


def _has_any(text: str, markers: Sequence[str]) -> bool:
    lowered = text.lower()
    return any(re.search(rf"(?<![a-z]){re.escape(m)}(?![a-z])", lowered) for m in markers)


def contradicts_outcome(record: dict[str, Any]) -> str | None:
    """Why a skill's wording contradicts its episode's outcome, or None."""
    skill = record.get("skill")
    if skill is None:
        return None
    failure, success = _has_any(skill, FAILURE_MARKERS), _has_any(skill, SUCCESS_MARKERS)
    if record["outcome"]["won"] and failure and not success:
        return "the episode was won, the skill reads as avoidance advice"
    if not record["outcome"]["won"] and success and not failure:
        return "the episode was lost, the skill claims success"
    return None


@dataclass
class Audit:
    """Everything ``seed audit`` reports about one run."""

    episodes: int
    with_skill: int
    analysed: int
    gates: dict[str, GateStats]
    parse_rates: dict[int, tuple[int, int]]
    foreign: list[tuple[dict[str, Any], list[str]]] = field(default_factory=list)
    contradictions: list[tuple[dict[str, Any], str]] = field(default_factory=list)


def audit(records: Sequence[dict[str, Any]]) -> Audit:
    """Run every check over a run's episode records."""
    contradictions = [(r, why) for r in records if (why := contradicts_outcome(r)) is not None]
    return Audit(
        episodes=len(records),
        with_skill=sum(r.get("skill") is not None for r in records),
        analysed=sum(analysed(r) for r in records),
        gates=gate_stats(records),
        parse_rates=parse_rate_by_update(records),
        foreign=foreign_words(records),
        contradictions=contradictions,
    )
