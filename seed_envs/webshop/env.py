"""``seed/WebShop-v0``: the WebShop site as a text env.

Each task is one goal of the benchmark's goal list. The agent starts on the search page and
acts with ``search[keywords]`` and ``click[name]`` (see :mod:`seed_envs.webshop.site`);
``click[buy now]`` ends the episode with the benchmark's reward. Invalid actions change
nothing and give reward 0, as in the benchmark; ``info["action_valid"]`` is False and
``info["invalid_reason"]`` says why (``invalid_feedback=True`` also puts it in the text).

Splits: goals 0-499 are the benchmark's test set and the rest are for training. Real data has
no unseen split, so ``valid_seen`` and ``valid_unseen`` both are goals 0-499 there. A
generated catalog holds some product types and attribute combinations out: their goals form
``valid_unseen`` and appear in no other split.

Every env of a process shares one catalog and one search index (loaded on first use).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from seed_envs.extras import require_extra

require_extra("webshop", "rapidfuzz", "bm25s", "Stemmer", "jinja2", what="seed/WebShop-v0")

from seed_envs.core import (  # noqa: E402
    Observation,
    SeedEnv,
    TaskStart,
    Transition,
    check_split,
    indexed_task_id,
    parse_indexed_task_id,
)
from seed_envs.webshop.data import TEST_GOALS, WebShopData, shared_data  # noqa: E402
from seed_envs.webshop.nouns import get_type_matcher  # noqa: E402
from seed_envs.webshop.render import OBSERVATION_MODES, options_json, render  # noqa: E402
from seed_envs.webshop.reward import fuzzy_token_set_ratio  # noqa: E402
from seed_envs.webshop.search import shared_engine  # noqa: E402
from seed_envs.webshop.site import Session  # noqa: E402

SEARCH_TEMPLATE = "search[<query>]"
TASK_PREFIX = "webshop"


def goal_splits(data: WebShopData) -> dict[str, list[int]]:
    """Goal indices of each split (see the module docstring)."""
    count = len(data.goals)
    unseen_asins = set(data.meta.get("unseen_asins", ()))
    if not unseen_asins:
        test = list(range(min(TEST_GOALS, count)))
        return {"train": list(range(TEST_GOALS, count)), "valid_seen": test, "valid_unseen": list(test)}
    unseen = [i for i, goal in enumerate(data.goals) if goal["asin"] in unseen_asins]
    held = set(unseen)
    return {
        "train": [i for i in range(TEST_GOALS, count) if i not in held],
        "valid_seen": [i for i in range(min(TEST_GOALS, count)) if i not in held],
        "valid_unseen": unseen,
    }


class WebShopEnv(SeedEnv):
    """The WebShop text env (see the module docstring)."""

    max_text_length = 32_768
    max_action_length = 1_024

    def __init__(
        self,
        split: str = "train",
        observation_mode: str = "text",
        data_dir: str | None = None,
        *,
        seed: int = 0,
        human_goals: bool = False,
        num_products: int | None = None,
        search_backend: str = "bm25s",
        type_matcher: str = "auto",
        show_attrs: bool = False,
        invalid_feedback: bool = False,
        products_file: str | None = None,
        attributes_file: str | None = None,
        human_file: str | None = None,
        render_mode: str | None = None,
    ) -> None:
        if observation_mode not in OBSERVATION_MODES:
            raise ValueError(f"observation_mode must be one of {OBSERVATION_MODES}, not {observation_mode!r}")
        if observation_mode == "html":
            self.max_text_length = 262_144
        super().__init__(split=split, render_mode=render_mode)
        self.observation_mode = observation_mode
        self.data = shared_data(
            data_dir, seed=seed, human_goals=human_goals, num_products=num_products,
            products_file=products_file, attributes_file=attributes_file, human_file=human_file,
        )  # fmt: skip
        self.engine = shared_engine(self.data, search_backend)
        self.type_matcher = get_type_matcher(type_matcher)
        self.show_attrs = show_attrs
        self.invalid_feedback = invalid_feedback
        self.splits = goal_splits(self.data)
        self.session: Session | None = None

    # ----------------------------------------------------------------- tasks
    def task_count(self, split: str) -> int:
        return len(self.splits[check_split(split)])

    def task_id_for(self, split: str, index: int) -> str:
        goals = self.splits[check_split(split)]
        if not goals:
            raise ValueError(f"split {split!r} has no goals in this catalog ({len(self.data.goals)} goals)")
        return indexed_task_id(TASK_PREFIX, split, goals[index])

    def _start_task(self, task_id: str, rng: np.random.Generator) -> TaskStart:
        try:
            split, goal_index = parse_indexed_task_id(task_id, TASK_PREFIX)
            goal = self.data.goals[goal_index]
        except (ValueError, IndexError) as error:
            raise ValueError(f"not a WebShop task id for this catalog: {task_id!r}") from error
        self.session = Session(
            self.data, self.engine, goal, str(goal_index), random.Random(int(rng.integers(2**63))),
            show_attrs=self.show_attrs, type_matcher=self.type_matcher,
        )  # fmt: skip
        return TaskStart(
            text=self._page(),
            task=goal["instruction_text"],
            split=split,
            extra_info=self._extra({"goal_index": goal_index}),
        )

    # ------------------------------------------------------------------ play
    def _play(self, action: str) -> Transition:
        assert self.session is not None
        result = self.session.act(action)
        text = self._page()
        if not result.valid:
            if self.invalid_feedback:
                text = f"Invalid action: {result.reason}.\n\n{text}"
            return Transition(text=text, action_valid=False, extra_info=self._extra({"invalid_reason": result.reason}))
        if result.done:
            return self._purchase_transition(text)
        return Transition(text=text, extra_info=self._extra({}))

    def _purchase_transition(self, text: str) -> Transition:
        """The episode's last step, after ``click[buy now]``: the purchase's reward and what was bought."""
        assert self.session is not None and self.session.purchase is not None
        purchase = self.session.purchase
        return Transition(
            text=text, reward=purchase.reward, terminated=True, won=purchase.reward == 1.0,
            score=purchase.reward,
            extra_info=self._extra({"reward_parts": purchase.parts, "purchased_asin": self.session.asin,
                                    "purchased_options": dict(self.session.options)}),
        )  # fmt: skip

    def _anchor(self, obs: Observation) -> str:
        """The page as the ``text`` mode shows it, plus the options chosen (which that text does not
        show, though they decide what ``click[buy now]`` buys), in every observation mode: the
        ``text_rich`` marks of visited products are history, HTML is long, and the browser env's
        screenshot is not needed to tell pages apart. Invalid actions change neither."""
        assert self.session is not None
        page = render(self.session, "text")
        return f"{page}\nChosen options: {options_json(self.session.options)}" if self.session.options else page

    def _page(self) -> str:
        assert self.session is not None
        return render(self.session, self.observation_mode)

    def _extra(self, extra: dict[str, Any]) -> dict[str, Any]:
        assert self.session is not None
        clickables = list(self.session.clickables())
        extra.update(
            page=self.session.kind,
            type_matcher=self.type_matcher.name,
            webshop_available_actions={
                "has_search_bar": self.session.kind == "index",
                "clickables": clickables,
            },
        )
        return extra

    def _available_actions(self) -> list[str] | None:
        if self.session is None:
            return None
        actions = [SEARCH_TEMPLATE] if self.session.kind == "index" else []
        actions += [f"click[{name}]" for name in self.session.clickables() if name != "search"]
        return actions

    # ---------------------------------------------------------------- expert
    def expert_plan(self) -> list[str] | None:
        """From the current page: search for the goal's product by title, open it, pick the goal's
        options, buy. On the goal product's page it only picks the options still missing and buys;
        on a results page that lists the product it opens it; elsewhere it searches again.

        None when the episode is over or the product is not in the top 50 for its title.
        """
        session = self.session
        if session is None or session.kind == "done":
            return None
        goal = session.goal
        product = self.data.product_by_asin[goal["asin"]]
        asin = goal["asin"].lower()
        options = self._option_values(goal, product)
        if session.kind == "item_page" and (session.asin or "").lower() == asin:
            chosen = set(session.options.values())
            return [f"click[{v}]" for v in options if v not in chosen] + ["click[buy now]"]
        if session.kind == "search_results" and any(str(p["asin"]).lower() == asin for p in session.results):
            return [f"click[{asin}]"] + [f"click[{v}]" for v in options] + ["click[buy now]"]
        query = " ".join(str(product["Title"]).lower().replace("[", " ").replace("]", " ").split())
        found = self.engine.search(query)
        if goal["asin"] not in found or not query:
            return None
        position = found.index(goal["asin"])
        plan = [f"search[{query}]"] + ["click[next >]"] * (position // 10) + [f"click[{asin}]"]
        plan += [f"click[{value}]" for value in options]
        plan.append("click[buy now]")
        return plan

    @staticmethod
    def _option_values(goal: dict[str, Any], product: dict[str, Any]) -> list[str]:
        wanted = goal["goal_options"]
        if isinstance(wanted, dict):
            return [value for value in wanted.values() if "[" not in value and "]" not in value]
        values = [v for vs in product["options"].values() for v in vs]
        chosen = []
        for option in wanted:
            best = max(values, key=lambda v: fuzzy_token_set_ratio(v, option), default=None)
            if best is not None and fuzzy_token_set_ratio(best, option) > 85:
                chosen.append(best)
        return chosen
