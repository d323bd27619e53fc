"""WebShop phrasing: search, open the matching result, choose the asked options, buy."""

from __future__ import annotations

import re
from collections.abc import Sequence

from seed_agent.skills.annotate.base import INVALID, Context, Divergence, Phrasing, fold, short
from seed_agent.trajectory import StepRecord

_CLICK = re.compile(r"click\[(.*)\]", re.IGNORECASE | re.DOTALL)
_SEARCH = re.compile(r"search\[(.*)\]", re.IGNORECASE | re.DOTALL)
_ASIN = re.compile(r"b0[0-9a-z]{8}")
_BUTTONS = frozenset(
    {"buy now", "next >", "< prev", "back to search", "description", "features", "reviews", "attributes"}
)
_PRICE = re.compile(r"price lower than ([0-9.,]+) dollars", re.IGNORECASE)
_WANT = re.compile(
    r"^(find me|i need|i want|i'm looking for|i am looking for|get me|buy me|looking for)\s+", re.IGNORECASE
)


def _fields(text: str) -> list[str]:
    return [field.strip() for field in text.split("[SEP]")]


def _page(text: str) -> str:
    fields = _fields(text)
    if "Thank you for shopping" in text:
        return "done"
    if "Buy Now" in fields:
        return "item"
    return "results" if any(f.startswith("Page ") and "Total results" in f for f in fields) else "search"


class WebShopPhrasing(Phrasing):
    """Shop from an instruction: search[...], click a result, click options, click[buy now]."""

    def expected(self, step: StepRecord, recorded: str | None, from_plan: str | None) -> str | None:
        """The initial plan first: WebShop's expert plan always starts with a search (legal on
        every page), so a recorded expert action is a fresh search even for an agent on the plan."""
        return from_plan if from_plan is not None else recorded

    def goal(self, ctx: Context) -> str:
        want = fold(ctx.trajectory.task)
        price = _PRICE.search(want)
        want = _WANT.sub("", re.split(r",?\s*and price lower than", want, flags=re.IGNORECASE)[0]).rstrip(" ,.")
        return f"buy {short(want, 14)}" + (f" under {price.group(1)} dollars" if price else "")

    def title(self, ctx: Context, number: int | None, asin: str) -> str:
        pages = [ctx.step(number).observation] if number else []
        pages += [s.observation for s in ctx.trajectory.steps]
        for page in pages:
            fields = _fields(page)
            for i, field in enumerate(fields[:-1]):
                if field.lower() == asin:
                    return fields[i + 1]
        return ""

    def describe(self, ctx: Context, number: int | None, action: str | None) -> str:
        text = fold(action)
        search, click = _SEARCH.fullmatch(text), _CLICK.fullmatch(text)
        if search:
            return f"search[{short(search.group(1), 10)}]"
        if click and _ASIN.fullmatch(click.group(1).lower()):
            title = self.title(ctx, number, click.group(1).lower())
            return f"click the '{short(title, 6)}' result" if title else f"click[{click.group(1).lower()}]"
        return f"click[{click.group(1).lower()}]" if click else short(text, 10)

    def sign(self, ctx: Context, number: int) -> str:
        text = ctx.step(number).observation
        page, fields = _page(text), _fields(text)
        if page == "results":
            titles = [fields[i + 1] for i, f in enumerate(fields[:-1]) if _ASIN.fullmatch(f.lower())][:2]
            shown = " and ".join(f"'{short(t, 5)}'" for t in titles)
            return f"the results page lists {shown}" if titles else "the search returned no results"
        if page == "item":
            price = next((f for f in fields if f.startswith("Price:")), "")
            title = fields[fields.index(price) - 1] if price else ""
            return f"you are on the page of '{short(title, 6)}' ({price.lower() or 'no price'})"
        return "the purchase is done" if page == "done" else "you are on the search page"

    def options(self, ctx: Context, actions: Sequence[str]) -> list[str]:
        clicks = [_CLICK.fullmatch(fold(a)) for a in actions]
        names = [m.group(1).lower() for m in clicks if m]
        return [n for n in names if n not in _BUTTONS and not _ASIN.fullmatch(n)]

    def workflow(self, ctx: Context) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
        parts, keys = [], []
        for number, step in ctx.valid_steps():
            action, text = self.describe(ctx, number, step.action), fold(step.action).lower()
            if action.startswith("search["):
                parts.append(f"search with the instruction's key words ({action})")
                keys.append((number, "Search with the product type and key attributes from the instruction."))
            elif _ASIN.fullmatch(text[6:-1]):
                title = self.title(ctx, number, text[6:-1])
                parts.append(
                    f"open the matching result ('{short(title, 6)}')"
                    if title
                    else f"open the matching result ({action})"
                )
            elif text == "click[next >]" and "use click[next >] until a result matches" not in parts:
                parts.append("use click[next >] until a result matches")
        options = self.options(ctx, [s.action or "" for _, s in ctx.valid_steps()])
        if options:
            parts.append(f"click each option the instruction asks for ({', '.join(options)})")
            keys += [
                (n, f"Click {o} here: the instruction asks for it.")
                for n, s in ctx.valid_steps()
                for o in self.options(ctx, [s.action or ""])
            ]
        parts.append("check the price is within the limit, then click[buy now]")
        sentences = [
            (0, f"To {self.goal(ctx)}: {', '.join(parts)}."),
            (1, "Choose only the options the instruction names, and open no product that does not match it."),
        ]
        return sentences, keys[:3]

    def rules(self, ctx: Context, d: Divergence) -> list[str]:
        did, expected = fold(d.action).lower(), fold(d.expert_action).lower()
        wanted = self.options(ctx, ctx.plan) or self.options(ctx, [expected])
        out = []
        if d.kind == INVALID:
            out.append("Click only what the current page shows; search[...] works only on the search page.")
        if did == "click[buy now]" and wanted:
            out.append(
                f"Do not click[buy now] before you click every option the instruction asks for ({', '.join(wanted)})."
            )
        elif _ASIN.fullmatch(did[6:-1]):
            out.append("Open only a result whose title matches the product in the instruction, within its price.")
        elif did.startswith("search["):
            template = " Fill in the query; never send search[<query>] as it is." if "<query>" in did else ""
            out.append("Search with the product type and key attributes from the instruction." + template)
        elif _CLICK.fullmatch(did) and _CLICK.fullmatch(did).group(1) in _BUTTONS - {"buy now"}:
            out.append(f"Do not browse away with {did} while what you need is on this page.")
        return out
