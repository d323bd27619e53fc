"""A seed env that crashes on demand, for testing the vector workers' recovery.

Actions: ``"segfault"`` kills the worker process with SIGSEGV, ``"exit"`` ends it,
``"raise"`` raises, ``"hang"`` sleeps for a long time; anything else counts steps.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from functools import lru_cache

import numpy as np

from seed_envs.core import SeedEnv, TaskStart, Transition, indexed_task_id, parse_indexed_task_id

LOADS: list[int] = []


@lru_cache(maxsize=1)
def shared_catalog() -> tuple[str, ...]:
    """Stands for read-only data (a catalog, an index): loaded once per process."""
    LOADS.append(os.getpid())
    return ("item",) * 1000


class CrashEnv(SeedEnv):
    max_text_length = 256

    def __init__(self) -> None:
        super().__init__()
        self.catalog = shared_catalog()

    def data_loads(self) -> tuple[int, int, int]:
        """(pid, loads in this process, id of the catalog object)."""
        return os.getpid(), len(LOADS), id(self.catalog)

    def has_module(self, name: str) -> bool:
        """Whether this process has imported ``name`` (a forked worker has the parent's modules)."""
        return name in sys.modules

    def task_count(self, split: str) -> int | None:
        return 100

    def task_id_for(self, split: str, index: int) -> str:
        return indexed_task_id("crash", split, index)

    def _start_task(self, task_id: str, rng: np.random.Generator) -> TaskStart:
        split, index = parse_indexed_task_id(task_id, "crash")
        self.count = 0
        return TaskStart(text=f"pid {os.getpid()} task {index}", task="survive", split=split)

    def _play(self, action: str) -> Transition:
        if action == "segfault":
            os.kill(os.getpid(), signal.SIGSEGV)
        elif action == "exit":
            os._exit(3)
        elif action == "raise":
            raise RuntimeError("deliberate failure")
        elif action == "hang":
            time.sleep(600)
        self.count += 1
        return Transition(text=f"pid {os.getpid()} count {self.count}", reward=1.0)


def make_crash_env() -> CrashEnv:
    return CrashEnv()
