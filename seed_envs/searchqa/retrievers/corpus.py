"""A passage corpus in Search-R1's jsonl format, read on demand.

Each line is ``{"id": str, "contents": "Title\\ntext"}`` (wiki-18 writes the title in
double quotes). The file is memory-mapped and indexed by line offsets, so a 21M-line
corpus costs 8 bytes a passage in memory and any passage is one slice and one
``json.loads`` away. Offsets are cached next to the file's index when a cache folder
is given.
"""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from seed_envs.core import MissingDataError
from seed_envs.files import atomic_path, atomic_write_text
from seed_envs.paths import cache_dir
from seed_envs.searchqa.data import SearchDataError, download_command
from seed_envs.searchqa.retrievers.base import Doc


def index_root() -> Path:
    """Where the retrievers keep the indexes they build over corpus files (created if missing)."""
    return cache_dir("searchqa", "index")


def file_fingerprint(path: Path) -> str:
    """A cheap identity of a file's version: resolved path, size and modification time."""
    stat = path.stat()
    return f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"


def _line_offsets(path: Path) -> np.ndarray:
    """Start offsets of the non-blank lines of a file, plus the file size at the end."""
    offsets = []
    position = 0
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                offsets.append(position)
            position += len(line)
    offsets.append(position)
    return np.asarray(offsets, dtype=np.int64)


def passage_id(record: dict, index: int) -> str:
    """A passage's id: its ``id`` field, else its line number ``index`` (among non-blank lines)."""
    return str(record.get("id", index))


class Corpus:
    """Random access to the passages of a jsonl corpus file."""

    def __init__(self, path: str | os.PathLike[str], offsets_cache: Path | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise MissingDataError(
                self.path,
                download_command(corpus=True),
                what="the corpus",
                hint='or pass a corpus jsonl with one {"id", "contents"} object per line',
            )
        if self.path.suffix == ".gz":
            raise SearchDataError(
                f"{self.path} is compressed; decompress it first (gunzip -k {self.path}) "
                "or let `seed data search --corpus wiki18` do it"
            )
        self._offsets = self._load_offsets(offsets_cache)
        self._file = open(self.path, "rb")  # noqa: SIM115 - kept open for the mmap
        size = os.fstat(self._file.fileno()).st_size
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if size else b""

    def _load_offsets(self, cache: Path | None) -> np.ndarray:
        if cache is None:
            return _line_offsets(self.path)
        stamp = cache.with_suffix(".stamp")
        fingerprint = file_fingerprint(self.path)
        if cache.exists() and stamp.exists() and stamp.read_text() == fingerprint:
            return np.load(cache)
        offsets = _line_offsets(self.path)
        with atomic_path(cache) as tmp:
            np.save(tmp, offsets)
        atomic_write_text(stamp, fingerprint)
        return offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def record(self, index: int) -> dict:
        """The parsed json object of passage ``index`` (0-based line among non-blank lines)."""
        if not 0 <= index < len(self):
            raise IndexError(f"passage {index} out of range for {len(self)} passages in {self.path}")
        start, end = int(self._offsets[index]), int(self._offsets[index + 1])
        raw = self._map[start:end]
        try:
            record = json.loads(raw)
        except ValueError as error:
            raise SearchDataError(f"{self.path}: passage {index} is not valid JSON ({error})") from None
        if not isinstance(record, dict) or not isinstance(record.get("contents"), str):
            raise SearchDataError(f"{self.path}: passage {index} has no string 'contents' field")
        return record

    def doc(self, index: int, score: float = 0.0) -> Doc:
        """Passage ``index`` as a :class:`Doc` (id defaults to the line number)."""
        record = self.record(index)
        return Doc(id=passage_id(record, index), contents=record["contents"], score=float(score))

    def items(self) -> Iterator[tuple[str, str]]:
        """``(id, contents)`` of every passage, in order (streamed, for indexing; ids as
        :meth:`doc` gives them)."""
        for index in range(len(self)):
            record = self.record(index)
            yield passage_id(record, index), record["contents"]

    def close(self) -> None:
        if isinstance(self._map, mmap.mmap):
            self._map.close()
        self._file.close()

    def __del__(self) -> None:
        try:  # noqa: SIM105 - contextlib may already be gone at interpreter exit
            self.close()
        except Exception:
            pass
