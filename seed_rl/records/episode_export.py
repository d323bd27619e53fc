"""A run's episodes as a dataset: one JSON line per episode, one schema for every row.

``datasets.load_dataset("json", data_files=PATH)`` needs the same type for a key in every
row, so nothing is left out: a missing skill is ``null``, a step with no OPD has empty
``tokens``, ``gates`` and ``deltas``, numbers are always floats (``null`` where not finite).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def dataset_row(record: dict[str, Any]) -> dict[str, Any]:
    """The dataset row of one ``episodes.jsonl`` record."""
    outcome = record.get("outcome") or {}
    return {
        "update": int(record.get("update", 0)),
        "episode": int(record.get("episode", 0)),
        "group": int(record.get("group", 0)),
        "env": str(record.get("env", "")),
        "task_id": str(record.get("task_id", "")),
        "task": str(record.get("task", "")),
        "split": str(record.get("split", "")),
        "skill": _text_or_none(record.get("skill")),
        "skill_error": _text_or_none(record.get("skill_error")),
        "outcome": {
            "won": bool(outcome.get("won", False)),
            "score": _float(outcome.get("score")),
            "return": _float(outcome.get("return")),
            "reward": _float(outcome.get("reward")),
            "steps": int(outcome.get("steps", len(record.get("steps", [])))),
            "lost": bool(outcome.get("lost", False)),
        },
        "steps": [_step(step) for step in record.get("steps", [])],
    }


def write_dataset(records: Iterable[dict[str, Any]], out: str | os.PathLike[str]) -> int:
    """Write the dataset rows of ``records`` to ``out``; returns the number of rows."""
    rows = [json.dumps(dataset_row(record), allow_nan=False) + "\n" for record in records]
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(rows), encoding="utf-8")
    return len(rows)


def _step(step: dict[str, Any]) -> dict[str, Any]:
    opd = step.get("opd") or {}
    return {
        "observation": str(step.get("observation", "")),
        "response": str(step.get("response", "")),
        "action": str(step.get("action", "")),
        "valid": bool(step.get("valid", True)),
        "reward": _float(step.get("reward")),
        "tokens": [str(t) for t in opd.get("tokens", [])],
        "gates": [_float(g) for g in opd.get("gate", [])],
        "deltas": [_float(d) for d in opd.get("delta", [])],
    }


def _float(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)
