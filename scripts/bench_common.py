"""Helpers the benchmark scripts share: resident memory, and median timings over interleaved rounds."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable


def rss_mb() -> float:
    """This process's resident memory in MiB."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def median_rounds(methods: dict[str, Callable[[], float | None]], rounds: int) -> dict[str, float]:
    """Median seconds of each method over rounds that run every method in turn, so that
    machine load hits all alike. A method may return its own timing (of the part that
    counts) instead of None."""
    times: dict[str, list[float]] = {name: [] for name in methods}
    for _ in range(rounds):
        for name, method in methods.items():
            start = time.perf_counter()
            own = method()
            times[name].append(own if own is not None else time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}
