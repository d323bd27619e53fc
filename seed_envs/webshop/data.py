"""Loading WebShop data in the benchmark's own file formats.

A data directory holds:

- ``items_shuffle.json`` (full catalog) or ``items_shuffle_1000.json``: the products;
- ``items_ins_v2.json`` or ``items_ins_v2_1000.json``: ASIN -> ``attributes`` (and, for
  products with a synthetic instruction, ``instruction`` and ``instruction_attributes``);
- ``items_human_ins.json`` (optional): ASIN -> list of human instructions;
- ``catalog_meta.json`` (only in generated catalogs): which product types and attribute
  combinations are held out for ``valid_unseen``.

The directory is ``data_dir=``, else ``$WEBSHOP_DATA``, else the generated default catalog
(see :mod:`seed_envs.webshop.generate`). The full files win over the 1,000-product ones when
both are present. ``load_data`` reproduces the benchmark's goal list exactly: with ``seed=s``
it makes the same random draws as the benchmark does after ``random.seed(s)`` (range prices
in catalog order, then goal price bounds), then the seed-233 shuffle.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seed_envs.core import MissingDataError
from seed_envs.webshop.generate import default_catalog_dir
from seed_envs.webshop.goals import build_goals
from seed_envs.webshop.products import attribute_index, draw_prices, process_products

DATA_ENV = "WEBSHOP_DATA"
PRODUCT_FILES = ("items_shuffle.json", "items_shuffle_1000.json")
ATTRIBUTE_FILES = ("items_ins_v2.json", "items_ins_v2_1000.json")
HUMAN_FILE = "items_human_ins.json"
META_FILE = "catalog_meta.json"
DATA_COMMAND = "seed data webshop"
TEST_GOALS = 500  # goals [0, 500) are the benchmark's test set


@dataclass
class WebShopData:
    """A loaded catalog: products, prices and the goal list, shared read-only by envs."""

    data_dir: Path
    products: list[dict[str, Any]]
    product_by_asin: dict[str, dict[str, Any]]
    prices: dict[str, float]
    goals: list[dict[str, Any]]
    human_goals: bool
    seed: int
    meta: dict[str, Any] = field(default_factory=dict)
    _attribute_to_asins: dict[str, set[str]] | None = field(default=None, repr=False)

    @property
    def attribute_to_asins(self) -> dict[str, set[str]]:
        if self._attribute_to_asins is None:
            self._attribute_to_asins = attribute_index(self.products)
        return self._attribute_to_asins


def _first_existing(directory: Path, names: tuple[str, ...]) -> Path | None:
    return next((directory / name for name in names if (directory / name).is_file()), None)


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """``data_dir``, else ``$WEBSHOP_DATA``, else the generated default catalog (made on first use)."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser()
    return default_catalog_dir()


def data_files(
    data_dir: Path,
    products_file: str | os.PathLike[str] | None = None,
    attributes_file: str | os.PathLike[str] | None = None,
) -> tuple[Path, Path]:
    """The products and attribute files to read, or a :class:`~seed_envs.core.MissingDataError`."""
    products = Path(products_file) if products_file else _first_existing(data_dir, PRODUCT_FILES)
    attributes = Path(attributes_file) if attributes_file else _first_existing(data_dir, ATTRIBUTE_FILES)
    for path, names, what in (
        (products, PRODUCT_FILES, "WebShop products file"),
        (attributes, ATTRIBUTE_FILES, "WebShop attributes file"),
    ):
        if path is None or not path.is_file():
            raise MissingDataError(
                path if path is not None else data_dir / names[0],
                data_command(data_dir),
                what=what if path is not None else f"{what} ({' or '.join(names)})",
                hint=f"or `{data_command(data_dir)} --generate` for an offline catalog, "
                f"or point {DATA_ENV} / data_dir= at a directory that has the files",
            )
    return products, attributes  # type: ignore[return-value]


def data_command(data_dir: Path) -> str:
    """The ``seed data webshop`` command that downloads the benchmark files into ``data_dir``."""
    return f"{DATA_COMMAND} --dir {shlex.quote(str(data_dir))}"


def _read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def load_data(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    seed: int = 0,
    human_goals: bool = False,
    num_products: int | None = None,
    products_file: str | os.PathLike[str] | None = None,
    attributes_file: str | os.PathLike[str] | None = None,
    human_file: str | os.PathLike[str] | None = None,
) -> WebShopData:
    """Load a catalog and build its goal list exactly as the benchmark does.

    ``num_products`` keeps the first N product records (as the benchmark's ``num_products``).
    ``human_goals`` selects human instructions (``items_human_ins.json`` must exist) instead
    of the synthetic ones. ``products_file``/``attributes_file``/``human_file`` override the
    files found in the directory.
    """
    directory = resolve_data_dir(data_dir)
    products_path, attributes_path = data_files(directory, products_file, attributes_file)
    human_path = Path(human_file) if human_file else directory / HUMAN_FILE
    human_instructions: Mapping[str, Any] | None = None
    if human_goals:
        if not human_path.is_file():
            raise MissingDataError(
                human_path, data_command(directory), what="WebShop human instructions", hint="or use human_goals=False"
            )
        human_instructions = _read_json(human_path)

    records = _read_json(products_path)
    if num_products is not None:
        records = records[:num_products]
    attributes = _read_json(attributes_path)
    products = process_products(records, attributes, human_instructions, human_goals)
    del attributes, records

    rng = random.Random(seed)  # the benchmark's global-random draws, in the same order
    prices = draw_prices(products, rng)
    goals = build_goals(products, prices, rng, human=human_goals)
    for product in products:
        product["price"] = prices[product["asin"]]
    meta_path = directory / META_FILE
    meta = _read_json(meta_path) if meta_path.is_file() else {}
    return WebShopData(
        data_dir=directory,
        products=products,
        product_by_asin={p["asin"]: p for p in products},
        prices=prices,
        goals=goals,
        human_goals=human_goals,
        seed=seed,
        meta=meta,
    )


_SHARED: dict[tuple, WebShopData] = {}
_SHARED_LOCK = threading.Lock()


def shared_data(data_dir: str | os.PathLike[str] | None = None, **options: Any) -> WebShopData:
    """:func:`load_data`, loaded once per process for each set of arguments and then shared."""
    directory = resolve_data_dir(data_dir).resolve()
    key = (str(directory), tuple(sorted((k, str(v)) for k, v in options.items())))
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = load_data(directory, **options)
        return _SHARED[key]
