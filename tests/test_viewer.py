"""``seed view``: the page of a tiny SEED run, rendered by headless Chromium (skipped where it is absent)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from test_train import TINY

from seed_rl.cli import main
from seed_rl.config import load_config
from seed_rl.records.episode_log import EPISODES_FILE, read_episodes
from seed_rl.records.viewer import gate_colour, render_page
from seed_rl.train.trainer import train

try:
    from seed_envs.webshop.browser_env import CHROME_FLAGS, CHROMEDRIVER, CHROMIUM, browser_available

    REASON = browser_available()
except ImportError as error:  # the webshop extra's helpers are not importable here
    REASON = str(error)
needs_browser = pytest.mark.skipif(REASON is not None, reason=f"headless Chromium unavailable: {REASON}")

#: Text a page must show as text: markup, an entity and a script, none of which may take effect.
HOSTILE = "<b>bold?</b> a < b && c > d <script>window.pwned = 1</script>"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One SEED update with oracle skills: every episode has a skill, every sampled step OPD."""
    path = tmp_path_factory.mktemp("viewer") / "seed"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SEED_CACHE_DIR", str(tmp_path_factory.mktemp("seed-cache")))
        train(load_config("sokoban_grpo", [*TINY, f"run_dir={path}", "algo=seed", "analyzer=scripted", "updates=1"]))
    return path


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_AVOID_STATS", "true")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    service = Service(CHROMEDRIVER, popen_kw={"start_new_session": True})
    driver = webdriver.Chrome(service=service, options=options)
    group = driver.service.process.pid
    try:
        yield driver
    finally:
        with contextlib.suppress(Exception):
            driver.quit()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)


def test_the_page_is_self_contained_and_escapes_every_text(run):
    records = read_episodes(run)
    page = render_page(records)
    assert "<script" not in page.lower() and not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert page.count('<details class="episode"') == len(records)
    hostile = [dict(records[0], task=HOSTILE)]
    assert HOSTILE not in render_page(hostile) and "&lt;script&gt;" in render_page(hostile)


def test_gate_colours_run_from_red_through_white_to_green():
    low, mid, high = (tuple(map(int, re.findall(r"\d+", gate_colour(g)))) for g in (0.0, 0.5, 1.0))
    assert mid == (255, 255, 255) and low[0] > low[1] and high[1] > high[0]
    assert gate_colour(0.25) not in {gate_colour(0.0), gate_colour(0.5)}
    assert gate_colour(-1) == gate_colour(0.0) and gate_colour(2) == gate_colour(1.0)


@needs_browser
def test_chromium_shows_episodes_skills_and_gate_coloured_tokens(run, browser, tmp_path, capsys):
    page = tmp_path / "episodes.html"
    assert main(["view", str(run), "--out", str(page)]) == 0
    assert str(page) in capsys.readouterr().out
    records = read_episodes(run)
    browser.get(page.as_uri())
    found = browser.execute_script(
        """
        const all = (selector) => [...document.querySelectorAll(selector)];
        return {
          updates: all("section.update").length,
          episodes: all("details.episode").map((e) => [e.dataset.update, e.dataset.episode]),
          skills: all(".skill").map((e) => e.textContent),
          invalid: all(".step.invalid").length,
          responses: all("pre.response").map((e) => e.textContent),
          tokens: all(".tokens .token").map((e) => [getComputedStyle(e).backgroundColor, e.title, e.textContent]),
          tags: all("action, b, script").length,
        };
        """
    )
    assert found["updates"] == len({r["update"] for r in records})
    assert found["episodes"] == [[str(r["update"]), str(r["episode"])] for r in records]
    assert len(found["skills"]) == sum(r["skill"] is not None for r in records) > 0
    assert shown(records[0]["skill"]) in found["skills"][0]
    steps = [s for r in records for s in r["steps"]]
    assert found["invalid"] == sum(not s["valid"] for s in steps)
    # the responses hold a literal "<action>" (the prompt's prefill): text on the page, no element
    assert any("<action>" in s["response"] for s in steps)
    assert found["tags"] == 0
    assert found["responses"] == [shown(s["response"]) for s in steps]
    gates = [g for s in steps if s["opd"] for g in s["opd"]["gate"]]
    assert len(found["tokens"]) == len(gates) > 0
    for (colour, title, _), gate in zip(found["tokens"], gates, strict=True):
        assert rgb(colour) == rgb(gate_colour(gate))
        assert title.startswith(f"gate {gate:.3f}, Delta ")
    assert len({colour for colour, _, _ in found["tokens"]}) > 1  # coloured by gate, not all alike


@needs_browser
def test_chromium_shows_hostile_text_as_text(run, browser, tmp_path):
    records = read_episodes(run)[:1]
    records[0]["task"] = HOSTILE
    records[0]["steps"][0]["observation"] = HOSTILE
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    (hostile / EPISODES_FILE).write_text(json.dumps(records[0]) + "\n", encoding="utf-8")
    page = tmp_path / "hostile.html"
    assert main(["view", str(hostile), "--out", str(page)]) == 0
    browser.get(page.as_uri())
    found = browser.execute_script(
        """
        return {
          task: document.querySelector(".task").textContent,
          observation: document.querySelector("pre.observation").textContent,
          bold: document.querySelectorAll(".episode b").length,
          pwned: window.pwned === undefined ? null : window.pwned,
        };
        """
    )
    assert found == {"task": HOSTILE, "observation": HOSTILE, "bold": 0, "pwned": None}


def shown(text: str) -> str:
    """The text as the page shows it: control characters written as ``\\xNN``."""
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", text)


def rgb(colour: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", colour)[:3])
