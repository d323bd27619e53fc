"""Write a room and a task as an ALFWorld PDDL problem (the ``initial_state.pddl`` format).

The layout of the text follows the real files: a ``(:objects ...)`` block that
declares ``agent1``, every object class and every ``...Type`` constant, then the
room's objects, receptacles and locations; an ``(:init ...)`` block with the facts
grouped as upstream groups them; and the family's ``(:goal ...)``.

Ids are ALFRED object ids (``Mug|+01.25|+00.90|-02.00``) with the characters PDDL
cannot hold spelled out, as upstream does: ``|`` -> ``_bar_``, ``-`` -> ``_minus_``,
``+`` -> ``_plus_``, ``.`` -> ``_dot_``, ``,`` -> ``_comma_``. The engine's demangler
turns them back into "mug 1", "sinkbasin 1" and so on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from seed_envs.alfworld import vocab

_MANGLE = {"|": "_bar_", "-": "_minus_", "+": "_plus_", ".": "_dot_", ",": "_comma_"}


def mangle(object_id: str) -> str:
    """Spell an ALFRED id with PDDL-safe characters (upstream's substitution)."""
    return "".join(_MANGLE.get(ch, ch) for ch in object_id)


@dataclass(frozen=True)
class Receptacle:
    type: str
    object_id: str
    location: str


@dataclass(frozen=True)
class Thing:
    """An object: in a receptacle (``receptacle_id``), or scenery standing on its own (``""``)."""

    type: str
    object_id: str
    receptacle_id: str
    location: str


@dataclass
class Scene:
    room: str
    scene_num: int
    receptacles: list[Receptacle]
    things: list[Thing] = field(default_factory=list)
    agent_location: str = ""

    @property
    def floor_plan(self) -> str:
        return f"FloorPlan{self.scene_num}"

    def receptacle_types(self) -> set[str]:
        return {r.type for r in self.receptacles}

    def receptacle(self, object_id: str) -> Receptacle:
        return next(r for r in self.receptacles if r.object_id == object_id)


@dataclass(frozen=True)
class TaskSpec:
    """A task as ``traj_data.json`` records it in ``pddl_params``."""

    task_type: str
    object_target: str
    parent_target: str = ""
    toggle_target: str = ""
    mrecep_target: str = ""
    object_sliced: bool = False

    def pddl_params(self) -> dict[str, object]:
        return {
            "object_target": self.object_target,
            "parent_target": self.parent_target,
            "toggle_target": self.toggle_target,
            "mrecep_target": self.mrecep_target,
            "object_sliced": self.object_sliced,
        }

    def folder_name(self, scene_num: int) -> str:
        """``<task_type>-<Obj>-<Mrecep>-<Recep>-<scene>``, the recep slot holding the lamp for light tasks."""
        recep = self.parent_target or self.toggle_target
        return f"{self.task_type}-{self.object_target}-{self.mrecep_target or 'None'}-{recep}-{scene_num}"

    def description(self, template: str) -> str:
        return template.format(
            obj=self.object_target.lower(),
            recep=self.parent_target.lower(),
            toggle=self.toggle_target.lower(),
        )


def goal_text(task: TaskSpec) -> str:
    """The PDDL goal of a family, as upstream's goal library states it.

    - place families: some ``?o`` of the object type is in some ``?r`` of the receptacle
      type, and (clean/heat/cool) ``?o`` is clean/hot/cool;
    - two objects: two distinct such objects in the same ``?r``;
    - light: a lamp of the toggle type has been switched, it stands in a receptacle at the
      agent's location, and the agent holds an object of the object type.
    """
    obj, recep, toggle = f"{task.object_target}Type", f"{task.parent_target}Type", f"{task.toggle_target}Type"
    if task.task_type == "look_at_obj_in_light":
        body = f"""
             (and
                 (exists (?ot - object
                          ?r - receptacle
                          ?a - agent
                          ?l - location)
                     (and
                         (objectType ?ot {toggle})
                         (toggleable ?ot)
                         (isToggled ?ot)
                         (receptacleAtLocation ?r ?l)
                         (atLocation ?a ?l)
                         (inReceptacle ?ot ?r)
                     )
                 )
                 (exists (?o - object
                          ?a - agent)
                     (and
                         (objectType ?o {obj})
                         (holds ?a ?o)
                     )
                 )
             )"""
    elif task.task_type == "pick_two_obj_and_place":
        body = f"""
            (and
                (exists (?r - receptacle)
                    (exists (?o1 - object)
                        (and
                            (objectType ?o1 {obj})
                            (receptacleType ?r {recep})
                            (inReceptacle ?o1 ?r)
                            (exists (?o2 - object)
                                (and
                                    (not (= ?o1 ?o2))
                                    (objectType ?o2 {obj})
                                    (receptacleType ?r {recep})
                                    (inReceptacle ?o2 ?r)
                                )
                            )
                        )
                    )
                )
            )"""
    else:
        state = {
            "pick_and_place_simple": (),
            "pick_clean_then_place_in_recep": ("cleanable", "isClean"),
            "pick_heat_then_place_in_recep": ("heatable", "isHot"),
            "pick_cool_then_place_in_recep": ("coolable", "isCool"),
        }[task.task_type]
        lines = [f"({state[0]} ?o)"] if state else []
        lines += [f"(objectType ?o {obj})", f"(receptacleType ?r {recep})"]
        lines += [f"({state[1]} ?o)"] if state else []
        lines += ["(inReceptacle ?o ?r)"]
        joined = "\n                            ".join(lines)
        body = f"""
            (and
                (exists (?r - receptacle)
                    (exists (?o - object)
                        (and
                            {joined}
                        )
                    )
                )
            )"""
    return f"        (:goal{body}\n        )\n    )\n"


def _block(lines: list[str]) -> str:
    return "\n        ".join(lines)


def problem_text(scene: Scene, task: TaskSpec, problem_id: str) -> str:
    """The full PDDL problem for ``task`` in ``scene``."""
    object_classes = vocab.all_object_types()
    receptacle_classes = vocab.all_receptacle_types()
    things = sorted(scene.things, key=lambda t: t.object_id)
    receptacles = sorted(scene.receptacles, key=lambda r: r.object_id)
    locations = sorted({r.location for r in receptacles} | {t.location for t in things})
    thing_types = {t.type for t in things}
    recep_types = sorted({r.type for r in receptacles})

    header = [f"(define (problem plan_{problem_id})", "(:domain alfred)", "(:objects", "agent1 - agent"]
    header += [f"{name} - object" for name in object_classes]
    header += [f"{name}Type - otype" for name in object_classes]
    header += [f"{name}Type - rtype" for name in receptacle_classes]

    declared = [f"{mangle(t.object_id)} - object" for t in things]
    declared += [f"{mangle(r.object_id)} - receptacle" for r in receptacles]
    declared += [f"{mangle(loc)} - location" for loc in locations]
    declared += [f"{mangle(scene.agent_location)} - location"]

    cool_at_start = [
        t
        for t in things
        if t.type == task.object_target and t.receptacle_id and scene.receptacle(t.receptacle_id).type == "Fridge"
    ]
    sections: list[list[str]] = [
        [f"(receptacleType {mangle(r.object_id)} {r.type}Type)" for r in receptacles],
        [f"(objectType {mangle(t.object_id)} {t.type}Type)" for t in things],
        [
            f"(canContain {rt}Type {ot}Type)"
            for rt in recep_types
            for ot in sorted(thing_types)
            if ot in vocab.RECEPTACLE_HOLDS[rt]
        ],
        [f"(pickupable {mangle(t.object_id)})" for t in things if t.type not in vocab.NOT_PICKUPABLE],
        [f"(isReceptacleObject {mangle(t.object_id)})" for t in things if t.type in vocab.MOVABLE_RECEPTACLES],
        [f"(openable {mangle(r.object_id)})" for r in receptacles if r.type in vocab.OPENABLE],
        [f"(atLocation agent1 {mangle(scene.agent_location)})"],
        [f"(cleanable {mangle(t.object_id)})" for t in things if t.type in vocab.CLEANABLE],
        [f"(heatable {mangle(t.object_id)})" for t in things if t.type in vocab.HEATABLE],
        [f"(coolable {mangle(t.object_id)})" for t in things if t.type in vocab.COOLABLE],
        # Upstream marks objects of the target type that start in a fridge as already cool.
        [f"(isCool {mangle(t.object_id)})" for t in cool_at_start],
        [f"(toggleable {mangle(t.object_id)})" for t in things if t.type in vocab.TOGGLEABLE],
        [f"(sliceable {mangle(t.object_id)})" for t in things if t.type in vocab.SLICEABLE],
        [f"(inReceptacle {mangle(t.object_id)} {mangle(t.receptacle_id)})" for t in things if t.receptacle_id],
        [f"(receptacleAtLocation {mangle(r.object_id)} {mangle(r.location)})" for r in receptacles],
        [f"(objectAtLocation {mangle(t.object_id)} {mangle(t.location)})" for t in things],
    ]
    init = "\n        ".join(_block(section) for section in sections if section)
    return (
        "\n".join(header)
        + "\n\n        "
        + _block(declared)
        + "\n        )\n\n(:init\n\n        "
        + init
        + "\n        )\n\n"
        + goal_text(task)
    )
