"""The walk of one training batch from ``optimize`` down to ``seed_loss`` and back, counted.

Two steps, so that one tree's trace can be counted with the other tree's code:

    PYTHONPATH=. python docs/walks/walk_optimize.py trace CONFIG OUT.json [KEY=VALUE ...]
    python docs/walks/walk_optimize.py stays OUT.json [--scope all|seed_rl] [--properties]

``trace`` (run from the root of the tree to walk, with that tree first on ``PYTHONPATH``) builds a
Trainer on CONFIG with the tiny random model and ``algo=seed analyzer=scripted`` (every episode gets
a skill, so the OPD term and the teacher's log-probs are on the path), plays one rollout (2 tasks x 4),
makes the rows (``train_rows``), then runs ``optimize`` under ``sys.setprofile`` and records every
call into our packages (``seed_rl``, ``seed_agent``, ``seed_envs``) as one call tree, a call site
met again (the next micro-batch, mini-batch or loop iteration) adding only calls it had not made.

``stays`` walks that tree as a reader steps through it: each function is read once (a function
met again, from a loop or another caller, is not stepped into again), inline code (comprehensions,
lambdas, generator expressions) is part of the function that holds it, and properties are read as
attributes unless ``--properties``. A stay is one contiguous visit to one file; a return is a stay
in a file already left before (so returns = stays - distinct files). ``--scope seed_rl`` treats the
policy's calls (``seed_agent``) as black boxes, not entered.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
from pathlib import Path


def trace(config: str, out: str, overrides: list[str]) -> None:
    root = Path.cwd().resolve()
    packages = tuple(f"{root / p}/" for p in ("seed_rl", "seed_agent", "seed_envs"))
    from seed_rl.config import load_config
    from seed_rl.train.trainer import Trainer

    try:  # the tree after issue 49's rooms
        from seed_rl.train.phases.phase_timer import PhaseTimer
        from seed_rl.train.phases.train_rows import train_rows
        from seed_rl.train.phases.update import optimize
        from seed_rl.train.phases.update_batch import advantage_batch
    except ImportError:  # before
        from seed_rl.train.phase_timer import PhaseTimer
        from seed_rl.train.train_rows import train_rows
        from seed_rl.train.update import optimize
        from seed_rl.train.update_batch import advantage_batch

    run_dir = Path(tempfile.mkdtemp()) / "walk"
    settings = ["model=tiny-random", "algo=seed", "analyzer=scripted", "sft=false", "progress=false"]
    shape = ["tasks_per_update=2", "group_size=4", "max_steps=3", "threads=2", "max_new_tokens=8"]
    trainer = Trainer(load_config(config, [*settings, *shape, f"run_dir={run_dir}", *overrides]))
    batch = advantage_batch(trainer.rollout(0)[0], trainer.cfg)
    batch.skills, batch.skill_report = trainer.analyze(batch, 0)
    rows = train_rows(trainer.learner, batch, trainer.losses, trainer.row_passes, PhaseTimer(trainer.policy.device))

    tree: dict = {"file": None, "func": "<driver>", "children": [], "index": {}}
    nodes, frames = [tree], [None]

    def profile(frame, event, arg):
        code = frame.f_code
        if not code.co_filename.startswith(packages):
            return
        if event == "call":
            parent, caller = nodes[-1], frames[-1]
            key = (caller.f_lineno if caller is not None else 0, code)
            node = parent["index"].get(key)
            if node is None:
                file = str(Path(code.co_filename).relative_to(root))
                node = {"file": file, "func": code.co_qualname, "children": [], "index": {}}
                parent["index"][key] = node
                parent["children"].append(node)
            nodes.append(node)
            frames.append(frame)
        elif event == "return" and frames[-1] is frame:
            nodes.pop()
            frames.pop()

    sys.setprofile(profile)
    optimize(trainer.learner, rows, trainer.losses, minibatches=trainer.cfg.minibatches)
    sys.setprofile(None)
    trainer.close()

    def is_property(file: str, func: str) -> bool:
        parts = func.split(".")
        if len(parts) != 2 or "<" in func:
            return False
        cls = getattr(importlib.import_module(file[:-3].replace("/", ".")), parts[0], None)
        return isinstance(cls, type) and any(isinstance(k.__dict__.get(parts[1]), property) for k in cls.__mro__)

    def plain(node: dict) -> dict:
        kids = [plain(c) for c in node["children"]]
        return {
            "file": node["file"],
            "func": node["func"],
            "property": is_property(node["file"], node["func"]),
            "children": kids,
        }

    summary = {
        "rows": len(rows),
        "skill_rows": sum(r.skill_logp is not None for r in rows),
        "minibatches": trainer.cfg.minibatches,
    }
    Path(out).write_text(json.dumps({**summary, "optimize": plain(tree["children"][0])}), encoding="utf-8")
    print(f"{summary}: wrote {out}")


def read_once(node: dict, properties: bool, seen: set | None = None) -> dict:
    """The tree as read: each function once, inline code part of its function, properties as attributes."""
    seen = set() if seen is None else seen
    seen.add((node["file"], node["func"]))
    kids: list[dict] = []

    def hoist(n: dict) -> None:
        for child in n["children"]:
            inline = "<" in child["func"].rsplit(".", 1)[-1] and child["file"] == n["file"]
            if inline or (child["property"] and not properties):
                hoist(child)  # its calls are made from here
            else:
                kids.append(child)

    hoist(node)
    out = {**node, "children": []}
    for child in kids:
        if (child["file"], child["func"]) not in seen:
            out["children"].append(read_once(child, properties, seen))
    return out


def stays(node: dict, scope: str) -> list[tuple[str, list[str]]]:
    """Depth first: in node's file, into each child's walk, back in node's file."""
    inside = (lambda n: True) if scope == "all" else (lambda n: n["file"].startswith("seed_rl/"))
    sequence: list[tuple[str, str]] = []

    def visit(n: dict) -> None:
        sequence.append((n["file"], n["func"]))
        for child in n["children"]:
            if inside(child):
                visit(child)
                sequence.append((n["file"], n["func"]))

    visit(node)
    out: list[tuple[str, list[str]]] = []
    for file, func in sequence:
        if out and out[-1][0] == file:
            if func not in out[-1][1]:
                out[-1][1].append(func)
        else:
            out.append((file, [func]))
    return out


def report(walk: list[tuple[str, list[str]]]) -> dict:
    files = list(dict.fromkeys(f for f, _ in walk))
    return {
        "stays": len(walk),
        "files": len(files),
        "returns": len(walk) - len(files),
        "entries": {f: sum(1 for g, _ in walk if g == f) for f in files},
        "walk": [f"{f}: {', '.join(funcs)}" for f, funcs in walk],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("trace")
    t.add_argument("config")
    t.add_argument("out")
    t.add_argument("overrides", nargs="*")
    s = sub.add_parser("stays")
    s.add_argument("trace")
    s.add_argument("--scope", choices=("all", "seed_rl"), default="all")
    s.add_argument("--properties", action="store_true", help="step into properties too")
    args = parser.parse_args()
    if args.command == "trace":
        trace(args.config, args.out, args.overrides)
        return
    tree = json.loads(Path(args.trace).read_text(encoding="utf-8"))["optimize"]
    result = report(stays(read_once(tree, args.properties), args.scope))
    print(f"{result['stays']} stays in {result['files']} files, {result['returns']} returns")
    print(f"entries: {result['entries']}")
    for i, line in enumerate(result["walk"], 1):
        print(f"{i}. {line}")


if __name__ == "__main__":
    main()
