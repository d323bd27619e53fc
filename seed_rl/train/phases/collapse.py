"""Signs of a collapsing policy, per update: how spread its sampled actions are, and warnings.

Three numbers go into every update's metrics (:func:`action_metrics`):

- ``entropy``: the mean entropy (nats) of the policy's next-token distribution over the tokens
  of its sampled replies, ``softmax(z / T)`` as sampled (where the back end reports it);
- ``distinct_action_share``: the distinct valid actions played in the batch over the distinct
  actions the env offered in it (over the valid steps where the env offers no list);
  ``top_action_share``: the most played action's share of the valid steps;
- ``junk_rate``: the share of the policy's replies that parse to no admissible action.

:class:`CollapseWatch` turns them into warnings: entropy under :data:`ENTROPY_FLOOR`, or a junk
rate :data:`JUNK_RISE` above the lowest one the run has seen, or one action in at least
:data:`ONE_ACTION` of the valid steps (a Sokoban policy that pushes one way whatever the room).
A GRPO run whose groups all fail alike has no signal left, and these show it before its success
does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

#: Mean token entropy (nats) under which a run is warned: its groups sample nearly one reply.
ENTROPY_FLOOR = 0.05
#: Junk-rate rise (absolute) over the run's lowest that draws a warning.
JUNK_RISE = 0.10
#: Top-action share of the valid steps at or above which a run is warned: it plays one action.
ONE_ACTION = 0.95


def action_metrics(rows: Sequence[Any]) -> dict[str, float]:
    """``entropy``, ``distinct_action_share``, ``top_action_share`` and ``junk_rate`` of an update's
    env steps (:class:`~seed_rl.rollout.StepRow`); only the policy's own replies count."""
    replies = [r for r in rows if r.token_ids]
    entropies = [h for r in replies for h in r.entropies]
    valid = [r.action for r in replies if r.reply_valid and r.action_valid]
    offered = {a for r in replies for a in (r.info.get("available_actions") or ())}
    counts = Counter(valid)
    return {
        "entropy": sum(entropies) / len(entropies) if entropies else float("nan"),
        "junk_rate": sum(not r.reply_valid for r in replies) / len(replies) if replies else 0.0,
        "distinct_action_share": len(counts) / max(len(offered) if offered else len(valid), 1),
        "top_action_share": max(counts.values()) / len(valid) if valid else 0.0,
    }


class CollapseWatch:
    """Warnings from each update's metrics: low entropy, a rising junk rate, or one action played."""

    def __init__(
        self, entropy_floor: float = ENTROPY_FLOOR, junk_rise: float = JUNK_RISE, one_action: float = ONE_ACTION
    ) -> None:
        self.entropy_floor = entropy_floor
        self.junk_rise = junk_rise
        self.one_action = one_action
        self.lowest_junk: float | None = None

    def check(self, metrics: dict[str, Any]) -> list[str]:
        """The warnings of one update's metrics line (and it updates the run's lowest junk rate)."""
        warnings = []
        entropy, junk, u = metrics.get("entropy"), metrics.get("junk_rate"), metrics["update"]
        if entropy is not None and entropy == entropy and entropy < self.entropy_floor:
            warnings.append(
                f"update {u}: mean token entropy {entropy:.3f} < {self.entropy_floor} nats: the policy samples "
                "nearly one reply, so its groups tie and GRPO has no signal (raise temperature or lower lr)"
            )
        if junk is not None:
            if self.lowest_junk is not None and junk > self.lowest_junk + self.junk_rise:
                warnings.append(
                    f"update {u}: junk-reply rate {junk:.2f} has risen from {self.lowest_junk:.2f}: replies that "
                    "parse to no action are growing (lower lr, or sample with top_k / top_p)"
                )
            self.lowest_junk = junk if self.lowest_junk is None else min(self.lowest_junk, junk)
        top = metrics.get("top_action_share")
        if top is not None and top >= self.one_action:
            warnings.append(
                f"update {u}: one action is {100 * top:.0f}% of the valid steps: the policy has collapsed to a "
                "favourite action, and groups that all fail alike give GRPO no signal (see seed_rl/README.md)"
            )
        return warnings
