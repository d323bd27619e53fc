"""Wall-clock seconds per named phase of an update (``metrics.jsonl``'s ``seconds_*`` keys)."""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any


def device_sync(device: Any = None) -> Callable[[], None] | None:
    """What waits for ``device``'s queued work (``torch.cuda.synchronize``) before a clock is read:
    None for the CPU (or no device), whose work is done when the call returns."""
    if device is None or getattr(device, "type", str(device).split(":")[0]) != "cuda":
        return None
    import torch

    return lambda: torch.cuda.synchronize(device)


class PhaseTimer:
    """``with timer("teacher"): ...`` adds the block's wall-clock seconds to ``timer.seconds["teacher"]``.

    ``device``: on a CUDA device the timer waits for the device's queued work at the start and the
    end of each block, so a phase's seconds hold its kernels and not the next phase's."""

    def __init__(self, device: Any = None) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.sync = device_sync(device)

    @contextlib.contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        if self.sync is not None:
            self.sync()
        started = time.perf_counter()
        try:
            yield
        finally:
            if self.sync is not None:
                self.sync()
            self.seconds[phase] += time.perf_counter() - started
