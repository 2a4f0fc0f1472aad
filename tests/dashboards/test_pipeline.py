"""The real chain on a bundled sample: dissect -> every pipeline in local Spark -> dashboard -> headless Chromium, as
`kafkatap report` runs it (the run's `demo_report`, tests/conftest.py).

`day_in_the_life` is the demo's sample: a fenced KIP-848 member, a fenced share member, a zombie transactional
producer, duplicate share deliveries. What the page must show is taken from the sample's ground truth, never from the
report itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkatap.samples import load_truth
from tests.support.chromium import NEEDS_CHROMIUM, lanes, rendered

SAMPLE = "day_in_the_life"

pytestmark = [pytest.mark.spark, pytest.mark.browser, pytest.mark.slow, NEEDS_CHROMIUM]


def test_sample_dashboard_draws_and_shows_every_fencing(demo_report: Path, tmp_path: Path) -> None:
    truth = load_truth(SAMPLE)
    dom = rendered(demo_report / "dashboard.html", tmp_path)
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
