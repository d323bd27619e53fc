"""A procedural knowledge world: a fictional encyclopedia and multi-hop questions about it.

The world has countries, cities, people, organizations and creative works, linked by
relations (``birthplace``, ``employer``, ``mentor``, ``founder``, ``headquarters``,
``country``, ``capital``, ``creator``) and carrying attributes (years, occupations,
populations, currencies, languages). Each entity gets a passage written from varied
templates in a random order; with ``distractors`` on, passages also state *wrong
candidates* (the city a person moved to, a branch office, a country's largest city),
people share surnames, and extra section passages repeat the entity's title.

Questions (gold answer = the value the world holds):

- single-hop: one relation or attribute of a named entity;
- bridge: a chain of 2..``max_hops`` relations, e.g. *In which country was the founder
  of the Velmora Institute born?*;
- comparison: which of two entities has the earlier year / larger population.

Splits are held apart by construction. Every relation stays inside one country
(a *region*); a fraction of regions is held out, and only ``valid_unseen`` asks about
their entities. Some multi-hop compositions are held out too, and only ``valid_unseen``
asks them (their single relations all occur in train). ``train`` and ``valid_seen``
share entities and compositions, but never a question.

Output (the real formats, so every loader and retriever reads it unchanged):
``corpus.jsonl`` ``{"id","contents"}`` with ``contents = '"Title"\\ntext'`` as in
wiki-18, and ``{train,valid_seen,valid_unseen}.jsonl`` in FlashRAG's QA format
``{"id","question","golden_answers","metadata"}``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from seed_envs.files import staged_dir
from seed_envs.paths import cache_dir
from seed_envs.searchqa.world import GENERATOR_VERSION, World, WorldConfig

__all__ = ["PRESETS", "World", "WorldConfig", "ensure_world", "generate_world", "world_config"]

#: The named worlds. ``world-easy`` is for CPU-scale RL with small models: single-hop
#: questions only, no distractor sentences, a 2,000-passage corpus.
PRESETS: dict[str, WorldConfig] = {
    "world": WorldConfig(),
    "world-easy": WorldConfig(
        name="world-easy",
        n_passages=2_000,
        max_hops=1,
        comparison=False,
        distractors=False,
        train_questions=5_000,
        valid_questions=200,
    ),
}


def iter_corpus_lines(world: World) -> Iterator[str]:
    for index, contents in enumerate(world.passages):
        yield json.dumps({"id": str(index), "contents": contents}, ensure_ascii=False)


def generate_world(config: WorldConfig, out_dir: str | os.PathLike[str]) -> Path:
    """Generate a world into ``out_dir`` (written to a temporary folder, then renamed).

    A world already in ``out_dir`` (e.g. another process finished first) is kept.
    """
    out_dir = Path(out_dir)
    with staged_dir(out_dir, is_complete=_is_world) as tmp:
        _write_world(World(config), config, tmp)
    return out_dir


def _is_world(folder: Path) -> bool:
    return (folder / "world.json").is_file()


def _write_world(world: World, config: WorldConfig, tmp: Path) -> None:
    """The world's files, ``world.json`` (the manifest) last."""
    with open(tmp / "corpus.jsonl", "w", encoding="utf-8") as f:
        for line in iter_corpus_lines(world):
            f.write(line + "\n")
    questions = world.questions()
    for split, records in questions.items():
        with open(tmp / f"{split}.jsonl", "w", encoding="utf-8") as f:
            for record in records:
                f.write(
                    json.dumps(
                        {
                            "id": record["id"],
                            "question": record["question"],
                            "golden_answers": record["golden_answers"],
                            "metadata": record["metadata"],
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
    manifest = {
        "generator_version": GENERATOR_VERSION,
        "config": asdict(config),
        "passages": len(world.passages),
        "entities": len(world.entities),
        "unseen_regions": sorted(world.unseen_regions),
        "heldout_compositions": sorted(">".join(c) for c in world.heldout_compositions()),
        "questions": {split: len(records) for split, records in questions.items()},
    }
    (tmp / "world.json").write_text(json.dumps(manifest, indent=1) + "\n")


def world_config(name_or_config: str | WorldConfig) -> WorldConfig:
    """A preset by name, or the config itself."""
    if isinstance(name_or_config, WorldConfig):
        return name_or_config
    if name_or_config not in PRESETS:
        raise ValueError(f"unknown world {name_or_config!r}; expected one of {', '.join(PRESETS)}")
    return PRESETS[name_or_config]


def ensure_world(name_or_config: str | WorldConfig = "world", root: str | os.PathLike[str] | None = None) -> Path:
    """The folder of a generated world, generating it on first use (under the seed cache)."""
    config = world_config(name_or_config)
    if root is None:
        root = cache_dir("searchqa", "worlds")
    out_dir = Path(root) / config.key()
    if _is_world(out_dir):
        return out_dir
    return generate_world(config, out_dir)
