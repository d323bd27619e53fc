"""WebShop prompt (text mode: page elements joined with ``[SEP]``).

Actions are ``search[query]`` where the page has a search bar and ``click[element]``
for a clickable element. Any query is admissible when the env lists a ``search[...]``
action; clicks must name an element the env lists.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from seed_agent.history import HISTORY_LENGTHS
from seed_agent.parsing import match_admissible, normalize_action
from seed_agent.prompts.base import EnvPromptSpec, PromptExample, action_instructions

_PLACEHOLDER = re.compile(r"<[^<>]*>")


def match_webshop_action(action: str, admissible: Sequence[str]) -> str | None:
    """``search[query]`` if the page has a search bar, else an exact (normalised) listed action.

    The query must be real text: ``search[]`` and a query holding a copied placeholder
    (``search[<your query>]``, ``search[search[<query>]]``) are not admissible.
    """
    normalized = normalize_action(action)
    if normalized.startswith("search[") and normalized.endswith("]"):
        query = normalized[len("search[") : -1].strip()
        if not query or _PLACEHOLDER.search(query):
            return None
        if any(normalize_action(a).startswith("search[") for a in admissible):
            return " ".join(action.split()).strip()
        return None
    return match_admissible(action, admissible)


SPEC = EnvPromptSpec(
    name="webshop",
    env_id="seed/WebShop-v0",
    role="You are an expert autonomous agent operating in the WebShop e-commerce platform.",
    action_help=(
        "You act with 'search[your query]' when the page has a search bar, or 'click[element]' to click "
        "one of the listed elements (a product id, an option, 'buy now', 'back to search', 'next >')."
    ),
    example=PromptExample(
        task="i need a long clip-in hair extension which is natural looking, and price lower than 40.00 dollars",
        observation=(
            "WebShop [SEP] Instruction: [SEP] i need a long clip-in hair extension which is natural looking, "
            "and price lower than 40.00 dollars [SEP] Search"
        ),
        available_actions=("search[<your query>]",),
        think="I am on the search page. I will search for the key words of the product I need.",
        action="search[long natural clip-in hair extension]",
    ),
    history_length=HISTORY_LENGTHS["webshop"],
    observation_chars=4000,
    history_observation_chars=600,
    match=match_webshop_action,
    instructions=action_instructions("one admissible action"),
)
