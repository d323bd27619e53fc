"""Which goals a generated game may pose: the split's side, and what a room supports.

``valid_unseen`` is held out by construction on two axes:

- **scenes**: offsets :data:`UNSEEN_SCENE_OFFSETS` (1-5) of each room type's 30 scenes
  are drawn by ``valid_unseen`` only, the other 25 by ``train`` and ``valid_seen`` only;
- **pairs**: the (object type, receptacle-or-lamp type) pair ``(o, t)`` is held out iff
  ``stable_bucket(("alfworld-pair", o, t), HELD_OUT_PAIR_EVERY) == 0`` (one pair in five);
  ``valid_unseen`` poses only held-out pairs, ``train`` and ``valid_seen`` never.

A goal of family ``f`` with target object ``o`` and receptacle ``p`` is supported by a
set of receptacle types ``R`` when ``p`` in ``R`` can hold ``o``, ``p`` is not the
family's appliance, ``R`` has the appliance (sink basin, microwave, fridge) if ``f``
needs one, and some *source* type ``s`` in ``R``, ``s != p``, can hold ``o`` (where the
target starts; only receptacles that need no opening when closed sources are off). For
``look_at_obj_in_light`` the lamp type replaces ``p``: ``R`` must hold a lamp and a source.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from seed_envs.alfworld import vocab
from seed_envs.alfworld.problem import Scene, TaskSpec
from seed_envs.core import check_split, stable_bucket

#: Scene offsets (within each room type's 30) that only ``valid_unseen`` uses.
UNSEEN_SCENE_OFFSETS = range(1, 6)
#: One (object, receptacle-or-lamp) pair in this many is held out for ``valid_unseen``.
HELD_OUT_PAIR_EVERY = 5


def scene_numbers(room: str, unseen: bool) -> list[int]:
    """The scene numbers of ``room`` on the unseen side or on the seen side."""
    base = vocab.ROOM_SCENE_BASE[room]
    offsets = range(1, vocab.SCENES_PER_ROOM + 1)
    return [base + k for k in offsets if (k in UNSEEN_SCENE_OFFSETS) == unseen]


def pair_is_held_out(obj: str, target: str) -> bool:
    """Whether (object type, receptacle-or-lamp type) belongs to ``valid_unseen`` only."""
    return stable_bucket(("alfworld-pair", obj, target), HELD_OUT_PAIR_EVERY) == 0


def is_unseen_split(split: str) -> bool:
    return check_split(split) == "valid_unseen"


def _pair_allowed(obj: str, target: str, unseen: bool) -> bool:
    return pair_is_held_out(obj, target) == unseen


def room_receptacle_types(room: str) -> set[str]:
    """Every receptacle type a room of this kind can have."""
    return set(vocab.ROOM_FIXTURES[room]) | set(vocab.ROOM_OPTIONAL[room])


def source_types(obj: str, types: Iterable[str], closed_sources: bool = True, exclude: str = "") -> list[str]:
    """Types among ``types`` where ``obj`` may start: holders of it other than ``exclude``,
    and, when ``closed_sources`` is off, only those that need no opening."""
    return [r for r in vocab.holders_of(obj, types) if r != exclude and (closed_sources or r not in vocab.OPENABLE)]


def goals_for_types(
    task_type: str, room: str, types: Iterable[str], unseen: bool, closed_sources: bool = True
) -> list[TaskSpec]:
    """Every goal of ``task_type`` that receptacle types ``types`` support, on the split's side."""
    types = set(types)
    appliance = vocab.TASK_APPLIANCE[task_type]
    if appliance is not None and appliance not in types:
        return []
    goals = []
    for obj in vocab.family_objects(task_type, room):
        if task_type == "look_at_obj_in_light":
            if not source_types(obj, types, closed_sources):
                continue
            for lamp in vocab.ROOM_LAMPS.get(room, ()):
                if vocab.holders_of(lamp, types) and _pair_allowed(obj, lamp, unseen):
                    goals.append(TaskSpec(task_type, obj, toggle_target=lamp))
            continue
        for parent in vocab.holders_of(obj, types):
            if parent == appliance or not _pair_allowed(obj, parent, unseen):
                continue
            if source_types(obj, types, closed_sources, exclude=parent):
                goals.append(TaskSpec(task_type, obj, parent_target=parent))
    return goals


def candidate_goals(task_type: str, scene: Scene, unseen: bool, closed_sources: bool = True) -> list[TaskSpec]:
    """Every goal of ``task_type`` that ``scene`` supports, on the split's side of the pairs."""
    return goals_for_types(task_type, scene.room, scene.receptacle_types(), unseen, closed_sources)


def room_goals(task_type: str, room: str, unseen: bool, closed_sources: bool = True) -> list[TaskSpec]:
    """Every goal of ``task_type`` that some room of kind ``room`` supports, on the split's side."""
    return goals_for_types(task_type, room, room_receptacle_types(room), unseen, closed_sources)


def goal_receptacles(goal: TaskSpec, room: str, rng: random.Random, closed_sources: bool = True) -> list[str]:
    """Receptacle types that make a room support ``goal``: the family's appliance (or a
    stand for the lamp), the goal receptacle, and one source drawn from ``rng``."""
    types = room_receptacle_types(room)
    needed = []
    appliance = vocab.TASK_APPLIANCE[goal.task_type]
    if appliance is not None:
        needed.append(appliance)
    if goal.toggle_target:
        needed.append(rng.choice(vocab.holders_of(goal.toggle_target, types)))
    if goal.parent_target:
        needed.append(goal.parent_target)
    needed.append(rng.choice(source_types(goal.object_target, types, closed_sources, goal.parent_target)))
    return list(dict.fromkeys(needed))


def unseen_pairs(task_types: Iterable[str] = vocab.TASK_TYPES) -> dict[str, set[tuple[str, str]]]:
    """Per family, the (object, receptacle-or-lamp) pairs held out for ``valid_unseen``."""
    out: dict[str, set[tuple[str, str]]] = {}
    for family in task_types:
        pairs = set()
        for room in vocab.TASK_ROOMS[family]:
            for obj in vocab.family_objects(family, room):
                targets = (
                    vocab.ROOM_LAMPS.get(room, ())
                    if family == "look_at_obj_in_light"
                    else vocab.holders_of(obj, vocab.RECEPTACLE_HOLDS)
                )
                pairs |= {(obj, t) for t in targets if pair_is_held_out(obj, t)}
        out[family] = pairs
    return out
