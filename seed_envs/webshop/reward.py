"""WebShop's purchase reward, as the benchmark defines it.

For a goal with attribute list ``A``, goal options ``O`` and price bound ``u``, buying a
product at price ``p`` with chosen options gives::

    reward = r_type * (n_attr + n_opt + [p <= u]) / (|A| + |O| + 1)

- ``n_attr``: goal attributes matched, each either by a product attribute whose fuzzy
  token-set ratio with it is > 85, or else by occurring (as a substring) in the lower-cased
  title, features or description;
- ``n_opt``: goal options matched by a chosen option with token-set ratio > 85, after both
  sides went through :func:`~seed_envs.webshop.normalize.normalize_color`; a goal given
  options as a dict contributes ``(name, value)`` pairs, exactly as the benchmark does;
- ``r_type``: 1.0, lowered to 0.5 when neither the search query, nor two or more product
  category levels, nor more than 20% of the goal name's nouns match; then to 0.1 when the
  noun overlap is below 0.1, and to 0.0 when it is zero. A goal name with no nouns counts as
  an overlap of 0.2.

The fuzzy score is thefuzz's ``token_set_ratio``: both strings ASCII-folded (characters
128-255 dropped), lower-cased, non-alphanumerics turned into spaces, then rapidfuzz's token
set ratio rounded with Python's ``round``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from rapidfuzz.fuzz import token_set_ratio as _rapid_token_set_ratio
from rapidfuzz.utils import default_process

from seed_envs.webshop.normalize import normalize_color
from seed_envs.webshop.nouns import TypeMatcher, get_type_matcher

FUZZY_MATCH_THRESHOLD = 85
_LATIN1_UPPER = {i: None for i in range(128, 256)}


class PurchaseReward(NamedTuple):
    """The reward and its parts; unpacks like the benchmark's ``get_reward(..., verbose=True)``."""

    reward: float
    parts: dict[str, Any]


def fuzzy_token_set_ratio(a: object, b: object) -> int:
    """thefuzz's ``token_set_ratio(a, b)`` (0-100, an int), with its default processing."""
    if a is None or b is None:
        return 0
    processed_a = default_process(str(a).translate(_LATIN1_UPPER))
    processed_b = default_process(str(b).translate(_LATIN1_UPPER))
    return round(_rapid_token_set_ratio(processed_a, processed_b))


def type_reward(product: Mapping[str, Any], goal: Mapping[str, Any], matcher: TypeMatcher) -> dict[str, Any]:
    """The type score and the three signals it is made of."""
    query_match = product["query"] == goal["query"]
    bought_levels = {level.strip() for level in product["product_category"].split("›")}
    goal_levels = {level.strip() for level in goal["product_category"].split("›")}
    category_match = len(bought_levels & goal_levels) >= 2

    bought_nouns = matcher.nouns(product["name"])
    goal_nouns = matcher.nouns(goal["name"])
    # A goal name without nouns counts as an overlap of 0.2.
    title_score = len(set(bought_nouns) & set(goal_nouns)) / len(goal_nouns) if goal_nouns else 0.2

    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return {
        "r_type": r_type,
        "query_match": query_match,
        "category_match": category_match,
        "title_score": title_score,
    }


def attribute_matches(product: Mapping[str, Any], goal_attributes: Iterable[str]) -> int:
    """How many goal attributes the product has (fuzzy attribute match, else text containment)."""
    title = product["Title"].lower()
    features = " ".join(product["BulletPoints"]).lower()
    description = product["Description"].lower()
    matches = 0
    for wanted in goal_attributes:
        fuzzy_hit = any(fuzzy_token_set_ratio(have, wanted) > FUZZY_MATCH_THRESHOLD for have in product["Attributes"])
        if fuzzy_hit or wanted in title or wanted in features or wanted in description:
            matches += 1
    return matches


def option_matches(chosen: Iterable[object], wanted: Iterable[object]) -> int:
    """How many wanted options some chosen option matches (after colour normalisation)."""
    chosen_normal = [normalize_color(option) for option in chosen]
    matches = 0
    for goal_option in (normalize_color(option) for option in wanted):
        if any(fuzzy_token_set_ratio(have, goal_option) > FUZZY_MATCH_THRESHOLD for have in chosen_normal):
            matches += 1
    return matches


def resolve_price(product: Mapping[str, Any], price: float | None) -> float:
    """The price paid: ``price`` if given, else the product's drawn price, else its fixed price."""
    if price is not None:
        return float(price)
    if product.get("price") is not None:
        return float(product["price"])
    pricing = product.get("pricing") or [100.0]
    if len(pricing) == 1:
        return float(pricing[0])
    raise ValueError(f"product {product.get('asin')!r} has a price range {pricing}; pass price= (the drawn price)")


def purchase_reward(
    goal: Mapping[str, Any],
    product: Mapping[str, Any],
    options: Mapping[str, str],
    price: float | None = None,
    *,
    type_matcher: TypeMatcher | str = "auto",
) -> PurchaseReward:
    """The reward for buying ``product`` with ``options`` (option name -> value) towards ``goal``.

    ``goal`` and ``product`` are the benchmark's dicts (as built by :func:`load_data`).
    ``price`` defaults to the product's drawn ``price`` (see :func:`resolve_price`).
    ``parts`` holds the benchmark's verbose reward details (``r_type``, ``r_att``, ``w_att``,
    ``query_match``, ``category_match``, ``title_score``, and ``r_option``/``w_option`` and
    ``r_price``/``w_price`` where defined) plus ``type_matcher``, ``price`` and match counts.
    """
    matcher = get_type_matcher(type_matcher) if isinstance(type_matcher, str) else type_matcher
    paid = resolve_price(product, price)
    type_parts = type_reward(product, goal, matcher)

    goal_attributes = goal["attributes"]
    goal_options = goal["goal_options"]
    wanted_options = goal_options.items() if isinstance(goal_options, dict) else goal_options
    r_price = (paid <= goal["price_upper"]) if goal["price_upper"] > 0 else None
    n_attr = attribute_matches(product, goal_attributes)
    n_opt = option_matches(list(options.values()), wanted_options)
    denominator = len(goal_attributes) + len(goal_options) + 1

    reward = (n_attr + n_opt + r_price) / denominator  # r_price is a bool, as in the benchmark
    reward *= type_parts["r_type"]

    parts: dict[str, Any] = {
        "r_type": type_parts["r_type"],
        "r_att": n_attr / len(goal_attributes),
        "w_att": len(goal_attributes) / denominator,
        "query_match": type_parts["query_match"],
        "category_match": type_parts["category_match"],
        "title_score": type_parts["title_score"],
    }
    if len(goal_options) > 0:
        parts["r_option"] = n_opt / len(goal_options)
        parts["w_option"] = len(goal_options) / denominator
    if r_price is not None:
        parts["r_price"] = r_price
        parts["w_price"] = 1 / denominator
    parts.update(type_matcher=matcher.name, price=paid, num_attr_matches=n_attr, num_option_matches=n_opt)
    return PurchaseReward(float(reward), parts)
