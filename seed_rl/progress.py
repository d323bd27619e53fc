"""Progress bars for the phases of an update (tqdm, to stderr), or nothing when disabled."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any


class _Silent:
    def update(self, n: int = 1) -> None:
        pass


@contextlib.contextmanager
def bar(total: int, desc: str, enabled: bool = True) -> Iterator[Any]:
    """A bar counting to ``total`` named ``desc``; a no-op object when ``enabled`` is False."""
    if not enabled or total <= 0:
        yield _Silent()
        return
    from tqdm import tqdm

    with tqdm(total=total, desc=desc, leave=False, file=sys.stderr, dynamic_ncols=True) as progress:
        yield progress
