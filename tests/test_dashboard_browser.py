"""The dashboard in a real browser: headless Chromium loads the page offline, and the page's own script reports
what happened (`data-charts-drawn`, `data-js-errors`, `#js-errors`), which `--dump-dom` shows after scripts ran.

Chromium's console is logged to stderr (`--enable-logging=stderr`), so an error the page could not trap shows too.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kafkatap.dashboards.build import write_dashboard
from tests.test_dashboard_report import CLASSIC_MEMBER, FENCED_MEMBER, HOSTILE, write_report

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (make system-packages)"),
]


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


@pytest.fixture(scope="module")
def fixture_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dashboard")
    page = root / "dashboard.html"
    write_dashboard(str(write_report(root / "report")), str(page))
    return page


def lanes(dom: str) -> list[str]:
    """The y-axis tick labels plotly drew (timeline lanes among them)."""
    return re.findall(r'<g class="ytick"><text[^>]*data-unformatted="([^"]*)"', dom)


def test_fixture_dashboard_draws_every_chart(fixture_page: Path, tmp_path: Path) -> None:
    dom = rendered(fixture_page, tmp_path)
    assert dom.count('class="main-svg"') >= 2 * 17  # plotly drew its SVG layers in every chart container
    # the fenced member has its lane in the group timeline, with the fencing mark in the legend
    assert f"{FENCED_MEMBER} (consumer-b)" in lanes(dom)
    assert any(lane.startswith(CLASSIC_MEMBER) for lane in lanes(dom))
    assert 'data-unformatted="fencing"' in dom
    # the hostile client id is shown as text, never parsed as a tag
    assert HOSTILE not in dom and "&lt;script&gt;alert" in dom


def test_fixture_dashboard_tables_sort_on_click(fixture_page: Path, tmp_path: Path) -> None:
    """Click the fencings table's "used epoch" header twice (descending), then read the rows' order."""
    clicking = tmp_path / "clicking.html"
    probe = """<script>
      var th = Array.from(document.querySelectorAll('#fencings-table th')).find(h => h.textContent === 'used epoch');
      th.click(); th.click();
      document.body.setAttribute('data-sorted', Array.from(document.querySelectorAll('#fencings-table tbody tr'))
        .map(r => r.cells[th.cellIndex].textContent).join(','));
    </script></body>"""
    clicking.write_text(fixture_page.read_text().replace("</body>", probe))
    dom = rendered(clicking, tmp_path)
    assert 'data-sorted="4,1,0"' in dom


def test_screenshot_of_the_fixture_dashboard(fixture_page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "dashboard.png"
    run = chromium(fixture_page, tmp_path / "profile", "--hide-scrollbars", "--window-size=1400,2400",
                   f"--screenshot={shot}")
    assert shot.exists(), run.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
