"""Map a function over jobs in worker processes, results in job order (for data-building commands)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import TypeVar

Job = TypeVar("Job")
Result = TypeVar("Result")


def map_in_processes(
    function: Callable[[Job], Result], jobs: Sequence[Job], workers: int = 1, chunksize: int = 4
) -> Iterator[Result]:
    """``function(job)`` for each job, in order, in ``workers`` spawned processes (in this
    process when ``workers`` <= 1 or there is one job). ``function`` must be importable
    by name, since spawned processes import it afresh."""
    if workers <= 1 or len(jobs) <= 1:
        yield from map(function, jobs)
        return
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        yield from pool.map(function, jobs, chunksize=chunksize)
