"""Lazy re-exports for the env packages, so that ``import seed_envs.<env>`` stays light.

An env package's ``__init__`` names what it offers and the module each name lives in::

    __getattr__, __dir__, __all__ = lazy_exports(__name__, {"SokobanEnv": "seed_envs.sokoban.env"})

``seed_envs.sokoban.SokobanEnv`` then imports ``seed_envs.sokoban.env`` on first access
(PEP 562), and the import graph test reads the same mapping as import edges.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package``, exporting ``name -> module``."""
    for name, module in exports.items():
        if not module.startswith(package + "."):
            raise ValueError(f"{package}.{name} must come from a module of {package}, not {module!r}")
    names = sorted(exports)

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(sys.modules[package], name, value)  # later accesses skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*names, *vars(sys.modules[package])})

    return __getattr__, __dir__, names
