"""seed/WebShop-v0: conformance, hostile input, pages and the expert, on the real attribute file."""

from __future__ import annotations

import random

import gymnasium as gym
import pytest

pytest.importorskip("bm25s", reason="the webshop extra is not installed")

from webshop_fixtures import REAL_ATTRIBUTE_FILE, write_products

import seed_envs  # noqa: F401
from seed_envs.testing import check_seed_env, fuzz_env
from seed_envs.webshop.html_text import html_nodes
from seed_envs.webshop.render import page_nodes, render_html
from seed_envs.webshop.site import parse_action

pytestmark = pytest.mark.skipif(not REAL_ATTRIBUTE_FILE.is_file(), reason=f"{REAL_ATTRIBUTE_FILE} is missing")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    cache = tmp_path_factory.mktemp("seed-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SEED_CACHE_DIR", str(cache))
        yield write_products(tmp_path_factory.mktemp("webshop-env"))


def make(data_dir, **kwargs):
    kwargs.setdefault("type_matcher", "lexicon")
    return gym.make("seed/WebShop-v0", data_dir=str(data_dir), attributes_file=str(REAL_ATTRIBUTE_FILE), **kwargs)


def is_webshop_action(action: str) -> bool:
    if len(action) > 1_024:  # rejected by length before parsing (and slow to match)
        return False
    name, argument = parse_action(action)
    return name in ("search", "click") and argument is not None


def test_conformance(data_dir):
    check_seed_env(make(data_dir))


def test_fuzz_ten_thousand_hostile_actions(data_dir):
    env = make(data_dir)
    invalid = fuzz_env(env.unwrapped, n=10_000, is_valid=is_webshop_action)
    assert invalid > 9_000


def test_first_page_and_available_actions(data_dir):
    env = make(data_dir)
    obs, info = env.reset(options={"split": "valid_seen", "index": 0})
    assert obs["text"] == f"WebShop [SEP] Instruction: [SEP] {info['task']} [SEP] Search"
    assert info["available_actions"] == ["search[<query>]"]
    assert info["webshop_available_actions"] == {"has_search_bar": True, "clickables": ["search"]}
    assert info["task_id"] == "webshop/valid_seen/0" and info["type_matcher"] == "lexicon-v1"
    obs, _reward, _terminated, _truncated, info = env.step("search[hair extension]")
    assert info["page"] == "search_results" and obs["text"].startswith("Instruction: [SEP] ")
    assert "Page 1 (Total results: 50) [SEP] Next >" in obs["text"]
    assert info["available_actions"][:2] == ["click[back to search]", "click[next >]"]
    assert len(info["available_actions"]) == 12


def test_invalid_actions_change_nothing(data_dir):
    env = make(data_dir)
    env.reset(seed=3)
    before, *_ = env.step("search[bacon]")
    for action in ("click[buy now]", "click[search]", "search[]", "clack[x]", "click[no such thing]"):
        obs, reward, terminated, _truncated, info = env.step(action)
        assert obs == before and reward == 0.0 and not terminated
        assert info["action_valid"] is False and info["invalid_reason"]
    loud = make(data_dir, invalid_feedback=True)
    loud.reset(seed=3)
    obs, *_ = loud.step("click[buy now]")
    assert obs["text"].startswith("Invalid action: 'buy now' is not clickable on this page.")


@pytest.mark.parametrize("split", ["train", "valid_seen", "valid_unseen"])
def test_expert_buys_the_goal_for_full_reward(data_dir, split):
    env = make(data_dir, split=split)
    solved = 0
    for index in range(8):
        _, info = env.reset(options={"split": split, "index": index})
        plan = env.unwrapped.expert_plan()
        if plan is None:
            continue
        for action in plan:
            obs, reward, terminated, _truncated, info = env.step(action)
        assert terminated and reward == 1.0 and info["won"] is True and info["score"] == 1.0
        assert obs["text"].endswith("Your score (min 0.0, max 1.0) [SEP] 1.0 [SEP] Reward Details [SEP] None")
        solved += 1
    assert solved >= 6


def test_the_expert_plans_from_the_current_page(data_dir):
    """Replanning at every step and taking the plan's first action buys the goal: the plan starts
    from where the agent is (on the product's page it only picks what is missing)."""
    env = make(data_dir)
    replanned = 0
    for index in range(6):
        env.reset(options={"split": "train", "index": index})
        first = env.unwrapped.expert_plan()
        if first is None:
            continue
        for step in range(len(first)):
            plan = env.unwrapped.expert_plan()
            assert plan is not None and len(plan) == len(first) - step  # no fresh search mid-way
            obs, reward, terminated, _, info = env.step(plan[0])
        assert terminated and info["won"]
        replanned += 1
    assert replanned >= 4


def test_wrong_purchase_scores_below_one(data_dir):
    env = make(data_dir)
    _, info = env.reset(options={"split": "train", "index": 5})
    env.step("search[smoked bacon]")
    _, _, _, _, info = env.step("click[next >]")
    env.step(info["available_actions"][-1])  # the last product of page 2
    _obs, reward, terminated, _, info = env.step("click[buy now]")
    assert terminated and 0.0 <= reward < 1.0 and info["won"] is False and info["score"] == reward
    assert set(info["reward_parts"]) >= {"r_type", "r_att", "w_att", "r_price", "type_matcher"}


def test_text_rich_marks_visited_products_and_chosen_options(data_dir):
    env = make(data_dir, observation_mode="text_rich")
    env.reset(options={"split": "train", "index": 0})
    plan = env.unwrapped.expert_plan()
    assert plan is not None
    for action in plan[:-1]:
        obs, *_ = env.step(action)
    options = [a[len("click[") : -1] for a in plan if a.startswith("click[") and a not in plan[:2]][:-1]
    for value in options:
        assert f"  [clicked button] {value} [clicked button_]" in obs["text"]
        assert f"You have clicked {value}.\n" in obs["text"]
    obs, *_ = env.step("click[< prev]")
    asin = plan[-2 - len(options)][len("click[") : -1].upper()
    assert f"\n[clicked button] {asin} [clicked button_]" in obs["text"]


def test_html_pages_show_exactly_the_text_nodes(data_dir):
    env = make(data_dir, observation_mode="html")
    rng = random.Random(0)
    kinds = set()
    env.reset(seed=1)
    for _ in range(400):
        session = env.unwrapped.session
        assert html_nodes(render_html(session)) == page_nodes(session)
        kinds.add(session.kind)
        actions = env.unwrapped._available_actions()
        if session.kind == "done":
            env.reset(seed=rng.randrange(1000))
            continue
        action = rng.choice(actions)
        if action == "search[<query>]" or rng.random() < 0.05:
            action = f"search[{rng.choice(['hair extension', 'bacon', 'usb microphone', 'women sandals'])}]"
        obs, *_ = env.step(action)
        assert obs["text"].startswith("<!DOCTYPE html>")
    assert kinds == {"index", "search_results", "item_page", "item_sub_page", "done"}


def test_envs_share_one_catalog_and_index(data_dir):
    a, b = make(data_dir).unwrapped, make(data_dir, split="valid_seen").unwrapped
    assert a.data is b.data and a.engine is b.engine


def test_memory_per_additional_env_is_far_below_50_mb(data_dir):
    """The catalog and index are shared, so 16 more envs (each played a little) cost little."""
    import gc
    import os

    def rss_mb() -> float:
        gc.collect()
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    first = make(data_dir)
    first.reset(seed=0)
    before = rss_mb()
    envs = [make(data_dir) for _ in range(16)]
    for i, env in enumerate(envs):
        _, info = env.reset(seed=i)
        env.step(info["available_actions"][0].replace("<query>", "red shirt"))
    per_env = (rss_mb() - before) / len(envs)
    assert per_env < 50, f"{per_env:.1f} MB per additional env"


def test_splits(data_dir):
    env = make(data_dir).unwrapped
    goals = len(env.data.goals)
    assert env.task_count("train") == goals - 500
    assert env.task_count("valid_seen") == env.task_count("valid_unseen") == 500


def _plan_with_options(env) -> tuple[str, list[str], int]:
    """A train goal whose product has options to pick: its task id, its expert plan and the index
    in the plan of the click that opens the product's page."""
    for index in range(40):
        _, info = env.reset(options={"split": "train", "index": index})
        plan = env.unwrapped.expert_plan()
        if plan is None:
            continue
        pages = [env.step(action)[-1]["page"] for action in plan[:-1]]  # all but "buy now"
        opened = pages.index("item_page")
        if opened + 2 < len(plan):  # an option before "buy now"
            return info["task_id"], plan, opened
    pytest.fail("no train goal among 40 with options to pick")


def test_anchor_is_the_page_plus_the_chosen_options(data_dir):
    env = make(data_dir)
    task_id, plan, opened = _plan_with_options(env)  # [search, (next >)*, product, option..., buy now]
    _, info = env.reset(options={"task_id": task_id})
    anchors = [info["anchor"]]
    for action in plan[: opened + 2]:
        obs, *_, info = env.step(action)
        anchors.append(info["anchor"])
    item_page, with_option = anchors[-2], anchors[-1]
    assert item_page == obs["text"]  # the text mode shows no chosen option...
    assert with_option.startswith(obs["text"] + "\nChosen options: ")  # ...the anchor does
    assert len(set(anchors)) == len(anchors)  # every step reached a new state

    # The same task by another path: a rejected click, a detour through a sub-page.
    _, info = env.reset(options={"task_id": task_id})
    assert info["anchor"] == anchors[0]
    for action in plan[: opened + 1]:
        *_, info = env.step(action)
    *_, info = env.step("click[no such thing]")
    assert not info["action_valid"] and info["anchor"] == item_page
    *_, info = env.step("click[description]")
    assert info["anchor"] != item_page
    *_, info = env.step("click[< prev]")
    assert info["anchor"] == item_page
    *_, info = env.step(plan[opened + 1])
    assert info["anchor"] == with_option


@pytest.mark.parametrize("mode", ["text_rich", "html"])
def test_anchor_does_not_depend_on_the_observation_mode(data_dir, mode):
    text, other = make(data_dir), make(data_dir, observation_mode=mode)
    task_id, plan, _ = _plan_with_options(text)
    for env in (text, other):
        env.reset(options={"task_id": task_id})
    for action in plan:
        obs, *_, info = text.step(action)
        obs_other, *_, info_other = other.step(action)
        assert info_other["anchor"] == info["anchor"]
    assert obs_other["text"] != obs["text"]
