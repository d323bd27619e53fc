"""Which corpus and QA files an env reads, given a dataset name (or explicit files).

- ``world`` / ``world-easy``: the procedural knowledge world, generated on first use
  into the seed cache (see :mod:`seed_envs.searchqa.generate`);
- a FlashRAG dataset name or the ``nq_hotpotqa`` mix (see :mod:`seed_envs.searchqa.data`),
  with the wiki-18 corpus unless ``corpus`` names another file;
- explicit ``qa_files`` (``{split: path or [paths]}``) plus a ``corpus`` file.

Loaded QA records, and the index from task id to record, are cached per process, so
the envs of one worker share them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from seed_envs.core import SPLITS, check_split
from seed_envs.searchqa.data import (
    DATASET_FILES,
    DOWNLOAD_COMMAND,
    MIXES,
    QARecord,
    SearchDataError,
    check_dataset,
    download_command,
    load_qa_files,
    missing_files,
    qa_files_for,
    wiki18_path,
)
from seed_envs.searchqa.generate import PRESETS, ensure_world

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class DataSource:
    """A corpus file plus, for each env split, the QA files that make it up."""

    name: str
    corpus_path: Path
    split_files: Mapping[str, tuple[tuple[str, Path], ...]]
    #: The command that fetches missing QA files (named by the error).
    command: str = DOWNLOAD_COMMAND

    def records(self, split: str) -> tuple[QARecord, ...]:
        """The QA records of a split (loaded once per process)."""
        return _load_records(self._files(split), self.command)

    def index(self, split: str) -> Mapping[str, int]:
        """Each record's task id (:func:`task_id_of`) -> its position in :meth:`records`
        (built once per process; do not modify it)."""
        return _load_index(self._files(split), self.command)

    def _files(self, split: str) -> tuple[tuple[str, Path], ...]:
        files = self.split_files.get(check_split(split))
        if not files:
            raise SearchDataError(f"dataset {self.name!r} has no QA files for split {split!r}")
        return files


def task_id_of(record: QARecord) -> str:
    """The stable task id of a QA record: ``<source>:<id>``."""
    return f"{record.source}:{record.id}"


@lru_cache(maxsize=32)
def _load_records(files: tuple[tuple[str, Path], ...], command: str) -> tuple[QARecord, ...]:
    return tuple(load_qa_files(files, command))


@lru_cache(maxsize=32)
def _load_index(files: tuple[tuple[str, Path], ...], command: str) -> dict[str, int]:
    return {task_id_of(record): i for i, record in enumerate(_load_records(files, command))}


def resolve_source(
    dataset: str = "world",
    *,
    corpus: PathLike | None = None,
    qa_files: Mapping[str, PathLike | Sequence[PathLike]] | None = None,
    data_dir: PathLike | None = None,
) -> DataSource:
    """The :class:`DataSource` for a dataset name, or for explicit files."""
    if qa_files is not None:
        if corpus is None:
            raise SearchDataError("qa_files needs a corpus= file to search")
        split_files = {}
        for split, paths in qa_files.items():
            check_split(split)
            paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
            split_files[split] = tuple((Path(p).stem, Path(p)) for p in paths)
        return DataSource("custom", Path(corpus), split_files)
    if dataset in PRESETS:
        folder = ensure_world(dataset, root=data_dir)
        split_files = {s: ((f"{dataset}/{s}", folder / f"{s}.jsonl"),) for s in SPLITS}
        return DataSource(dataset, Path(corpus) if corpus else folder / "corpus.jsonl", split_files)
    try:
        check_dataset(dataset)
    except SearchDataError:
        known = ", ".join([*PRESETS, *DATASET_FILES, *MIXES])
        raise SearchDataError(f"unknown dataset {dataset!r}; known datasets: {known}") from None
    root = Path(data_dir) if data_dir is not None else None
    corpus_path = Path(corpus) if corpus is not None else wiki18_path(root)
    if not corpus_path.is_file():
        raise missing_files([corpus_path], "the retrieval corpus", download_command(root, corpus=True))
    split_files = {}
    for split in SPLITS:
        try:
            split_files[split] = tuple(qa_files_for(dataset, split, root))
        except SearchDataError:
            continue  # e.g. popqa has no train split
    return DataSource(dataset, corpus_path, split_files, download_command(root))
