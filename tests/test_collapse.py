"""Collapse signs per update: entropy, spread of the actions played, junk replies, and warnings."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from seed_rl.records.run_log import summary_line
from seed_rl.train.phases.collapse import CollapseWatch, action_metrics


def step(action: str, *, reply_valid: bool = True, action_valid: bool = True, entropies=(1.0,), offered=None):
    info = {"available_actions": offered} if offered is not None else {}
    return SimpleNamespace(
        action=action,
        reply_valid=reply_valid,
        action_valid=action_valid,
        token_ids=[1] * len(entropies),
        entropies=list(entropies),
        info=info,
    )


def test_action_metrics_by_hand():
    moves = ["up", "down", "left", "right"]
    rows = [
        step("up", entropies=(0.5, 1.5), offered=moves),
        step("up", entropies=(1.0,), offered=moves),
        step("left", entropies=(2.0,), offered=moves),
        step("zzz", reply_valid=False, entropies=(3.0,), offered=moves),
        SimpleNamespace(action="up", reply_valid=True, action_valid=True, token_ids=[], entropies=[], info={}),
    ]
    m = action_metrics(rows)
    assert m["entropy"] == pytest.approx((0.5 + 1.5 + 1.0 + 2.0 + 3.0) / 5)
    assert m["junk_rate"] == pytest.approx(1 / 4)  # the scripted row (no tokens) does not count
    assert m["distinct_action_share"] == pytest.approx(2 / 4)  # up, left of the four offered
    assert m["top_action_share"] == pytest.approx(2 / 3)  # up, of the three valid replies


def test_without_an_offered_list_distinct_actions_count_against_the_valid_steps():
    m = action_metrics([step("a"), step("a"), step("b"), step("c", action_valid=False)])
    assert m["distinct_action_share"] == pytest.approx(2 / 3)
    assert m["junk_rate"] == 0.0  # the env rejected c, but the reply parsed


def test_no_reported_entropy_is_nan_not_zero():
    assert math.isnan(action_metrics([step("a", entropies=())])["entropy"])


def test_warnings_for_low_entropy_and_a_rising_junk_rate():
    watch = CollapseWatch(entropy_floor=0.1, junk_rise=0.1)
    assert watch.check({"update": 1, "entropy": 1.2, "junk_rate": 0.30}) == []
    assert watch.check({"update": 2, "entropy": 0.9, "junk_rate": 0.15}) == []  # falling junk is fine
    (rising,) = watch.check({"update": 3, "entropy": 0.9, "junk_rate": 0.30})
    assert "junk-reply rate 0.30" in rising and "0.15" in rising
    (low,) = watch.check({"update": 4, "entropy": 0.02, "junk_rate": 0.15})
    assert "entropy 0.020" in low
    assert watch.check({"update": 5, "entropy": float("nan"), "junk_rate": 0.15}) == []


def test_a_warning_when_one_action_takes_the_valid_steps():
    watch = CollapseWatch(one_action=0.9)
    assert watch.check({"update": 1, "entropy": 0.5, "top_action_share": 0.89}) == []
    (one,) = watch.check({"update": 2, "entropy": 0.5, "top_action_share": 0.9})
    assert "one action is 90%" in one and "update 2" in one


def test_the_update_line_shows_the_collapse_signs():
    metrics = {
        "update": 3,
        "success": 0.5,
        "invalid_rate": 0.1,
        "episode_length": 4.0,
        "groups_with_signal": 0.5,
        "loss": 0.01,
        "entropy": 0.42,
        "junk_rate": 0.07,
        "distinct_action_share": 0.75,
        "seconds_total": 12.0,
    }
    line = summary_line(metrics)
    assert "entropy 0.42" in line and "junk 0.07" in line and "distinct 0.75" in line
