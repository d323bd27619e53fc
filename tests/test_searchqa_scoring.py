"""Search-R1 scoring and turn protocol: hand-worked cases, and parity with upstream's own code.

The parity tests run Search-R1's functions side by side with ours when a Search-R1
checkout is available: set ``SEARCH_R1_DIR`` to it (the tests read
``verl/utils/reward_score/qa_em.py`` and ``search_r1/llm_agent/generation.py``).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seed_envs.searchqa.protocol import (
    INSTRUCTION_TEMPLATE,
    INVALID_ACTION_MESSAGE,
    format_docs,
    information_block,
    instruction,
    parse_turn,
    truncate_turn,
)
from seed_envs.searchqa.retrievers.base import Doc
from seed_envs.searchqa.scoring import (
    exact_match,
    extract_answer,
    normalize_answer,
    score_answer,
    sub_exact_match,
    token_f1,
)

# ----------------------------------------------------------------- hand-worked cases


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("The Eiffel Tower!", "eiffel tower"),
        ("  a  cat, an owl & THE dog ", "cat owl dog"),
        ("there", "there"),  # 'the' only as a whole word
        ("U.S.A.", "usa"),
        ("1,234,567", "1234567"),
        ("Röntgen—“X”", "röntgen—“x”"),  # only ASCII punctuation is removed
        ("theory of an apple", "theory of apple"),
    ],
)
def test_normalize_answer(text, normalized):
    assert normalize_answer(text) == normalized


def test_exact_and_sub_exact_match():
    golds = ["Wilhelm Conrad Röntgen", "Röntgen"]
    assert exact_match("röntgen", golds) == 1
    assert exact_match("Wilhelm Röntgen", golds) == 0
    assert sub_exact_match("It was Wilhelm Röntgen.", golds) == 1
    assert sub_exact_match("Wilhelm", golds) == 0
    assert exact_match("The Paris", "paris") == 1  # a single gold string works too
    assert exact_match(None, golds) == 0 and sub_exact_match(None, golds) == 0
    assert exact_match("x", []) == 0


def test_token_f1():
    assert token_f1("Barack Obama", ["Obama"]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert token_f1("the cat sat", ["a cat sat down"]) == pytest.approx(2 * 1 * (2 / 3) / (1 + 2 / 3))
    assert token_f1("yes", ["no"]) == 0.0 and token_f1("yes", ["yes"]) == 1.0
    assert token_f1("no idea", ["yes"]) == 0.0
    assert token_f1("", ["x"]) == 0.0 and token_f1(None, ["x"]) == 0.0
    assert score_answer("Paris", ["paris", "Paris, France"]) == {"em": 1.0, "subem": 1.0, "f1": 1.0}


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("<answer> Paris </answer>", "Paris"),
        ("<answer>a</answer> then <answer>\n b \n</answer>", "b"),  # the last one
        ("<answer><answer>x</answer>", "<answer>x"),
        ("no tags", None),
        ("<answer>open only", None),
        ("<answer></answer>", ""),
    ],
)
def test_extract_answer(text, answer):
    assert extract_answer(text) == answer


def test_parse_turn():
    assert parse_turn("<think>hm</think><search> who </search>").kind == "search"
    turn = parse_turn("<think>x</think>\n<answer> Bob </answer> <answer>Al</answer>")
    assert (turn.kind, turn.content) == ("answer", "Bob")
    # Text after the first </search> is dropped (generation stops there upstream).
    assert truncate_turn("<search>q</search><answer>a</answer>") == "<search>q</search>"
    # The first tag pair wins, whichever comes first.
    assert parse_turn("<answer>a</answer><search>q</search>").kind == "answer"
    assert parse_turn("<search> <answer>x</answer> </search>").content == "<answer>x</answer>"
    assert parse_turn("<search>unclosed <answer>a</answer>").content == "a"
    for bad in ("", "search: x", "<search>x</answer>", "<SEARCH>x</SEARCH>", "<action>x</action>"):
        assert parse_turn(bad) is None


def test_information_block_format():
    docs = [Doc("1", '"Paris"\nParis is the capital.\nIt is big.'), Doc("2", "NoNewline")]
    assert format_docs(docs) == ('Doc 1(Title: "Paris") Paris is the capital.\nIt is big.\nDoc 2(Title: NoNewline) \n')
    assert information_block(docs).startswith('\n\n<information>Doc 1(Title: "Paris") Paris')
    assert information_block(docs).endswith("Doc 2(Title: NoNewline)</information>\n\n")
    assert information_block([]) == "\n\n<information></information>\n\n"


def test_instruction_adds_question_mark():
    assert instruction("  who is he ").endswith("Question: who is he?\n")
    assert instruction("who?").endswith("Question: who?\n")
    assert "<answer> Beijing </answer>" in INSTRUCTION_TEMPLATE
    assert INVALID_ACTION_MESSAGE.startswith("\nMy previous action is invalid.")


# ----------------------------------------------------------------- parity with Search-R1

UPSTREAM = Path(os.environ.get("SEARCH_R1_DIR", "/nonexistent-search-r1"))
QA_EM = UPSTREAM / "verl" / "utils" / "reward_score" / "qa_em.py"
GENERATION = UPSTREAM / "search_r1" / "llm_agent" / "generation.py"
needs_upstream = pytest.mark.skipif(
    not (QA_EM.is_file() and GENERATION.is_file()),
    reason="set SEARCH_R1_DIR to a Search-R1 checkout to compare with its own scoring code",
)


@pytest.fixture(scope="module")
def qa_em():
    spec = importlib.util.spec_from_file_location("upstream_qa_em", QA_EM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generation():
    """Search-R1's pure-text helpers from generation.py (the module itself needs torch and verl)."""
    tree = ast.parse(GENERATION.read_text())
    wanted = {"postprocess_predictions", "_passages2string"}
    functions = [
        node
        for cls in tree.body
        if isinstance(cls, ast.ClassDef)
        for node in cls.body
        if isinstance(node, ast.FunctionDef) and node.name in wanted
    ]
    namespace = {"re": re, "List": list, "Any": object, "Tuple": tuple, "Dict": dict}
    exec(compile(ast.Module(body=functions, type_ignores=[]), str(GENERATION), "exec"), namespace)
    return namespace


def upstream_truncate(resp: str) -> str:
    """The string expression of Search-R1's ``_postprocess_responses``."""
    if "</search>" in resp:
        return resp.split("</search>")[0] + "</search>"
    if "</answer>" in resp:
        return resp.split("</answer>")[0] + "</answer>"
    return resp


PIECES = st.sampled_from(
    [
        "<answer>",
        "</answer>",
        "<search>",
        "</search>",
        "<think>",
        "</think>",
        "a",
        "an",
        "the",
        "The",
        " ",
        "\n",
        "\t",
        "\u00a0",
        ".",
        ",",
        "'",
        "-",
        "!",
        "Paris",
        "paris",
        "PARIS",
        "é",
        "ß",
        "İ",
        "x",
        "Beijing",
        "1,000",
        "  ",
        "A",
        "an apple",
        "U.S.",
        "\u2019",
        "_",
        "—",
    ]
)
TEXT = st.lists(st.one_of(PIECES, st.text(max_size=4)), max_size=14).map("".join)


@needs_upstream
@settings(max_examples=1500, deadline=None)
@given(prediction=TEXT, golds=st.lists(TEXT, min_size=1, max_size=3))
def test_metrics_match_search_r1(qa_em, prediction, golds):
    assert normalize_answer(prediction) == qa_em.normalize_answer(prediction)
    assert exact_match(prediction, golds) == qa_em.em_check(prediction, golds)
    assert sub_exact_match(prediction, golds) == qa_em.subem_check(prediction, golds)
    assert exact_match(prediction, golds[0]) == qa_em.em_check(prediction, golds[0])


@needs_upstream
@settings(max_examples=1500, deadline=None)
@given(question=TEXT, response=TEXT)
def test_extract_answer_matches_search_r1_on_prompt_plus_response(qa_em, question, response):
    """Upstream scores prompt + response; we score the response. Same answer when it has one."""
    prompt = instruction(question.replace("<answer>", "").replace("</answer>", "") or "q")
    upstream = qa_em.extract_solution(prompt + response)
    ours = extract_answer(response)
    if ours is not None:
        assert ours == upstream
    else:  # no answer in the response: upstream falls back to the prompt's example
        assert upstream == "Beijing"


@needs_upstream
@settings(max_examples=1500, deadline=None)
@given(turn=TEXT)
def test_turn_parsing_matches_search_r1(generation, turn):
    kept = upstream_truncate(turn)
    actions, contents = generation["postprocess_predictions"](None, [kept])
    parsed = parse_turn(turn)
    if actions[0] is None:
        assert parsed is None
    else:
        assert (parsed.kind, parsed.content, parsed.kept_text) == (actions[0], contents[0], kept)


@needs_upstream
@settings(max_examples=500, deadline=None)
@given(contents=st.lists(TEXT, max_size=4))
def test_passage_format_matches_search_r1(generation, contents):
    docs = [Doc(str(i), c) for i, c in enumerate(contents)]
    upstream = generation["_passages2string"](None, [{"document": {"contents": c}} for c in contents])
    assert format_docs(docs) == upstream
    assert information_block(docs) == f"\n\n<information>{upstream.strip()}</information>\n\n"
