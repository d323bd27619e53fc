"""The docs cite files, and names in files, that exist.

Read: ARCHITECTURE.md, README.md, seed_rl/README.md, seed_agent/README.md and every README.md under
seed_envs/. The rules, kept simple on purpose:

- Only inline code spans count (one backticked span on one line); fenced code blocks (commands,
  examples, configs) are left out.
- **A path** is a span made of letters, digits and ``_ . - /`` only that contains a ``/`` or ends in
  ``.py``, ``.sh``, ``.md`` or ``.toml``: ``seed_rl/train/trainer.py``, ``train/learner/learner.py``,
  ``algo/``, ``scripts/bench_train.py``, ``config.py``. Spans with any other character are
  templates, globs, commands or URLs (``seed_agent/prompts/<env>.py``, ``items_shuffle*.json``,
  ``~/.cache/seed``, ``https://...``) and are not checked.
- **Not repo paths**, skipped: a path that starts with ``/`` (an HTTP route such as ``/reset``), and
  one whose first part is in :data:`NOT_REPO_PATHS` (a run's outputs such as ``runs/...``,
  ``checkpoints/`` and ``audit.md``, env ids ``seed/...``, data set names, other projects' files).
- A path **resolves** against the doc's folder, its package's folder (the doc's top-level folder)
  or the repository root; failing those, it may name the last parts of a file or folder in the
  doc's package (the whole repository for a doc at the top), as tables do (``advantages.py`` in the
  ``algo/`` row).
- **A name** is cited when a path ending in ``.py`` is followed by a span holding a dotted name
  (an argument list after it is ignored), with only spaces or an opening parenthesis between:
  "`seed_rl/train/trainer.py` `Trainer.rollout`", "`seed_envs/vector/env.py` (`SeedVectorEnv`)".
  The name must be defined in a file the path resolves to (read with ``ast``, nothing imported):
  a top-level ``def``, ``class`` or assignment, and for ``Class.method`` a ``def`` or assignment
  in that class's body (one level per dot).
"""

from __future__ import annotations

import ast
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: First parts of paths that are not in the repository: a run's outputs, env ids (``seed/...``),
#: Hugging Face data sets, and files of other projects (Search-R1's).
NOT_REPO_PATHS = frozenset(
    {"runs", "checkpoints", "stage1", "audit.md", "comparison.md"}
    | {"seed", "PeterJinGo", "RUC-NLPIR", "qa_search_test_merge.py"}
)
PATH_SUFFIXES = (".py", ".sh", ".md", ".toml")
#: Folders never searched for a path's last parts.
SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules"})

FENCE = re.compile(r"^\s*```.*?^\s*```", re.DOTALL | re.MULTILINE)
SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
PATH = re.compile(r"[\w./-]+")
NAME = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:\(.*\))?")
BETWEEN_PATH_AND_NAME = re.compile(r"\s*\(?\s*")


@dataclass(frozen=True)
class Span:
    text: str
    line: int
    start: int
    end: int


def doc_files(root: Path = ROOT) -> list[Path]:
    """The docs this test reads."""
    fixed = [root / "ARCHITECTURE.md", root / "README.md", root / "seed_rl/README.md", root / "seed_agent/README.md"]
    return [*fixed, *sorted((root / "seed_envs").rglob("README.md"))]


def blank_fences(text: str) -> str:
    """``text`` with each fenced code block replaced by as many empty lines."""
    return FENCE.sub(lambda match: "\n" * match.group(0).count("\n"), text)


def code_spans(text: str) -> list[Span]:
    """Inline code spans of a text whose fenced blocks are blanked."""
    return [Span(m.group(1), text.count("\n", 0, m.start()) + 1, m.start(), m.end()) for m in SPAN.finditer(text)]


def is_repo_path(span: str) -> bool:
    """Whether a span is a path to check (see the module docstring)."""
    if not PATH.fullmatch(span) or span.startswith(("-", "/")):
        return False
    if "/" not in span and not span.endswith(PATH_SUFFIXES):
        return False
    return span.split("/")[0] not in NOT_REPO_PATHS


@functools.cache
def tree(folder: Path) -> frozenset[str]:
    """Every file and folder under ``folder``, as POSIX paths relative to it (hidden folders,
    caches and ``*.egg-info`` left out)."""
    found = set()
    for here, folders, files in os.walk(folder):
        folders[:] = [
            f for f in folders if not f.startswith(".") and f not in SKIPPED_FOLDERS and not f.endswith(".egg-info")
        ]
        relative = Path(here).relative_to(folder)
        found.update((relative / name).as_posix() for name in [*folders, *files])
    return frozenset(found)


def resolve(doc: Path, cited: str, root: Path = ROOT) -> list[Path]:
    """The files or folders a cited path may mean; empty when none exists."""
    package = root / doc.relative_to(root).parts[0] if doc.parent != root else root
    bases = dict.fromkeys([doc.parent, package, root])
    direct = [base / cited for base in bases if (base / cited).exists()]
    if direct:
        return direct[:1]
    tail = cited.rstrip("/")
    return [package / path for path in sorted(tree(package)) if path == tail or path.endswith("/" + tail)]


def defined_names(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """The names a module or class body defines: functions, classes and assignments."""
    names: dict[str, ast.stmt] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            names.update((t.id, node) for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
    return names


def defines(path: Path, dotted: str) -> bool:
    """Whether ``path`` defines ``dotted`` (``Name`` or ``Class.method``)."""
    body = ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body
    for part in dotted.split("."):
        node = defined_names(body).get(part)
        if node is None:
            return False
        body = node.body if isinstance(node, ast.ClassDef) else []
    return True


def broken_citations(doc: Path, root: Path = ROOT) -> list[str]:
    """``doc:line: why`` for every cited path that does not exist and every cited name not
    defined in its file."""
    text = blank_fences(doc.read_text(encoding="utf-8"))
    spans = code_spans(text)
    where = doc.relative_to(root).as_posix()
    broken = []
    for span, following in zip(spans, [*spans[1:], None], strict=True):
        if not is_repo_path(span.text):
            continue
        targets = resolve(doc, span.text, root)
        if not targets:
            broken.append(f"{where}:{span.line}: `{span.text}` does not exist")
            continue
        if following is None or not span.text.endswith(".py"):
            continue
        name = NAME.fullmatch(following.text)
        if name is None or not BETWEEN_PATH_AND_NAME.fullmatch(text[span.end : following.start]):
            continue
        if not any(defines(target, name.group(1)) for target in targets if target.is_file()):
            broken.append(f"{where}:{span.line}: `{name.group(1)}` is not defined in `{span.text}`")
    return broken


@pytest.mark.parametrize("doc", doc_files(), ids=lambda doc: doc.relative_to(ROOT).as_posix())
def test_cited_paths_and_names_exist(doc: Path) -> None:
    assert doc.is_file()
    broken = broken_citations(doc)
    assert not broken, "citations of files or names that do not exist:\n" + "\n".join(broken)


def test_the_checker_finds_missing_files_names_and_methods(tmp_path: Path) -> None:
    (tmp_path / "pkg/train").mkdir(parents=True)
    (tmp_path / "pkg/train/trainer.py").write_text("class Trainer:\n    def rollout(self): ...\n\nLIMIT = 3\n")
    doc = tmp_path / "pkg/README.md"
    doc.write_text(
        "`train/trainer.py` `Trainer.rollout`, `pkg/train/trainer.py` (`LIMIT`), `trainer.py` `Trainer`\n"
        "`train/trainer.py` `Trainer.update`, `train/gone.py`, `trainer.py` `missing(x)`\n"
        "skipped: `runs/a/metrics.jsonl`, `pkg/<env>.py`, `config.yaml`, `~/.cache/seed`, `/reset`\n"
        "```\npython pkg/not_here.py\n```\n"
    )
    assert broken_citations(doc, tmp_path) == [
        "pkg/README.md:2: `Trainer.update` is not defined in `train/trainer.py`",
        "pkg/README.md:2: `train/gone.py` does not exist",
        "pkg/README.md:2: `missing` is not defined in `trainer.py`",
    ]
