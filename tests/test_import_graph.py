"""The project's import graph has no cycle, and the three packages are layered.

Every module of ``seed_envs``, ``seed_agent`` and ``seed_rl`` is parsed (nothing is
imported) and each import statement in it, at module level or inside a function, becomes
an edge to the project module it loads:

- ``from pkg import name`` points at ``pkg.name`` when that is a module, else at ``pkg``;
- importing ``a.b.c`` also runs the packages ``a.b`` and ``a`` first, so the edge goes to
  each of those too, except to the packages the importing module itself lives in (they are
  already being imported when it runs);
- a package's lazy re-exports (``lazy_exports(__name__, {...})``, :mod:`seed_envs.lazy`)
  are edges from the package to the modules named there;
- imports under ``if TYPE_CHECKING:`` never run: they are left out of the cycle check, and kept
  for the layering and the rooms (a type-only arrow may not run back up either).

Layering (ARCHITECTURE.md): ``seed_envs`` imports neither of the others, ``seed_agent`` never
imports ``seed_rl``. Inside ``seed_rl`` (ARCHITECTURE.md) the rooms are ordered, and a module
imports only from its own room, rooms below it, or the shared modules at the package's top
(config, rollout, progress, stats, tables), which import no room; ``algo`` loads no model code.
``train`` is in rooms of its own, ordered the same way (:data:`TRAIN_ROOMS`); the modules at its top
(the trainer, a saved run's policy) may import them all, and none of them imports those.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("seed_envs", "seed_agent", "seed_rl")
#: package -> the packages it must not import.
FORBIDDEN = {"seed_envs": ("seed_agent", "seed_rl"), "seed_agent": ("seed_rl",), "seed_rl": ()}
#: seed_rl's rooms, lowest first: each may import the rooms before it, never those after.
SEED_RL_ROOMS = ("algo", "records", "evaluate", "train", "compare", "commands")
#: seed_rl.train's rooms, lowest first; the modules at train's top come after them all.
TRAIN_ROOMS = ("learner", "setup", "phases", "stage1")


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    path: Path
    line: int

    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


def find_modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Dotted module name -> source file, for every module of ``packages`` under ``root``."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(module: str, path: Path, type_only: bool = False) -> list[tuple[tuple[str, ...], int]]:
    """What ``module`` imports, module-level and function-local (and under ``if TYPE_CHECKING:``
    with ``type_only``): for each name, the dotted names it may mean (the first that is a module
    wins) and the line."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[tuple[str, ...], int]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for branch in [*child.body, *child.orelse] if type_only else child.orelse:
                    visit_one(branch)
            else:
                visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.extend(((alias.name,), node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            origin = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                origin = ".".join([*base, *([node.module] if node.module else [])])
            found.extend(((f"{origin}.{alias.name}", origin), node.lineno) for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_exports":
            exports = node.args[1] if len(node.args) > 1 else None
            if isinstance(exports, ast.Dict):
                found.extend(
                    ((value.value,), node.lineno)
                    for value in exports.values
                    if isinstance(value, ast.Constant) and isinstance(value.value, str)
                )
        visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return found


def build_graph(modules: dict[str, Path], packages: tuple[str, ...] = PACKAGES, type_only: bool = False) -> list[Edge]:
    """Every import edge between ``modules`` of ``packages`` (see the module docstring); with
    ``type_only``, the imports under ``if TYPE_CHECKING:`` too."""

    def resolve(candidates: tuple[str, ...]) -> str | None:
        exact = next((name for name in candidates if name in modules), None)
        if exact is not None:
            return exact
        name = candidates[-1]
        while name and name not in modules:  # import a.b.c where c is a name, not a module
            name = name.rpartition(".")[0]
        return name or None

    edges = []
    for module, path in modules.items():
        for candidates, line in _imports(module, path, type_only):
            if candidates[0].split(".")[0] not in packages:
                continue
            target = resolve(candidates)
            if target is None:
                continue
            parts = target.split(".")
            for depth in range(1, len(parts) + 1):
                loaded = ".".join(parts[:depth])
                if loaded == module or module.startswith(loaded + "."):
                    continue  # a package this module is inside of
                edges.append(Edge(module, loaded, path, line))
    return edges


def find_cycles(nodes: list[str], edges: list[Edge]) -> list[list[Edge]]:
    """One cycle (as its edges) per strongly connected component with more than one module."""
    out: dict[str, dict[str, Edge]] = {}
    for edge in edges:
        out.setdefault(edge.source, {}).setdefault(edge.target, edge)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in out.get(node, {}):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in nodes:
        if node not in index:
            connect(node)
    return [_cycle_within(set(component), out) for component in components]


def _cycle_within(component: set[str], out: dict[str, dict[str, Edge]]) -> list[Edge]:
    """A shortest cycle through the first module of a strongly connected component."""
    start = min(component)
    paths: dict[str, list[Edge]] = {start: []}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt, edge in sorted(out.get(node, {}).items()):
                if nxt == start:
                    return [*paths[node], edge]
                if nxt in component and nxt not in paths:
                    paths[nxt] = [*paths[node], edge]
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"no cycle through {start} in its own component")  # cannot happen


def describe(cycle: list[Edge]) -> str:
    return "\n".join(f"  {e.source} -> {e.target}  ({e.where()})" for e in cycle)


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, Path], list[Edge]]:
    """The imports that run (for the cycle check)."""
    modules = find_modules()
    return modules, build_graph(modules)


@pytest.fixture(scope="module")
def every_import() -> tuple[dict[str, Path], list[Edge]]:
    """Every import, type-only ones included (for the layering and the rooms)."""
    modules = find_modules()
    return modules, build_graph(modules, type_only=True)


def test_the_walk_sees_every_module_and_import(every_import):
    modules, edges = every_import
    for package in PACKAGES:
        assert package in modules and f"{package}.__init__" not in modules
    sources = {edge.source for edge in edges}
    pattern = re.compile(rf"^\s*(from|import) ({'|'.join(PACKAGES)})\b", re.MULTILINE)
    importing = {name for name, path in modules.items() if pattern.search(path.read_text(encoding="utf-8"))}
    assert importing and importing <= sources, sorted(importing - sources)


def test_no_import_cycle(graph):
    modules, edges = graph
    cycles = find_cycles(sorted(modules), edges)
    assert not cycles, "import cycles:\n" + "\n\n".join(describe(c) for c in cycles)


def test_layering(every_import):
    _, edges = every_import
    wrong = [e for e in edges if e.target.split(".")[0] in FORBIDDEN[e.source.split(".")[0]]]
    assert not wrong, "imports against the layering:\n" + "\n".join(
        f"  {e.source} -> {e.target}  ({e.where()})" for e in wrong
    )


def room_rank(module: str) -> int | None:
    """A seed_rl module's room, as its place in SEED_RL_ROOMS; -1 for the shared top-level
    modules, None for the command-line entry point and modules outside seed_rl."""
    parts = module.split(".")
    if parts[0] != "seed_rl" or len(parts) == 1 or parts[1] == "cli":
        return None
    return SEED_RL_ROOMS.index(parts[1]) if parts[1] in SEED_RL_ROOMS else -1


def test_seed_rl_rooms_import_downward_only(every_import):
    modules, edges = every_import
    rooms = {name.split(".")[1] for name in modules if name.count(".") >= 2 and name.startswith("seed_rl.")}
    assert set(SEED_RL_ROOMS) <= rooms, sorted(set(SEED_RL_ROOMS) - rooms)
    upward = [
        e
        for e in edges
        if None not in (room_rank(e.source), room_rank(e.target)) and room_rank(e.target) > room_rank(e.source)
    ]
    assert not upward, "imports into a higher room:\n" + "\n".join(
        f"  {e.source} -> {e.target}  ({e.where()})" for e in upward
    )


def train_room_rank(module: str) -> int | None:
    """A seed_rl.train module's room, as its place in TRAIN_ROOMS; len(TRAIN_ROOMS) for a module at
    train's top (the trainer); None for the package itself and modules outside train."""
    parts = module.split(".")
    if parts[:2] != ["seed_rl", "train"] or len(parts) == 2:
        return None
    return TRAIN_ROOMS.index(parts[2]) if parts[2] in TRAIN_ROOMS else len(TRAIN_ROOMS)


def test_train_rooms_import_downward_only(every_import):
    modules, edges = every_import
    rooms = {name.split(".")[2] for name in modules if name.count(".") >= 3 and name.startswith("seed_rl.train.")}
    assert set(TRAIN_ROOMS) == rooms, sorted(rooms ^ set(TRAIN_ROOMS))
    upward = [
        e
        for e in edges
        if None not in (train_room_rank(e.source), train_room_rank(e.target))
        and train_room_rank(e.target) > train_room_rank(e.source)
    ]
    assert not upward, "imports into a higher room of train:\n" + "\n".join(
        f"  {e.source} -> {e.target}  ({e.where()})" for e in upward
    )


def test_algo_loads_no_model_code(graph):
    modules, _ = graph
    model_code = re.compile(r"^\s*(from|import) (seed_agent|transformers|peft|seed_rl\.train)\b", re.MULTILINE)
    algo = {name: path for name, path in modules.items() if name.startswith("seed_rl.algo")}
    assert algo and not [name for name, path in algo.items() if model_code.search(path.read_text(encoding="utf-8"))]


# --------------------------------------------------------- the checker itself
def _write(root: Path, files: dict[str, str]) -> dict[str, Path]:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return find_modules(root, ("pkg",))


def test_checker_sees_function_local_and_parent_package_cycles(tmp_path):
    modules = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "def f():\n    from pkg import b\n",
            "pkg/b.py": "from pkg.sub.c import x\n",
            "pkg/sub/__init__.py": "def g():\n    import pkg.a\n",
            "pkg/sub/c.py": "x = 1\n",
            "pkg/d.py": "if TYPE_CHECKING:\n    import pkg.e\n",
            "pkg/e.py": "import pkg.d\n",
        },
    )
    edges = build_graph(modules, ("pkg",))
    pairs = {(e.source, e.target) for e in edges}
    assert ("pkg.a", "pkg.b") in pairs  # function-local, "from pkg import <submodule>"
    assert ("pkg.b", "pkg.sub") in pairs and ("pkg.b", "pkg.sub.c") in pairs  # the package runs first
    assert ("pkg.sub.c", "pkg.sub") not in pairs and ("pkg.b", "pkg") not in pairs  # own packages: no edge
    assert ("pkg.d", "pkg.e") not in pairs  # TYPE_CHECKING only
    assert ("pkg.d", "pkg.e") in {(e.source, e.target) for e in build_graph(modules, ("pkg",), type_only=True)}
    cycles = find_cycles(sorted(modules), edges)
    assert len(cycles) == 1
    cycle = [(e.source, e.target) for e in cycles[0]]
    assert cycle == [("pkg.a", "pkg.b"), ("pkg.b", "pkg.sub"), ("pkg.sub", "pkg.a")]
    assert "pkg/a.py:2" in describe(cycles[0])


def test_checker_reads_lazy_exports(tmp_path):
    modules = _write(
        tmp_path,
        {
            "pkg/__init__.py": (
                "from pkg.lazy import lazy_exports\n"
                "__getattr__, __dir__, __all__ = lazy_exports(__name__, {'Env': 'pkg.env'})\n"
            ),
            "pkg/lazy.py": "",
            "pkg/env.py": "",
        },
    )
    pairs = {(e.source, e.target) for e in build_graph(modules, ("pkg",))}
    assert pairs == {("pkg", "pkg.lazy"), ("pkg", "pkg.env")}
