"""Search QA data: FlashRAG/Search-R1 loaders, named datasets, downloads, the generated world, the CLI."""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from searchqa_support import NQ_SAMPLE, SEARCHR1_CORPUS, WIKI18_SAMPLE, needs_samples, seed_cache

from seed_envs.core import MissingDataError
from seed_envs.searchqa.data import (
    SearchDataError,
    download_command,
    eval_file_split,
    load_qa,
    load_qa_files,
    qa_files_for,
)
from seed_envs.searchqa.download import default_files, download_qa, download_wiki18
from seed_envs.searchqa.generate import PRESETS, World, WorldConfig, ensure_world, generate_world
from seed_envs.searchqa.retrievers.corpus import Corpus

_ = seed_cache


# ------------------------------------------------------------------ real formats


@needs_samples
def test_real_samples_load():
    records = load_qa(NQ_SAMPLE, source="nq/test")
    assert records[0].question == "who got the first nobel prize in physics"
    assert records[0].golden_answers == ("Wilhelm Conrad Röntgen",)
    assert records[2].golden_answers == ("Olivia", "MFSK")
    assert {r.source for r in records} == {"nq/test"}
    for path in (WIKI18_SAMPLE, SEARCHR1_CORPUS):
        corpus = Corpus(path)
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        assert len(corpus) == len(lines)
        assert corpus.doc(len(lines) - 1).contents == lines[-1]["contents"]
        assert corpus.doc(0).title == '"Evan Morris"'


def test_qa_loader_errors_name_the_line(tmp_path):
    cases = {
        "not json\n": "bad.jsonl:1: not valid JSON",
        '{"id": 1, "question": ""}\n': "non-empty 'question'",
        '{"question": "q", "golden_answers": []}\n': "non-empty list",
        '{"question": "q", "golden_answers": [null]}\n': "non-empty list",
        '{"question": "q", "golden_answers": ["a"]}\n\n[1]\n': "bad.jsonl:3",
    }
    for text, message in cases.items():
        path = tmp_path / "bad.jsonl"
        path.write_text(text)
        with pytest.raises(SearchDataError, match=message):
            load_qa(path)
    path.write_text('{"question": "q", "golden_answers": "single"}\n')
    assert load_qa(path)[0].golden_answers == ("single",) and load_qa(path)[0].id == "0"


def test_named_datasets_map_to_flashrag_files(tmp_path):
    assert [eval_file_split(d) for d in ("nq", "hotpotqa", "popqa", "bamboogle")] == [
        "test",
        "dev",
        "test",
        "test",
    ]
    assert qa_files_for("nq_hotpotqa", "train", tmp_path) == [
        ("nq/train", tmp_path / "nq" / "train.jsonl"),
        ("hotpotqa/train", tmp_path / "hotpotqa" / "train.jsonl"),
    ]
    assert [s for s, _ in qa_files_for("nq_hotpotqa", "valid_seen", tmp_path)] == ["nq/test", "hotpotqa/dev"]
    assert [s for s, _ in qa_files_for("nq_hotpotqa", "valid_unseen", tmp_path)] == [
        "triviaqa/test",
        "popqa/test",
        "2wikimultihopqa/dev",
        "musique/dev",
        "bamboogle/test",
    ]
    assert qa_files_for("musique", "valid_unseen", tmp_path) == [("musique/dev", tmp_path / "musique" / "dev.jsonl")]
    with pytest.raises(SearchDataError, match="no train split"):
        qa_files_for("popqa", "train", tmp_path)
    with pytest.raises(SearchDataError, match="unknown dataset 'nq2'"):
        qa_files_for("nq2", "train", tmp_path)
    with pytest.raises(MissingDataError) as error:
        load_qa_files(qa_files_for("nq_hotpotqa", "valid_unseen", tmp_path), download_command(tmp_path))
    message = str(error.value)
    assert "triviaqa/test.jsonl" in message and "bamboogle/test.jsonl" in message
    assert len(error.value.paths) == 5 and error.value.path == tmp_path / "triviaqa" / "test.jsonl"
    assert error.value.command == f"seed data search --out {tmp_path}" and f"`{error.value.command}`" in message
    assert default_files(["nq", "popqa", "hotpotqa"]) == [
        ("nq", "train"),
        ("nq", "test"),
        ("popqa", "test"),
        ("hotpotqa", "train"),
        ("hotpotqa", "dev"),
    ]


class _Hub(BaseHTTPRequestHandler):
    """A stand-in for the dataset hub on 127.0.0.1, serving the real samples."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.endswith("/RUC-NLPIR/FlashRAG_datasets/resolve/main/nq/test.jsonl"):
            body = NQ_SAMPLE.read_bytes()
        elif self.path.endswith("/PeterJinGo/wiki-18-corpus/resolve/main/wiki-18.jsonl.gz"):
            body = gzip.compress(WIKI18_SAMPLE.read_bytes())
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@needs_samples
def test_download_from_a_hub(tmp_path):
    hub = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{hub.server_address[1]}"
    try:
        (path,) = download_qa(tmp_path, [("nq", "test")], endpoint=endpoint, quiet=True)
        assert path == tmp_path / "nq" / "test.jsonl" and path.read_bytes() == NQ_SAMPLE.read_bytes()
        corpus = download_wiki18(tmp_path, endpoint=endpoint, quiet=True)
        assert corpus.read_bytes() == WIKI18_SAMPLE.read_bytes()
        with pytest.raises(OSError):
            download_qa(tmp_path, [("popqa", "test")], endpoint=endpoint, quiet=True)
        assert not (tmp_path / "popqa" / "test.jsonl").exists()  # nothing half-written
        assert not list(tmp_path.rglob(".*"))  # no temporary files left
    finally:
        hub.shutdown()
        hub.server_close()


# ------------------------------------------------------------------ generated world

SMALL = WorldConfig(name="small", n_passages=3_000, train_questions=3_000, valid_questions=300)


@pytest.fixture(scope="module")
def small_world():
    world = World(SMALL)
    return world, world.questions()


def test_world_is_deterministic(small_world):
    world, questions = small_world
    again = World(SMALL)
    assert again.passages == world.passages and again.questions() == questions
    other = World(WorldConfig(name="small", n_passages=3_000, seed=1))
    assert other.passages != world.passages


def test_world_passages_and_questions(small_world):
    world, questions = small_world
    assert len(world.passages) == SMALL.n_passages
    assert all(p.startswith('"') and '"\n' in p for p in world.passages)
    assert [len(questions[s]) for s in ("train", "valid_seen", "valid_unseen")] == [3_000, 300, 300]
    kinds = Counter(q["metadata"]["type"] for q in questions["train"])
    assert set(kinds) == {"single", "bridge", "comparison"}
    hops = Counter(q["metadata"]["hops"] for q in questions["train"] if q["metadata"]["type"] == "bridge")
    assert set(hops) == {2, 3}
    for record in questions["train"][:500]:
        meta, gold = record["metadata"], record["golden_answers"][0]
        if meta["type"] == "comparison":
            assert gold in meta["entities"]
        else:  # the answer is stated in the passage of the last hop's subject
            last = world.passages[int(meta["supporting_ids"][-1])]
            assert gold in last, (record["question"], gold, last)
            assert len(meta["search_queries"]) == meta["hops"]


def test_world_splits_are_held_apart(small_world):
    world, questions = small_world
    entities = {s: {e for q in questions[s] for e in q["metadata"]["entities"]} for s in questions}
    assert not entities["valid_unseen"] & entities["train"]
    assert not entities["valid_unseen"] & entities["valid_seen"]
    texts = {s: {q["question"] for q in questions[s]} for s in questions}
    assert not texts["train"] & texts["valid_seen"]
    heldout = {">".join(c) for c in world.heldout_compositions()}
    train_compositions = {q["metadata"]["composition"] for q in questions["train"]}
    unseen_compositions = {q["metadata"]["composition"] for q in questions["valid_unseen"]}
    assert heldout and not heldout & train_compositions
    assert heldout & unseen_compositions
    for composition in heldout:  # every step of a held-out chain is trained on its own
        assert set(composition.split(">")) <= train_compositions


def test_expert_queries_retrieve_the_supporting_passages(tmp_path, seed_cache):
    pytest.importorskip("bm25s")
    from seed_envs.searchqa.retrievers.bm25_retriever import Bm25sRetriever

    folder = generate_world(SMALL, tmp_path / "world")
    retriever = Bm25sRetriever(folder / "corpus.jsonl")
    records = [json.loads(line) for line in (folder / "valid_unseen.jsonl").read_text().splitlines()]
    queries, wanted = [], []
    for record in records:
        queries += record["metadata"]["search_queries"]
        wanted += record["metadata"]["supporting_ids"]
    found = [want in {d.id for d in docs} for want, docs in zip(wanted, retriever.search(queries, 3), strict=True)]
    assert sum(found) / len(found) > 0.9


def test_easy_preset_is_single_hop_without_distractors():
    easy = PRESETS["world-easy"]
    world = World(easy)
    questions = world.questions()
    assert len(world.passages) == easy.n_passages
    assert {q["metadata"]["type"] for split in questions.values() for q in split} == {"single"}
    assert not any(" moved to " in p or "largest city" in p for p in world.passages)
    assert world.heldout_compositions() == set()


def test_ensure_world_generates_once(tmp_path):
    config = WorldConfig(name="tiny", n_passages=400, train_questions=100, valid_questions=20)
    folder = ensure_world(config, root=tmp_path)
    manifest = json.loads((folder / "world.json").read_text())
    assert manifest["passages"] == 400 and manifest["questions"]["valid_unseen"] == 20
    stamp = (folder / "corpus.jsonl").stat().st_mtime_ns
    assert ensure_world(config, root=tmp_path) == folder
    assert (folder / "corpus.jsonl").stat().st_mtime_ns == stamp
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder.name]  # no temporary folders left
    with pytest.raises(ValueError, match="unknown world"):
        ensure_world("world-hard", root=tmp_path)


@pytest.mark.slow
def test_world_scales_to_100k_passages(tmp_path):
    t0 = time.perf_counter()
    folder = generate_world(WorldConfig(name="big", n_passages=100_000), tmp_path / "big")
    elapsed = time.perf_counter() - t0
    assert len((folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()) == 100_000
    assert elapsed < 300, f"generation took {elapsed:.0f} s"


# ------------------------------------------------------------------ CLI


def _parse(argv):
    from seed_rl.commands import data, serve

    parser = argparse.ArgumentParser(prog="seed")
    sub = parser.add_subparsers(dest="command", required=True)
    data.register(sub)
    serve.register(sub)
    return parser.parse_args(argv)


def test_cli_generates_a_world(tmp_path, capsys):
    args = _parse(
        [
            "data",
            "search",
            "--generate",
            "--world",
            "world-easy",
            "--passages",
            "600",
            "--out",
            str(tmp_path / "w"),
        ]
    )
    assert args.func(args) == 0
    assert "600 passages" in capsys.readouterr().out
    assert {p.name for p in (tmp_path / "w").iterdir()} == {
        "corpus.jsonl",
        "train.jsonl",
        "valid_seen.jsonl",
        "valid_unseen.jsonl",
        "world.json",
    }
    args = _parse(["data", "search", "--datasets", "nq,webqa"])
    assert args.func(args) == 2
    assert "unknown dataset 'webqa'" in capsys.readouterr().out


def test_cli_reports_failed_download(tmp_path, capsys):
    args = _parse(
        [
            "data",
            "search",
            "--datasets",
            "bamboogle",
            "--out",
            str(tmp_path),
            "--endpoint",
            "http://127.0.0.1:9",
        ]
    )
    assert args.func(args) == 1
    assert "download failed" in capsys.readouterr().out


@needs_samples
def test_cli_serves_a_retriever(seed_cache):
    args = _parse(["serve", "retriever", "--corpus", str(WIKI18_SAMPLE)])
    assert (args.backend, args.host, args.port, args.topk) == ("bm25s", "127.0.0.1", 8000, 3)
    process = subprocess.Popen(
        [sys.executable, "-m", "seed_envs.searchqa.cli", "serve", "--corpus", str(WIKI18_SAMPLE), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        banner = process.stdout.readline()
        assert banner.startswith("serving bm25s over") and "http://127.0.0.1:" in banner
        url = banner.split(" at ")[-1].strip()
        request = urllib.request.Request(url, data=b'{"queries": ["Evan Morris"], "topk": 1, "return_scores": true}')
        with urllib.request.urlopen(request, timeout=30) as response:
            reply = json.loads(response.read())
        assert reply["result"][0][0]["document"]["id"] == "0"
    finally:
        process.terminate()
        process.wait(timeout=30)
