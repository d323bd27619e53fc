"""A run's episodes as one static HTML page: no script, no external file, nothing fetched.

Episodes are grouped by update. Each shows its task, outcome, skill (or why none parsed)
and steps: observation, response, action, reward; invalid steps are marked. The action
tokens of steps that got OPD are coloured by their gate ``sigmoid(beta_opd * Delta)``: red
near 0 (the skill makes the token less likely), white at 0.5, green near 1; hovering a
token shows its gate and Delta. Every text from the run is HTML-escaped.
"""

from __future__ import annotations

import html
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

#: A thumbnail the page may show: a PNG data URL (anything else in the log is left out).
_PNG_DATA_URL = re.compile(r"data:image/png;base64,[A-Za-z0-9+/=]+")
#: C0 controls but tab and newline, and DEL: invisible, or not allowed, in an HTML page.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
#: Gate 0, 0.5 and 1 as RGB.
_LOW, _MID, _HIGH = (239, 83, 80), (255, 255, 255), (102, 187, 106)

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; background: #fafafa; }
h1 { font-size: 1.4em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; margin-top: 2em; }
table.summary { border-collapse: collapse; } table.summary td, table.summary th { padding: 2px 10px; }
details.episode { background: #fff; border: 1px solid #ddd; border-radius: 4px; margin: 0.6em 0; padding: 0.4em 0.8em; }
details.episode > summary { cursor: pointer; }
.won { color: #2e7d32; font-weight: bold; } .lost { color: #c62828; font-weight: bold; }
.task { font-style: italic; }
.skill { background: #eef5ff; border-left: 4px solid #64b5f6; margin: 0.4em 0; padding: 0.3em 0.6em; }
.skill-error { color: #8d6e63; }
.step { border-top: 1px dashed #ddd; padding: 0.3em 0; }
.step.invalid { background: #fff4f4; border-left: 4px solid #e57373; padding-left: 0.5em; }
.invalid-mark { color: #c62828; font-weight: bold; }
pre { white-space: pre-wrap; margin: 0.2em 0; background: #f5f5f5; padding: 0.3em; }
.label { color: #777; font-size: 0.85em; }
.tokens { white-space: pre-wrap; font-family: monospace; line-height: 1.8; }
.token { border: 1px solid #ddd; border-radius: 2px; padding: 0 1px; }
.legend .token { padding: 0 6px; }
"""


def gate_colour(gate: float | None) -> str:
    """The background of a token with this gate: red at 0, white at 0.5, green at 1."""
    if gate is None:
        return "rgb(224, 224, 224)"
    g = min(max(float(gate), 0.0), 1.0)
    start, end, t = (_LOW, _MID, g * 2) if g < 0.5 else (_MID, _HIGH, (g - 0.5) * 2)
    r, gr, b = (round(a + (z - a) * t) for a, z in zip(start, end, strict=True))
    return f"rgb({r}, {gr}, {b})"


def render_page(records: Sequence[dict[str, Any]], *, title: str = "episodes") -> str:
    """The whole page for ``episodes.jsonl`` records, as one HTML string."""
    by_update: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_update[int(record.get("update", 0))].append(record)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="counts">{_plural(len(records), "episode")} in {_plural(len(by_update), "update")}.</p>',
        _legend(),
        _summary(by_update),
    ]
    for update in sorted(by_update):
        parts.append(f'<section class="update" id="update-{update + 1}" data-update="{update}">')
        parts.append(f"<h2>Update {update + 1}</h2>")
        parts.extend(_episode(record) for record in by_update[update])
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _e(value: Any) -> str:
    """HTML-escaped text; control characters (a random model's output has them) shown as ``\\xNN``."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", "" if value is None else str(value))
    return html.escape(text, quote=True)


def _legend() -> str:
    samples = "".join(
        f'<span class="token" style="background-color: {gate_colour(g)}">{g:.2f}</span> '
        for g in (0.0, 0.25, 0.5, 0.75, 1.0)
    )
    return f'<p class="legend">OPD gate of each action token: {samples}(hover a token for its gate and Delta)</p>'


def _summary(by_update: dict[int, list[dict[str, Any]]]) -> str:
    rows = []
    for update in sorted(by_update):
        episodes = by_update[update]
        won = sum(bool((r.get("outcome") or {}).get("won")) for r in episodes)
        skills = sum(r.get("skill") is not None for r in episodes)
        rows.append(
            f'<tr><td><a href="#update-{update + 1}">{update + 1}</a></td><td>{len(episodes)}</td>'
            f"<td>{won / max(len(episodes), 1):.2f}</td><td>{skills}</td></tr>"
        )
    head = "<tr><th>update</th><th>episodes</th><th>success</th><th>skills</th></tr>"
    return f'<table class="summary">{head}{"".join(rows)}</table>'


def _episode(record: dict[str, Any]) -> str:
    outcome = record.get("outcome") or {}
    won = bool(outcome.get("won"))
    verdict = '<span class="won">won</span>' if won else '<span class="lost">not won</span>'
    steps = record.get("steps") or []
    invalid = sum(not s.get("valid", True) for s in steps)
    summary = (
        f"<summary>episode {_e(record.get('episode'))} &middot; group {_e(record.get('group'))} &middot; "
        f"task {_e(record.get('task_id'))} &middot; {verdict} &middot; score {_num(outcome.get('score'))} "
        f"&middot; R {_num(outcome.get('reward'))} &middot; {len(steps)} steps, {invalid} invalid</summary>"
    )
    body = [f'<p class="task">{_e(record.get("task"))}</p>']
    if record.get("skill") is not None:
        body.append(f'<div class="skill"><span class="label">skill</span> {_e(record["skill"])}</div>')
    elif record.get("skill_error") is not None:
        body.append(f'<p class="skill-error">no skill: {_e(record["skill_error"])}</p>')
    body.extend(_step(step) for step in steps)
    attributes = (
        f'class="episode" open data-update="{_e(record.get("update"))}" data-episode="{_e(record.get("episode"))}" '
        f'data-won="{str(won).lower()}"'
    )
    return f"<details {attributes}>{summary}{''.join(body)}</details>"


def _step(step: dict[str, Any]) -> str:
    valid = bool(step.get("valid", True))
    mark = "" if valid else f' <span class="invalid-mark">invalid: {_e(step.get("error") or "rejected")}</span>'
    parts = [
        f'<div class="step{"" if valid else " invalid"}" data-step="{_e(step.get("step"))}">',
        f'<div class="label">step {_e(step.get("step"))} &middot; reward {_num(step.get("reward"))}{mark}</div>',
    ]
    image = step.get("image")
    if isinstance(image, str) and _PNG_DATA_URL.fullmatch(image):
        parts.append(f'<img class="frame" alt="observation" src="{image}">')
    parts.append(f'<div class="label">observation</div><pre class="observation">{_e(step.get("observation"))}</pre>')
    parts.append(f'<div class="label">response</div><pre class="response">{_e(step.get("response"))}</pre>')
    parts.append(f'<div class="label">action</div> <code class="action">{_e(step.get("action"))}</code>')
    opd = step.get("opd")
    if opd:
        parts.append(_tokens(opd))
    parts.append("</div>")
    return "".join(parts)


def _tokens(opd: dict[str, Any]) -> str:
    tokens, gates, deltas = opd.get("tokens") or [], opd.get("gate") or [], opd.get("delta") or []
    spans = []
    for i, token in enumerate(tokens):
        gate = gates[i] if i < len(gates) else None
        delta = deltas[i] if i < len(deltas) else None
        tip = f"gate {_num(gate, 3)}, Delta {_num(delta, 3, signed=True)}"
        spans.append(
            f'<span class="token" style="background-color: {gate_colour(gate)}" title="{tip}" '
            f'data-gate="{_num(gate, 4)}">{_e(token)}</span>'
        )
    return f'<div class="label">OPD tokens</div><div class="tokens">{"".join(spans)}</div>'


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _num(value: Any, digits: int = 2, *, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "n/a"
    return f"{number:+.{digits}f}" if signed else f"{number:.{digits}f}"
