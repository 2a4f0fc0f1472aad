"""The root causes of a run's failures, written as the last lines of its output.

CI keeps only the tail of a run's log, and on CI pytest's short summary prints each failure's whole message: a Spark
failure is a Java stack trace of hundreds of lines, so the tail held frames but not what went wrong (or which tests).
This names each distinct cause once: the exception's first line and each `Caused by:` / `Suppressed:` line, with the
tests it failed (py4j's object ids, which differ on every call, are left out so that one cause is listed once).
"""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

MAX_CAUSES = 8
MAX_LINE = 300
MAX_LINES = 10
_HEADER = re.compile(r"^\s*(Caused by|Suppressed): |^: \S")
_PY4J_ID = re.compile(r"\bo\d+\.")


def causes(message: str) -> tuple[str, ...]:
    """The lines of an exception message that say what went wrong, without its stack frames."""
    lines = message.splitlines()
    if not lines:
        return ("(no message)",)
    named = [lines[0]] + [line.strip() for line in lines[1:] if _HEADER.match(line)]
    return tuple(_PY4J_ID.sub("o<id>.", line)[:MAX_LINE] for line in named[:MAX_LINES])


def _message(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    return crash.message if crash is not None else str(report.longrepr)


def write_causes(terminal: pytest.TerminalReporter) -> None:
    """One block per distinct cause, after pytest's own summary, so the log's last lines name it."""
    by_cause: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for report in terminal.stats.get("failed", []) + terminal.stats.get("error", []):
        by_cause[causes(_message(report))].append(report.nodeid)
    if not by_cause:
        return
    terminal.section("root causes", sep="=")
    for cause, nodeids in sorted(by_cause.items(), key=lambda item: -len(item[1]))[:MAX_CAUSES]:
        more = f" and {len(nodeids) - 1} more" if len(nodeids) > 1 else ""
        terminal.write_line(f"{len(nodeids)} x {nodeids[0]}{more}:")
        for line in cause:
            terminal.write_line(f"    {line}")
    if len(by_cause) > MAX_CAUSES:
        terminal.write_line(f"({len(by_cause) - MAX_CAUSES} more distinct causes above)")
