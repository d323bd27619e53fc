"""The ALFRED vocabulary the generator draws on: rooms, receptacle and object types.

Type names are ALFRED's (``CounterTop``, ``SinkBasin``, ``DeskLamp``...), so generated
games read like the real ones ("a countertop 1", "a sinkbasin 1"). Which object a
receptacle can hold, and which object can be cleaned, heated, cooled or toggled,
follows the ALFRED affordances; the tables below are our own compact encoding of them.

Task families and their sentence templates are the benchmark's own: a game's
"Your task is to: ..." line is one of these templates with ``{obj}``, ``{recep}``
and ``{toggle}`` filled with lower-cased type names, as upstream writes it.
"""

from __future__ import annotations

from collections.abc import Iterable

#: The six ALFWorld task families, in upstream's numbering (1..6).
TASK_TYPES: tuple[str, ...] = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)

#: The task sentence templates of each family (upstream picks one at random per game).
TASK_TEMPLATES: dict[str, tuple[str, ...]] = {
    "pick_and_place_simple": ("put a {obj} in {recep}", "put some {obj} on {recep}"),
    "look_at_obj_in_light": ("look at {obj} under the {toggle}", "examine the {obj} with the {toggle}"),
    "pick_clean_then_place_in_recep": (
        "put a clean {obj} in {recep}",
        "clean some {obj} and put it in {recep}",
    ),
    "pick_heat_then_place_in_recep": ("put a hot {obj} in {recep}", "heat some {obj} and put it in {recep}"),
    "pick_cool_then_place_in_recep": ("put a cool {obj} in {recep}", "cool some {obj} and put it in {recep}"),
    "pick_two_obj_and_place": ("put two {obj} in {recep}", "find two {obj} and put them in {recep}"),
}

ROOMS: tuple[str, ...] = ("Kitchen", "LivingRoom", "Bedroom", "Bathroom")

#: ALFRED's scene numbering: kitchens 1-30, living rooms 201-230, bedrooms 301-330, bathrooms 401-430.
ROOM_SCENE_BASE: dict[str, int] = {"Kitchen": 0, "LivingRoom": 200, "Bedroom": 300, "Bathroom": 400}
SCENES_PER_ROOM = 30

#: Rooms in which each family is posed (as in ALFRED's task generation).
TASK_ROOMS: dict[str, tuple[str, ...]] = {
    "pick_and_place_simple": ROOMS,
    "pick_two_obj_and_place": ROOMS,
    "look_at_obj_in_light": ("LivingRoom", "Bedroom"),
    "pick_clean_then_place_in_recep": ("Kitchen", "Bathroom"),
    "pick_heat_then_place_in_recep": ("Kitchen",),
    "pick_cool_then_place_in_recep": ("Kitchen",),
}

#: The appliance a family needs in the room (its receptacle type), if any.
TASK_APPLIANCE: dict[str, str | None] = {
    "pick_and_place_simple": None,
    "pick_two_obj_and_place": None,
    "look_at_obj_in_light": None,
    "pick_clean_then_place_in_recep": "SinkBasin",
    "pick_heat_then_place_in_recep": "Microwave",
    "pick_cool_then_place_in_recep": "Fridge",
}

# ------------------------------------------------------------------ objects
FOOD = ("Apple", "Bread", "Egg", "Lettuce", "Potato", "Tomato")
UTENSILS = ("ButterKnife", "Fork", "Knife", "Ladle", "Spatula", "Spoon")
DISHES = ("Bowl", "Cup", "Mug", "Plate")
COOKWARE = ("Kettle", "Pan", "Pot")
KITCHEN_SUNDRIES = ("DishSponge", "PepperShaker", "SaltShaker", "SoapBottle", "WineBottle", "Glassbottle")
SMALL_THINGS = ("CellPhone", "CreditCard", "KeyChain", "Pen", "Pencil", "Watch", "CD", "RemoteControl")
READING = ("Book", "Newspaper", "Laptop", "AlarmClock")
DECOR = ("Statue", "Vase", "Candle", "TissueBox", "Box", "WateringCan")
SOFT = ("Pillow", "Cloth", "TeddyBear")
SPORTS = ("BaseballBat", "BasketBall", "TennisRacket")
BATH_SUPPLIES = (
    "SoapBar",
    "SoapBottle",
    "SprayBottle",
    "ToiletPaper",
    "Cloth",
    "Candle",
    "DishSponge",
    "TissueBox",
)
TOWELS = ("Towel", "HandTowel")
LAMPS = ("DeskLamp", "FloorLamp")

#: Scenery: objects of ALFRED scenes that no text command reaches (not pickupable, in no
#: receptacle). Real problem files list them with their own locations; full rooms do too.
SCENERY: dict[str, tuple[str, ...]] = {
    "Kitchen": ("StoveKnob", "LightSwitch", "Window", "Faucet", "Chair", "HousePlant", "Blinds"),
    "LivingRoom": ("LightSwitch", "Window", "Painting", "Television", "Chair", "HousePlant", "Curtains"),
    "Bedroom": ("LightSwitch", "Window", "Painting", "Blinds", "Curtains", "Mirror", "Chair", "Poster"),
    "Bathroom": ("LightSwitch", "Mirror", "ShowerGlass", "ShowerDoor", "Faucet", "Window"),
}

#: Objects that hold other objects in ALFRED (``isReceptacleObject``); here they are only carried.
MOVABLE_RECEPTACLES = frozenset({"Bowl", "Box", "Cup", "Mug", "Plate", "Pan", "Pot"})

CLEANABLE = frozenset(
    {
        "Apple",
        "Bowl",
        "ButterKnife",
        "Cloth",
        "Cup",
        "DishSponge",
        "Egg",
        "Fork",
        "Kettle",
        "Knife",
        "Ladle",
        "Lettuce",
        "Mug",
        "Pan",
        "Plate",
        "Pot",
        "Potato",
        "SoapBar",
        "Spatula",
        "Spoon",
        "Tomato",
    }
)
HEATABLE = frozenset({"Apple", "Bread", "Cup", "Egg", "Mug", "Plate", "Potato", "Tomato"})
COOLABLE = frozenset(
    {
        "Apple",
        "Bowl",
        "Bread",
        "Cup",
        "Egg",
        "Lettuce",
        "Mug",
        "Pan",
        "Plate",
        "Pot",
        "Potato",
        "Tomato",
        "WineBottle",
    }
)
SLICEABLE = frozenset({"Apple", "Bread", "Egg", "Lettuce", "Potato", "Tomato"})
TOGGLEABLE = frozenset(LAMPS)
#: Lamps and scenery cannot be carried; every other object here can.
NOT_PICKUPABLE = frozenset(LAMPS) | frozenset(o for objects in SCENERY.values() for o in objects)

#: The small objects found in each room.
ROOM_OBJECTS: dict[str, tuple[str, ...]] = {
    "Kitchen": FOOD + UTENSILS + DISHES + COOKWARE + KITCHEN_SUNDRIES + ("CellPhone", "CreditCard", "Book"),
    "LivingRoom": SMALL_THINGS + READING + DECOR + ("Pillow", "Bowl", "Plate", "Cup", "Mug"),
    "Bedroom": SMALL_THINGS + READING + SOFT + SPORTS + ("Mug", "Bowl", "Box", "CD", "Vase", "Statue"),
    "Bathroom": BATH_SUPPLIES + TOWELS + ("SprayBottle", "Cloth"),
}

# -------------------------------------------------------------- receptacles
OPENABLE = frozenset({"Fridge", "Cabinet", "Microwave", "Drawer", "Safe"})

_TABLETOP = SMALL_THINGS + READING + DECOR + ("Mug", "Bowl", "Plate", "Cup")
_SEAT = (
    "Pillow",
    "Book",
    "Box",
    "CellPhone",
    "CreditCard",
    "KeyChain",
    "Laptop",
    "Newspaper",
    "RemoteControl",
)
_KITCHEN_SURFACE = FOOD + UTENSILS + DISHES + COOKWARE + KITCHEN_SUNDRIES

#: Object types each receptacle type can hold (``canContain``).
RECEPTACLE_HOLDS: dict[str, frozenset[str]] = {
    name: frozenset(objects)
    for name, objects in {
        "CounterTop": _KITCHEN_SURFACE + BATH_SUPPLIES + ("CellPhone", "CreditCard", "Book", "KeyChain"),
        "DiningTable": _KITCHEN_SURFACE + SMALL_THINGS + READING + DECOR,
        "Cabinet": DISHES + COOKWARE + KITCHEN_SUNDRIES + BATH_SUPPLIES + ("Book", "Box", "Vase", "Statue"),
        "Drawer": UTENSILS
        + SMALL_THINGS
        + ("Book", "Cloth", "Candle", "SoapBar", "ToiletPaper", "DishSponge", "SprayBottle", "Spatula"),
        "Fridge": FOOD + DISHES + ("Pan", "Pot", "WineBottle"),
        "Microwave": ("Apple", "Bread", "Egg", "Potato", "Tomato", *DISHES),
        "SinkBasin": FOOD + UTENSILS + DISHES + COOKWARE + ("DishSponge", "Cloth", "SoapBar"),
        "StoveBurner": COOKWARE,
        "CoffeeMachine": ("Mug",),
        "Toaster": (),
        "GarbageCan": (
            *FOOD,
            *("Cloth", "SoapBottle", "SprayBottle", "TissueBox", "ToiletPaper", "CD", "Pen", "Pencil"),
            *("CreditCard", "Newspaper", "SoapBar", "DishSponge", "Candle", "WineBottle", "Glassbottle"),
        ),
        "Shelf": DISHES + KITCHEN_SUNDRIES + SMALL_THINGS + READING + DECOR + BATH_SUPPLIES,
        "SideTable": _TABLETOP + LAMPS,
        "CoffeeTable": _TABLETOP,
        "Desk": _TABLETOP + SPORTS + LAMPS,
        "Dresser": _TABLETOP + SPORTS + LAMPS + ("Cloth", "SprayBottle", "ToiletPaper", "WineBottle"),
        "TVStand": ("RemoteControl", "Book", "Box", "Statue", "Vase", "Laptop", "CD", "KeyChain", "Watch"),
        "Sofa": _SEAT,
        "ArmChair": _SEAT,
        "Ottoman": _SEAT,
        "Bed": (
            "Pillow",
            "Book",
            "CellPhone",
            "Laptop",
            "TeddyBear",
            "Cloth",
            "CreditCard",
            "KeyChain",
            "Newspaper",
            *SPORTS,
        ),
        "Safe": ("CD", "CellPhone", "CreditCard", "KeyChain", "Watch", "Vase", "Statue"),
        "LaundryHamper": ("Cloth",),
        "Toilet": (
            "SoapBar",
            "SoapBottle",
            "SprayBottle",
            "Candle",
            "ToiletPaper",
            "Cloth",
            "DishSponge",
            "TissueBox",
        ),
        "BathtubBasin": ("SoapBar", "Cloth", "DishSponge", "SoapBottle"),
        "TowelHolder": ("Towel",),
        "HandTowelHolder": ("HandTowel",),
        "ToiletPaperHanger": ("ToiletPaper",),
    }.items()
}

#: Receptacles whose ALFRED object id has a second part (``Sink|...|SinkBasin``).
BASIN_PARENT: dict[str, str] = {"SinkBasin": "Sink", "BathtubBasin": "Bathtub"}

#: Per room: receptacle types every layout has, then the others with their most instances.
ROOM_FIXTURES: dict[str, tuple[str, ...]] = {
    "Kitchen": ("CounterTop", "Fridge", "Microwave", "SinkBasin"),
    "LivingRoom": ("Sofa", "SideTable"),
    "Bedroom": ("Bed", "Desk"),
    "Bathroom": ("SinkBasin", "Toilet"),
}
ROOM_OPTIONAL: dict[str, dict[str, int]] = {
    "Kitchen": {
        "Cabinet": 20,
        "Drawer": 13,
        "CounterTop": 3,
        "StoveBurner": 4,
        "CoffeeMachine": 1,
        "Toaster": 1,
        "GarbageCan": 1,
        "DiningTable": 1,
        "Shelf": 3,
        "SideTable": 1,
    },
    "LivingRoom": {
        "ArmChair": 2,
        "CoffeeTable": 2,
        "SideTable": 3,
        "DiningTable": 1,
        "TVStand": 1,
        "Drawer": 8,
        "Cabinet": 6,
        "Shelf": 6,
        "GarbageCan": 1,
        "Dresser": 1,
        "Ottoman": 1,
        "Safe": 1,
    },
    "Bedroom": {
        "Drawer": 10,
        "Dresser": 1,
        "Shelf": 8,
        "SideTable": 2,
        "GarbageCan": 1,
        "LaundryHamper": 1,
        "Safe": 1,
        "ArmChair": 1,
        "Cabinet": 4,
    },
    "Bathroom": {
        "Cabinet": 6,
        "Drawer": 6,
        "CounterTop": 1,
        "BathtubBasin": 1,
        "TowelHolder": 2,
        "HandTowelHolder": 2,
        "ToiletPaperHanger": 1,
        "GarbageCan": 1,
        "Shelf": 4,
        "Dresser": 1,
    },
}

#: Where lamps stand, by room (toggle targets of ``look_at_obj_in_light``).
ROOM_LAMPS: dict[str, tuple[str, ...]] = {"LivingRoom": LAMPS, "Bedroom": LAMPS}


def check_task_types(task_types: Iterable[str]) -> tuple[str, ...]:
    """Return ``task_types`` as a tuple if each is one of :data:`TASK_TYPES`, else raise a clear ValueError."""
    task_types = tuple(task_types)
    unknown = [t for t in task_types if t not in TASK_TYPES]
    if unknown:
        raise ValueError(f"unknown task types {unknown}; expected some of {', '.join(TASK_TYPES)}")
    return task_types


def holders_of(obj: str, receptacle_types: Iterable[str]) -> list[str]:
    """The receptacle types among ``receptacle_types`` that can hold ``obj``, sorted."""
    return sorted(r for r in set(receptacle_types) if obj in RECEPTACLE_HOLDS[r])


def family_objects(task_type: str, room: str) -> list[str]:
    """Object types that can be the target of ``task_type`` in ``room``."""
    objects = [o for o in ROOM_OBJECTS[room] if o not in NOT_PICKUPABLE]
    if task_type == "pick_clean_then_place_in_recep":
        objects = [o for o in objects if o in CLEANABLE]
    elif task_type == "pick_heat_then_place_in_recep":
        objects = [o for o in objects if o in HEATABLE]
    elif task_type == "pick_cool_then_place_in_recep":
        objects = [o for o in objects if o in COOLABLE]
    return sorted(set(objects))


def all_object_types() -> list[str]:
    """Every object type the generator may place, sorted."""
    return sorted({o for objects in ROOM_OBJECTS.values() for o in objects} | set(LAMPS) | set(NOT_PICKUPABLE))


def all_receptacle_types() -> list[str]:
    """Every receptacle type the generator may place, sorted."""
    return sorted(RECEPTACLE_HOLDS)
