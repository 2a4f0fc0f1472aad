"""The share records section in headless Chromium, on the real share_group sample: dissect -> the share_records job
-> dashboard. What the page must show comes from the consumers' logs (the sample's truth), not from the report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kafkatap.dashboards.build import write_dashboard
from kafkatap.samples import capture_path, load_truth
from tests.support.chromium import NEEDS_CHROMIUM, rendered

SAMPLE = "share_group"

pytestmark = [pytest.mark.spark, pytest.mark.browser, pytest.mark.slow, NEEDS_CHROMIUM]


@pytest.fixture(scope="module")
def report(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: ANN001 - SparkSession
    from kafkatap.dissect.run import dissect_captures
    from kafkatap.pipelines.report import run

    root = tmp_path_factory.mktemp(SAMPLE)
    dissect_captures([str(capture_path(SAMPLE))], str(root / "frames"))
    run(spark, str(root / "frames"), str(root / "report"), ["share_records"], window="100ms")
    return root / "report"


def test_summary_counts_the_share_records(report: Path) -> None:
    summary = json.loads((report / "summary.json").read_text())
    assert summary["share_records"]["acknowledged"] > 0 and summary["share_records"]["archived"] > 0
    assert summary["share_poison_ranges"] == 0  # the mock's limit is not on the wire and nothing came after
    assert summary["share_pinned_episodes"] >= 1 and summary["share_lock_expiries"] > 0


def test_page_draws_the_record_map_and_the_pinning_episode(report: Path, tmp_path: Path) -> None:
    page = tmp_path / "dashboard.html"
    write_dashboard(str(report), str(page))
    dom = rendered(page, tmp_path)  # every chart drew, no script error
    assert 'id="share-records"' in dom and "Share-partition record map" in dom
    truth = load_truth(SAMPLE)
    last: dict[int, str] = {}
    for d in truth["share_deliveries"]:
        last[d["offset"]] = d["ack"]
    stuck = min(o for o, a in last.items() if a == "release")  # the lowest offset the consumers left unfinished
    pinned = dom[dom.index('id="share-pinned-table"'):].split("</table>")[0]
    assert re.findall(r"<tr>(?:<td[^>]*>[^<]*</td>){3}<td[^>]*>(\d+)</td>", pinned) == [str(stuck)]
