"""Product files in the upstream ``items_shuffle`` format, built for tests around a real attribute file.

The real ``items_ins_v2_1000.json`` holds attributes and instructions but no products; these
helpers invent products for its ASINs so that loaders, goals and rewards can run on real
attribute data. The products deliberately cover the awkward cases of the real file: missing,
single and ranged prices (with thousands separators), options with slashes and capitals,
``None`` option lists, string and list feature blocks, duplicate and malformed ASINs.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SHARED_WEBSHOP = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "webshop"
REAL_ATTRIBUTE_FILE = SHARED_WEBSHOP / "items_ins_v2_1000.json"

_KINDS = (
    (
        "beauty",
        "hair extensions",
        "Beauty & Personal Care › Hair Care › Hair Extensions",
        "clip-in hair extension",
    ),
    (
        "beauty",
        "body scrub",
        "Beauty & Personal Care › Skin Care › Body › Scrubs & Body Treatments",
        "body scrub",
    ),
    ("food", "bacon", "Grocery & Gourmet Food › Meat & Seafood › Bacon", "smoked bacon"),
    ("fashion", "men's shirts", "Clothing, Shoes & Jewelry › Men › Clothing › Shirts", "button down shirt"),
    ("fashion", "women's sandals", "Clothing, Shoes & Jewelry › Women › Shoes › Sandals", "flat sandals"),
    (
        "furniture",
        "ottoman bench",
        "Home & Kitchen › Furniture › Living Room Furniture › Ottomans",
        "storage ottoman",
    ),
    (
        "electronics",
        "usb microphone",
        "Electronics › Computers & Accessories › Microphones",
        "usb microphone",
    ),
    (
        "electronics",
        "car subwoofer",
        "Electronics › Car & Vehicle Electronics › Car Audio › Subwoofers",
        "car subwoofer",
    ),
)
_COLORS = (
    "Black",
    "Natural Black/Brown",
    "light blue",
    "White",
    "Rose Gold",
    "Navy",
    "Dark Grey",
    "#1B Off Black",
)
_SIZES = (
    "Small",
    "Medium",
    "X-Large",
    "22 Inch",
    "4 Ounce (Pack of 2)",
    "7.5 Wide",
    "100x45x45cm",
    "One Size",
)


def _pricing(rng: random.Random) -> object:
    roll = rng.random()
    if roll < 0.08:
        return None
    if roll < 0.12:
        return ""
    low = round(rng.uniform(1, 240), 2)
    if roll < 0.6:
        return f"${low}"
    if roll < 0.65:
        return f"${low + 1000:,.2f}"
    high = round(low + rng.uniform(1, 60), 2)
    return f"${low} - ${high}"


def _options(rng: random.Random) -> object:
    roll = rng.random()
    if roll < 0.25:
        return None
    if roll < 0.35:
        return {}
    options: dict[str, object] = {}
    if rng.random() < 0.8:
        options["Color"] = [
            {"value": c, "image": f"https://img.example/{i}.jpg"}
            for i, c in enumerate(rng.sample(_COLORS, rng.randint(1, 4)))
        ]
    if rng.random() < 0.6:
        options["Size"] = [{"value": s} for s in rng.sample(_SIZES, rng.randint(1, 4))]
    if rng.random() < 0.1:
        options["Style"] = None
    return options


def make_products(attribute_file: Path, seed: int = 0, limit: int | None = None) -> list[dict]:
    """Products in ``items_shuffle`` format for the ASINs of ``attribute_file``, in file order."""
    attributes = json.loads(Path(attribute_file).read_text())
    rng = random.Random(seed)
    products = []
    for asin, entry in list(attributes.items())[:limit]:
        category, query, product_category, noun = rng.choice(_KINDS)
        attrs = entry.get("attributes") or []
        adjective = rng.choice(("Premium", "Classic", "Portable", "Organic", "Soft"))
        name = f"{adjective} {noun.title()} with {attrs[0].title() if attrs else 'Extras'} for Everyday Use"
        bullets = [f"{a} for daily use" for a in attrs[:3]] or ["great value"]
        products.append(
            {
                "asin": asin,
                "name": name,
                "category": category,
                "query": rng.choice((query, f" {query.upper()} ")),
                "product_category": product_category,
                "pricing": _pricing(rng),
                "customization_options": _options(rng),
                "full_description": f"This {noun} is {', '.join(attrs) or 'well made'}.",
                "small_description": bullets if rng.random() < 0.8 else bullets[0],
                "images": [f"https://img.example/{asin}.jpg"],
                "brand": "Acme",
                "product_information": {"weight": "1 pound"},
                "total_reviews": 3,
            }
        )
    if products:
        # The real file has malformed and repeated ASINs that loaders must skip.
        products.append(dict(products[0], name="duplicate of the first product"))
        products.append(dict(products[1], asin="nan"))
        products.append(dict(products[1], asin="B0TOOLONGASIN"))
    return products


def write_products(directory: Path, seed: int = 0, limit: int | None = None, human: dict | None = None) -> Path:
    """Write ``items_shuffle_1000.json`` for the real attribute file's ASINs (+ an optional human file).

    The attribute file itself stays where it is; pass it to the loader by path.
    """
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "items_shuffle_1000.json").write_text(json.dumps(make_products(REAL_ATTRIBUTE_FILE, seed, limit)))
    if human is not None:
        (directory / "items_human_ins.json").write_text(json.dumps(human))
    return directory


def make_human_instructions(products: list[dict], seed: int = 0) -> dict[str, list[dict]]:
    """``items_human_ins.json`` content for some of ``products``: 0-3 instructions each,
    some without attributes (which the benchmark skips), options as lists of values."""
    rng = random.Random(seed)
    human: dict[str, list[dict]] = {}
    for product in products[: len(products) // 2]:
        entries = []
        for k in range(rng.randint(0, 3)):
            words = product["name"].lower().split()
            options = [c["value"].lower() for c in (product["customization_options"] or {}).get("Color") or []][:1]
            entries.append(
                {
                    "asin": product["asin"],
                    "instruction": f"i want {' '.join(words[:4])}, please.",
                    "instruction_attributes": [] if k == 2 else [words[-3], words[1]],
                    "instruction_options": options,
                }
            )
        if entries:
            human[product["asin"]] = entries
    return human
