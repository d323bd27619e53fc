"""ALFWorld's own engine, with the per-game work done once.

The game runs on the upstream engine: textworld's ``PddlEnv`` (PDDL semantics by
fast-downward, text by the game's grammar) wrapped in alfworld's ``AlfredDemangler``
and ``AlfredInfos``. Nothing of the game logic is re-implemented here.

What upstream recomputes on *every* reset, and we compute once per game:

- the PDDL -> SAS translation, twice (``PddlState.__init__`` translates the problem
  plainly and once more "optimized" for the replanner). ``PddlEnv.load`` and
  ``PddlEnv.reset`` each build a ``PddlState``, and the batch env calls both on
  every reset: four translations per reset, seconds on an ALFWorld-sized game.
  We translate once per game, and make the replanner's translation only when a
  plan is first asked for (``expert=True`` or ``expert_plan()``);
- the parse of the game's grammar (``GameLogic``), a TatSu parse of the whole file;
- the engine's initial state: fast-downward's state registry keeps every state it
  has seen, so a reset only points the registry back at the initial state id
  (``set_state_id``) instead of reloading the SAS task; the Python-side facts of
  the initial state are kept and added back in upstream's order.

A :class:`GameCache` holds translations (in memory, LRU, and on disk) and parsed
grammars; any number of :class:`CachedPddlEnv` can share one. The disk copy
(:func:`default_disk_dir`) means a game is translated once per machine, not once per
process: the generator leaves each game's translation there as it checks the game, and
``seed data alfworld --precompile`` translates a downloaded release ahead of time.

One more shortcut, in :meth:`CachedPddlEnv.step`: a command that is not one of the
current state's valid commands changes nothing in upstream's engine (it answers
"Nothing happens." and recomputes the same infos from the same state), so we answer
it with the same infos without recomputing them. Tests compare both paths.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import pickle
import sys
import zlib
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from seed_envs.files import atomic_write_bytes
from seed_envs.paths import cache_dir

INSTALL_HINT = "pip install 'seed-agentic-rl[alfworld]'  (alfworld==0.4.2, textworld[pddl])"

# Importing alfworld runs ``alfworld.info``, which sets $ALFWORLD_DATA to ~/.cache/alfworld
# when it is unset. That variable is how users point us at the real release, so its value
# from before the import is put back (or the variable removed) once the import is done.
_user_alfworld_data = os.environ.get("ALFWORLD_DATA")
try:
    import fast_downward
    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
    from textworld.core import GameState
    from textworld.envs import PddlEnv
    from textworld.envs.pddl import logic as pddl_logic
    from textworld.logic import Proposition, Variable

    from seed_envs.alfworld.grammar import LogicCache
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"The ALFWorld env needs the upstream engine: {INSTALL_HINT}. ({exc})") from exc
finally:
    if _user_alfworld_data is None:
        os.environ.pop("ALFWORLD_DATA", None)
    else:
        os.environ["ALFWORLD_DATA"] = _user_alfworld_data

#: Bump when what is pickled to the disk cache changes shape.
CACHE_FORMAT = 2

#: Names the directory of the on-disk translation cache; "off" (or 0, none, empty) disables it.
DISK_CACHE_ENV = "SEED_ALFWORLD_DISK_CACHE"
_DISABLED = {"", "0", "off", "none", "false", "no"}

#: Upstream's answer to a command that is not one of the current state's valid commands.
NOTHING_HAPPENS = "Nothing happens."


def default_disk_dir() -> Path | None:
    """Where translations are kept on disk: ``$SEED_ALFWORLD_DISK_CACHE``, else
    ``<seed cache>/alfworld/translations``; None when the variable says ``off``."""
    value = os.environ.get(DISK_CACHE_ENV)
    if value is None:
        return cache_dir("alfworld", "translations")
    if value.strip().lower() in _DISABLED:
        return None
    return Path(value).expanduser()


def _digest(*parts: str) -> str:
    h = hashlib.blake2b(digest_size=20)
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


@functools.cache
def _engine_version() -> str:
    """The engine packages' versions and the cache format: part of every translation's key."""
    return f"fd-{version('fast-downward-textworld')}/tw-{version('textworld')}/c{CACHE_FORMAT}"


def translate(domain: str, problem: str, optimize: bool) -> tuple[Any, str]:
    """``fast_downward.pddl2sas``, without its side effect on ``sys.argv``."""
    argv = list(sys.argv)
    try:
        return fast_downward.pddl2sas(domain, problem, optimize=optimize)
    finally:
        sys.argv[:] = argv


@dataclass
class Translation:
    """What ``PddlState.__init__`` derives from (domain, problem) before touching the engine."""

    task: Any  # fast-downward's parsed task: actions, types, objects, init
    sas: str
    #: The optimized translation for the replanner; None until a plan is first asked for.
    sas_replan: str | None = None


@dataclass
class CompiledGame:
    """A game ready to reset from: its data, parsed grammar and translation."""

    key: str
    data: Mapping[str, Any]
    logic: Any  # textworld.envs.pddl.logic.GameLogic
    translation: Translation
    #: The key of ``translation`` in the cache (memory and disk), as :meth:`GameCache.translation` gives it.
    translation_key: str
    #: The facts of the initial state, in the order upstream adds them (filled at first start).
    initial_facts: tuple[list[Any], list[Any]] | None = None
    extras: dict[str, Any] = field(default_factory=dict)


class GameCache:
    """Translations and parsed grammars, shared by every env that uses this cache.

    ``max_games`` bounds the compiled games kept in memory (least recently used goes
    first). ``disk_dir``, when set, also keeps each translation as a compressed pickle
    keyed by a hash of (domain, problem, engine versions), so another process, or a
    later run, skips the translation too (about 60-80 KB per ALFWorld-sized game, read
    back in a few ms). The pickles are written and read by this library only; point
    ``disk_dir`` at a directory only you can write.
    """

    def __init__(self, max_games: int = 64, disk_dir: str | Path | None = None) -> None:
        self.max_games = max_games
        self.disk_dir = Path(disk_dir) if disk_dir is not None else None
        self._games: OrderedDict[str, CompiledGame] = OrderedDict()
        self.logics = LogicCache()
        self._version = _engine_version()
        self.stats: Counter = Counter()

    # --------------------------------------------------------- translation
    def _disk_path(self, key: str) -> Path | None:
        if self.disk_dir is None:
            return None
        return self.disk_dir / key[:2] / f"{key}.pkl"

    def _save(self, key: str, found: Translation) -> None:
        path = self._disk_path(key)
        if path is None:
            return
        atomic_write_bytes(path, zlib.compress(pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL), 1))

    def translation(self, domain: str, problem: str) -> tuple[str, Translation]:
        """The plain translation of (domain, problem); the replanner's comes on demand
        (:meth:`ensure_replan`), since only plans need it."""
        key = _digest(self._version, domain, problem)
        path = self._disk_path(key)
        if path is not None and path.is_file():
            try:
                found = pickle.loads(zlib.decompress(path.read_bytes()))
                if isinstance(found, Translation):
                    self.stats["disk_hits"] += 1
                    return key, found
            except Exception:  # a torn or stale file: translate again and overwrite it
                pass
        self.stats["translations"] += 1
        task, sas = translate(domain, problem, optimize=False)
        found = Translation(task=task, sas=sas)
        self._save(key, found)
        return key, found

    def ensure_replan(self, game: CompiledGame) -> str:
        """The game's optimized translation (the replanner's task), made on first need."""
        tr = game.translation
        if tr.sas_replan is None:
            self.stats["replan_translations"] += 1
            _, tr.sas_replan = translate(game.data["pddl_domain"], game.data["pddl_problem"], optimize=True)
            self._save(game.translation_key, tr)
        return tr.sas_replan

    # ---------------------------------------------------------------- game
    def compiled(self, data: Mapping[str, Any]) -> CompiledGame:
        """The compiled form of a ``game.tw-pddl`` mapping (cached by content)."""
        domain, grammar, problem = data["pddl_domain"], data["grammar"], data["pddl_problem"]
        game_key = _digest(domain, grammar, problem)
        game = self._games.get(game_key)
        if game is not None:
            self._games.move_to_end(game_key)
            self.stats["memory_hits"] += 1
            return game
        translation_key, translation = self.translation(domain, problem)
        game = CompiledGame(
            key=game_key,
            data=data,
            logic=self.logics.game_logic(domain, grammar),
            translation=translation,
            translation_key=translation_key,
        )
        self._games[game_key] = game
        while len(self._games) > self.max_games:
            self._games.popitem(last=False)
        return game

    def __len__(self) -> int:
        return len(self._games)


_DEFAULT_CACHE: GameCache | None = None


def default_game_cache() -> GameCache:
    """The process-wide cache, on disk at :func:`default_disk_dir` (read when first built)."""
    global _DEFAULT_CACHE
    if _DEFAULT_CACHE is None:
        _DEFAULT_CACHE = GameCache(disk_dir=default_disk_dir())
    return _DEFAULT_CACHE


# --------------------------------------------------------------------- state
def _initial_facts(lib: Any, game: CompiledGame) -> tuple[list[Any], list[Any]]:
    """The facts ``PddlState.__init__`` adds, in its order: the problem's init (minus
    equalities, costs and distances), then the engine's initial state. ``lib`` must
    hold the game's SAS task at its initial state."""
    tr = game.translation
    name2type = {o.name: o.type_name for o in tr.task.objects}
    init = []
    for atom in tr.task.init:
        if isinstance(atom, fast_downward.translate.pddl.conditions.Atom):
            if atom.predicate != "=":
                init.append(Proposition(atom.predicate, [Variable(a, name2type[a]) for a in atom.args]))
        elif isinstance(atom, fast_downward.translate.pddl.f_expression.Assign):
            name = f"{atom.expression.value}"
            if atom.fluent.symbol != "total-cost" and not name.isdigit():
                init.append(Proposition(name, [Variable(a, name2type[a]) for a in atom.fluent.args]))
    atoms = (pddl_logic.Atom * lib.get_state_size())()
    lib.get_state(atoms)
    engine_facts = [f for f in (a.get_fact(name2type) for a in atoms) if not f.is_negation]
    return init, engine_facts


def _fresh_pddl_state(lib: Any, game: CompiledGame) -> Any:
    """A ``PddlState`` of ``game``'s initial state, built as ``PddlState.__init__`` builds it
    (same attributes, facts added in the same order, so its fact sets iterate in the same
    order) but from the cached translation. ``lib`` must hold the game's initial state."""
    tr = game.translation
    state = pddl_logic.PddlState.__new__(pddl_logic.PddlState)
    state._facts = defaultdict(set)
    state._vars_by_name = {}
    state._vars_by_type = defaultdict(set)
    state._var_counts = Counter()
    state._logic = game.logic
    state.downward_lib = lib
    state.pddl_problem = game.data["pddl_problem"]
    state.task, state.sas, state.sas_replan = tr.task, tr.sas, tr.sas_replan
    state._actions = {a.name: a for a in tr.task.actions}
    if game.initial_facts is None:
        for type_ in tr.task.types:
            with contextlib.suppress(ValueError):  # already known to this (shared) logic
                game.logic.types.add(textworld.logic.Type(type_.name, type_.supertype_names))
        game.initial_facts = _initial_facts(lib, game)
    state.name2type = {o.name: o.type_name for o in tr.task.objects}
    init, engine_facts = game.initial_facts
    state.add_facts(init)
    state.add_facts(engine_facts)
    return state


class CachedPddlEnv(PddlEnv):
    """``textworld.envs.PddlEnv`` that loads and resets from a :class:`GameCache`.

    ``load``/``reset`` give the same game states as upstream's; ``step`` is upstream's,
    except that an invalid command is answered without recomputing unchanged infos.
    """

    def __init__(self, infos: textworld.EnvInfos | None = None, cache: GameCache | None = None) -> None:
        super().__init__(infos)
        self.cache = cache if cache is not None else default_game_cache()
        self._game: CompiledGame | None = None
        self._lib_game_key: str | None = None
        self._lib_initial_id: int | None = None
        self._lib_has_replan = False
        self._valid_command_set: frozenset[str] = frozenset()
        self._gathered_keys: tuple[str, ...] = ()
        self._names_key: tuple | None = None

    # ------------------------------------------------------------- engine
    def _initial_state(self) -> Any:
        game = self._game
        assert game is not None
        lib = self.downward_lib
        if self._lib_game_key == game.key:
            lib.set_state_id(self._lib_initial_id)
        else:
            lib.load_sas(game.translation.sas.encode("utf-8"))
            self._lib_game_key = game.key
            self._lib_initial_id = lib.get_state_id()
            self._lib_has_replan = False
        return _fresh_pddl_state(lib, game)

    # -------------------------------------------------------- textworld API
    def load(self, filename_or_data: str | Mapping[str, Any]) -> None:
        if isinstance(filename_or_data, (str, os.PathLike)):
            with open(filename_or_data) as f:
                data = json.load(f)
            self._game_file = str(filename_or_data)
        else:
            data = filename_or_data
            self._game_file = None
        self._game_data = data
        self.walkthrough = data.get("walkthrough", None)
        self._game = self.cache.compiled(data)
        self._logic = self._game.logic
        self._pddl_state = self._initial_state()
        self._entity_infos = self._get_entity_infos()
        self._names_key = None

    def reset(self) -> GameState:
        # Upstream's reset, with the state taken from the cache instead of a new translation.
        self._pddl_state = self._initial_state()
        self.prev_state = None
        self.state = GameState()
        self._last_action = None
        self._moves = 0
        context = {
            "state": self._pddl_state,
            "facts": list(self._pddl_state.facts),
            "variables": {},
            "mapping": {},
            "entity_infos": self._entity_infos,
        }
        self.state.feedback = self._logic.grammar.derive("#intro#", context)
        self.state.raw = self.state.feedback
        self._gather_infos()
        if "walkthrough" in self.request_infos.extras:
            self.state["extra.walkthrough"] = self.walkthrough or self._pddl_state.replan(self._entity_infos)
        return self.state

    def _gather_infos(self) -> None:
        before = set(self.state)
        wants_plan = self.request_infos.policy_commands
        self.request_infos.policy_commands = False
        try:
            super()._gather_infos()
        finally:
            self.request_infos.policy_commands = wants_plan
        if wants_plan:
            self.state["policy_commands"] = self.replan()
        self._gathered_keys = tuple(k for k in self.state if k not in before)
        self._valid_command_set = frozenset(self.state["_valid_commands"])

    def step(self, command: str) -> tuple[GameState, float, bool]:
        command = command.strip()
        if command in self._valid_command_set:
            return super().step(command)
        # Upstream: the command matches no valid action, so "Nothing happens.", the engine's
        # state is untouched and _gather_infos recomputes the same values from it.
        prev = self.prev_state = self.state
        state = GameState()
        state.last_command = command
        self._last_action = None
        state.feedback = NOTHING_HAPPENS
        state.raw = state.feedback
        for key in self._gathered_keys:
            value = prev[key]
            state[key] = list(value) if isinstance(value, list) else (dict(value) if isinstance(value, dict) else value)
        state["last_action"] = None
        state["_last_action"] = None
        if "walkthrough" in self.request_infos.extras:
            state["extra.walkthrough"] = prev["extra.walkthrough"]
        state["score"] = 1 if state["won"] else 0
        state["done"] = state["won"] or state["lost"]
        self.state = state
        return state, state["score"], state["done"]

    def templated(self, operators: list[str]) -> list[str]:
        """Commands for a plan given as operator names (upstream's ``plan_to_templated_actions``)."""
        return self._pddl_state.plan_to_templated_actions(operators, self._entity_infos)

    def replan(self) -> list[str]:
        """The planner's plan from the current state (upstream's ``policy_commands``).

        The plan depends only on the state and the entity names, so it is kept per
        (game, facts, names): revisiting a state, in this episode or another one of
        the same game, costs no new search.
        """
        game = self._game
        assert game is not None
        if self._names_key is None:
            self._names_key = tuple(sorted((k, str(v.name)) for k, v in self._entity_infos.items()))
        plans = game.extras.setdefault("plans", {})
        key = (frozenset(self._pddl_state.facts), self._names_key)
        plan = plans.get(key)
        if plan is None:
            if not self._lib_has_replan:
                sas_replan = self.cache.ensure_replan(game)
                self.downward_lib.load_sas_replan(sas_replan.encode("utf-8"))
                self._lib_has_replan = True
            self._pddl_state.sas_replan = game.translation.sas_replan
            plan = self._pddl_state.replan(self._entity_infos)
            if len(plans) >= 4096:
                plans.clear()
            plans[key] = plan
        return list(plan)


_SOLVER_LIB: Any = None


def solve_problem(domain: str, problem: str) -> list[str] | None:
    """fast-downward's plan for a PDDL problem, as operator names, or None if it finds none.

    Same search as upstream's ``replan`` (the library's lazy search), on a library
    copy of its own so that no playing env's engine state is touched.
    """
    global _SOLVER_LIB
    if _SOLVER_LIB is None:
        _SOLVER_LIB = fast_downward.load_lib()
    _, sas = translate(domain, problem, optimize=True)
    if not _SOLVER_LIB.solve_sas(sas.encode("utf-8"), False):
        return None
    operators = (fast_downward.Operator * _SOLVER_LIB.get_last_plan_length())()
    _SOLVER_LIB.get_last_plan(operators)
    return [op.name for op in operators]


def request_infos(expert: bool = False, facts: bool = False) -> textworld.EnvInfos:
    """The infos our env asks of the engine; ``expert`` adds the planner's ``policy_commands``."""
    return textworld.EnvInfos(
        won=True,
        admissible_commands=True,
        facts=facts,
        policy_commands=expert,
        extras=["gamefile"],
    )


def make_game_env(infos: textworld.EnvInfos | None = None, cache: GameCache | None = None, cached: bool = True) -> Any:
    """The engine as alfworld plays it: ``AlfredInfos(AlfredDemangler(env, shuffle=False))``.

    ``cached=False`` gives upstream's plain ``PddlEnv`` (for comparisons).
    """
    infos = infos or request_infos()
    base = CachedPddlEnv(infos, cache=cache) if cached else PddlEnv(infos)
    return AlfredInfos(AlfredDemangler(base, shuffle=False))


def close_game_env(env: Any) -> None:
    """Free the engine state an env's fast-downward library copy holds.

    The library copy itself stays mapped, as upstream leaves it: unloading one
    (``fast_downward.close_lib``) and then loading another crashes the process.
    """
    base = env.unwrapped if hasattr(env, "unwrapped") else env
    lib = getattr(base, "downward_lib", None)
    if lib is not None:
        lib.cleanup()
        base.downward_lib = None
