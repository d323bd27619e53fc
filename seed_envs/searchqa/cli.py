"""Search QA's commands: ``seed data search`` (QA files and corpora) and ``seed serve retriever``.

``seed data search`` fetches, for Search-R1's 7 datasets, the nq and hotpotqa train
files and every dataset's eval file into ``$SEED_SEARCHQA_DATA`` (needs internet).
``--corpus wiki18`` also fetches the 21M-passage corpus (about 14 GB unpacked).
``--generate`` writes the procedural knowledge world instead (offline).

``seed serve retriever`` serves any back end (bm25s, pyserini, dense) over any corpus on
127.0.0.1, with Search-R1's HTTP API (``POST /retrieve``): the generated world by
default, ``--dataset`` for another named dataset's corpus, or ``--corpus FILE``. Point
Search-R1 (``retriever.url``) or ``SearchQAEnv(retriever="http://...")`` at it.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from seed_envs.cli import main
from seed_envs.core import MissingDataError
from seed_envs.searchqa.data import DATASET_FILES, MIXES, SearchDataError, check_dataset, data_root
from seed_envs.searchqa.download import default_files, download_qa, download_wiki18
from seed_envs.searchqa.generate import PRESETS, ensure_world, generate_world
from seed_envs.searchqa.retrievers import make_retriever
from seed_envs.searchqa.retrievers.server import RetrievalServer
from seed_envs.searchqa.sources import resolve_source

WORLD_CHOICES = ("world", "world-easy")


# ------------------------------------------------------------------ seed data search
def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--generate", action="store_true", help="generate the knowledge world (offline)")
    parser.add_argument("--world", choices=WORLD_CHOICES, default="world", help="world preset (--generate)")
    parser.add_argument("--passages", type=int, default=None, help="corpus size of the world (--generate)")
    parser.add_argument("--seed", type=int, default=None, help="world seed (--generate)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: the seed cache)")
    parser.add_argument(
        "--datasets", default="all", help="comma-separated FlashRAG datasets, or 'all' (the 7 of Search-R1)"
    )
    parser.add_argument("--corpus", choices=("none", "wiki18"), default="none", help="also fetch a corpus")
    parser.add_argument("--endpoint", default=None, help="hub address (default $HF_ENDPOINT or huggingface.co)")


def _generate(args: argparse.Namespace) -> int:
    config = PRESETS[args.world]
    changes = {k: v for k, v in (("n_passages", args.passages), ("seed", args.seed)) if v is not None}
    config = replace(config, **changes)
    folder = generate_world(config, args.out) if args.out else ensure_world(config)
    manifest = json.loads((folder / "world.json").read_text())
    print(f"world {config.name}: {manifest['passages']} passages, questions {manifest['questions']} in {folder}")
    return 0


def run_data(args: argparse.Namespace) -> int:
    """Search QA data: download FlashRAG QA files and wiki-18, or generate the knowledge world."""
    if args.generate:
        return _generate(args)
    names = list(DATASET_FILES) if args.datasets == "all" else [d.strip() for d in args.datasets.split(",")]
    try:
        expanded = [member for name in names for member in MIXES.get(check_dataset(name), (name,))]
    except SearchDataError as error:
        print(f"error: {error}")
        return 2
    root = args.out or data_root()
    try:
        download_qa(root, default_files(dict.fromkeys(expanded)), endpoint=args.endpoint)
        if args.corpus == "wiki18":
            print(f"wiki-18 corpus -> {download_wiki18(root, endpoint=args.endpoint)}")
    except OSError as error:
        print(f"error: download failed ({error}); this command needs internet access to the hub")
        return 1
    print(f"Search QA data is in {root}")
    return 0


# -------------------------------------------------------------- seed serve retriever
def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=("bm25s", "pyserini", "dense"), default="bm25s")
    parser.add_argument("--dataset", default="world", help="whose corpus to serve (default: the world)")
    parser.add_argument("--corpus", type=Path, default=None, help="a corpus jsonl {id, contents}")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (0 picks a free one)")
    parser.add_argument("--topk", type=int, default=3, help="topk when a request gives none")


def build_server(args: argparse.Namespace) -> tuple[RetrievalServer, Path]:
    """The retrieval server ``seed serve retriever`` runs, and the corpus it serves."""
    corpus = args.corpus or resolve_source(args.dataset).corpus_path
    retriever = make_retriever(args.backend, corpus)
    return RetrievalServer(retriever, host=args.host, port=args.port, topk=args.topk), corpus


def run_serve(args: argparse.Namespace) -> int:
    """Serve a retriever over Search-R1's HTTP API (POST /retrieve) on 127.0.0.1."""
    try:
        server, corpus = build_server(args)
    except (MissingDataError, SearchDataError, ImportError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"serving {args.backend} over {corpus} at {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.modules[__name__]))
