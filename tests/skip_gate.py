"""The skip gate: with ``SEED_SKIP_GATE=1`` (CI sets it), a skipped test that the allowlist does
not name fails the session.

Every skip is recorded: ``pytest.skip`` and ``pytest.importorskip`` in a test, in a fixture or at
a module's import, and ``skip``/``skipif`` marks. The session always ends with one line,
``N skipped: <ids>``; with the gate on, each skip the allowlist does not name is listed with its
reason and the exit status is 1.

The allowlist (``tests/skip_allowlist.txt``, or the file ``SEED_SKIP_ALLOWLIST`` names) has one
entry a line, ``PATTERN -- REASON``: the reason says why CI cannot run the test. PATTERN is a test
id (``tests/test_x.py::test_y[param]``), or, when a whole module skips at import, the module's path
(``tests/test_x.py``), written exactly or as an fnmatch pattern (``*``, ``?``; brackets are
character classes there, so a pattern with a parameter in it is better written with ``*``).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

GATE_ENV = "SEED_SKIP_GATE"
ALLOWLIST_ENV = "SEED_SKIP_ALLOWLIST"
ALLOWLIST = Path(__file__).with_name("skip_allowlist.txt")
SEPARATOR = " -- "


@dataclass(frozen=True)
class AllowedSkip:
    """An allowlist entry: the tests it names and why CI cannot run them."""

    pattern: str
    reason: str

    def matches(self, skip_id: str) -> bool:
        return skip_id == self.pattern or fnmatch.fnmatchcase(skip_id, self.pattern)


@dataclass(frozen=True)
class Skip:
    """A skipped test, or a module that skipped at import, and the reason pytest gave."""

    nodeid: str
    reason: str


def parse_allowlist(text: str, source: str = "skip allowlist") -> list[AllowedSkip]:
    """The entries of an allowlist; blank lines and ``#`` comments are left out. An entry without
    a pattern or a reason raises ValueError naming its line."""
    entries = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pattern, separator, reason = line.partition(SEPARATOR)
        if not separator or not pattern.strip() or not reason.strip():
            raise ValueError(f"{source}:{number}: expected 'PATTERN{SEPARATOR}REASON', got {line!r}")
        entries.append(AllowedSkip(pattern.strip(), reason.strip()))
    return entries


def load_allowlist(path: Path = ALLOWLIST) -> list[AllowedSkip]:
    return parse_allowlist(path.read_text(encoding="utf-8"), source=str(path))


def allowed_by(skip_id: str, allowlist: Iterable[AllowedSkip]) -> AllowedSkip | None:
    """The first entry that names ``skip_id``, or None."""
    return next((entry for entry in allowlist if entry.matches(skip_id)), None)


def unlisted(skips: Iterable[Skip], allowlist: list[AllowedSkip]) -> list[Skip]:
    """The skips no allowlist entry names."""
    return [skip for skip in skips if allowed_by(skip.nodeid, allowlist) is None]


def gate_is_on(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get(GATE_ENV, "") not in ("", "0")


def skip_reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    """The reason of a skipped report (pytest keeps it as ``(path, line, "Skipped: reason")``)."""
    longrepr = report.longrepr
    message = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return message.removeprefix("Skipped: ")


def summary_line(skips: list[Skip]) -> str:
    """``N skipped: <ids>`` (``0 skipped`` when there are none)."""
    ids = ", ".join(skip.nodeid for skip in skips)
    return f"{len(skips)} skipped" + (f": {ids}" if ids else "")


class SkipGate:
    """The plugin: records every skip, and with the gate on fails the session on unlisted ones."""

    def __init__(self, allowlist: list[AllowedSkip], source: Path, gate: bool) -> None:
        self.allowlist = allowlist
        self.source = source
        self.gate = gate
        self.skips: list[Skip] = []
        self.failing: list[Skip] = []

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.skipped:  # a module that skipped at import (importorskip, allow_module_level)
            self.skips.append(Skip(report.nodeid, skip_reason(report)))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):  # an xfail reports as skipped too
            self.skips.append(Skip(report.nodeid, skip_reason(report)))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.failing = unlisted(self.skips, self.allowlist) if self.gate else []
        if self.failing and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> Generator[None, None, None]:
        """After every other summary (pytest's short summary included), before the final counts."""
        yield
        if self.failing:
            terminalreporter.section(f"skip gate ({GATE_ENV}=1): skips {self.source} does not list", red=True)
            for skip in self.failing:
                terminalreporter.write_line(f"{skip.nodeid}: {skip.reason}")
            terminalreporter.write_line(
                f"{len(self.failing)} unlisted skip(s) fail this run: make them run, or list them in "
                f"{self.source} with the reason CI cannot run them",
                red=True,
            )
        terminalreporter.write_line(summary_line(self.skips))


def pytest_configure(config: pytest.Config) -> None:
    source = Path(os.environ.get(ALLOWLIST_ENV) or ALLOWLIST)
    try:
        allowlist = load_allowlist(source)
    except (OSError, ValueError) as error:
        raise pytest.UsageError(f"skip gate: {error}") from error
    config.pluginmanager.register(SkipGate(allowlist, source, gate_is_on()), "seed-skip-gate")
