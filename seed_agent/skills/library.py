"""A static skill library, for SEED's "static library" ablation.

Skills are stored with their task (and task type, where the env has one). Retrieval
for a new task: restrict to entries of the same task type when any exist, then rank by
TF-IDF cosine similarity of the task texts (ties: the most recently added first).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from seed_agent.skills.extract import Skill

_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class LibraryEntry:
    task: str
    skill: Skill
    task_type: str | None = None
    env: str = ""
    won: bool = False


class SkillLibrary:
    """Skills kept across episodes; ``retrieve`` finds the ones for a task."""

    def __init__(self, entries: list[LibraryEntry] | None = None) -> None:
        self.entries: list[LibraryEntry] = list(entries or [])

    def __len__(self) -> int:
        return len(self.entries)

    def add(
        self, task: str, skill: Skill, *, task_type: str | None = None, env: str = "", won: bool = False
    ) -> LibraryEntry:
        entry = LibraryEntry(task=task, skill=skill, task_type=task_type, env=env, won=won)
        self.entries.append(entry)
        return entry

    def retrieve(
        self, task: str, *, task_type: str | None = None, env: str | None = None, k: int = 1
    ) -> list[LibraryEntry]:
        """The ``k`` best entries for ``task`` (fewer if the library is smaller)."""
        pool = [(i, e) for i, e in enumerate(self.entries) if env is None or e.env == env]
        if task_type is not None and any(e.task_type == task_type for _, e in pool):
            pool = [(i, e) for i, e in pool if e.task_type == task_type]
        if not pool:
            return []
        idf = self._idf([e.task for _, e in pool])
        query = _tfidf(words(task), idf)
        scored = [(_cosine(query, _tfidf(words(e.task), idf)), i, e) for i, e in pool]
        scored.sort(key=lambda item: (-item[0], -item[1]))
        return [e for _, _, e in scored[:k]]

    @staticmethod
    def _idf(texts: list[str]) -> dict[str, float]:
        df = Counter(w for text in texts for w in set(words(text)))
        n = len(texts)
        return {w: math.log((1 + n) / (1 + c)) + 1.0 for w, c in df.items()}

    # --------------------------------------------------------- storage
    def to_rows(self) -> list[dict]:
        """The entries as JSON-ready dicts (what :meth:`save` writes)."""
        return [asdict(e) for e in self.entries]

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_rows(), indent=1), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> SkillLibrary:
        return cls.from_rows(json.loads(Path(path).read_text(encoding="utf-8")))

    @classmethod
    def from_rows(cls, rows: list[dict]) -> SkillLibrary:
        entries = []
        for row in rows:
            s = row["skill"]
            skill = Skill(
                s["episode_skill"],
                s.get("episode_summary", ""),
                tuple((int(n), str(t)) for n, t in s.get("step_skills", ())),
            )
            entries.append(
                LibraryEntry(row["task"], skill, row.get("task_type"), row.get("env", ""), bool(row.get("won", False)))
            )
        return cls(entries)


def _tfidf(tokens: list[str], idf: dict[str, float]) -> dict[str, float]:
    counts = Counter(tokens)
    return {w: c * idf.get(w, 1.0) for w, c in counts.items()}


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    dot = sum(v * b.get(w, 0.0) for w, v in a.items())
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0
