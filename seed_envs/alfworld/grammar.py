"""Upstream's game grammar, with its text parses done once instead of on every use.

textworld's ``ContextSensitiveGrammar`` turns the game state into text. Each call
to ``derive`` parses its start string with TatSu, and every conditional rule and
``{... | query}`` symbol parses its query again; a step derives every admissible
command's template and the feedback, so most of a step's time is parsing the same
few dozen strings. Likewise every game file carries the whole grammar, which differs
between games only in the task sentence, and ``GameLogic`` parses all of it.

This module keeps the derivation rules exactly as textworld states them:

- a nonterminal ``#name#`` is replaced by the *first* production whose condition
  (a conjunctive query) has an assignment in the current state;
- ``{expr | query}`` yields ``expr`` once per assignment of ``query``;
- ``[ ... ]`` renders a list with the grammar's ``list_separator`` /
  ``list_last_separator`` / ``list_empty`` symbols;

and only memoizes the pure functions (string -> parsed symbols, string -> query
rule). :func:`game_logic` parses a game's grammar once per *shape*: the grammar with
its task sentence blanked out, then swaps in that game's task production. Both are
checked against upstream's own parse and derivations in the tests; they apply only
to the logic objects our engine builds, never to upstream's classes.
"""

from __future__ import annotations

import copy
import re
from collections import OrderedDict, defaultdict
from typing import Any

from textworld.envs.pddl import logic as pddl_logic
from textworld.envs.pddl import textgen
from textworld.logic import Rule

_MEMO_LIMIT = 20_000
_symbols_memo: dict[str, list[Any]] = {}
_query_memo: dict[str, Any] = {}


def parse_symbols(text: str) -> list[Any]:
    """textgen's parse of a symbol string, memoized; returns a fresh deep copy."""
    parsed = _symbols_memo.get(text)
    if parsed is None:
        if len(_symbols_memo) > _MEMO_LIMIT:
            _symbols_memo.clear()
        parsed = _symbols_memo[text] = textgen._parse_and_convert(text, rule_name="symbols")
    return copy.deepcopy(parsed)


def parse_query(expression: str) -> Any:
    """``Rule.parse_conjunctive_query``, memoized (the rule is only read, never changed)."""
    rule = _query_memo.get(expression)
    if rule is None:
        if len(_query_memo) > _MEMO_LIMIT:
            _query_memo.clear()
        rule = _query_memo[expression] = Rule.parse_conjunctive_query(expression)
    return rule


def _query(expression: str, context: dict) -> list[dict]:
    # textgen.query: one context per assignment of the query in the state.
    contexts = []
    for mapping in context["state"].all_assignments(parse_query(expression), context["mapping"]):
        new_context = textgen.copy_context(context)
        new_context["variables"].update({ph.name: new_context["entity_infos"][var.name] for ph, var in mapping.items()})
        new_context["mapping"].update(mapping)
        contexts.append(new_context)
    return contexts


def _derive_conditional(symbol: Any) -> list[Any]:
    # textgen.ConditionalSymbol.derive
    if len(symbol.context) == 0:
        raise ValueError("Empty context")
    context = textgen.copy_context(symbol.context)
    contexts = _query(symbol.given, context) if symbol.given else [context]
    return [symbol.expression.copy(c) for c in contexts]


def _derive_list(symbol: Any) -> list[Any]:
    # textgen.ListSymbol.derive
    context = symbol.context
    inner = symbol.symbol
    inner.context = context
    derivation = _derive_conditional(inner) if isinstance(inner, textgen.ConditionalSymbol) else inner.derive()
    return textgen.display_list(derivation, context)


class MemoGrammar(textgen.ContextSensitiveGrammar):
    """``ContextSensitiveGrammar`` whose string and query parses are memoized."""

    def replace(self, start: Any) -> list[Any]:
        rules = self._rules.get(str(start))
        if not rules:
            raise textgen.CSGUnknownSymbolError(start)
        state, mapping = start.context["state"], start.context["mapping"]
        for rule in rules:
            if not rule.condition or any(True for _ in state.all_assignments(parse_query(rule.condition), mapping)):
                break
        else:
            raise IndexError("list index out of range")  # upstream: rules[0] of an empty list
        symbols = copy.deepcopy(rule.rhs)
        for symbol in symbols:
            symbol.context = textgen.copy_context(start.context)
        return symbols

    def derive(self, start: str, context: dict | None = None) -> str:
        context = {} if context is None else context
        derivation = parse_symbols(start)[::-1]  # a stack: the first symbol on top
        for symbol in derivation:
            symbol.context = textgen.copy_context(context)
        derived = []
        while derivation:
            symbol = derivation.pop()
            if isinstance(symbol, textgen.TerminalSymbol):
                derived.append(symbol)
            elif isinstance(symbol, textgen.NonterminalSymbol):
                derivation += self.replace(symbol)[::-1]
            elif isinstance(symbol, textgen.ConditionalSymbol):
                derivation += _derive_conditional(symbol)[::-1]
            elif isinstance(symbol, textgen.ListSymbol):
                derivation += _derive_list(symbol)[::-1]
            elif isinstance(symbol, textgen.EvalSymbol):
                derivation += symbol.derive()[::-1]
            else:
                raise NotImplementedError(f"Unknown symbol: {type(symbol)}")
        return "".join(map(str, derived))


# ------------------------------------------------------------------ logic
#: The task production as the grammar file spells it (inside its JSON block).
_TASK_RHS = re.compile(r'"Your task is to: ([^"\\#\[\]{}|]*)"')
_PLACEHOLDER = "UNKNOWN GOAL."


def _with_memo_grammar(logic: Any) -> Any:
    grammar = MemoGrammar()
    grammar._rules = defaultdict(list, {k: list(v) for k, v in logic.grammar._rules.items()})
    logic.grammar = grammar
    return logic


class LogicCache:
    """Parsed ``GameLogic`` per grammar shape (task sentence blanked), LRU-bounded."""

    def __init__(self, max_shapes: int = 16) -> None:
        self.max_shapes = max_shapes
        self._shapes: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self.full_parses = 0

    def _shape(self, domain: str, grammar: str) -> Any:
        key = (domain, grammar)
        logic = self._shapes.get(key)
        if logic is None:
            self.full_parses += 1
            logic = _with_memo_grammar(pddl_logic.GameLogic(domain=domain, grammar=grammar))
            self._shapes[key] = logic
            while len(self._shapes) > self.max_shapes:
                self._shapes.popitem(last=False)
        else:
            self._shapes.move_to_end(key)
        return logic

    def game_logic(self, domain: str, grammar: str) -> Any:
        """A ``GameLogic`` equal to ``GameLogic(domain, grammar)``, with a :class:`MemoGrammar`."""
        matches = list(_TASK_RHS.finditer(grammar))
        if len(matches) != 1:
            return copy.copy(self._shape(domain, grammar))
        match = matches[0]
        blank = grammar[: match.start(1)] + _PLACEHOLDER + grammar[match.end(1) :]
        base = self._shape(domain, blank)
        placeholder_rhs = f"Your task is to: {_PLACEHOLDER}"
        task_rhs = f"Your task is to: {match.group(1)}"
        new_rhs = parse_symbols(task_rhs)
        hits = [
            (lhs, i)
            for lhs, rules in base.grammar._rules.items()
            for i, rule in enumerate(rules)
            if all(isinstance(s, textgen.TerminalSymbol) for s in rule.rhs)
            and "".join(str(s) for s in rule.rhs) == placeholder_rhs
        ]
        if len(hits) != 1 or not all(isinstance(s, textgen.TerminalSymbol) for s in new_rhs):
            return copy.copy(self._shape(domain, grammar))
        lhs, i = hits[0]
        old = base.grammar._rules[lhs][i]
        logic = copy.copy(base)
        grammar_copy = MemoGrammar()
        grammar_copy._rules = defaultdict(list, {k: list(v) for k, v in base.grammar._rules.items()})
        grammar_copy._rules[lhs][i] = textgen.ProductionRule(
            lhs=old.lhs, rhs=new_rhs, weight=old.weight, condition=old.condition
        )
        logic.grammar = grammar_copy
        return logic
