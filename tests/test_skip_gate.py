"""The skip gate (tests/skip_gate.py): the allowlist, the matcher, and real pytest runs that it fails."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest
from skip_gate import (
    ALLOWLIST,
    ALLOWLIST_ENV,
    GATE_ENV,
    AllowedSkip,
    Skip,
    allowed_by,
    gate_is_on,
    load_allowlist,
    parse_allowlist,
    summary_line,
    unlisted,
)

TESTS = Path(__file__).resolve().parent

ALLOWLIST_TEXT = """
# a comment, then a blank line

tests/test_a.py::test_parity_* -- needs UPSTREAM_DIR (parity check, run by hand)
tests/test_b.py -- needs a GPU
"""


def test_parse_allowlist_reads_patterns_and_reasons():
    assert parse_allowlist(ALLOWLIST_TEXT) == [
        AllowedSkip("tests/test_a.py::test_parity_*", "needs UPSTREAM_DIR (parity check, run by hand)"),
        AllowedSkip("tests/test_b.py", "needs a GPU"),
    ]


@pytest.mark.parametrize("line", ["tests/test_a.py::test_x", "tests/test_a.py::test_x -- ", " -- a reason"])
def test_an_entry_without_a_pattern_or_a_reason_is_refused(line):
    with pytest.raises(ValueError, match=r"allow\.txt:2: expected 'PATTERN -- REASON'"):
        parse_allowlist(f"# header\n{line}\n", source="allow.txt")


def test_a_listed_skip_is_allowed_and_an_unlisted_one_is_not():
    allowlist = parse_allowlist(ALLOWLIST_TEXT)
    listed = Skip("tests/test_a.py::test_parity_goals[seed-0]", "set UPSTREAM_DIR")
    whole_module = Skip("tests/test_b.py", "no GPU")
    other = Skip("tests/test_a.py::test_goals", "thefuzz is not installed")
    assert allowed_by(listed.nodeid, allowlist) == allowlist[0]
    assert allowed_by(whole_module.nodeid, allowlist) == allowlist[1]
    assert unlisted([listed, whole_module, other], allowlist) == [other]
    # a module's path does not name the tests in it
    assert allowed_by("tests/test_b.py::test_one", allowlist) is None


def test_an_exact_id_with_a_parameter_matches_itself():
    """Brackets are fnmatch's character classes; an id written out in full still names itself."""
    entry = AllowedSkip("tests/test_a.py::test_x[seed/WebShop-v0]", "a reason")
    assert entry.matches("tests/test_a.py::test_x[seed/WebShop-v0]")
    assert not entry.matches("tests/test_a.py::test_x[seed/ALFWorld-v0]")


def test_gate_env():
    assert gate_is_on({GATE_ENV: "1"})
    assert not gate_is_on({GATE_ENV: "0"}) and not gate_is_on({})


def test_summary_line():
    assert summary_line([]) == "0 skipped"
    assert summary_line([Skip("t.py::a", "r"), Skip("u.py", "r")]) == "2 skipped: t.py::a, u.py"


def test_the_repos_allowlist_names_test_files_that_exist():
    entries = load_allowlist(ALLOWLIST)
    assert entries
    for entry in entries:
        path = entry.pattern.split("::")[0]
        assert glob.glob(str(TESTS.parent / path)), f"{entry.pattern}: no test file matches {path}"


# ------------------------------------------------------------------ real pytest runs

SKIPPING_TESTS = """
import sys

import pytest


def test_passes():
    pass


@pytest.mark.skipif(sys.maxsize > 0, reason="needs the upstream checkout")
def test_parity():
    pass


def test_needs_a_module():
    pytest.importorskip("no_such_module_here", reason="no_such_module_here is not installed")


@pytest.mark.xfail(reason="an expected failure is not a skip")
def test_xfail():
    raise AssertionError
"""

SKIPPING_MODULE = """
import pytest

pytest.importorskip("no_such_module_either", reason="the whole module needs no_such_module_either")


def test_never_collected():
    pass
"""


def run_pytest(folder: Path, allowlist: str, gate: str) -> subprocess.CompletedProcess[str]:
    """pytest on ``folder`` in a child process, with the skip gate loaded and ``allowlist`` as its list."""
    (folder / "allow.txt").write_text(allowlist)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
        ALLOWLIST_ENV: str(folder / "allow.txt"),
        GATE_ENV: gate,
    }
    command = [sys.executable, "-m", "pytest", "-q", "-p", "skip_gate", "-p", "no:cacheprovider", str(folder)]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def skipping_tests(tmp_path: Path) -> Path:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # the child's rootdir and settings, not the repo's
    (tmp_path / "test_skipping.py").write_text(SKIPPING_TESTS)
    (tmp_path / "test_skipping_module.py").write_text(SKIPPING_MODULE)
    return tmp_path


SKIPPED = "3 skipped: test_skipping_module.py, test_skipping.py::test_parity, test_skipping.py::test_needs_a_module"


def test_the_gate_fails_a_run_with_an_unlisted_skip(skipping_tests):
    done = run_pytest(skipping_tests, "test_skipping.py::test_parity -- needs the upstream checkout\n", gate="1")
    print(done.stdout)
    assert done.returncode == 1, done.stdout + done.stderr
    listed = done.stdout.split("skips ", 1)[1]
    assert "test_skipping.py::test_needs_a_module: no_such_module_here is not installed" in listed
    assert "test_skipping_module.py: the whole module needs no_such_module_either" in listed
    assert "test_skipping.py::test_parity:" not in listed
    assert SKIPPED in done.stdout


def test_the_gate_passes_a_run_whose_skips_are_all_listed(skipping_tests):
    allowlist = "test_skipping.py::test_[pn]* -- the reasons\ntest_skipping_module.py -- the module's reason\n"
    done = run_pytest(skipping_tests, allowlist, gate="1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "skip gate" not in done.stdout
    assert SKIPPED in done.stdout


def test_without_the_gate_skips_are_only_counted(skipping_tests):
    done = run_pytest(skipping_tests, "", gate="")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "skip gate" not in done.stdout
    assert SKIPPED in done.stdout
