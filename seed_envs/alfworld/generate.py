"""Procedural ALFWorld games, one at a time, in the upstream file format.

``make_game(split, index, difficulty=..., seed=...)`` makes game ``index`` of a split and
``write_game(root, game)`` writes it (a whole set is :func:`.dataset.generate_dataset`)::

    root/json_2.1.1/{train,valid_seen,valid_unseen}/
        <task_type>-<Obj>-<Mrecep>-<Recep>-<scene>/<trial>/
            game.tw-pddl        # {"pddl_domain", "grammar", "pddl_problem", "solvable", "walkthrough"}
            traj_data.json      # task_type, pddl_params, scene, task_id, ...
            initial_state.pddl  # the problem alone

so the loader reads them exactly as it reads the real release, and the same engine
plays them. The domain and grammar are the ones the ``alfworld`` package ships; the
grammar's "UNKNOWN GOAL" is replaced by the task sentence, as ``alfworld-generate`` does.

How a game is made (every draw from a RNG seeded by (generator version, seed,
difficulty, split, index, attempt)); the split rules are in :mod:`.goals`:

1. the family is ``task_types[index % len(task_types)]`` (families stay balanced);
2. a room type where ALFRED poses that family, and a scene number of the split's side:
   ``valid_unseen`` uses scenes 1-5, 201-205, 301-305 and 401-405, the other splits the
   other 25 of each room type;
3. the layout and a goal (object type, receptacle or lamp type) on the split's side of
   the held-out pairs (one (object, receptacle) pair in five, fixed by a hash of the
   pair, is posed by ``valid_unseen`` only, and ``valid_unseen`` poses only those).
   At levels with room fixtures a scene's layout (receptacles, ids, locations) is a
   function of (difficulty, room, scene) alone, and the goal is drawn among those it
   supports. Rooms without fixtures (``tiny``) are built around the goal instead: the
   goal is drawn among those the room type supports, and the layout is a function of
   (difficulty, room, scene, the receptacle types the goal needs). Either way a layout
   carries its scene number, so unseen layouts never occur in the seen splits;
4. the target's copies and some distractors placed in receptacles that can hold them,
   never already satisfying the goal;
5. the game is loaded in the engine; the planner's plan from the start is the
   walkthrough, and it is replayed to check that it wins. A game that fails (or whose
   plan is over the level's length bound) is drawn again (``attempt`` + 1).

Difficulty (:data:`DIFFICULTIES`) sets the room size: ``tiny`` (2-3 receptacles, the
target in the open, nothing else: for a small model's first successes), ``easy`` (3-5
receptacles, a few objects), ``medium``, and ``full`` (ALFWorld-sized rooms).
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seed_envs.alfworld import vocab
from seed_envs.alfworld.data import DATASET_DIRNAME, upstream_logic_files
from seed_envs.alfworld.goals import candidate_goals, goal_receptacles, is_unseen_split, room_goals, scene_numbers
from seed_envs.alfworld.problem import Receptacle, Scene, TaskSpec, Thing, problem_text
from seed_envs.core import check_split, stable_seed
from seed_envs.files import atomic_write_text

#: Part of every RNG seed and of the cache directory: bump it when a change would alter
#: generated games. 2: rooms without fixtures (``tiny``) are built around their goal.
GENERATOR_VERSION = 2
MAX_ATTEMPTS = 40


@dataclass(frozen=True)
class Difficulty:
    """Room size: receptacle instances, distractor objects and copies of the target."""

    name: str
    receptacles: tuple[int, int]
    distractors: tuple[int, int]
    target_copies: tuple[int, int]
    #: Scenery objects (no command reaches them; they make the problem file as large as real ones).
    scenery: tuple[int, int] = (0, 0)
    #: Games whose plan is longer than this are drawn again (None: no bound).
    max_plan_length: int | None = None
    #: Whether every layout has its room's fixtures (a kitchen's fridge, microwave, sink...).
    room_fixtures: bool = True
    #: Whether the target may start inside a receptacle that must be opened first.
    closed_sources: bool = True


DIFFICULTIES: dict[str, Difficulty] = {
    "tiny": Difficulty(
        "tiny",
        receptacles=(2, 3),
        distractors=(0, 0),
        target_copies=(1, 1),
        max_plan_length=8,
        room_fixtures=False,
        closed_sources=False,
    ),
    "easy": Difficulty("easy", receptacles=(3, 5), distractors=(0, 2), target_copies=(1, 1), max_plan_length=10),
    "medium": Difficulty("medium", receptacles=(6, 12), distractors=(4, 10), target_copies=(1, 2)),
    "full": Difficulty("full", receptacles=(15, 35), distractors=(20, 45), target_copies=(1, 3), scenery=(10, 25)),
}


def get_difficulty(difficulty: str | Difficulty) -> Difficulty:
    if isinstance(difficulty, Difficulty):
        return difficulty
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"unknown difficulty {difficulty!r}; expected one of {', '.join(DIFFICULTIES)}")
    return DIFFICULTIES[difficulty]


# ------------------------------------------------------------------ layout
def _coordinate(rng: random.Random, low: float, high: float) -> str:
    return f"{rng.uniform(low, high):+06.2f}"


def _alfred_id(rng: random.Random, type_name: str, used: set[str]) -> str:
    while True:
        coords = "|".join(_coordinate(rng, lo, hi) for lo, hi in ((-4, 4), (0, 2), (-4, 4)))
        parent = vocab.BASIN_PARENT.get(type_name)
        object_id = f"{parent}|{coords}|{type_name}" if parent else f"{type_name}|{coords}"
        if object_id not in used:
            used.add(object_id)
            return object_id


def _location(rng: random.Random, used: set[str]) -> str:
    while True:
        x, z, rotation = rng.randint(-16, 16), rng.randint(-16, 16), rng.randint(0, 3)
        loc = f"loc|{x}|{z}|{rotation}|{rng.choice((0, 15, 30, 45, 60))}"
        if loc not in used:
            used.add(loc)
            return loc


def build_layout(room: str, scene_num: int, difficulty: Difficulty, required: Sequence[str] = ()) -> Scene:
    """The receptacles of a scene: the room's fixtures, then others up to the drawn size.

    Deterministic in (difficulty, room, scene_num): a scene always has the same layout.
    Levels without fixtures (``tiny``) start from ``required`` instead (the receptacle
    types the goal needs, :func:`.goals.goal_receptacles`), so their layout is a function
    of the scene and those types; its receptacles are listed in a drawn order, so the
    order does not tell which one the goal needs.
    """
    key: tuple = ("alfworld-layout", GENERATOR_VERSION, difficulty.name, room, scene_num)
    if not difficulty.room_fixtures:
        key += tuple(required)
    rng = random.Random(stable_seed(*key))
    total = rng.randint(*difficulty.receptacles)
    remaining = dict(vocab.ROOM_OPTIONAL[room])
    if difficulty.room_fixtures:
        types = list(vocab.ROOM_FIXTURES[room])
        room_lamps = vocab.ROOM_LAMPS.get(room)
        if room_lamps and not any(r in types for r in ("SideTable", "Desk", "Dresser")):
            types.append("SideTable")
    else:
        types = list(required)
        for fixture in vocab.ROOM_FIXTURES[room]:
            remaining[fixture] = remaining.get(fixture, 0) + 1
        for kind in required:
            remaining[kind] = max(0, remaining.get(kind, 0) - 1)
    while len(types) < total and any(remaining.values()):
        names = sorted(k for k, v in remaining.items() if v > 0)
        # Common furniture (many cabinets, drawers) is drawn more often, as in real rooms.
        pick = rng.choices(names, weights=[remaining[k] for k in names])[0]
        remaining[pick] -= 1
        types.append(pick)
    if not difficulty.room_fixtures:
        rng.shuffle(types)
    used_ids: set[str] = set()
    used_locs: set[str] = set()
    receptacles = [Receptacle(t, _alfred_id(rng, t, used_ids), _location(rng, used_locs)) for t in types]
    agent_location = _location(rng, used_locs)
    return Scene(room=room, scene_num=scene_num, receptacles=receptacles, agent_location=agent_location)


# ------------------------------------------------------------------ objects
def place_objects(scene: Scene, goal: TaskSpec, difficulty: Difficulty, rng: random.Random) -> Scene:
    """Put the target's copies, the lamp (light tasks) and distractors into receptacles."""
    used_ids = {r.object_id for r in scene.receptacles}
    things: list[Thing] = []

    def put(obj_type: str, holders: Sequence[Receptacle]) -> None:
        recep = rng.choice(list(holders))
        things.append(Thing(obj_type, _alfred_id(rng, obj_type, used_ids), recep.object_id, recep.location))

    def holders(obj_type: str, exclude: str | None = None, closed: bool = True) -> list[Receptacle]:
        return [
            r
            for r in scene.receptacles
            if obj_type in vocab.RECEPTACLE_HOLDS[r.type]
            and r.type != exclude
            and (closed or r.type not in vocab.OPENABLE)
        ]

    low, high = difficulty.target_copies
    if goal.task_type == "pick_two_obj_and_place":
        low, high = max(2, low), max(2, high)
    for _ in range(rng.randint(low, high)):
        put(
            goal.object_target,
            holders(goal.object_target, exclude=goal.parent_target or None, closed=difficulty.closed_sources),
        )
    if goal.toggle_target:
        put(goal.toggle_target, holders(goal.toggle_target))

    pool = [
        o for o in vocab.ROOM_OBJECTS[scene.room] if o != goal.object_target and o not in vocab.LAMPS and holders(o)
    ]
    for _ in range(rng.randint(*difficulty.distractors)):
        if not pool:
            break
        obj = rng.choice(sorted(set(pool)))
        put(obj, holders(obj))
    used_locs = {r.location for r in scene.receptacles} | {scene.agent_location}
    for _ in range(rng.randint(*difficulty.scenery)):
        kind = rng.choice(vocab.SCENERY[scene.room])
        things.append(Thing(kind, _alfred_id(rng, kind, used_ids), "", _location(rng, used_locs)))
    return Scene(scene.room, scene.scene_num, scene.receptacles, things, scene.agent_location)


# --------------------------------------------------------------------- game
#: Trial-name code of each split: ``trial_G<seed>_<code><index>``.
SPLIT_CODES: dict[str, str] = {"train": "t", "valid_seen": "v", "valid_unseen": "vu"}
_TRIAL = re.compile(r"trial_G(-?\d+)_(t|vu|v)(\d{6,})")


def trial_name(seed: int, split: str, index: int) -> str:
    """The trial directory name of generated game ``index`` of ``split``, e.g. ``trial_G0_vu000004``."""
    if index < 0:
        raise ValueError(f"a game index is >= 0, got {index}")
    return f"trial_G{int(seed)}_{SPLIT_CODES[check_split(split)]}{int(index):06d}"


def parse_trial_name(trial: str) -> tuple[int, str, int] | None:
    """``(seed, split, index)`` of a :func:`trial_name`, or None if ``trial`` is not one."""
    match = _TRIAL.fullmatch(trial)
    if match is None:
        return None
    split = next(name for name, code in SPLIT_CODES.items() if code == match[2])
    return int(match[1]), split, int(match[3])


def task_type_for(index: int, task_types: Sequence[str] = vocab.TASK_TYPES) -> str:
    """The family of game ``index`` of any split: families cycle with the index."""
    return task_types[index % len(task_types)]


@dataclass
class GeneratedGame:
    split: str
    index: int
    folder: str
    trial: str
    game: dict[str, Any]
    traj_data: dict[str, Any]
    problem: str

    @property
    def relative_dir(self) -> str:
        return f"{self.split}/{self.folder}/{self.trial}"


@functools.cache
def _logic_files() -> tuple[str, str]:
    """The text of the PDDL domain and the grammar the ``alfworld`` package ships (read once)."""
    domain_path, grammar_path = upstream_logic_files()
    return domain_path.read_text(), grammar_path.read_text()


def draw_game(
    split: str,
    index: int,
    difficulty: str | Difficulty = "full",
    seed: int = 0,
    task_types: Sequence[str] = vocab.TASK_TYPES,
    attempt: int = 0,
) -> tuple[Scene, TaskSpec, str, random.Random] | None:
    """Draw the room and goal of one game (no engine call); None if the draw found no goal."""
    level = get_difficulty(difficulty)
    unseen = is_unseen_split(split)
    task_type = task_type_for(index, task_types)
    rng = random.Random(stable_seed("alfworld-game", GENERATOR_VERSION, seed, level.name, split, index, attempt))
    room = rng.choice(sorted(vocab.TASK_ROOMS[task_type]))
    scene_num = rng.choice(scene_numbers(room, unseen))
    if level.room_fixtures:
        scene = build_layout(room, scene_num, level)
        goals = candidate_goals(task_type, scene, unseen, level.closed_sources)
    else:
        # A handful of receptacles drawn per scene would support a goal of the split's side
        # only by luck (and never, for some families, in the 5 unseen scenes of a room
        # type): draw the goal first and build the room around it.
        goals = room_goals(task_type, room, unseen, level.closed_sources)
    if not goals:
        return None
    goal = rng.choice(goals)
    if not level.room_fixtures:
        scene = build_layout(room, scene_num, level, goal_receptacles(goal, room, rng, level.closed_sources))
    scene = place_objects(scene, goal, level, rng)
    template = rng.choice(vocab.TASK_TEMPLATES[task_type])
    return scene, goal, template, rng


def make_game(
    split: str,
    index: int,
    difficulty: str | Difficulty = "full",
    seed: int = 0,
    task_types: Sequence[str] = vocab.TASK_TYPES,
    solver: Callable[[Mapping[str, Any], str], list[str] | None] | None = None,
) -> GeneratedGame:
    """Make game ``index`` of ``split``: draw it, solve it with the planner, check the plan."""
    check_split(split)
    level = get_difficulty(difficulty)
    vocab.check_task_types(task_types)
    domain, grammar = _logic_files()
    solve = solver or plan_and_check
    for attempt in range(MAX_ATTEMPTS):
        drawn = draw_game(split, index, level, seed, task_types, attempt)
        if drawn is None:
            continue
        scene, goal, template, _ = drawn
        trial = trial_name(seed, split, index)
        description = goal.description(template)
        problem = problem_text(scene, goal, problem_id=trial)
        game = {
            "pddl_domain": domain,
            "grammar": grammar.replace("UNKNOWN GOAL", description),
            "pddl_problem": problem,
            "solvable": None,
            "walkthrough": None,
        }
        plan = solve(game, problem_text(relevant_scene(scene, goal), goal, problem_id=trial))
        if not plan or (level.max_plan_length is not None and len(plan) > level.max_plan_length):
            continue
        game["solvable"] = True
        game["walkthrough"] = plan
        traj_data = {
            "task_id": trial,
            "task_type": goal.task_type,
            "pddl_params": goal.pddl_params(),
            "scene": {"floor_plan": scene.floor_plan, "scene_num": scene.scene_num, "room_type": scene.room},
            "task_desc": description,
            "generator": {
                "name": "seed_envs.alfworld.generate",
                "version": GENERATOR_VERSION,
                "difficulty": level.name,
                "seed": seed,
                "split": split,
                "index": index,
                "attempt": attempt,
            },
        }
        return GeneratedGame(split, index, goal.folder_name(scene.scene_num), trial, game, traj_data, problem)
    raise RuntimeError(
        f"no solvable {task_type_for(index, task_types)} game for {split}[{index}] at difficulty "
        f"{level.name!r} after {MAX_ATTEMPTS} attempts"
    )


def relevant_scene(scene: Scene, goal: TaskSpec) -> Scene:
    """The part of ``scene`` a plan for ``goal`` can need: the target's copies and the lamp,
    the receptacles that hold them, the goal's receptacles and the family's appliance."""
    keep_types = {goal.object_target, goal.toggle_target} - {""}
    things = [t for t in scene.things if t.type in keep_types]
    sources = {t.receptacle_id for t in things}
    wanted = {goal.parent_target, vocab.TASK_APPLIANCE[goal.task_type]} - {"", None}
    receptacles = [r for r in scene.receptacles if r.object_id in sources or r.type in wanted]
    return Scene(scene.room, scene.scene_num, receptacles, things, scene.agent_location)


_SOLVER_ENV = None


def plan_and_check(game: Mapping[str, Any], relevant_problem: str) -> list[str] | None:
    """Solve ``game`` with the planner and return the plan if replaying it in the engine wins.

    The planner searches the problem restricted to what the goal involves
    (``relevant_problem``): the full room's search space grows with every receptacle
    that can be opened, and upstream's planner takes seconds on a full kitchen. The
    plan's operators are then named as in the full game and replayed there; only a
    win keeps it.
    """
    global _SOLVER_ENV
    from seed_envs.alfworld import engine  # textworld: loaded only to check a game

    if _SOLVER_ENV is None:
        _SOLVER_ENV = engine.make_game_env(engine.request_infos(), cache=engine.GameCache(max_games=4))
    env = _SOLVER_ENV
    # The translation made here is kept on disk, so the env's first reset of this game
    # (in any process) reads it instead of translating again.
    env.unwrapped.cache.disk_dir = engine.default_disk_dir()
    env.load(game)
    state = env.reset()
    if state["won"]:
        return None
    operators = engine.solve_problem(game["pddl_domain"], relevant_problem)
    if not operators:
        return None
    plan = env.unwrapped.templated(operators)
    for command in plan:
        if command not in state["admissible_commands"]:
            return None
        state, _, done = env.step(command)
        if done:
            break
    return plan if state["won"] else None


# ------------------------------------------------------------------ writing
def write_game(root: str | Path, game: GeneratedGame) -> Path:
    """Write one game under ``root/json_2.1.1/`` in the upstream layout; return its directory."""
    directory = Path(root) / DATASET_DIRNAME / game.relative_dir
    atomic_write_text(directory / "traj_data.json", json.dumps(game.traj_data, indent=2))
    atomic_write_text(directory / "initial_state.pddl", game.problem)
    atomic_write_text(directory / "game.tw-pddl", json.dumps(game.game))
    return directory
