"""``seed/WebShopBrowserEnv-v0``: the WebShop site in headless Chromium, with screenshots.

The env serves the Flask site (:mod:`seed_envs.webshop.app`) on 127.0.0.1 from a background
thread (one server per process, catalog and site settings) and drives Debian's ``chromium``
through ``/usr/bin/chromedriver`` with Selenium 4. Actions are the text env's (read by
``Session.classify``): ``click[x]`` clicks the button, product link or option labelled ``x``;
``search[...]`` types into the search box (or, away from the search page, submits the search
form's request directly, since the benchmark lets agents search from any page). The text
observation is read from the browser's DOM with the benchmark's visible-text rule;
``obs["image"]`` is a screenshot. A browser that crashed is started again and reopens the
session's current page (the shop state lives server-side).
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import threading
import urllib.parse
from typing import Any, ClassVar

import numpy as np
from PIL import Image

from seed_envs.core import TaskStart, Transition
from seed_envs.webshop.app import ShopServer, create_app
from seed_envs.webshop.env import WebShopEnv
from seed_envs.webshop.html_text import html_nodes
from seed_envs.webshop.render import nodes_to_rich_text, nodes_to_text

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROME_FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
    "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1024,768",
)  # fmt: skip
_SERVERS: dict[tuple[int, str, bool, str], tuple[Any, Any, str]] = {}
_SERVERS_LOCK = threading.Lock()


def browser_available() -> str | None:
    """None if the browser env can run here, else the reason it cannot."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(path):
            return f"{path} not found (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install 'seed-agentic-rl[webshop]')"
    return None


def server_key(data: Any, engine: Any, show_attrs: bool, type_matcher: Any) -> tuple[int, str, bool, str]:
    """What makes two sites differ: the catalog, the search back end, ``show_attrs``, the type matcher."""
    return id(data), engine.name, bool(show_attrs), type_matcher.name


def shared_server(data: Any, engine: Any, show_attrs: bool, type_matcher: Any) -> tuple[Any, str]:
    """``(ShopServer, base URL)`` for a catalog and site settings, started once per process."""
    from werkzeug.serving import make_server  # comes with flask (the webshop extra)

    key = server_key(data, engine, show_attrs, type_matcher)
    with _SERVERS_LOCK:
        if key not in _SERVERS:  # the entry keeps ``data`` alive, so its id cannot be reused
            shop = ShopServer(data, engine, show_attrs=show_attrs, type_matcher=type_matcher)
            http = make_server("127.0.0.1", 0, create_app(shop), threaded=True)
            threading.Thread(target=http.serve_forever, name="webshop-site", daemon=True).start()
            _SERVERS[key] = (data, shop, f"http://127.0.0.1:{http.server_port}")
        _, shop, url = _SERVERS[key]
        return shop, url


class WebShopBrowserEnv(WebShopEnv):
    """WebShop in a real headless browser; observations are text plus a screenshot."""

    image_shape: ClassVar[tuple[int, int]] = (384, 512)
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(self, split: str = "train", observation_mode: str = "text", **kwargs: Any) -> None:
        reason = browser_available()
        if reason is not None:
            raise RuntimeError(f"WebShopBrowser-v0 cannot run: {reason}")
        super().__init__(split, observation_mode, **kwargs)
        self.shop, self.base_url = shared_server(self.data, self.engine, self.show_attrs, self.type_matcher)
        self.driver: Any = None
        self._process_group: int | None = None
        self.restarts = 0
        self._session_id = f"browser-{id(self):x}"
        self._frame = np.zeros((*self.image_shape, 3), dtype=np.uint8)

    # --------------------------------------------------------------- browser
    def _start_browser(self) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        os.environ.setdefault("SE_AVOID_STATS", "true")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in CHROME_FLAGS:
            options.add_argument(flag)
        # chromedriver starts in a session of its own, and Chromium inherits its process group,
        # so the whole tree can be ended even after chromedriver itself has died.
        service = Service(CHROMEDRIVER, popen_kw={"start_new_session": True})
        self.driver = webdriver.Chrome(service=service, options=options)
        self._process_group = self.driver.service.process.pid
        self.driver.set_page_load_timeout(30)

    def _browse(self, operation) -> None:
        """Run ``operation(driver)``; if the browser died, restart it and reopen the page."""
        from selenium.common.exceptions import WebDriverException
        from urllib3.exceptions import HTTPError

        for attempt in range(2):
            try:
                if self.driver is None:
                    self._start_browser()
                    if attempt:
                        self.driver.get(f"{self.base_url}/{self._session_id}")
                operation(self.driver)
                return
            except (WebDriverException, HTTPError, ConnectionError):  # the browser or its driver died
                if attempt:
                    raise
                self.restarts += 1
                self._quit_driver()

    def _quit_driver(self) -> None:
        if self.driver is not None:
            with contextlib.suppress(Exception):
                self.driver.quit()
        if self._process_group is not None:  # whatever quit() left behind (a dead driver's browser)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process_group, signal.SIGKILL)
        self.driver = None
        self._process_group = None

    def _navigate(self, url: str) -> None:
        self._browse(lambda driver: driver.get(url))

    def _click(self, name: str, kind: str) -> None:
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions
        from selenium.webdriver.support.ui import WebDriverWait

        def operation(driver) -> None:
            if kind == "option":
                candidates = driver.find_elements(By.CSS_SELECTOR, "input[type=radio]")
                element = next(e for e in reversed(candidates) if e.get_attribute("value") == name)
            elif kind == "link":
                element = next(e for e in driver.find_elements(By.CSS_SELECTOR, "a.product-link")
                               if e.text.strip().lower() == name)  # fmt: skip
            else:
                element = next(e for e in driver.find_elements(By.TAG_NAME, "button")
                               if e.text.strip().lower() == name)  # fmt: skip
            page = driver.find_element(By.TAG_NAME, "html")
            driver.execute_script("arguments[0].click();", element)
            WebDriverWait(driver, 15).until(expected_conditions.staleness_of(page))

        self._browse(operation)

    def _search(self, keywords: str) -> None:
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions
        from selenium.webdriver.support.ui import WebDriverWait

        def operation(driver) -> None:
            boxes = driver.find_elements(By.ID, "search_input")
            if not boxes:
                query = urllib.parse.urlencode({"search_query": keywords})
                driver.get(f"{self.base_url}/{self._session_id}/act?{query}")
                return
            page = driver.find_element(By.TAG_NAME, "html")
            driver.execute_script("arguments[0].value = arguments[1]; arguments[0].form.submit();", boxes[0], keywords)
            WebDriverWait(driver, 15).until(expected_conditions.staleness_of(page))

        self._browse(operation)

    def _read_page(self) -> str:
        source: list[str] = []

        def operation(driver) -> None:
            source.append(driver.page_source)
            png = driver.get_screenshot_as_png()
            image = Image.open(io.BytesIO(png)).convert("RGB").resize(self.image_shape[::-1])
            self._frame = np.asarray(image, dtype=np.uint8)

        self._browse(operation)
        nodes = html_nodes(source[-1])
        if self.observation_mode == "text":
            return nodes_to_text(nodes)
        if self.observation_mode == "text_rich":
            assert self.session is not None
            return nodes_to_rich_text(nodes, self.session.url, self.session.asins)
        return source[-1]

    # ------------------------------------------------------------------ env
    def _start_task(self, task_id: str, rng: np.random.Generator) -> TaskStart:
        start = super()._start_task(task_id, rng)
        assert self.session is not None
        goal_index = start.extra_info["goal_index"]
        seed = int(rng.integers(2**31))
        self._navigate(f"{self.base_url}/{self._session_id}?goal={goal_index}&seed={seed}")
        self.session = self.shop.sessions[self._session_id]  # the site started it
        start.text = self._read_page()
        return start

    def _play(self, action: str) -> Transition:
        assert self.session is not None
        move = self.session.classify(action)
        if move.kind == "search":
            self._search(move.argument)
        elif move.kind == "click":
            assert move.clickable is not None
            self._click(move.argument, move.clickable.kind)
        else:  # the page is unchanged, so the last text and screenshot still show it
            return Transition(text=self._text, action_valid=False,
                              extra_info=self._extra({"invalid_reason": move.reason}))  # fmt: skip
        text = self._read_page()
        if self.session.kind == "done" and self.session.purchase is not None:
            return self._purchase_transition(text)
        return Transition(text=text, extra_info=self._extra({"restarts": self.restarts}))

    def _image(self) -> np.ndarray:
        return self._frame.copy()  # a fresh array per observation: callers may keep or modify it

    def close(self) -> None:
        self._quit_driver()
        super().close()
