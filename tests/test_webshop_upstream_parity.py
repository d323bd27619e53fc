"""Goal-list and reward parity with the original WebShop code (skipped unless it is available)."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("rapidfuzz", reason="the webshop extra is not installed")

from webshop_fixtures import REAL_ATTRIBUTE_FILE, make_human_instructions, make_products, write_products
from webshop_upstream import SPACY_ENV, upstream_catalog, upstream_modules

from seed_envs.webshop.data import load_data
from seed_envs.webshop.reward import purchase_reward

pytestmark = pytest.mark.skipif(not REAL_ATTRIBUTE_FILE.is_file(), reason=f"{REAL_ATTRIBUTE_FILE} is missing")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("webshop-parity")
    write_products(directory, seed=11, human=make_human_instructions(make_products(REAL_ATTRIBUTE_FILE, 11)))
    return directory


@pytest.mark.parametrize("human_goals", [False, True])
@pytest.mark.parametrize("seed", [0, 3])
def test_goals_prices_and_rewards_match_upstream(data_dir, seed, human_goals, monkeypatch):
    import os

    engine, goal_module, _ = upstream_modules()
    products_path = data_dir / "items_shuffle_1000.json"
    human_path = data_dir / "items_human_ins.json"
    products, by_asin, prices, goals = upstream_catalog(
        engine, goal_module, products_path, REAL_ATTRIBUTE_FILE, human_path, seed, human_goals
    )
    ours = load_data(data_dir, seed=seed, human_goals=human_goals, attributes_file=REAL_ATTRIBUTE_FILE)
    assert ours.goals == goals
    assert ours.prices == prices

    matcher = "spacy:" + os.environ.get(SPACY_ENV, "en_core_web_sm")
    rng = random.Random(seed)
    for _ in range(300):
        goal = rng.choice(goals)
        asin = goal["asin"] if rng.random() < 0.4 else rng.choice(products)["asin"]
        product = by_asin[asin]
        options = {name: rng.choice(values) for name, values in product["options"].items() if rng.random() < 0.8}
        if rng.random() < 0.3 and isinstance(goal["goal_options"], dict):
            options = dict(goal["goal_options"])
        expected, expected_parts = goal_module.get_reward(
            product, goal, price=prices[asin], options=options, verbose=True
        )
        result = purchase_reward(goal, ours.product_by_asin[asin], options, type_matcher=matcher)
        assert result.reward == expected
        assert {k: result.parts[k] for k in expected_parts} == expected_parts


def test_pages_clickables_and_rewards_match_upstream_text_env(data_dir):
    """Random walks through both sites (same search results): identical text, rich text,
    clickables, rewards and episode ends."""
    from webshop_upstream import upstream_text_env

    from seed_envs.webshop.render import render
    from seed_envs.webshop.search import shared_engine
    from seed_envs.webshop.site import Session

    engine_module, _, text_env = upstream_modules()
    import os

    matcher = "spacy:" + os.environ.get(SPACY_ENV, "en_core_web_sm")
    ours = load_data(data_dir, seed=0, attributes_file=REAL_ATTRIBUTE_FILE)
    engine = shared_engine(ours)
    upstream = upstream_text_env(
        engine_module, text_env, data_dir / "items_shuffle_1000.json", REAL_ATTRIBUTE_FILE, 0, engine.search
    )
    queries = ["hair extension", "Bacon", "natural  body scrub", "<c> beauty", "<q> bacon", " ", "item_page"]
    odd = [
        "click[search]",
        "click[nothing]",
        "clack[x]",
        "search[]",
        "click[Buy Now]",
        "click[BACK TO SEARCH]",
    ]
    rng = random.Random(5)
    for _ in range(60):
        goal_index = rng.randrange(len(ours.goals))
        upstream.reset(session=goal_index)
        session = Session(ours, engine, ours.goals[goal_index], str(goal_index), random.Random(0), type_matcher=matcher)
        for _ in range(20):
            for mode in ("text", "text_rich"):
                upstream.observation_mode = mode
                assert upstream.observation == render(session, mode)
            clickables = upstream.get_available_actions()["clickables"]
            assert clickables == list(session.clickables())
            choices = [c for c in clickables if c != "search"]
            roll = rng.random()
            if roll < 0.15 or not choices:
                action = f"search[{rng.choice(queries)}]"
            elif roll < 0.2:
                action = rng.choice(odd)
            else:
                action = f"click[{rng.choice(choices)}]"
            _, reward, done, _ = upstream.step(action)
            result = session.act(action)
            assert (reward, done) == (result.reward, result.done), action
            if done:
                break
