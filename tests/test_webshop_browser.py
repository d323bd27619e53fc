"""seed/WebShopBrowser-v0 in real headless Chromium (those tests are skipped where chromium is absent)."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("bm25s", reason="the webshop extra is not installed")

import seed_envs  # noqa: F401
from seed_envs.webshop.browser_env import browser_available, server_key
from seed_envs.webshop.generate import generate_catalog

REASON = browser_available()
needs_browser = pytest.mark.skipif(REASON is not None, reason=f"browser env unavailable: {REASON}")


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SEED_CACHE_DIR", str(tmp_path_factory.mktemp("seed-cache")))
        yield generate_catalog(tmp_path_factory.mktemp("browser-catalog"), num_products=300, seed=1)


def chromium_processes(group: int) -> list[int]:
    """Live processes of a process group (read from /proc)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            pids.append(int(stat.parent.name))
    return pids


@pytest.fixture(scope="module")
def envs(catalog):
    browser = gym.make("seed/WebShopBrowser-v0", data_dir=str(catalog), type_matcher="lexicon")
    text = gym.make("seed/WebShop-v0", data_dir=str(catalog), type_matcher="lexicon")
    yield browser, text
    browser.close()


@needs_browser
def test_browser_pages_equal_text_env_and_expert_wins(envs):
    browser, text = envs
    for index in range(2):
        obs, info = browser.reset(options={"split": "valid_seen", "index": index})
        expected, _ = text.reset(options={"split": "valid_seen", "index": index})
        assert obs["text"] == expected["text"]
        assert obs["image"].shape == (384, 512, 3) and obs["image"].dtype == np.uint8 and obs["image"].std() > 0
        for action in browser.unwrapped.expert_plan():
            obs, reward, terminated, _, info = browser.step(action)
            expected, expected_reward, *_ = text.step(action)
            assert obs["text"] == expected["text"] and reward == expected_reward
        assert terminated and reward == 1.0 and info["won"]


@needs_browser
def test_invalid_actions_and_a_crashed_browser(envs):
    browser, _text = envs
    browser.reset(options={"split": "valid_seen", "index": 2})
    before, *_ = browser.step("search[cap]")
    obs, reward, terminated, _, info = browser.step("click[not here]")
    assert obs["text"] == before["text"] and info["action_valid"] is False and reward == 0.0 and not terminated
    group = browser.unwrapped._process_group
    assert chromium_processes(group)
    browser.unwrapped.driver.service.process.kill()  # the driver dies, and the browser is orphaned
    restarts = browser.unwrapped.restarts
    obs, *_, info = browser.step("click[next >]")
    assert browser.unwrapped.restarts == restarts + 1
    assert info["page"] == "search_results" and "Page 2 (Total results:" in obs["text"]
    assert not chromium_processes(group), "the orphaned browser of the dead driver was left running"


@needs_browser
def test_browser_env_meets_the_seed_contract_and_survives_fuzzing(envs):
    from test_webshop_env import is_webshop_action

    from seed_envs.testing import check_seed_env, fuzz_env

    browser, _text = envs
    browser.unwrapped.split = "valid_seen"  # this small catalog has fewer than 500 goals: no train split
    check_seed_env(browser)
    assert fuzz_env(browser.unwrapped, n=10_000, is_valid=is_webshop_action) > 9_000


def test_envs_share_a_site_only_with_the_same_catalog_and_settings():
    data, other_data = object(), object()
    bm25s, pyserini = SimpleNamespace(name="bm25s"), SimpleNamespace(name="pyserini")
    lexicon, spacy = SimpleNamespace(name="lexicon-v1"), SimpleNamespace(name="spacy:en_core_web_sm-3.8.0")
    key = server_key(data, bm25s, False, lexicon)
    assert key == server_key(data, SimpleNamespace(name="bm25s"), False, SimpleNamespace(name="lexicon-v1"))
    others = {server_key(other_data, bm25s, False, lexicon), server_key(data, pyserini, False, lexicon),
              server_key(data, bm25s, True, lexicon), server_key(data, bm25s, False, spacy)}  # fmt: skip
    assert len(others) == 4 and key not in others
