"""``seed/SearchQA-v0``: search-augmented question answering with Search-R1's protocol.

The observation after ``reset`` is Search-R1's instruction with the question. Each
action is the model's whole turn; :func:`~seed_envs.searchqa.protocol.parse_turn`
reads it as Search-R1 does:

- ``<search> q </search>``: the observation is ``\\n\\n<information>Doc 1(Title: …) …
  </information>\\n\\n`` with the top ``topk`` passages (default 3); reward 0;
- ``<answer> a </answer>``: the episode ends; the observation is empty, as upstream;
  the reward is the exact match (EM) of the turn's last ``<answer>`` against the gold
  answers; ``info`` carries ``em``, ``subem``, ``f1``, ``answer`` and ``golden_answers``;
- neither: Search-R1's invalid-action message, ``action_valid=False``; the turn counts.

The registered id allows 4 turns (``max_episode_steps``), the SEED setting.

Batched retrieval: envs in one process share one retriever (see
:func:`~seed_envs.searchqa.retrievers.shared_retriever`). :func:`step_batch` steps many
envs with a single retriever call for all their searches.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from seed_envs.core import SPLITS, Observation, SeedEnv, TaskStart, Transition
from seed_envs.searchqa.data import QARecord
from seed_envs.searchqa.protocol import (
    INVALID_ACTION_MESSAGE,
    format_question,
    information_block,
    instruction,
    parse_turn,
)
from seed_envs.searchqa.retrievers import Doc, Retriever, shared_retriever
from seed_envs.searchqa.retrievers.base import check_topk
from seed_envs.searchqa.scoring import extract_answer, score_answer
from seed_envs.searchqa.sources import DataSource, resolve_source, task_id_of

PathLike = str | os.PathLike[str]


class SearchQAEnv(SeedEnv):
    """Answer a question by searching a passage corpus, one free-text turn at a time."""

    max_text_length: ClassVar[int] = 16_384
    #: A turn carries the model's reasoning as well as its tag; Search-R1 allows 500 tokens.
    max_action_length: ClassVar[int] = 16_384

    def __init__(
        self,
        split: str = "train",
        dataset: str = "world",
        *,
        retriever: str | Retriever = "bm25s",
        topk: int = 3,
        corpus: PathLike | None = None,
        qa_files: Mapping[str, PathLike | Sequence[PathLike]] | None = None,
        data_dir: PathLike | None = None,
        retriever_options: Mapping[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(split=split, render_mode=render_mode)
        self.source: DataSource = resolve_source(dataset, corpus=corpus, qa_files=qa_files, data_dir=data_dir)
        if isinstance(retriever, Retriever):
            self.retriever = retriever
        else:
            self.retriever = shared_retriever(retriever, self.source.corpus_path, **dict(retriever_options or {}))
        self.topk = check_topk(topk)
        self._record: QARecord | None = None
        self._searches = 0
        self._answer: str | None = None
        self._prefetched: dict[str, list[Doc]] = {}
        self._requested_split: str | None = None

    # ------------------------------------------------------------ tasks
    def records(self, split: str) -> tuple[QARecord, ...]:
        """The QA records of a split (loaded once per process)."""
        return self.source.records(split)

    @staticmethod
    def task_id_of(record: QARecord) -> str:
        """The stable task id of a QA record: ``<source>:<id>``."""
        return task_id_of(record)

    def task_count(self, split: str) -> int:
        return len(self.records(split))

    def task_id_for(self, split: str, index: int) -> str:
        return self.task_id_of(self.records(split)[index])

    def _resolve_task_id(self, options: dict[str, Any] | None) -> str:
        # One QA file may serve several splits (a single dataset's eval file): remember
        # which split was asked for, so the task reports that split.
        self._requested_split = (options or {}).get("split")
        return super()._resolve_task_id(options)

    def _start_task(self, task_id: str, rng: np.random.Generator) -> TaskStart:
        requested = self._requested_split if self._requested_split in SPLITS else self.split
        for split in (requested, self.split, *SPLITS):
            if split not in self.source.split_files:
                continue
            index = self.source.index(split).get(task_id)
            if index is not None:
                self._record = self.records(split)[index]
                break
        else:
            raise KeyError(f"unknown task_id {task_id!r} for dataset {self.source.name!r}")
        self._searches = 0
        self._answer = None
        self._prefetched.clear()
        record = self._record
        return TaskStart(
            text=instruction(record.question),
            task=format_question(record.question),
            split=split,
            extra_info={"dataset": record.source, "turn": None},
        )

    # ------------------------------------------------------------ turns
    def _play(self, action: str) -> Transition:
        assert self._record is not None
        turn = parse_turn(action)
        if turn is None:
            return Transition(text=INVALID_ACTION_MESSAGE, action_valid=False, extra_info={"turn": None})
        if turn.kind == "search":
            docs = self._prefetched.pop(turn.content, None)
            if docs is None:
                docs = self.retriever.search([turn.content], self.topk)[0]
            self._prefetched.clear()
            self._searches += 1
            return Transition(
                text=information_block(docs),
                extra_info={"turn": "search", "query": turn.content, "doc_ids": [d.id for d in docs]},
            )
        prediction = extract_answer(turn.kept_text)
        self._answer = prediction
        scores = score_answer(prediction, self._record.golden_answers)
        won = scores["em"] == 1.0
        return Transition(
            text="",
            reward=scores["em"],
            terminated=True,
            won=won,
            score=scores["em"],
            extra_info={
                "turn": "answer",
                "answer": prediction,
                **scores,
                "golden_answers": list(self._record.golden_answers),
            },
        )

    def _anchor(self, obs: Observation) -> str:
        """The last information block (the instruction with the question before any search), as
        the default has it; once answered (when the observation is empty, as upstream), the answer."""
        if self._episode_over:
            return f"answered: {self._answer!r}"
        return self._state_text

    def expert_plan(self) -> list[str] | None:
        """Search for each hop (the world's own queries, else the question), then answer a gold answer."""
        if self._record is None or self._episode_over:
            return None
        queries = self._record.metadata.get("search_queries") or [format_question(self._record.question)]
        remaining = list(queries)[min(self._searches, len(queries)) :]
        return [f"<search> {q} </search>" for q in remaining] + [f"<answer> {self._record.golden_answers[0]} </answer>"]

    @classmethod
    def prefetch_batch(cls, envs: Sequence[gym.Env], actions: Sequence[object]) -> None:
        prefetch_searches(envs, actions)

    def prefetch(self, query: str, docs: list[Doc]) -> None:
        """Hand the env the results of a search it is about to make (see :func:`step_batch`)."""
        self._prefetched[query] = docs


def prefetch_searches(envs: Sequence[gym.Env], actions: Sequence[object]) -> int:
    """Run the searches that ``actions`` will make in ``envs`` as one batch per retriever.

    Returns the number of searches prefetched. Envs that are not SearchQA envs, and
    actions the env will reject or that are not searches, are left alone.
    """
    groups: dict[tuple[int, int], tuple[Retriever, list[tuple[SearchQAEnv, str]]]] = {}
    for env, action in zip(envs, actions, strict=True):
        base = env.unwrapped
        if not isinstance(base, SearchQAEnv) or base._reject_reason(action) is not None:
            continue
        turn = parse_turn(action)  # type: ignore[arg-type]
        if turn is None or turn.kind != "search":
            continue
        key = (id(base.retriever), base.topk)
        groups.setdefault(key, (base.retriever, []))[1].append((base, turn.content))
    count = 0
    for (_, topk), (retriever, items) in groups.items():
        results = retriever.search([query for _, query in items], topk)
        for (base, query), docs in zip(items, results, strict=True):
            base.prefetch(query, docs)
        count += len(items)
    return count


def step_batch(envs: Sequence[gym.Env], actions: Sequence[str]) -> list[tuple]:
    """``[env.step(a) for env, a in zip(envs, actions)]``, with one retriever call for all searches."""
    if len(envs) != len(actions):
        raise ValueError(f"{len(envs)} envs but {len(actions)} actions")
    prefetch_searches(envs, actions)
    return [env.step(action) for env, action in zip(envs, actions, strict=True)]
