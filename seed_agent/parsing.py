"""Turn a model's reply into an env action, and say whether the reply was valid.

Formats (tags are case-insensitive):

- action envs: ``<think>reasoning</think><action>one action</action>``;
- search env: ``<think>reasoning</think>`` then ``<search>query</search>`` or
  ``<answer>answer</answer>``.

A reply is **valid** when it has exactly one closed, non-empty action block, a closed
``<think>`` block before it where one is required, and, where the env lists its
admissible actions, an action that matches one of them. Everything else is reported
with an error code (:data:`ERRORS`); :func:`parse_response` never raises, whatever the
input, and runs in time linear in its length.

Trainers subtract a fixed penalty for an invalid reply (:func:`action_penalty`; SEED
uses 0.1), on top of the env's reward.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: SEED's penalty for an invalid action (subtracted from that step's reward).
INVALID_ACTION_PENALTY = 0.1

MISSING_TAGS = "missing_tags"  # no action block at all
UNCLOSED_TAG = "unclosed_tag"  # an action block opened but never closed
MULTIPLE_ACTIONS = "multiple_actions"  # more than one action block
EMPTY_ACTION = "empty_action"  # the action block holds only whitespace
MISSING_THINK = "missing_think"  # no closed <think> block before the action, where one is required
NOT_ADMISSIBLE = "not_admissible"  # the env lists its actions and this is not one of them
NOT_TEXT = "not_text"  # the reply was not a string
ERRORS = (MISSING_TAGS, UNCLOSED_TAG, MULTIPLE_ACTIONS, EMPTY_ACTION, MISSING_THINK, NOT_ADMISSIBLE, NOT_TEXT)
#: Errors about the reply's form, as opposed to its content.
FORMAT_ERRORS = frozenset(ERRORS) - {NOT_ADMISSIBLE}

ACTION_TAGS: tuple[str, ...] = ("action",)
SEARCH_TAGS: tuple[str, ...] = ("search", "answer")

_TAG = re.compile(r"<(/?)(think|action|search|answer)\s*>", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
_EDGE_JUNK = " \t\r\n'\"`.;:"


@dataclass(frozen=True)
class ParsedResponse:
    """What a reply asked for.

    ``action`` is the action text (the admissible spelling when it matched one), or
    None when no action block was found. ``tag`` is the tag it came in (``action``,
    ``search`` or ``answer``). ``errors`` is empty for a valid reply.
    """

    action: str | None
    tag: str | None = None
    think: str | None = None
    errors: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def well_formed(self) -> bool:
        """True if the only possible error is that the action is not admissible."""
        return not FORMAT_ERRORS.intersection(self.errors)


Matcher = Callable[[str, Sequence[str]], "str | None"]


def normalize_action(action: str) -> str:
    """Lower-case, single spaces, no surrounding quotes or final period: for comparing actions."""
    return _SPACES.sub(" ", action).strip(_EDGE_JUNK).lower()


def match_admissible(action: str, admissible: Sequence[str]) -> str | None:
    """The admissible action equal to ``action`` up to :func:`normalize_action`, else None."""
    wanted = normalize_action(action)
    return next((a for a in admissible if normalize_action(a) == wanted), None)


@dataclass(frozen=True)
class _Block:
    name: str
    start: int  # index where the content starts
    end: int | None  # index where the content ends; None if never closed


def _blocks(text: str) -> list[_Block]:
    """Tag blocks in order. An opening tag inside an open block of the same name restarts it."""
    blocks: list[_Block] = []
    open_name: str | None = None
    open_start = 0
    for match in _TAG.finditer(text):
        closing, name = match.group(1) == "/", match.group(2).lower()
        if not closing:
            if open_name is not None and open_name != name:
                blocks.append(_Block(open_name, open_start, None))
            open_name, open_start = name, match.end()
        elif open_name == name:
            blocks.append(_Block(name, open_start, match.start()))
            open_name = None
    if open_name is not None:
        blocks.append(_Block(open_name, open_start, None))
    return blocks


def parse_response(
    text: object,
    *,
    tags: Sequence[str] = ACTION_TAGS,
    admissible: Sequence[str] | None = None,
    require_think: bool = False,
    match: Matcher = match_admissible,
) -> ParsedResponse:
    """Parse a reply; see the module docstring for the rules. Never raises."""
    if not isinstance(text, str):
        return ParsedResponse(action=None, errors=(NOT_TEXT,))
    blocks = _blocks(text)
    actions = [b for b in blocks if b.name in tags]
    thinks = [b for b in blocks if b.name == "think" and b.end is not None]
    errors: list[str] = []
    if not actions:
        return ParsedResponse(action=None, think=_content(text, thinks[0]) if thinks else None, errors=(MISSING_TAGS,))
    first = actions[0]
    if first.end is None:
        errors.append(UNCLOSED_TAG)
    if len(actions) > 1:
        errors.append(MULTIPLE_ACTIONS)
    action = _content(text, first).strip()
    if not action:
        errors.append(EMPTY_ACTION)
    think_before = [b for b in thinks if b.end is not None and b.end <= first.start]
    if require_think and not think_before:
        errors.append(MISSING_THINK)
    if action and admissible is not None:
        try:
            matched = match(action, admissible)
        except Exception:  # a custom matcher must not break parsing
            matched = None
        if matched is None:
            errors.append(NOT_ADMISSIBLE)
        else:
            action = matched
    think = _content(text, think_before[-1]).strip() if think_before else None
    return ParsedResponse(action=action, tag=first.name, think=think, errors=tuple(errors))


def _content(text: str, block: _Block) -> str:
    return text[block.start : block.end if block.end is not None else len(text)]


def action_penalty(
    parsed: ParsedResponse, penalty: float = INVALID_ACTION_PENALTY, count_not_admissible: bool = True
) -> float:
    """The reward change for one reply: ``-penalty`` if it is invalid, else 0.

    With ``count_not_admissible=False`` only malformed replies are penalised, and a
    well-formed but inadmissible action is left to the env's own reward.
    """
    bad = not parsed.valid if count_not_admissible else not parsed.well_formed
    return -float(penalty) if bad else 0.0
