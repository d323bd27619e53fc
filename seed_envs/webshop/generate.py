"""A procedural WebShop catalog, written in the benchmark's own file formats.

``generate_catalog(out_dir, num_products, seed)`` writes

- ``items_shuffle.json``: products (``asin``, ``name``, ``category``, ``query``,
  ``product_category``, ``pricing`` as ``"$x"`` or ``"$x - $y"``, ``customization_options``,
  ``full_description``, ``small_description``, ``images``);
- ``items_ins_v2.json``: ASIN -> ``attributes`` and, for about 40% of products,
  ``instruction`` and ``instruction_attributes``;
- ``items_human_ins.json``: differently phrased instructions with option values, so that
  ``human_goals=True`` works offline too;
- ``catalog_meta.json``: what is held out for ``valid_unseen``.

Held out by construction: about one product type in five (chosen by a hash of its name, so the
choice does not depend on the seed or the catalog size), and, within the other types, about
one (type, attribute) pair in seven. Products of a held-out type, or whose instruction uses a
held-out pair, are listed in ``unseen_asins``: their goals form ``valid_unseen`` and are never
in ``train`` or ``valid_seen``. Everything is drawn from ``random.Random(seed)``; generation
streams products to disk, so 100k products need about 100 MB of memory.
"""

from __future__ import annotations

import json
import os
import random
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from seed_envs.core import stable_bucket
from seed_envs.files import staged_dir
from seed_envs.paths import cache_dir
from seed_envs.webshop.catalog_vocab import BRANDS, PRODUCT_TYPES, STYLE_WORDS

GENERATOR_VERSION = 1
DEFAULT_NUM_PRODUCTS = 2_000
DEFAULT_SEED = 0
INSTRUCTION_SHARE = 0.4
_ASIN_CHARS = string.ascii_uppercase + string.digits


def held_out_type(noun: str) -> bool:
    """Whether a product type belongs to ``valid_unseen`` only."""
    return stable_bucket(("webshop-type", noun), 5) == 0


def held_out_pair(noun: str, attribute: str) -> bool:
    """Whether a (product type, attribute) combination belongs to ``valid_unseen`` only."""
    return stable_bucket(("webshop-pair", noun, attribute), 7) == 0


def _types() -> list[tuple[str, str, str, str, dict[str, tuple[str, ...]], tuple[str, ...]]]:
    return [(category, *entry) for category, entries in PRODUCT_TYPES.items() for entry in entries]


def _price(rng: random.Random) -> str:
    low = round(rng.lognormvariate(3.3, 0.8), 2)
    if rng.random() < 0.75:
        return f"${low:.2f}"
    return f"${low:.2f} - ${low + round(rng.uniform(2, 40), 2):.2f}"


def _product(rng: random.Random, asin: str, kind: tuple) -> tuple[dict[str, Any], list[str]]:
    category, noun, query, path, option_schema, pool = kind
    attributes = rng.sample(pool, rng.randint(1, min(4, len(pool))))
    brand, style = rng.choice(BRANDS), rng.choice(STYLE_WORDS)
    feature = attributes[0].title()
    name = f"{brand} {style} {noun.title()} - {feature}"
    if len(attributes) > 1 and rng.random() < 0.5:
        name += f", {attributes[1].title()}"
    options = {}
    for option_name, values in option_schema.items():
        if rng.random() < 0.85:
            chosen = rng.sample(values, rng.randint(1, min(4, len(values))))
            options[option_name.title()] = [
                {
                    "value": value.title() if rng.random() < 0.5 else value,
                    "image": f"{asin}-{option_name}-{i}.jpg",
                }
                for i, value in enumerate(chosen)
            ]
    description = (
        f"The {brand} {noun} is made for everyday use. It is {', '.join(attributes)}. "
        f"Designed by {brand}, it comes with a one-year warranty."
    )
    bullets = [f"{a.upper() if i == 0 else a.capitalize()}: a {noun} that is {a}." for i, a in enumerate(attributes)]
    record = {
        "asin": asin,
        "name": name,
        "category": category,
        "query": query,
        "product_category": path,
        "pricing": _price(rng),
        "customization_options": options or None,
        "full_description": description,
        "small_description": bullets,
        "images": [f"{asin}.jpg"],
        "brand": brand,
    }
    return record, attributes


def _asins(rng: random.Random) -> Iterator[str]:
    seen: set[str] = set()
    while True:
        asin = "B0" + "".join(rng.choices(_ASIN_CHARS, k=8))
        if asin not in seen:
            seen.add(asin)
            yield asin


def generate_catalog(
    out_dir: str | os.PathLike[str], num_products: int = DEFAULT_NUM_PRODUCTS, seed: int = DEFAULT_SEED
) -> Path:
    """Write a catalog of ``num_products`` products into ``out_dir`` (see the module docstring)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    kinds = _types()
    attributes: dict[str, dict[str, Any]] = {}
    human: dict[str, list[dict[str, Any]]] = {}
    unseen: list[str] = []
    asins = _asins(rng)
    with (out / "items_shuffle.json").open("w", encoding="utf-8") as handle:
        handle.write("[")
        for index in range(num_products):
            kind = rng.choice(kinds)
            noun = kind[1]
            asin = next(asins)
            record, product_attributes = _product(rng, asin, kind)
            handle.write(("," if index else "") + json.dumps(record))
            entry: dict[str, Any] = {"attributes": product_attributes}
            instruction_attributes = rng.sample(product_attributes, rng.randint(1, min(3, len(product_attributes))))
            if rng.random() < INSTRUCTION_SHARE:
                entry["instruction"] = f"Find me {kind[2]} with {', '.join(instruction_attributes)}"
                entry["instruction_attributes"] = instruction_attributes
            attributes[asin] = entry
            if rng.random() < INSTRUCTION_SHARE / 2:
                values = [v["value"].lower() for vs in (record["customization_options"] or {}).values() for v in vs[:1]]
                human[asin] = [{
                    "asin": asin,
                    "instruction": f"i'm looking for a {noun} that is {' and '.join(instruction_attributes)}",
                    "instruction_attributes": instruction_attributes,
                    "instruction_options": values,
                }]  # fmt: skip
            if held_out_type(noun) or any(held_out_pair(noun, a) for a in instruction_attributes):
                unseen.append(asin)
        handle.write("]")
    (out / "items_ins_v2.json").write_text(json.dumps(attributes))
    (out / "items_human_ins.json").write_text(json.dumps(human))
    meta = {
        "generator": "seed_envs.webshop.generate",
        "version": GENERATOR_VERSION,
        "seed": seed,
        "num_products": num_products,
        "held_out_types": sorted({k[1] for k in kinds if held_out_type(k[1])}),
        "held_out_attribute_pairs": sorted([k[1], a] for k in kinds for a in k[5] if held_out_pair(k[1], a)),
        "unseen_asins": unseen,
    }
    (out / "catalog_meta.json").write_text(json.dumps(meta, indent=1))
    return out


def default_catalog_dir(num_products: int = DEFAULT_NUM_PRODUCTS, seed: int = DEFAULT_SEED) -> Path:
    """The embedded default catalog, generated into the cache on first use (safe across processes)."""
    root = cache_dir("webshop")
    target = root / f"generated-v{GENERATOR_VERSION}-n{num_products}-s{seed}"
    if _is_catalog(target):
        return target
    with staged_dir(target, is_complete=_is_catalog) as staging:
        generate_catalog(staging, num_products, seed)
    return target


def _is_catalog(folder: Path) -> bool:
    return (folder / "catalog_meta.json").is_file()
