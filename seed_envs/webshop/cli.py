"""WebShop's commands: ``seed data webshop`` (the real data, or an offline catalog) and ``seed serve webshop``."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from seed_envs.cli import main
from seed_envs.paths import cache_dir
from seed_envs.webshop.data import DATA_ENV, shared_data
from seed_envs.webshop.download import FULL_FILES, SMALL_FILES, SPACY_MODEL_URL, DownloadError, fetch_file
from seed_envs.webshop.generate import DEFAULT_NUM_PRODUCTS, generate_catalog
from seed_envs.webshop.search import shared_engine


def default_directory() -> Path:
    """Where ``seed data webshop`` puts the files: ``$WEBSHOP_DATA``, else the seed cache."""
    return Path(os.environ[DATA_ENV]) if os.environ.get(DATA_ENV) else cache_dir("webshop", "data")


# ----------------------------------------------------------------- seed data webshop
def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="where to put the files (default: $WEBSHOP_DATA or the seed cache)",
    )
    parser.add_argument("--generate", action="store_true", help="write a procedural catalog instead of downloading")
    parser.add_argument(
        "--num-products", type=int, default=None, help="products to generate (default 2000; with --generate)"
    )
    parser.add_argument("--seed", type=int, default=0, help="generator seed (with --generate)")
    parser.add_argument(
        "--full",
        action="store_true",
        help="download the full 1.18M-product files instead of the 1,000-product ones",
    )
    parser.add_argument("--no-human", action="store_true", help="skip items_human_ins.json")
    parser.add_argument(
        "--mirror",
        action="append",
        default=[],
        help="extra base URL to try for every file (repeatable; also $WEBSHOP_MIRROR)",
    )
    parser.add_argument(
        "--spacy-model", nargs="?", const="3.8.0", default=None, metavar="VERSION",
        help="also pip-install spaCy's en_core_web_sm (default 3.8.0) from its release page",
    )  # fmt: skip


def run_data(args: argparse.Namespace) -> int:
    """Download the real WebShop data, or generate an offline catalog."""
    directory = args.dir or default_directory()
    if args.generate:
        count = args.num_products or DEFAULT_NUM_PRODUCTS
        generate_catalog(directory, count, args.seed)
        print(f"generated {count} products into {directory}; use WEBSHOP_DATA={directory}")
    else:
        names = [n for n in (FULL_FILES if args.full else SMALL_FILES) if not (args.no_human and "human" in n)]
        try:
            for name in names:
                fetch_file(name, directory, mirrors=args.mirror)
        except DownloadError as error:
            print(f"error: {error}")
            print(f"Try --mirror URL, copy the files into {directory} by hand, or use --generate.")
            return 1
        print(f"WebShop data is in {directory}; use WEBSHOP_DATA={directory}")
    if args.spacy_model:
        url = SPACY_MODEL_URL.format(version=args.spacy_model)
        return subprocess.call([sys.executable, "-m", "pip", "install", url])
    return 0


# ---------------------------------------------------------------- seed serve webshop
def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir", default=None, help="WebShop data (default: $WEBSHOP_DATA or the generated catalog)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0, help="seed of the goal list's random draws")
    parser.add_argument("--human-goals", action="store_true")
    parser.add_argument("--search-backend", default="bm25s", choices=("bm25s", "pyserini"))
    parser.add_argument("--show-attrs", action="store_true")


def run_serve(args: argparse.Namespace) -> int:
    """Run the WebShop site locally."""
    # The site needs the webshop extra (flask, rapidfuzz, jinja2): imported only to serve.
    from seed_envs.webshop.app import ShopServer, create_app

    data = shared_data(args.data_dir, seed=args.seed, human_goals=args.human_goals)
    server = ShopServer(data, shared_engine(data, args.search_backend), show_attrs=args.show_attrs)
    print(f"WebShop: {len(data.products)} products, {len(data.goals)} goals; http://{args.host}:{args.port}/")
    create_app(server).run(host=args.host, port=args.port, threaded=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.modules[__name__]))
