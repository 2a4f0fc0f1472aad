"""The dashboard in a real browser: headless Chromium loads the page of the hand-made report offline
(tests/support/chromium.py reads what the page's own script reported)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafkatap.dashboards.build import write_dashboard
from tests.support.chromium import NEEDS_CHROMIUM, chromium, lanes, rendered
from tests.support.report import CLASSIC_MEMBER, FENCED_MEMBER, HOSTILE, write_report

pytestmark = [pytest.mark.browser, pytest.mark.slow, NEEDS_CHROMIUM]


@pytest.fixture(scope="module")
def fixture_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dashboard")
    page = root / "dashboard.html"
    write_dashboard(str(write_report(root / "report")), str(page))
    return page


def test_fixture_dashboard_draws_every_chart(fixture_page: Path, tmp_path: Path) -> None:
    dom = rendered(fixture_page, tmp_path)
    assert dom.count('class="main-svg"') >= 2 * 17  # plotly drew its SVG layers in every chart container
    # the fenced member has its lane in the group timeline, with the fencing mark in the legend
    assert f"{FENCED_MEMBER} (consumer-b)" in lanes(dom)
    assert any(lane.startswith(CLASSIC_MEMBER) for lane in lanes(dom))
    assert 'data-unformatted="fencing"' in dom
    # the hostile client id is shown as text, never parsed as a tag
    assert HOSTILE not in dom and "&lt;script&gt;alert" in dom


def test_fixture_dashboard_draws_rebalance_bands_e2e_charts_and_conflicts(fixture_page: Path,
                                                                         tmp_path: Path) -> None:
    """rendered() already asserts no console or page error and every chart drawn; here: what issue #16 added."""
    dom = rendered(fixture_page, tmp_path)
    # four episodes (three in orders-cg, one in legacy-grp) as shapes below the traces, labelled, with a hover mark
    bands = re.findall(r'<g class="shape-group"[^>]*><path[^>]*d="M([\d.]+),[\d.]+H([\d.]+)[^"]*"[^>]*'
                       r'fill: rgb\(124, 58, 237\)', dom)
    assert len(bands) == 4 and all(float(x1) > float(x0) for x0, x1 in bands)  # drawn, and wide enough to see
    assert "2 s · member_fenced" in dom and "13 s · member_joined" in dom
    assert 'data-unformatted="rebalance episode"' in dom
    # the episode and conflict tables, and one end-to-end chart per topic with its percentiles
    assert len(re.findall(r"<tr[^>]*>", dom.split('id="rebalances-table"')[1].split("</table>")[0])) == 1 + 4
    assert len(re.findall(r"<tr[^>]*>", dom.split('id="ownership-conflicts-table"')[1].split("</table>")[0])) == 1 + 2
    for topic in ("orders", "tasks"):
        assert f'data-unformatted="{topic}: produce → delivery"' in dom
    assert 'data-unformatted="p99"' in dom and "have no Produce in the capture" in dom
    assert 'href="#ownership-conflicts"' in dom and 'id="ownership-conflicts"' in dom


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
