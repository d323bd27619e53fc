"""``seed data webshop``: generating offline, and downloading with fallback between sources."""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import threading

import pytest

from seed_envs.webshop import download
from seed_rl.commands import data as data_command


def run(argv):
    parser = argparse.ArgumentParser()
    data_command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_generate_writes_a_loadable_catalog(tmp_path, monkeypatch):
    pytest.importorskip("rapidfuzz", reason="the webshop extra is not installed")
    from seed_envs.webshop.data import load_data

    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path / "cache"))
    assert run(["data", "webshop", "--generate", "--dir", str(tmp_path / "cat"), "--num-products", "120"]) == 0
    assert len(load_data(tmp_path / "cat").products) == 120


@pytest.fixture
def local_server(tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_download_falls_back_to_the_next_source(tmp_path, local_server, monkeypatch):
    root, base = local_server
    (root / "broken").mkdir()
    (root / "broken" / "items_human_ins.json").write_text("<html>not json</html>")
    (root / "good").mkdir()
    (root / "good" / "items_human_ins.json").write_text(json.dumps({"B000000001": []}))
    monkeypatch.setitem(download.SOURCES, "items_human_ins.json", ("http://127.0.0.1:9/unreachable.json",))
    monkeypatch.delenv(download.MIRROR_ENV, raising=False)
    log: list[str] = []
    mirrors = [f"{base}/broken", f"{base}/good"]
    out = tmp_path / "out"
    path = download.fetch_file("items_human_ins.json", out, mirrors=mirrors, timeout=5, log=log.append)
    assert json.loads(path.read_text()) == {"B000000001": []}
    assert sum("failed" in line for line in log) == 2 and f"{base}/good" in log[-1]
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["items_human_ins.json"]  # no partial files left


def test_download_reports_every_failed_source(tmp_path, monkeypatch):
    monkeypatch.setitem(download.SOURCES, "items_human_ins.json", ("http://127.0.0.1:9/a.json",))
    monkeypatch.setenv(download.MIRROR_ENV, "http://127.0.0.1:9/mirror")
    with pytest.raises(download.DownloadError, match=r"(?s)127.0.0.1:9/a.json.*127.0.0.1:9/mirror/items_human_ins"):
        download.fetch_file("items_human_ins.json", tmp_path, timeout=5, log=lambda _: None)
