"""Search QA data in the real upstream formats, and where it lives.

- QA files: FlashRAG jsonl, one ``{"id", "question", "golden_answers": [...]}`` per line
  (extra keys such as ``metadata`` are kept).
- Corpus: Search-R1 jsonl ``{"id", "contents"}`` (see :mod:`seed_envs.searchqa.retrievers.corpus`).

Named datasets follow Search-R1's evaluation (``scripts/data_process/qa_search_*_merge.py``):
a dataset's *eval file* is its ``test`` split if FlashRAG has one, else ``dev``. Our env
splits map onto files as follows:

==================  ===============================  =====================================
dataset             ``train``                        ``valid_seen`` / ``valid_unseen``
==================  ===============================  =====================================
``nq_hotpotqa``     nq train + hotpotqa train        nq test + hotpotqa dev (in-domain) /
                                                     triviaqa, popqa, 2wiki, musique,
                                                     bamboogle eval files (out-of-domain)
one dataset ``d``   ``d`` train (if it has one)      ``d``'s eval file (both splits)
==================  ===============================  =====================================

Real files live under ``$SEED_SEARCHQA_DATA`` (default ``<seed cache>/searchqa/flashrag``)
as ``<dataset>/<split>.jsonl``, FlashRAG's own layout; ``seed data search`` fetches them.
A missing file raises :class:`seed_envs.core.MissingDataError` naming every missing file
and the command (:func:`download_command`) that fetches them.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from seed_envs.core import MissingDataError
from seed_envs.paths import cache_root

DOWNLOAD_COMMAND = "seed data search"
DATA_ENV = "SEED_SEARCHQA_DATA"

#: FlashRAG file splits each dataset has (RUC-NLPIR/FlashRAG_datasets).
DATASET_FILES: dict[str, tuple[str, ...]] = {
    "nq": ("train", "dev", "test"),
    "triviaqa": ("train", "dev", "test"),
    "popqa": ("test",),
    "hotpotqa": ("train", "dev"),
    "2wikimultihopqa": ("train", "dev"),
    "musique": ("train", "dev"),
    "bamboogle": ("test",),
}
IN_DOMAIN = ("nq", "hotpotqa")
OUT_OF_DOMAIN = ("triviaqa", "popqa", "2wikimultihopqa", "musique", "bamboogle")
MIXES: dict[str, tuple[str, ...]] = {"nq_hotpotqa": IN_DOMAIN}
#: The wiki-18 corpus Search-R1 retrieves from (21M passages), as ``seed data search`` stores it.
WIKI18_FILE = "wiki-18.jsonl"


class SearchDataError(ValueError):
    """A data file exists but is malformed, or a dataset name is unknown."""


@dataclass(frozen=True)
class QARecord:
    """One question with its gold answers; ``source`` names the dataset it came from."""

    id: str
    question: str
    golden_answers: tuple[str, ...]
    source: str = ""
    metadata: dict = field(default_factory=dict, compare=False, hash=False)


def data_root() -> Path:
    """Where real FlashRAG/Search-R1 files live (not created here)."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser()
    return cache_root() / "searchqa" / "flashrag"


def download_command(root: Path | None = None, corpus: bool = False) -> str:
    """The ``seed data search`` command that fetches QA files (or, with ``corpus``, wiki-18) into ``root``."""
    command = DOWNLOAD_COMMAND
    if root is not None and Path(root).expanduser() != data_root():
        command += f" --out {shlex.quote(str(root))}"
    return command + (" --corpus wiki18" if corpus else "")


def missing_files(paths: list[Path], what: str, command: str) -> MissingDataError:
    """The error for Search QA files that are not there."""
    return MissingDataError(
        paths[0], command, what=what, also_missing=paths[1:], hint=f"or point {DATA_ENV} at a folder that has them"
    )


def eval_file_split(dataset: str) -> str:
    """Search-R1's evaluation split of a dataset: ``test`` if present, else ``dev``."""
    files = DATASET_FILES[check_dataset(dataset)]
    return "test" if "test" in files else "dev"


def check_dataset(name: str) -> str:
    """``name`` if it is a known FlashRAG dataset or mix, else SearchDataError."""
    if name not in DATASET_FILES and name not in MIXES:
        known = ", ".join([*DATASET_FILES, *MIXES])
        raise SearchDataError(f"unknown dataset {name!r}; known datasets: {known}")
    return name


def qa_files_for(dataset: str, split: str, root: Path | None = None) -> list[tuple[str, Path]]:
    """(source name, file path) pairs that make up an env split of a named dataset."""
    check_dataset(dataset)
    root = data_root() if root is None else Path(root)
    if dataset in MIXES:
        members = MIXES[dataset]
        if split == "train":
            names = [(d, "train") for d in members]
        elif split == "valid_seen":
            names = [(d, eval_file_split(d)) for d in members]
        else:
            names = [(d, eval_file_split(d)) for d in OUT_OF_DOMAIN]
    elif split == "train":
        if "train" not in DATASET_FILES[dataset]:
            raise SearchDataError(
                f"dataset {dataset!r} has no train split (it has {', '.join(DATASET_FILES[dataset])})"
            )
        names = [(dataset, "train")]
    else:
        names = [(dataset, eval_file_split(dataset))]
    return [(f"{d}/{s}", root / d / f"{s}.jsonl") for d, s in names]


def _answers(value: object, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, (str, int, float)) for v in value):
        return tuple(str(v) for v in value)
    raise SearchDataError(f"{where}: 'golden_answers' must be a non-empty list of strings")


def load_qa(path: str | os.PathLike[str], source: str | None = None, command: str = DOWNLOAD_COMMAND) -> list[QARecord]:
    """Read a FlashRAG QA jsonl file. Malformed lines raise SearchDataError with the line number;
    a missing file raises MissingDataError naming ``command``."""
    path = Path(path)
    if not path.is_file():
        raise missing_files([path], "QA jsonl file", command)
    source = source if source is not None else path.stem
    records = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                row = json.loads(line)
            except ValueError as error:
                raise SearchDataError(f"{where}: not valid JSON ({error})") from None
            if not isinstance(row, dict) or not isinstance(row.get("question"), str) or not row["question"].strip():
                raise SearchDataError(f"{where}: expected an object with a non-empty 'question'")
            records.append(
                QARecord(
                    id=str(row.get("id", number - 1)),
                    question=row["question"],
                    golden_answers=_answers(row.get("golden_answers"), where),
                    source=source,
                    metadata=row.get("metadata") if isinstance(row.get("metadata"), dict) else {},
                )
            )
    return records


def load_qa_files(files: Iterable[tuple[str, Path]], command: str = DOWNLOAD_COMMAND) -> list[QARecord]:
    """Load several QA files, reporting every missing one at once (with ``command``, which fetches them)."""
    files = list(files)
    missing = [path for _, path in files if not path.is_file()]
    if missing:
        raise missing_files(missing, "QA files", command)
    records = []
    for source, path in files:
        records.extend(load_qa(path, source=source, command=command))
    return records


def wiki18_path(root: Path | None = None) -> Path:
    """Where ``seed data search --corpus wiki18`` puts the wiki-18 corpus."""
    return (data_root() if root is None else Path(root)) / WIKI18_FILE
