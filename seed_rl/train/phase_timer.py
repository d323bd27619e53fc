"""Wall-clock seconds per named phase of an update (``metrics.jsonl``'s ``seconds_*`` keys)."""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Iterator


class PhaseTimer:
    """``with timer("teacher"): ...`` adds the block's wall-clock seconds to ``timer.seconds["teacher"]``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    @contextlib.contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] += time.perf_counter() - started
