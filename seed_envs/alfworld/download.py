"""Fetch the ALFWorld release (``seed data alfworld``): the text-game files alfworld 0.4.2's
``alfworld-download`` fetches, unpacked in the upstream layout (see :mod:`.data`)."""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from seed_envs.alfworld.data import default_download_dir
from seed_envs.download import fetch

#: What ``alfworld-download`` of alfworld 0.4.2 fetches for the text games.
RELEASE_URLS: tuple[str, ...] = (
    "https://github.com/alfworld/alfworld/releases/download/0.2.2/json_2.1.1_json.zip",
    "https://github.com/alfworld/alfworld/releases/download/0.2.2/json_2.1.1_pddl.zip",
    "https://github.com/alfworld/alfworld/releases/download/0.4.0/json_2.1.2_tw-pddl.zip",
)


def download_release(
    data_dir: str | Path | None = None,
    urls: Sequence[str] | None = None,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> Path:
    """Fetch and unpack the ALFWorld release into ``data_dir``; return ``data_dir``.

    ``urls`` defaults to :data:`RELEASE_URLS`. Files already there are kept unless ``force``.
    Needs internet access to GitHub; raises :class:`~seed_envs.download.DownloadError`
    (naming the URL) when it fails.
    """
    root = Path(data_dir).expanduser() if data_dir is not None else default_download_dir()
    root.mkdir(parents=True, exist_ok=True)
    for url in RELEASE_URLS if urls is None else urls:
        log(f"downloading {url}")
        archive = fetch(url, root / url.rsplit("/", 1)[-1], log=log)
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                out = root / member
                if not out.resolve().is_relative_to(root.resolve()):
                    raise ValueError(f"refusing to extract {member!r} outside {root}")
                if force or not out.exists():
                    zf.extract(member, root)
        archive.unlink()
    return root
