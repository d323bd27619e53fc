"""The shop's navigation rules: one shopping session, page by page.

This is the benchmark's site logic. A session starts on the search page. Its state is the
search keywords, the results page number, the product being viewed, the options chosen,
and the set of products visited; each page has *clickables* (button texts, product ASINs,
option values, all lower-case). The benchmark decides which page a click leads to partly
by looking at the current page's URL, so the session keeps the same URLs.

Actions (read by ``Session.classify``, applied by ``Session.act``): the action is split as
``name[arg]`` by the regular expression ``(.+)\\[(.+)\\]`` (greedy, no newlines); ``arg`` is
lower-cased. ``search[...]`` with a non-empty argument searches from any page; ``click[x]``
works when ``x`` is a clickable of the current page other than ``search``; anything else is
invalid and changes nothing.

Search keywords are the argument split on single spaces. Keywords starting with ``<r>``,
``<a>``, ``<c>`` or ``<q>`` are the benchmark's shortcuts: 50 random products (drawn from the
session's own RNG), products with an attribute, products of a category, products of a query.
Otherwise the search engine returns the top 50. Results show 10 per page.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

from seed_envs.webshop.reward import PurchaseReward, purchase_reward
from seed_envs.webshop.search import SEARCH_RETURN_N

BASE_URL = "http://127.0.0.1:3000"
PRODUCT_WINDOW = 10
BUY_NOW = "Buy Now"
NEXT_PAGE = "Next >"
PREV_PAGE = "< Prev"
BACK_TO_SEARCH = "Back to Search"
SUB_PAGES = ("Description", "Features", "Reviews", "Attributes")
PAGE_NAMES = ("search_results", "item_page", "item_sub_page", "done")
_ACTION = re.compile(r"(.+)\[(.+)\]")


def parse_action(action: str) -> tuple[str, str | None]:
    """``(name, argument)`` of ``name[argument]``, or ``(action, None)``."""
    match = _ACTION.match(action)
    if match is None:
        return action, None
    return match.group(1), match.group(2)


def page_name(url: str | None) -> str | None:
    """Which page a URL shows: the first of :data:`PAGE_NAMES` it contains, else ``""``."""
    if url is None:
        return None
    return next((name for name in PAGE_NAMES if name in url), "")


@dataclass(frozen=True)
class Clickable:
    """Something clickable on a page: a button, a product link, or an option value."""

    kind: str  # "button" | "link" | "option"
    option_name: str | None = None


@dataclass(frozen=True)
class Move:
    """What an action does on a page: ``search`` (``argument``: the keywords), ``click``
    (``argument``: a clickable of the page, described by ``clickable``) or ``invalid``
    (``reason`` says why)."""

    kind: str  # "search" | "click" | "invalid"
    argument: str = ""
    clickable: Clickable | None = None
    reason: str = ""


@dataclass
class ActResult:
    valid: bool
    reward: float = 0.0
    done: bool = False
    reason: str = ""


@dataclass
class Session:
    """One shopper's visit, towards one goal."""

    data: Any  # WebShopData
    engine: Any  # SearchEngine
    goal: dict[str, Any]
    session_id: str
    rng: random.Random
    show_attrs: bool = False
    type_matcher: Any = "auto"
    url: str = ""
    keywords: list[str] | None = None
    page: int | None = None
    asin: str | None = None
    asins: set[str] = field(default_factory=set)
    options: dict[str, str] = field(default_factory=dict)
    sub_page: str | None = None
    results: list[dict[str, Any]] = field(default_factory=list)
    total: int = 0
    purchase: PurchaseReward | None = None

    def __post_init__(self) -> None:
        self.go_home()

    # ------------------------------------------------------------------ pages
    @property
    def kind(self) -> str:
        """The page shown: ``index``, ``search_results``, ``item_page``, ``item_sub_page`` or ``done``."""
        return page_name(self.url) or "index"

    @property
    def instruction(self) -> str:
        return self.goal["instruction_text"]

    @property
    def product(self) -> dict[str, Any] | None:
        return self.data.product_by_asin.get(self.asin) if self.asin else None

    def go_home(self) -> None:
        self.url = f"{BASE_URL}/{self.session_id}"
        self.keywords, self.page, self.asin, self.sub_page = None, None, None, None
        self.asins, self.options = set(), {}

    def show_results(self, keywords: list[str], page: int) -> None:
        self.keywords, self.page, self.asin, self.options = keywords, page, None, {}
        found = self.top_products(keywords)
        self.total = len(found)
        self.results = found[(page - 1) * PRODUCT_WINDOW : page * PRODUCT_WINDOW]
        self.url = f"{BASE_URL}/search_results/{self.session_id}/{'+'.join(keywords)}/{page}"

    def show_item(self) -> None:
        self.url = (
            f"{BASE_URL}/item_page/{self.session_id}/{self.asin}/{'+'.join(self.keywords or [])}/"
            f"{self.page}/{json.dumps(self.options)}"
        )

    def show_sub_page(self, name: str) -> None:
        self.sub_page = next((p for p in SUB_PAGES if p.lower() == name.lower()), name)
        self.url = (
            f"{BASE_URL}/item_sub_page/{self.session_id}/{self.asin}/{'+'.join(self.keywords or [])}/"
            f"{self.page}/{self.sub_page}/{self.options}"
        )

    def buy(self) -> float:
        product = self.data.product_by_asin[self.asin]
        self.purchase = purchase_reward(
            self.goal, product, self.options, self.data.prices.get(self.asin), type_matcher=self.type_matcher
        )
        self.url = f"{BASE_URL}/done/{self.session_id}/{self.asin}/{self.options}"
        return self.purchase.reward

    # ----------------------------------------------------------------- search
    def top_products(self, keywords: list[str]) -> list[dict[str, Any]]:
        data = self.data
        head = keywords[0] if keywords else ""
        rest = keywords[1:]
        if head == "<r>":
            return self.rng.sample(data.products, k=min(SEARCH_RETURN_N, len(data.products)))
        if head == "<a>":
            wanted = data.attribute_to_asins.get(" ".join(rest).strip(), set())
            return [p for p in data.products if p["asin"] in wanted]
        if head == "<c>":
            category = rest[0].strip() if rest else ""
            return [p for p in data.products if p["category"] == category]
        if head == "<q>":
            query = " ".join(rest).strip()
            return [p for p in data.products if p["query"] == query]
        asins = self.engine.search(" ".join(keywords), k=SEARCH_RETURN_N)
        return [data.product_by_asin[a] for a in asins if a in data.product_by_asin]

    # -------------------------------------------------------------- clickables
    def clickables(self) -> dict[str, Clickable]:
        """The current page's clickables, keyed by lower-case text, in page order."""
        kind = self.kind
        found: dict[str, Clickable] = {}
        button = Clickable("button")
        if kind == "index":
            found["search"] = button
        elif kind == "search_results":
            found[BACK_TO_SEARCH.lower()] = button
            if (self.page or 0) > 1:
                found[PREV_PAGE.lower()] = button
            found[NEXT_PAGE.lower()] = button
            for product in self.results:
                found[str(product["asin"]).lower()] = Clickable("link")
        elif kind == "item_page":
            for text in (BACK_TO_SEARCH, PREV_PAGE, *self.item_buttons(), BUY_NOW):
                found[text.lower()] = button
            product = self.product or {}
            for name, values in product.get("options", {}).items():
                for value in values:
                    found[value] = Clickable("option", name)
        elif kind == "item_sub_page":
            found[BACK_TO_SEARCH.lower()] = button
            found[PREV_PAGE.lower()] = button
        return found

    def item_buttons(self) -> tuple[str, ...]:
        return SUB_PAGES if self.show_attrs else SUB_PAGES[:3]

    # ----------------------------------------------------------------- acting
    def classify(self, action: str) -> Move:
        """What ``action`` would do on the current page (changes nothing); see the module docstring."""
        name, argument = parse_action(action)
        if argument is not None:
            argument = argument.lower()
        if name == "search" and argument:
            return Move("search", argument)
        if name == "click" and argument is not None and argument != "search":
            clickable = self.clickables().get(argument)
            if clickable is not None:
                return Move("click", argument, clickable)
            return Move("invalid", reason=f"{argument!r} is not clickable on this page")
        if name == "click":
            return Move("invalid", reason="click[...] needs a clickable name")
        return Move("invalid", reason="actions are search[keywords] or click[name]")

    def act(self, action: str) -> ActResult:
        """Apply one action string, as the benchmark's text env does."""
        move = self.classify(action)
        if move.kind == "search":
            self.show_results(move.argument.split(" "), 1)
            return ActResult(True)
        if move.kind == "click":
            assert move.clickable is not None
            return self.click(move.argument, move.clickable)
        return ActResult(False, reason=move.reason)

    def click(self, name: str, clickable: Clickable) -> ActResult:
        kind = self.kind
        if name == BUY_NOW.lower():
            if self.asin not in self.data.product_by_asin:
                return ActResult(False, reason="no product to buy")
            return ActResult(True, reward=self.buy(), done=True)
        if name == BACK_TO_SEARCH.lower():
            self.go_home()
        elif name == NEXT_PAGE.lower() and kind == "search_results":
            self.show_results(self.keywords or [], (self.page or 0) + 1)
        elif name == PREV_PAGE.lower() and kind == "search_results":
            self.show_results(self.keywords or [], (self.page or 0) - 1)
        elif name == PREV_PAGE.lower() and kind == "item_sub_page":
            self.show_item()
        elif name == PREV_PAGE.lower() and kind == "item_page":
            self.show_results(self.keywords or [], self.page or 0)
        elif name in (p.lower() for p in SUB_PAGES):
            self.show_sub_page(name)
        else:
            if clickable.kind == "link":
                self.asin = name.upper()
                self.asins.add(self.asin)
            elif clickable.kind == "option":
                self.options[str(clickable.option_name).lower()] = name
            if self.asin not in self.data.product_by_asin:
                return ActResult(False, reason="no product is open")
            self.show_item()
        return ActResult(True)
