"""WebShop data loading, goal list and reward, on the real attribute file."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("rapidfuzz", reason="the webshop extra is not installed")

from webshop_fixtures import REAL_ATTRIBUTE_FILE, make_human_instructions, make_products, write_products

from seed_envs.webshop.data import load_data
from seed_envs.webshop.goals import GOAL_SHUFFLE_SEED, PRICE_STEPS, draw_price_bound
from seed_envs.webshop.normalize import normalize_color
from seed_envs.webshop.products import parse_options, parse_pricing
from seed_envs.webshop.reward import fuzzy_token_set_ratio, purchase_reward

pytestmark = pytest.mark.skipif(not REAL_ATTRIBUTE_FILE.is_file(), reason=f"{REAL_ATTRIBUTE_FILE} is missing")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("webshop")
    products = make_products(REAL_ATTRIBUTE_FILE)
    write_products(directory, human=make_human_instructions(products))
    return directory


def load(data_dir: Path, **kwargs):
    return load_data(data_dir, attributes_file=REAL_ATTRIBUTE_FILE, **kwargs)


def test_pricing_and_options_follow_the_benchmark_rules():
    assert parse_pricing(None) == ([100.0], "$100.0")
    assert parse_pricing("") == ([100.0], "$100.0")
    assert parse_pricing("$10") == ([10.0], "$10.0")
    assert parse_pricing("$1,299.99") == ([1299.99], "$1299.99")
    assert parse_pricing("$5.5 - $9.99") == ([5.5, 9.99], "$5.5 to $9.99")
    options, images = parse_options({"Color": [{"value": " Natural Black/Brown ", "image": "u"}], "Size": None})
    assert options == {"color": ["natural black | brown"]}
    assert images == {"natural black | brown": "u"}


def test_catalog_skips_bad_and_repeated_asins(data_dir):
    data = load(data_dir)
    attributes = json.loads(REAL_ATTRIBUTE_FILE.read_text())
    assert [p["asin"] for p in data.products] == list(attributes)  # file order, no nan/long/duplicates
    product = data.products[0]
    assert product["Attributes"] == attributes[product["asin"]]["attributes"]
    assert all(p["query"] == p["query"].strip().lower() for p in data.products)


def test_synthetic_goals_cover_every_option_combination(data_dir):
    data = load(data_dir)
    per_asin = Counter(goal["asin"] for goal in data.goals)
    expected = {}
    for product in data.products:
        if product.get("instruction_text") is not None:
            count = 1
            for values in product["options"].values():
                count *= len(values)
            if count:
                expected[product["asin"]] = count
    assert per_asin == expected
    for goal in data.goals:
        product = data.product_by_asin[goal["asin"]]
        assert goal["instruction_text"].startswith(product["instruction_text"])
        assert set(goal["goal_options"]) == set(product["options"])
        if goal["price_upper"] != 1_000_000:
            assert goal["price_upper"] > data.prices[goal["asin"]]
            assert goal["instruction_text"].endswith(f", and price lower than {goal['price_upper']:.2f} dollars")


def test_goal_order_is_the_seed_233_shuffle_and_seed_moves_only_prices(data_dir):
    a, b = load(data_dir, seed=0), load(data_dir, seed=1)
    identity = [(g["asin"], tuple(sorted(g["goal_options"].items()))) for g in a.goals]
    assert identity == [(g["asin"], tuple(sorted(g["goal_options"].items()))) for g in b.goals]
    ranged = [p["asin"] for p in a.products if len(p["pricing"]) == 2]
    assert ranged and any(a.prices[x] != b.prices[x] for x in ranged)
    assert a.goals == load(data_dir, seed=0).goals  # same seed, same list
    # The permutation is random.Random(233).shuffle of the catalog-order list.
    order = list(range(len(a.goals)))
    random.Random(GOAL_SHUFFLE_SEED).shuffle(order)
    catalog_order = [None] * len(order)
    for position, original in enumerate(order):
        catalog_order[original] = a.goals[position]["asin"]
    asins_in_catalog_order = [p["asin"] for p in a.products]
    assert catalog_order == sorted(catalog_order, key=asins_in_catalog_order.index)


def test_seed_reproduces_global_random_draws(data_dir):
    """seed=s makes the benchmark's draws after random.seed(s): range prices, then price bounds."""
    data = load(data_dir, seed=5)
    rng = random.Random(5)
    for product in data.products:
        if len(product["pricing"]) == 2:
            assert data.prices[product["asin"]] == rng.uniform(*product["pricing"])
    bounds = {}
    for product in data.products:
        if product.get("instruction_text") is not None:
            bounds[product["asin"]] = draw_price_bound(data.prices[product["asin"]], rng)[0]
    assert all(goal["price_upper"] == bounds[goal["asin"]] for goal in data.goals)


def test_price_bound_rule():
    rng = random.Random(0)
    for price in (0.5, 9.99, 10.0, 55.5, 955.0, 985.0, 5000.0):
        upper, text = draw_price_bound(price, rng)
        above = [s for s in PRICE_STEPS if s > price][:4]
        if len(above) >= 2:
            assert upper in above[1:] and text == f", and price lower than {upper:.2f} dollars"
        else:
            assert (upper, text) == (1_000_000, "")


def test_human_goals(data_dir):
    data = load(data_dir, human_goals=True)
    human = json.loads((data_dir / "items_human_ins.json").read_text())
    expected = sum(1 for entries in human.values() for e in entries if e["instruction_attributes"])
    assert len(data.goals) == expected
    assert all(g["weight"] == 1 and isinstance(g["goal_options"], list) for g in data.goals)


def test_fuzzy_ratio_matches_thefuzz_where_installed():
    fuzz = pytest.importorskip("thefuzz.fuzz", reason="thefuzz is not installed")
    rng = random.Random(3)
    words = ["light", "blue", "navy", "x-large", "pack of 2", "12 ounce", "café", "ñ", "", "  ", "b/w", "8.5"]
    for _ in range(2000):
        a = " ".join(rng.choice(words) for _ in range(rng.randint(0, 4)))
        b = " ".join(rng.choice(words) for _ in range(rng.randint(0, 4)))
        assert fuzzy_token_set_ratio(a, b) == fuzz.token_set_ratio(a, b), (a, b)
    pair = ("color", "black")
    assert fuzzy_token_set_ratio("black", pair) == fuzz.token_set_ratio("black", pair)


def test_normalize_color_uses_list_order_and_tuple_membership():
    assert normalize_color("dark grey heather") == "dark"
    assert normalize_color("x-large") == "x-large"
    assert normalize_color(("color", "black")) == "black"
    assert normalize_color(("color", "light blue")) == ("color", "light blue")


def _goal(**overrides):
    goal = {
        "asin": "B000000001",
        "query": "sandals",
        "name": "Women Flat Sandals Summer",
        "product_category": "Clothing › Women › Shoes › Sandals",
        "attributes": ["rubber sole", "arch support"],
        "goal_options": {"color": "black", "size": "7.5 wide"},
        "price_upper": 40.0,
    }
    goal.update(overrides)
    return goal


def _product(**overrides):
    product = {
        "asin": "B000000002",
        "query": "sandals",
        "name": "Women Flat Sandals Summer",
        "Title": "Women Flat Sandals",
        "product_category": "Clothing › Women › Shoes › Sandals",
        "Attributes": ["rubber soles"],
        "BulletPoints": ["great arch support"],
        "Description": "",
        "pricing": [30.0],
    }
    product.update(overrides)
    return product


def test_reward_parts_by_hand():
    goal, product = _goal(), _product()
    # attributes: 'rubber sole' ~ 'rubber soles' (ratio 96) and 'arch support' in the features: 2/2
    # options: black matches, '7.5 wide' vs ('size', '7.5 wide') -> 'size 7.5 wide': ratio 100: 2/2
    # price 30 <= 40: 1.  Total (2 + 2 + 1) / (2 + 2 + 1) = 1
    result = purchase_reward(goal, product, {"color": "black", "size": "7.5 wide"}, type_matcher="lexicon")
    assert result.reward == 1.0
    assert result.parts["r_att"] == 1.0 and result.parts["r_option"] == 1.0 and result.parts["r_price"] is True
    assert result.parts["type_matcher"] == "lexicon-v1"
    # "jet black" normalises to "black" and matches; "x" matches nothing; 55 > 40
    cheaper = purchase_reward(goal, product, {"color": "jet black", "size": "x"}, price=55.0, type_matcher="lexicon")
    assert cheaper.reward == pytest.approx((2 + 1 + 0) / 5)
    assert cheaper.parts["r_price"] is False and cheaper.parts["w_price"] == pytest.approx(1 / 5)


def test_type_reward_thresholds():
    goal = _goal()
    unrelated = _product(query="lamp", product_category="Home › Lighting", name="Desk Lamp")
    assert purchase_reward(goal, unrelated, {}, type_matcher="lexicon").parts["r_type"] == 0.0
    half = _product(query="lamp", product_category="Home › Lighting", name="Sandals")
    parts = purchase_reward(goal, half, {}, type_matcher="lexicon").parts
    assert parts["title_score"] == pytest.approx(1 / 4) and parts["r_type"] == 1.0
    weak = _product(query="lamp", product_category="Home › Lighting", name="Summer Lamp")
    goal_long = _goal(name="Women Flat Sandals Summer Beach Party Shoes Girls Kids Slides Strap")
    parts = purchase_reward(goal_long, weak, {}, type_matcher="lexicon").parts
    assert parts["title_score"] == pytest.approx(1 / 11) and parts["r_type"] == 0.1
    parts = purchase_reward(_goal(name="Women Flat Sandals Summer Beach"), weak, {}, type_matcher="lexicon").parts
    assert parts["title_score"] == pytest.approx(1 / 5) and parts["r_type"] == 0.5


def test_range_priced_product_needs_a_price():
    with pytest.raises(ValueError, match="price="):
        purchase_reward(_goal(), _product(pricing=[10.0, 20.0]), {}, type_matcher="lexicon")


def test_spacy_fallback_warning_is_given_once_per_process_tree():
    import os
    import subprocess
    import sys

    from seed_envs.webshop.nouns import FALLBACK_WARNED_ENV

    call = "import logging; logging.basicConfig(); from seed_envs.webshop.nouns import get_type_matcher; "
    child = call + "print(get_type_matcher('auto').name)"
    parent = child + f"; import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"
    env = {k: v for k, v in os.environ.items() if k != FALLBACK_WARNED_ENV}
    done = subprocess.run([sys.executable, "-c", parent], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    if done.stdout.split() != ["lexicon-v1", "lexicon-v1"]:
        pytest.skip("a spaCy model is installed, so there is no fallback to warn about")
    assert done.stderr.count("using the lexicon-v1 approximation") == 1
