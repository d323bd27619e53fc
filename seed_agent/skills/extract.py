"""Tolerant extraction of a skill from an analyzer's reply.

Models wrap JSON in code fences, add text after it, use single quotes, or leave a
trailing comma. :func:`extract_skill` tries, in order, on the first balanced ``{...}``
object (inside a fenced block if there is one): strict JSON; JSON with trailing commas
removed; a Python literal (single quotes). When no object parses but the reply holds a
complete ``"episode_skill": "..."`` string (a reply cut off after it, as small models' often
are), that string is the skill. A reply with no usable ``episode_skill`` gives a
:class:`NoSkill` that says why. It never raises.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

#: Replies longer than this are cut before parsing (bounds the work on garbage).
MAX_REPLY_CHARS = 50_000
#: At most this many ``{`` are tried as the start of an object (bounds the work on brace soup).
MAX_OBJECT_STARTS = 16

_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


@dataclass(frozen=True)
class Skill:
    """A hindsight skill: a whole-episode skill plus optional per-step skills (step -> text)."""

    episode_skill: str
    episode_summary: str = ""
    step_skills: tuple[tuple[int, str], ...] = ()

    def for_step(self, step: int) -> str | None:
        return next((text for number, text in self.step_skills if number == step), None)


@dataclass(frozen=True)
class NoSkill:
    """The analyzer's reply held no usable skill; ``reason`` says why."""

    reason: str
    raw: str = ""


SkillResult = Skill | NoSkill


def extract_skill(reply: object) -> SkillResult:
    """The skill in an analyzer reply, or :class:`NoSkill`. Never raises."""
    try:
        return _extract(reply)
    except Exception as error:  # the contract is "never raises"; report instead
        return NoSkill(reason=f"unexpected error while parsing: {type(error).__name__}", raw=_preview(reply))


def _extract(reply: object) -> SkillResult:
    if not isinstance(reply, str):
        return NoSkill(reason=f"reply is not text but {type(reply).__name__}")
    text = reply[:MAX_REPLY_CHARS]
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        obj_text = _first_object(candidate)
        if obj_text is None:
            continue
        data = _load(obj_text)
        if isinstance(data, dict):
            return _to_skill(data, reply)
    salvaged = _string_field(text, "episode_skill")
    if salvaged:  # the object was cut off (or never closed) after a complete episode_skill string
        return Skill(episode_skill=salvaged, episode_summary=_string_field(text, "episode_summary"))
    return NoSkill(reason="no JSON object found", raw=_preview(reply))


def _string_field(text: str, key: str) -> str:
    """The complete JSON string value of the first ``"key": "..."`` in ``text``, or ""."""
    match = re.search(r'"' + key + r'"\s*:\s*(?=")', text)
    if match is None:
        return ""
    try:
        value, _ = json.JSONDecoder().raw_decode(text, match.end())
    except ValueError:
        return ""
    return _text(value)


def _first_object(text: str) -> str | None:
    """The first balanced ``{...}``, skipping braces inside quoted strings."""
    start = text.find("{")
    for _ in range(MAX_OBJECT_STARTS):
        if start == -1:
            break
        depth, quote, escaped = 0, "", False
        for i in range(start, len(text)):
            c = text[i]
            if quote:
                if escaped:
                    escaped = False
                elif c == "\\":
                    escaped = True
                elif c == quote:
                    quote = ""
            elif c in "\"'":
                quote = c
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return text[start : i + 1]
        start = text.find("{", start + 1)
    return None


def _load(text: str) -> Any:
    for attempt in (text, _TRAILING_COMMA.sub(r"\1", text)):
        try:
            return json.loads(attempt)
        except (ValueError, RecursionError):
            pass
    literal = _TRAILING_COMMA.sub(r"\1", text)
    literal = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", literal)))
    try:
        return ast.literal_eval(literal)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _to_skill(data: dict, reply: str) -> SkillResult:
    episode_skill = _text(data.get("episode_skill"))
    if not episode_skill:
        return NoSkill(reason="the JSON has no non-empty 'episode_skill'", raw=_preview(reply))
    return Skill(
        episode_skill=episode_skill,
        episode_summary=_text(data.get("episode_summary")),
        step_skills=_step_skills(data.get("step_skills")),
    )


def _text(value: Any) -> str:
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return " ".join(" ".join(v.split()) for v in value)
    return ""


def _step_skills(value: Any) -> tuple[tuple[int, str], ...]:
    """Accepts ``[{"step": n, "skill": s}, ...]`` or ``{"n": s}``; drops malformed entries."""
    pairs: list[tuple[int, str]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = [(v.get("step"), v.get("skill")) for v in value if isinstance(v, dict)]
    else:
        items = []
    for step, skill in items:
        number = _int(step)
        text = _text(skill)
        if number is not None and number >= 1 and text:
            pairs.append((number, text))
    return tuple(sorted(dict(pairs).items()))


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) < 10:
        return int(value.strip())
    return None


def _preview(reply: object, limit: int = 300) -> str:
    return reply[:limit] if isinstance(reply, str) else ""
