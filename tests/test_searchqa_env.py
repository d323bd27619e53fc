"""seed/SearchQA-v0: the Search-R1 protocol end to end, on the generated world and on real samples."""

from __future__ import annotations

import gymnasium as gym
import pytest
from searchqa_support import NQ_SAMPLE, WIKI18_SAMPLE, needs_samples, seed_cache

import seed_envs  # noqa: F401 - registers the ids
from seed_envs.searchqa import INVALID_ACTION_MESSAGE, SearchQAEnv, parse_turn, step_batch
from seed_envs.searchqa.data import SearchDataError
from seed_envs.searchqa.retrievers import Doc, Retriever, RetrieverUnavailable
from seed_envs.testing import check_seed_env, fuzz_env

pytest.importorskip("bm25s", reason="the search extra (bm25s) is not installed")
pytestmark = pytest.mark.usefixtures("seed_cache")
_ = seed_cache


class CountingRetriever(Retriever):
    """Answers each query with one passage titled after it, and records every batch it is asked."""

    name = "counting"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def _search(self, queries, topk):
        self.calls.append(list(queries))
        return [[Doc(q, f'"T-{q}"\n{q}')] for q in queries]


def is_valid_turn(action: str) -> bool:
    return len(action) <= SearchQAEnv.max_action_length and parse_turn(action) is not None


@pytest.fixture(scope="module")
def env(seed_cache):
    env = gym.make("seed/SearchQA-v0", dataset="world-easy")
    yield env
    env.close()


def test_registered_with_four_turns():
    spec = gym.spec("seed/SearchQA-v0")
    assert spec.max_episode_steps == 4
    assert spec.entry_point == "seed_envs.searchqa.env:SearchQAEnv"


def test_conformance(env):
    check_seed_env(env, replay_steps=["<search> capital </search>", "no tags", "<answer> x </answer>"])


def test_fuzz_ten_thousand_hostile_turns(env):
    invalid = fuzz_env(env.unwrapped, n=10_000, is_valid=is_valid_turn)
    assert invalid > 9_000


def test_search_then_answer_with_expert(env):
    obs, info = env.reset(options={"split": "valid_seen", "index": 0})
    assert obs["text"].startswith("Answer the given question.") and info["task"] in obs["text"]
    plan = env.unwrapped.expert_plan()
    assert plan[0].startswith("<search>") and plan[-1].startswith("<answer>")
    obs, reward, terminated, _, info = env.step(plan[0])
    assert obs["text"].startswith("\n\n<information>Doc 1(Title: ") and obs["text"].endswith("</information>\n\n")
    assert obs["text"].count("\nDoc ") == 2  # topk 3
    assert (reward, terminated, info["turn"], info["action_valid"]) == (0.0, False, "search", True)
    assert len(info["doc_ids"]) == 3
    obs, reward, terminated, _truncated, info = env.step(plan[-1])
    assert (obs["text"], reward, terminated, info["won"], info["score"]) == ("", 1.0, True, True, 1.0)
    assert info["em"] == info["subem"] == info["f1"] == 1.0
    assert info["answer"] == info["golden_answers"][0]


def test_wrong_and_partial_answers(env):
    env.reset(options={"split": "train", "index": 3})
    gold = env.unwrapped.expert_plan()[-1].removeprefix("<answer> ").removesuffix(" </answer>")
    *_, info = env.step(f"<think>sure</think><answer>It is {gold}.</answer>")
    assert info["em"] == 0.0 and info["subem"] == 1.0 and 0 < info["f1"] < 1 and info["won"] is False
    env.reset(options={"split": "train", "index": 3})
    # Generation stops at the first </answer>: a later answer is never read ...
    _, reward, terminated, _, info = env.step(f"<answer>nothing</answer> <answer>{gold}</answer>")
    assert (reward, terminated, info["answer"]) == (0.0, True, "nothing")
    # ... unless a </search> comes later: then the turn's last answer is scored, as upstream.
    env.reset(options={"split": "train", "index": 3})
    turn = f"<answer>nothing</answer> <answer> the {gold}! </answer> <search>q</search>"
    _, reward, terminated, _, info = env.step(turn)
    assert (reward, terminated, info["answer"]) == (1.0, True, f"the {gold}!")


def test_invalid_turn_counts_and_truncates_at_four(env):
    env.reset(seed=1)
    for turn in range(4):
        obs, reward, terminated, truncated, info = env.step("I will just think. <search>unclosed")
        assert obs["text"] == INVALID_ACTION_MESSAGE and info["action_valid"] is False and reward == 0.0
        assert not terminated and truncated == (turn == 3)


def test_empty_and_huge_search_queries(env):
    env.reset(seed=2)
    obs, _, _, _, info = env.step("<search>   </search>")
    assert info["action_valid"] is True and obs["text"] == "\n\n<information></information>\n\n"
    obs, _, _, _, info = env.step("<search>" + "Kel " * 3000 + "</search>")  # 12 KB turn
    assert info["action_valid"] is True and info["turn"] == "search"
    obs, _, _, _, info = env.step("<search>" + "q" * 100_000 + "</search>")  # 100 KB: over the turn limit
    assert info["action_valid"] is False and "limit" in obs["text"]


def test_anchor_is_the_last_information_block_or_the_question(env):
    obs, info = env.reset(options={"split": "valid_seen", "index": 0})
    question = info["anchor"]
    assert question == obs["text"] and info["task"] in question
    obs, *_, info = env.step("no tags")  # an invalid turn: the message is not the state
    assert obs["text"] == INVALID_ACTION_MESSAGE and info["anchor"] == question
    hop = env.unwrapped.expert_plan()[0]
    obs, *_, info = env.step(hop)
    found = info["anchor"]
    assert found == obs["text"] and found.startswith("\n\n<information>") and found != question
    # The same search after another one, in a second episode: the same state.
    env.reset(options={"split": "valid_seen", "index": 0})
    *_, info = env.step("<search> an unrelated query about rivers </search>")
    assert info["anchor"] not in (question, found)
    *_, info = env.step(hop)
    assert info["anchor"] == found
    obs, *_, info = env.step("<answer> x </answer>")  # the observation is empty; the anchor is not
    assert obs["text"] == "" and info["anchor"] == "answered: 'x'"
    env.reset(options={"split": "valid_seen", "index": 0})
    *_, info = env.step("<answer> y </answer>")
    assert info["anchor"] == "answered: 'y'"


def test_step_batch_makes_one_retriever_call(seed_cache):
    retriever = CountingRetriever()
    envs = [gym.make("seed/SearchQA-v0", dataset="world-easy", retriever=retriever) for _ in range(5)]
    for i, env in enumerate(envs):
        env.reset(options={"split": "train", "index": i})
    actions = [
        "<search> a </search>",
        "<search> b </search>",
        "no tag",
        "<answer> x </answer>",
        "<search> a </search>",
    ]
    results = step_batch(envs, actions)
    assert retriever.calls == [["a", "b"]]  # one call, duplicates searched once
    assert [r[4]["action_valid"] for r in results] == [True, True, False, True, True]
    assert results[4][0]["text"] == '\n\n<information>Doc 1(Title: "T-a") a</information>\n\n'
    # Same observations as stepping one by one.
    for i, env in enumerate(envs):
        env.reset(options={"split": "train", "index": i})
    single = [env.step(a) for env, a in zip(envs, actions, strict=True)]
    assert [r[0] for r in single] == [r[0] for r in results]


def test_shared_retriever_across_envs(seed_cache):
    a = SearchQAEnv(dataset="world-easy")
    b = SearchQAEnv(dataset="world-easy", split="valid_unseen")
    assert a.retriever is b.retriever


def test_dead_server_raises_clearly(seed_cache):
    env = SearchQAEnv(dataset="world-easy", retriever="http://127.0.0.1:9", retriever_options={"timeout": 2})
    env.reset(seed=0)
    with pytest.raises(RetrieverUnavailable, match="no retrieval server answers"):
        env.step("<search> q </search>")
    _, _reward, terminated, _, _ = env.step("<answer> x </answer>")  # the episode goes on
    assert terminated


def test_unknown_dataset():
    with pytest.raises(SearchDataError, match=r"unknown dataset 'webqa'.*world-easy.*nq_hotpotqa"):
        SearchQAEnv(dataset="webqa")


def test_topk_must_be_positive():
    with pytest.raises(ValueError, match="topk"):
        SearchQAEnv(dataset="world-easy", topk=0)


@needs_samples
def test_real_nq_questions_over_wiki18_sample(seed_cache):
    env = gym.make(
        "seed/SearchQA-v0",
        qa_files={"valid_seen": NQ_SAMPLE, "valid_unseen": NQ_SAMPLE, "train": NQ_SAMPLE},
        corpus=WIKI18_SAMPLE,
    )
    base = env.unwrapped
    rows = [line for line in NQ_SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert base.task_count("valid_seen") == len(rows)
    obs, info = env.reset(options={"split": "valid_seen", "index": 0})
    assert info["task"] == "who got the first nobel prize in physics?"
    assert info["task_id"] == "nq_test_16:test_0"
    assert base.expert_plan() == [
        "<search> who got the first nobel prize in physics? </search>",
        "<answer> Wilhelm Conrad Röntgen </answer>",
    ]
    obs, *_ = env.step("<search> Evan Morris lobbyist </search>")
    assert obs["text"].startswith('\n\n<information>Doc 1(Title: "Evan Morris") Evan Morris Evan L. Morris')
    _, reward, terminated, _, info = env.step("<answer> wilhelm conrad rontgen </answer>")
    assert reward == 0.0 and terminated  # ö is not ASCII punctuation: no match, as upstream
    env.reset(options={"split": "valid_seen", "index": 0})
    _, reward, *_ = env.step("<answer> Wilhelm Conrad Röntgen. </answer>")
    assert reward == 1.0
    check_seed_env(env)


def test_vector_workers_batch_the_searches_of_one_step(seed_cache):
    from seed_envs.vector import make_vec

    retriever = CountingRetriever()
    actions = ["<search> a </search>", "<search> b </search>", "no tag", "<search> a </search>"]
    with make_vec("seed/SearchQA-v0", 4, backend="sync", dataset="world-easy", retriever=retriever) as vec:
        _, infos = vec.reset(options=[{"split": "train", "index": i} for i in range(4)])
        tasks = [info["task_id"] for info in infos]
        batched = vec.step(actions)
    assert retriever.calls == [["a", "b"]]
    single = []
    for task, action in zip(tasks, actions, strict=True):
        env = gym.make("seed/SearchQA-v0", dataset="world-easy", retriever=CountingRetriever())
        env.reset(options={"task_id": task})
        single.append(env.step(action))
    assert [obs["text"] for obs in batched[0]] == [r[0]["text"] for r in single]
