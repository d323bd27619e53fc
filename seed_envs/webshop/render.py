"""What a page shows: the same visible text in three observation modes.

A page is a sequence of text *nodes*, each with a role: ``text``, ``button``, ``label``
(an option value) or ``link`` (a product ASIN). The benchmark derives its text modes from
the HTML's visible text nodes, after the HTML parser collapsed whitespace-only nodes to
``"\\n"`` (if they contain a newline) or ``" "``:

- ``text``: every node but ``"\\n"`` ones, stripped, joined with ``" [SEP] "``;
- ``text_rich``: one line per node: ``[button] X [button_]`` for buttons; option labels
  indented as ``  [button] X [button_]``, or ``  [clicked button] X [clicked button_]`` when
  the option is chosen (then the text starts with ``You have clicked X.``); product links on
  a new line, ``[clicked button]`` once the product was visited; other text as is;
- ``html``: the page's HTML (our own templates; their visible text is exactly these nodes).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from seed_envs.webshop.site import BACK_TO_SEARCH, BUY_NOW, NEXT_PAGE, PREV_PAGE, Session

Node = tuple[str, str]  # (text, role)
OBSERVATION_MODES = ("text", "text_rich", "html")
SEP = " [SEP] "


_ASCII_SPACES = str.maketrans("", "", " \n\t\x0c\r")


def collapse_whitespace(text: str) -> str:
    """The HTML parser's rule for text made only of ASCII whitespace: ``"\\n"`` or ``" "``."""
    if text.translate(_ASCII_SPACES):
        return text
    return "\n" if "\n" in text else " "


def page_nodes(session: Session) -> list[Node]:
    """The visible text nodes of the session's current page, in order (``"\\n"`` nodes dropped)."""
    kind = session.kind
    nodes: list[Node] = []
    add = nodes.append
    instruction = str(session.instruction)
    if kind == "index":
        add(("WebShop", "text"))
        add(("Instruction: ", "text"))
        add((instruction, "text"))
        add(("Search", "button"))
    elif kind == "done":
        nodes.extend(_done_nodes(session))
    else:
        add(("Instruction:", "text"))
        add((instruction, "text"))
        add((BACK_TO_SEARCH, "button"))
        if kind == "search_results":
            add((f"Page {session.page} (Total results: {session.total})", "text"))
            if (session.page or 0) > 1:
                add((PREV_PAGE, "button"))
            add((NEXT_PAGE, "button"))
            for product in session.results:
                add((str(product["asin"]), "link"))
                add((str(product["Title"]), "text"))
                add((str(product["Price"]), "text"))
        else:
            add((PREV_PAGE, "button"))
            nodes.extend(_item_nodes(session) if kind == "item_page" else _sub_page_nodes(session))
    collapsed = ((collapse_whitespace(text), role) for text, role in nodes if text != "")
    return [(text, role) for text, role in collapsed if text != "\n"]


def _item_nodes(session: Session) -> Iterable[Node]:
    product = session.product or {}
    for name, values in product.get("options", {}).items():
        yield str(name), "text"
        for value in values:
            yield str(value), "label"
    yield str(product.get("Title")), "text"
    yield f"Price: {product.get('Price')}", "text"
    yield f"Rating: {product.get('Rating')}", "text"
    for text in session.item_buttons():
        yield text, "button"
    yield BUY_NOW, "button"


def _sub_page_nodes(session: Session) -> Iterable[Node]:
    product = session.product or {}
    page = session.sub_page
    if page == "Description":
        yield str(product.get("Description")), "text"
    elif page == "Features":
        for bullet in product.get("BulletPoints", []):
            yield f" {bullet}", "text"
    elif page == "Reviews":
        for review in product.get("Reviews", []):
            yield f'"{review.get("title")}"', "text"
            yield str(review.get("score")), "text"
            yield str(review.get("body")), "text"
    elif page == "Attributes":
        for attribute in product.get("Attributes", []):
            yield f" {attribute}", "text"
        for key in ("category", "query", "product_category"):
            yield str(product.get(key)), "text"


def options_json(options: dict[str, str]) -> str:
    """Options as the done page prints them (sorted keys, HTML-safe JSON escapes)."""
    text = json.dumps(options, sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("'", "\\u0027")


def _done_nodes(session: Session) -> Iterable[Node]:
    reward = session.purchase.reward if session.purchase else 0.0
    fixed_before = [
        "Thank you for shopping with us!",
        "Your code: ",
        "None",
        " (Paste it in your MTurk interface.)",
    ]
    yield from ((t, "text") for t in fixed_before)
    yield from ((t, "text") for t in ("Purchased", "asin", str(session.asin), "options", options_json(session.options)))
    for label in ("attrs", "category", "query", "product category"):
        yield label, "text"
        yield "None", "text"
    for label in ("Target", "asin", "options", "attrs", "price upper", "instuction text", "category"):
        yield label, "text"
    yield from ((t, "text") for t in ("product category", "query", "Goal ", "None", "Reward"))
    yield from ((t, "text") for t in ("Your score (min 0.0, max 1.0)", str(reward), "Reward Details ", "None"))


def nodes_to_text(nodes: Iterable[Node]) -> str:
    """The ``text`` mode."""
    return SEP.join(text.strip() for text, _ in nodes if text != "\n")


def nodes_to_rich_text(nodes: Iterable[Node], url: str, visited: set[str]) -> str:
    """The ``text_rich`` mode (``url`` tells which options are chosen)."""
    observation = ""
    for text, role in nodes:
        if text == "\n":
            continue
        if role == "button":
            shown = f"[button] {text} [button_]"
        elif role == "label":
            if f'"{text}"' in url:
                shown = f"  [clicked button] {text} [clicked button_]"
                observation = f"You have clicked {text}.\n" + observation
            else:
                shown = f"  [button] {text} [button_]"
        elif role == "link":
            marker = "clicked button" if text in visited else "button"
            shown = f"\n[{marker}] {text} [{marker}_]"
        else:
            shown = text
        observation += shown + "\n"
    return observation


@lru_cache(maxsize=1)
def _templates():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("seed_envs.webshop", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_html(session: Session, action_url: str = "act", static_url: str = "static") -> str:
    """The page as HTML; forms post ``click[...]``/``search[...]`` to ``action_url``."""
    product = session.product or {}
    context: dict[str, Any] = {
        "s": session,
        "kind": session.kind,
        "instruction": str(session.instruction),
        "product": product,
        "action_url": action_url,
        "static_url": static_url,
        "reward": session.purchase.reward if session.purchase else 0.0,
        "options_json": options_json(session.options),
        "sub_page_nodes": list(_sub_page_nodes(session)) if session.kind == "item_sub_page" else [],
    }
    return _templates().get_template(f"{session.kind}.html").render(**context)


def render(session: Session, mode: str) -> str:
    """The observation of the session's page in ``mode`` (see :data:`OBSERVATION_MODES`)."""
    if mode == "html":
        return render_html(session)
    nodes = page_nodes(session)
    if mode == "text":
        return nodes_to_text(nodes)
    if mode == "text_rich":
        return nodes_to_rich_text(nodes, session.url, session.asins)
    raise ValueError(f"unknown observation mode {mode!r}; expected one of {OBSERVATION_MODES}")
