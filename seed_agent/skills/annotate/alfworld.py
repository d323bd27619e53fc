"""ALFWorld phrasing: household tasks (go to places, take, clean/heat/cool, use lamps, move objects)."""

from __future__ import annotations

import re

from seed_agent.skills.annotate.base import Context, Divergence, Phrasing, cap, fold, short

_NUMBER = re.compile(r"\s+\d+\b")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_IDLE = ("look", "inventory", "help", "examine")
_ALF_PATTERNS = {
    "take": re.compile(r"take (.+?) from (.+)"),
    "move": re.compile(r"move (.+?) to (.+)"),
    "clean": re.compile(r"clean (.+?) with (.+)"),
    "heat": re.compile(r"heat (.+?) with (.+)"),
    "cool": re.compile(r"cool (.+?) with (.+)"),
}


def _alf_parts(action: str) -> tuple[str, str, str]:
    """(verb, object, place) of a generalised ALFWorld command; empty where it has none."""
    verb = action.split(" ", 1)[0]
    pattern = _ALF_PATTERNS.get(verb)
    match = pattern.fullmatch(action) if pattern else None
    if match:
        return verb, match.group(1), match.group(2)
    rest = action[6:] if action.startswith("go to ") else action[len(verb) + 1 :]
    return verb, "", rest


class ALFWorldPhrasing(Phrasing):
    """Household tasks: go to places, take, clean/heat/cool, use lamps, move objects."""

    def goal(self, ctx: Context) -> str:
        return fold(ctx.trajectory.task).rstrip(".")

    def describe(self, ctx: Context, number: int | None, action: str | None) -> str:
        return _NUMBER.sub("", fold(action))

    def literal(self, action: str | None) -> str:
        return short(_NUMBER.sub("", fold(action)), 12)

    def holding(self, ctx: Context, number: int) -> str:
        """The object the agent held when it acted at step ``number`` ("" for nothing)."""
        held = ""
        for n, step in ctx.valid_steps():
            if n >= number:
                break
            verb, obj, _ = _alf_parts(self.describe(ctx, n, step.action))
            held = obj if verb == "take" else "" if verb == "move" else held
        return held

    def sign(self, ctx: Context, number: int) -> str:
        text = ctx.step(number).observation.split("Your task is to:")[0]
        text = " ".join(line for line in text.splitlines() if not line.strip().startswith("-="))
        brief = short(" ".join(_SENTENCE_END.split(_NUMBER.sub("", fold(text)))[:2]), 20)
        held = self.holding(ctx, number)
        return f"the observation read '{brief}' and you held {f'the {held}' if held else 'nothing'}"

    def target_object(self, ctx: Context) -> str:
        """The task's object kind: the first taken object named in the task (else the first taken)."""
        actions = [self.describe(ctx, n, s.action) for n, s in ctx.valid_steps()]
        actions += [self.describe(ctx, None, a) for a in ctx.plan]
        taken = [obj for verb, obj, _ in map(_alf_parts, actions) if verb == "take"]
        words = set(re.findall(r"[a-z]+", ctx.trajectory.task.lower()))
        return next((obj for obj in taken if obj in words), taken[0] if taken else "object")

    def key_actions(self, ctx: Context, obj: str) -> list[tuple[int, str, str, str]]:
        """``(step, action, verb, place the agent was at)`` of the actions that moved the task on:
        no idle commands, nothing done to other objects, no repeats, no object put back where it
        was taken, and no receptacle opened for nothing."""
        kept: list[tuple[int, str, str, str]] = []
        here = ""
        for number, step in ctx.valid_steps():
            action = self.describe(ctx, number, step.action)
            verb, thing, place = _alf_parts(action)
            if verb == "go":
                here = place
            elif verb in _IDLE or verb == "close" or (thing and thing != obj) or (kept and kept[-1][1] == action):
                continue
            elif verb == "move" and kept and kept[-1][2] == "take" and _alf_parts(kept[-1][1])[2] == place:
                kept.pop()
            else:
                kept.append((number, action, verb, here))
        return [k for i, k in enumerate(kept) if k[2] != "open" or (i + 1 < len(kept) and kept[i + 1][3] == k[3])]

    def workflow(self, ctx: Context) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
        obj = self.target_object(ctx)
        keys = self.key_actions(ctx, obj)
        found_at = next((_alf_parts(a)[2] for _, a, v, _ in keys if v == "take"), "")
        parts, shown, taken = [], "", False
        for _, action, verb, here in keys:
            if here and here != shown:
                first = here == found_at and not taken
                parts.append(f"go to where the {obj} is ({here})" if first else f"go to {here}")
                shown = here
            taken = taken or verb == "take"
            parts.append(action)
        sentences = [
            (0, f"To {self.goal(ctx)}: {', '.join(parts)}."),
            (1, f"If no {obj} is in sight, visit likely receptacles one by one and open closed ones."),
            (2, "Place things with 'move X to Y', not 'put'."),
        ]
        done = {"clean": "clean", "heat": "hot", "cool": "cool"}
        last = keys[-1][0] if keys else 0
        why = {verb: f"the {obj} must be {state} before you place it" for verb, state in done.items()}
        why |= {"take": "the task needs it", "use": f"hold the {obj} while you turn on the light"}
        step_skills = [
            (
                n,
                f"{cap(a)} now: "
                + ("this completes the task" if n == last else why.get(v, f"this places one {obj}; get the next"))
                + ".",
            )
            for n, a, v, _ in keys
            if v in ("take", "clean", "heat", "cool", "use", "move")
        ][:3]
        return sentences, step_skills

    def rules(self, ctx: Context, d: Divergence) -> list[str]:
        out = []
        did = self.describe(ctx, d.step, d.action)
        if did.startswith("put "):
            out.append("Place things with 'move X to Y'; 'put X in Y' is not a command here.")
        if did.split(" ", 1)[0] in _IDLE:
            out.append("Do not spend steps on look, inventory, examine or help: they change nothing.")
        verb, obj, place = _alf_parts(self.describe(ctx, d.step, d.expert_action))
        obj = obj or self.target_object(ctx)
        advice = {
            "take": f"When you see the {obj} you need, take it at once.",
            "open": "Open a closed receptacle before you search it.",
            "move": f"Once you hold the {obj} at the {place}, move it there at once.",
            "use": f"Use the {place} while you hold the {obj}.",
            "go": f"Go to the {place} next; do not wander elsewhere.",
        }
        if verb in ("clean", "heat", "cool"):
            out.append(f"{cap(verb)} the {obj} with the {place} before you place it.")
        elif verb in advice:
            out.append(advice[verb])
        return out
