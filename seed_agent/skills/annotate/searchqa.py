"""Search QA phrasing: search the entity and relation, read the passages, answer with the span."""

from __future__ import annotations

import re

from seed_agent.skills.annotate.base import INVALID, Context, Divergence, Phrasing, fold, quoted, short

_TURN = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)
_DOC_TITLE = re.compile(r"Doc \d+\(Title: \"?([^\")]*)\"?\)")


def _turn(action: str | None) -> tuple[str, str] | None:
    match = _TURN.search(action or "")
    return (match.group(1), fold(match.group(2))) if match else None


class SearchQAPhrasing(Phrasing):
    """Answer a question with <search> query </search> turns, then <answer> span </answer>."""

    def canonical(self, action: str | None) -> str:
        turn = _turn(action)
        return f"<{turn[0]}> {turn[1].lower()} </{turn[0]}>" if turn else super().canonical(action)

    def goal(self, ctx: Context) -> str:
        return f"answer '{short(ctx.trajectory.task, 14)}'"

    def describe(self, ctx: Context, number: int | None, action: str | None) -> str:
        turn = _turn(action)
        return f"<{turn[0]}> {short(turn[1], 10)} </{turn[0]}>" if turn else short(fold(action), 8)

    def invalid(self, ctx: Context, action: str | None) -> str:
        return (
            f"Never send a turn without a tag: {quoted(self.literal(action))} is neither <search> query "
            "</search> nor <answer> answer </answer>."
        )

    def gold(self, ctx: Context, d: Divergence | None = None) -> str:
        candidates = [d.expert_action] if d and d.expert_action else []
        turns = [_turn(a) for a in [*candidates, *ctx.expected[::-1], *ctx.plan[::-1]] if a]
        return next((text for kind, text in filter(None, turns) if kind == "answer"), "")

    def sign(self, ctx: Context, number: int) -> str:
        if number == 1:
            return "you have not searched yet"
        read = " ".join(s.observation for s in ctx.trajectory.steps[1:number])
        gold = self.gold(ctx)
        if gold and gold.lower() in read.lower():
            return f"the passages you read name '{short(gold, 8)}'"
        titles = list(dict.fromkeys(_DOC_TITLE.findall(ctx.step(number).observation)))[:3]
        if titles:
            return f"the last search returned passages on {', '.join(titles)}, none naming the answer"
        return "the last turn returned no passages"

    def workflow(self, ctx: Context) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
        turns = [(n, _turn(s.action)) for n, s in ctx.valid_steps()]
        searches = [f"<search> {short(t[1], 10)} </search>" for _, t in turns if t and t[0] == "search"]
        answers = [(n, t[1]) for n, t in turns if t and t[0] == "answer"]
        answer = f"<answer> {short(answers[-1][1], 10)} </answer>" if answers else "<answer> ... </answer>"
        how = (
            "search the named entity with the relation asked"
            if len(searches) < 2
            else "search one hop at a time, the entity with the relation asked"
        )
        found = f" ({'; '.join(searches)})" if searches else ""
        sentences = [
            (
                0,
                f"To {self.goal(ctx)}: {how}{found}, find the passage that states it, then reply with only "
                f"the answer span ({answer}).",
            ),
            (1, "Copy the answer's exact words from the passage, without explanation."),
        ]
        return sentences, [(n, f"Answer now with the span the passages give: {answer}.") for n, _ in answers[-1:]]

    def rules(self, ctx: Context, d: Divergence) -> list[str]:
        did, expected = _turn(d.action), _turn(d.expert_action)
        did_kind, expected_kind = did[0] if did else "", expected[0] if expected else ""
        if d.kind == INVALID or not did:
            return ["A turn without a tag is wasted, and the turns are few."]
        if did_kind == "answer" and expected_kind != "answer":
            return ["Do not answer before a passage you have read states the answer; search first."]
        if did_kind == "answer":
            return [
                "Answer only with a span that a passage you read states; if none does, search again with "
                "the entity and the relation."
            ]
        if expected_kind == "answer":
            return ["Once a passage states the answer, give it at once: the turns are few."]
        return ["Search with the named entity and the relation the question asks about."]
