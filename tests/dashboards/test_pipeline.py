"""The real chain on a bundled sample: dissect -> every pipeline in local Spark -> dashboard -> headless Chromium.

`day_in_the_life` is the demo's sample: a fenced KIP-848 member, a fenced share member, a zombie transactional
producer, duplicate share deliveries. What the page must show is taken from the sample's ground truth, never from the
report itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkatap.dashboards.build import write_dashboard
from kafkatap.samples import capture_path, load_truth
from tests.support.chromium import NEEDS_CHROMIUM, lanes, rendered

SAMPLE = "day_in_the_life"

pytestmark = [pytest.mark.spark, pytest.mark.browser, pytest.mark.slow, NEEDS_CHROMIUM]


@pytest.fixture(scope="module")
def sample_page(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: ANN001 - SparkSession
    from kafkatap.dissect.run import dissect_captures
    from kafkatap.pipelines.report import JOBS, run

    root = tmp_path_factory.mktemp(SAMPLE)
    dissect_captures([str(capture_path(SAMPLE))], str(root / "frames"), records=True)
    run(spark, str(root / "frames"), str(root / "report"), list(JOBS))
    page = root / "dashboard.html"
    write_dashboard(str(root / "report"), str(page))
    return page


def test_sample_dashboard_draws_and_shows_every_fencing(sample_page: Path, tmp_path: Path) -> None:
    truth = load_truth(SAMPLE)
    dom = rendered(sample_page, tmp_path)
    drawn = lanes(dom)
    assert truth["fenced_epochs"] and 'data-unformatted="fencing"' in dom
    for fencing in truth["fenced_epochs"]:
        if fencing["member_id"]:  # group members' lanes show the member id, shortened to 25 characters
            assert any(lane.startswith(fencing["member_id"][:25]) for lane in drawn), (fencing, drawn)
        else:
            assert any(lane.startswith(fencing["transactional_id"]) for lane in drawn), (fencing, drawn)
        assert fencing["error_name"] in dom
    for group in truth["groups"]:
        assert group["group_id"] in dom
