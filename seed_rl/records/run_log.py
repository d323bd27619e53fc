"""A run's metrics: one JSON line per update in ``metrics.jsonl``, always; TensorBoard and
Weights & Biases when asked for (each imported only then)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

METRICS_FILE = "metrics.jsonl"


def read_metrics(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every metrics line of a run, in order (an empty list for a run with none)."""
    path = Path(run_dir) / METRICS_FILE
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def truncate_jsonl(path: str | os.PathLike[str], keep: Callable[[dict[str, Any]], bool]) -> None:
    """Keep the JSON lines of ``path`` for which ``keep(row)`` holds (a resumed run drops what
    its checkpoint does not hold). Lines that do not parse are dropped: a killed run can only
    have cut the line it was writing, which no checkpoint holds."""
    path = Path(path)
    if not path.is_file():
        return
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and keep(row):
            kept.append(line + "\n")
    path.write_text("".join(kept), encoding="utf-8")


def summary_line(metrics: dict[str, Any]) -> str:
    """One line per update for the terminal: success, invalid rate, length, signal, loss, the
    collapse signs (:mod:`seed_rl.train.phases.collapse`), SEED's gate."""
    parts = [
        f"update {metrics['update']:>3}",
        f"success {metrics['success']:.2f}",
        f"invalid {metrics['invalid_rate']:.2f}",
        f"len {metrics['episode_length']:.1f}",
        f"signal {metrics['groups_with_signal']:.2f}",
        f"loss {metrics.get('loss', 0.0):+.4f}",
    ]
    if "success_kept" in metrics:  # filter_groups: how many episodes the kept groups were drawn from
        parts.insert(2, f"played {metrics['episodes_played']}")
    if "entropy" in metrics:
        parts.append(f"entropy {metrics['entropy']:.2f}")
    if "junk_rate" in metrics:
        parts.append(f"junk {metrics['junk_rate']:.2f}")
    if "distinct_action_share" in metrics:
        parts.append(f"distinct {metrics['distinct_action_share']:.2f}")
    if "gate_mean" in metrics:
        parts.append(f"gate {metrics['gate_mean']:.2f}")
    if "skill_parse_rate" in metrics:
        parts.append(f"parsed {metrics['skill_parse_rate']:.2f}")
    parts.append(f"{metrics['seconds_total']:.0f} s")
    return " | ".join(parts)


class RunLog:
    """Appends metrics; each line is flushed to disk before :meth:`write` returns."""

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        *,
        tensorboard: bool = False,
        wandb: bool = False,
        wandb_project: str = "seed",
        config: dict[str, Any] | None = None,
    ) -> None:
        self.path = Path(run_dir) / METRICS_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tb = None
        self._wandb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as error:
                raise ImportError("tensorboard=true needs the tensorboard package: pip install tensorboard") from error
            self._tb = SummaryWriter(str(Path(run_dir) / "tensorboard"))
        if wandb:
            try:
                import wandb as wandb_module
            except ImportError as error:
                raise ImportError("wandb=true needs the wandb package: pip install wandb") from error
            self._wandb = wandb_module.init(project=wandb_project, dir=str(run_dir), config=config or {})

    def truncate(self, lines: int) -> None:
        """Keep only the first ``lines`` lines (what the checkpoint being resumed had written)."""
        kept = read_metrics(self.path.parent)[:lines]
        text = "".join(json.dumps(row) + "\n" for row in kept)
        self.path.write_text(text, encoding="utf-8")

    def write(self, metrics: dict[str, Any]) -> None:
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in metrics.items()}
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(clean) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        step = int(metrics.get("update", 0))
        numbers = {k: v for k, v in clean.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if self._tb is not None:
            for key, value in numbers.items():
                self._tb.add_scalar(key, value, step)
            self._tb.flush()
        if self._wandb is not None:
            self._wandb.log(numbers, step=step)

    def lines(self) -> int:
        return len(read_metrics(self.path.parent))

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()
