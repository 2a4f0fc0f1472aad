"""The real chain on a bundled sample: dissect -> every pipeline in local Spark -> dashboard -> headless Chromium.

`classic_group` is the sample with a fencing: kt-member-2 stalls past its session timeout and its next request is
refused. What the page must show is taken from the sample's ground truth, never from the report itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboards.build import write_dashboard
from samples import capture_path, load_truth
from tests.test_dashboard_browser import CHROMIUM, lanes, rendered

SAMPLE = "classic_group"

pytestmark = [
    pytest.mark.spark,
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (make system-packages)"),
]


@pytest.fixture(scope="module")
def sample_page(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: ANN001 - SparkSession
    from dissect.run import dissect_captures
    from pipelines.report import JOBS, run

    root = tmp_path_factory.mktemp(SAMPLE)
    dissect_captures([str(capture_path(SAMPLE))], str(root / "frames"), records=True)
    run(spark, str(root / "frames"), str(root / "report"), list(JOBS))
    page = root / "dashboard.html"
    write_dashboard(str(root / "report"), str(page))
    return page


def test_sample_dashboard_draws_and_shows_the_fenced_member(sample_page: Path, tmp_path: Path) -> None:
    truth = load_truth(SAMPLE)
    [fencing] = truth["fenced_epochs"]
    dom = rendered(sample_page, tmp_path)
    drawn = lanes(dom)
    # lanes show member ids shortened to 25 characters
    assert any(lane.startswith(fencing["member_id"][:25]) for lane in drawn), drawn
    assert 'data-unformatted="fencing"' in dom
    assert fencing["error_name"] in dom
    for group in truth["groups"]:
        assert group["group_id"] in dom
