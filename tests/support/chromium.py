"""Headless Chromium for the dashboard tests: the page's own script reports what happened (`data-charts-drawn`,
`data-js-errors`, `#js-errors`), which `--dump-dom` shows after scripts ran.

Chromium's console is logged to stderr (`--enable-logging=stderr`), so an error the page could not trap shows too.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
NEEDS_CHROMIUM = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                    reason="needs Debian's chromium (make system-packages)")


def chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    """One headless run with no network, no sync and a throwaway profile; virtual time lets plotly finish."""
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
         "--virtual-time-budget=5000", "--enable-logging=stderr", "--v=0", *args, page.as_uri()],
        capture_output=True, text=True, timeout=120)


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def rendered(page: Path, tmp: Path) -> str:
    """The DOM after the page's scripts ran, asserting nothing went wrong on the way."""
    run = chromium(page, tmp / "profile", "--dump-dom")
    dom = run.stdout
    assert "<body" in dom, run.stderr[-2000:]
    assert console_errors(run.stderr) == []
    assert not re.search(r"<html[^>]*data-js-errors=", dom), re.search(r'<pre id="js-errors"[^>]*>(.*?)</pre>',
                                                                       dom, re.S).group(1)
    expected = int(re.search(r'data-charts-expected="(\d+)"', dom).group(1))
    assert expected > 0
    assert f'data-charts-drawn="{expected}"' in dom
    return dom


def lanes(dom: str) -> list[str]:
    """The y-axis tick labels plotly drew (timeline lanes among them)."""
    return re.findall(r'<g class="ytick"><text[^>]*data-unformatted="([^"]*)"', dom)
