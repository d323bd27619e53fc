"""Write the fixed task manifests of ``seed eval`` and ``seed compare`` (``seed_rl/manifests/``).

Every manifest is made offline from the data this project generates itself: the procedural
rooms, deals and corridors (Sokoban, EZPoints, Corridor), the generated ALFWorld games, knowledge world and
WebShop catalog. Each env's task-defining keywords and data source are in :data:`SOURCES`
(the shipped configs' settings). A manifest holds task ids and digests only, never data.

    python scripts/make_manifests.py                        # every env and split
    python scripts/make_manifests.py --env sokoban --split valid_unseen
    python scripts/make_manifests.py --check                # compare the files with the data here

A file whose tasks are unchanged is left as it is; a changed one is rewritten with its
``version`` one higher.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Any

from seed_envs.core import SPLITS
from seed_rl.evaluate.manifests import (
    TASKS_OF,
    Manifest,
    ManifestError,
    env_names,
    manifest_from_json,
    manifest_path,
    manifest_text,
    read_tasks,
    resolve_env,
)

#: Tasks per manifest (fewer where a split is smaller).
DEFAULT_COUNT = 64


def sokoban() -> tuple[dict[str, Any], dict[str, Any]]:
    kwargs = {"dim_room": [6, 6], "num_boxes": 1}
    return kwargs, {
        "kind": "procedural",
        "description": "rooms of seed_envs.sokoban.generate (6x6, one box)",
        "generator": "seed_envs.sokoban.generate.generate_room",
        "params": kwargs,
        "seed": "each room from stable_seed('sokoban', room key, split, index, attempt)",
        "command": None,
    }


def ezpoints() -> tuple[dict[str, Any], dict[str, Any]]:
    return {}, {
        "kind": "procedural",
        "description": "card pairs of seed_envs.ezpoints.generate",
        "generator": "seed_envs.ezpoints.generate.deal_for",
        "params": {},
        "seed": "each deal from stable_seed('ezpoints', split, index, attempt)",
        "command": None,
    }


def alfworld() -> tuple[dict[str, Any], dict[str, Any]]:
    from seed_envs.alfworld.generate import GENERATOR_VERSION

    kwargs = {"difficulty": "easy", "generator_seed": 0}
    return kwargs, {
        "kind": "procedural",
        "description": f"ALFWorld games of seed_envs.alfworld.generate (easy, seed 0, version {GENERATOR_VERSION})",
        "generator": "seed_envs.alfworld.generate",
        "params": {**kwargs, "generator_version": GENERATOR_VERSION, "task_types": "all 6"},
        "seed": "generator_seed",
        "command": "seed data alfworld --generate 3553 --difficulty easy --seed 0",
    }


def searchqa() -> tuple[dict[str, Any], dict[str, Any]]:
    from seed_envs.searchqa.generate import PRESETS
    from seed_envs.searchqa.world import GENERATOR_VERSION

    world = PRESETS["world-easy"]
    return {"dataset": "world-easy"}, {
        "kind": "procedural",
        "description": f"the generated knowledge world world-easy (seed {world.seed}, version {GENERATOR_VERSION})",
        "generator": "seed_envs.searchqa.generate.generate_world",
        "params": {**dataclasses.asdict(world), "generator_version": GENERATOR_VERSION},
        "seed": world.seed,
        "command": "seed data search --generate --world world-easy",
    }


def webshop() -> tuple[dict[str, Any], dict[str, Any]]:
    from seed_envs.webshop.generate import DEFAULT_NUM_PRODUCTS, DEFAULT_SEED, GENERATOR_VERSION

    return {}, {
        "kind": "procedural",
        "description": (
            f"the generated WebShop catalog ({DEFAULT_NUM_PRODUCTS} products, seed {DEFAULT_SEED}, "
            f"version {GENERATOR_VERSION}), $WEBSHOP_DATA unset"
        ),
        "generator": "seed_envs.webshop.generate.generate_catalog",
        "params": {"num_products": DEFAULT_NUM_PRODUCTS, "seed": DEFAULT_SEED, "generator_version": GENERATOR_VERSION},
        "seed": DEFAULT_SEED,
        "command": "seed data webshop --generate (with $WEBSHOP_DATA unset)",
    }


def corridor() -> tuple[dict[str, Any], dict[str, Any]]:
    kwargs = {"max_distance": 3}
    return kwargs, {
        "kind": "procedural",
        "description": "corridors of seed_envs.corridor (exit side and distance from the task index)",
        "generator": "seed_envs.corridor.env.corridor_for",
        "params": kwargs,
        "seed": None,
        "command": None,
    }


SOURCES = {
    "seed/Sokoban-v0": sokoban,
    "seed/EZPoints-v0": ezpoints,
    "seed/ALFWorld-v0": alfworld,
    "seed/SearchQA-v0": searchqa,
    "seed/WebShop-v0": webshop,
    "seed/WebShopBrowser-v0": webshop,
    "seed/Corridor-v0": corridor,
}


def build(env_id: str, split: str, count: int) -> Manifest:
    """The manifest as this machine's data gives it now (version 0: set by :func:`write`)."""
    kwargs, source = SOURCES[env_id]()
    if env_id in TASKS_OF:
        source = {**source, "tasks_of": TASKS_OF[env_id]}
    tasks = tuple(read_tasks(env_id, split, count, kwargs))
    return Manifest(env_id, split, 0, source, kwargs, tasks)


def existing(env_id: str, split: str) -> Manifest | None:
    path = manifest_path(env_id, split)
    if not path.is_file():
        return None
    return manifest_from_json(json.loads(path.read_text(encoding="utf-8")), path)


def same_tasks(a: Manifest, b: Manifest) -> bool:
    return (a.tasks, a.env_kwargs, a.source) == (b.tasks, b.env_kwargs, b.source)


def write(manifest: Manifest) -> str:
    """Write ``manifest`` unless the file already holds the same tasks; returns what happened."""
    path = manifest_path(manifest.env, manifest.split)
    old = existing(manifest.env, manifest.split)
    if old is not None and same_tasks(old, manifest):
        return f"unchanged {path} (version {old.version})"
    version = 1 if old is None else old.version + 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(manifest_text(dataclasses.replace(manifest, version=version)), encoding="utf-8")
    return f"wrote {path} (version {version}, {manifest.count} tasks)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--env", action="append", help=f"env name or id (repeatable; default all: {', '.join(env_names())})"
    )
    parser.add_argument("--split", action="append", choices=SPLITS, help="split (repeatable; default all)")
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT, help="tasks per manifest")
    parser.add_argument("--check", action="store_true", help="only compare the files with this machine's data")
    args = parser.parse_args(argv)
    if os.environ.get("WEBSHOP_DATA"):
        print("error: unset $WEBSHOP_DATA: the WebShop manifests are made from the generated catalog", file=sys.stderr)
        return 2
    try:
        envs = [resolve_env(e) for e in args.env or env_names().values()]
    except ManifestError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    stale = 0
    for env_id in envs:
        for split in args.split or SPLITS:
            manifest = build(env_id, split, args.count)
            if not args.check:
                print(write(manifest), flush=True)
                continue
            old = existing(env_id, split)
            ok = old is not None and same_tasks(old, manifest)
            stale += not ok
            print(f"{'ok   ' if ok else 'STALE'} {manifest_path(env_id, split)}", flush=True)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
