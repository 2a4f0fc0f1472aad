"""Worker processes split a run by connection; the tables and the summary must not depend on how many there are."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect.run import dissect_captures
from tests.support.paths import SAMPLES

CAPTURES = sorted(SAMPLES.glob("*.pcapng"))


def ports() -> list[int]:
    out = []
    for capture in CAPTURES:
        truth = json.loads(capture.with_name(capture.name.replace(".pcapng", ".truth.json")).read_text())
        out += truth["broker_ports"]
    return out


def rows(out: Path, table: str) -> list:
    return sorted(json.dumps(r, default=str, sort_keys=True) for r in pq.read_table(out / table).to_pylist())


@pytest.mark.slow
@pytest.mark.skipif(not CAPTURES, reason="no samples yet")
def test_two_workers_write_what_one_writes(tmp_path: Path) -> None:
    captures = []
    for capture in CAPTURES:  # a snapshot, so both runs read the same bytes
        captures.append(tmp_path / capture.name)
        captures[-1].write_bytes(capture.read_bytes())
    one = dissect_captures(captures, str(tmp_path / "one"), ports=ports(), records=True, workers=1)
    two = dissect_captures(captures, str(tmp_path / "two"), ports=ports(), records=True, workers=2)
    assert len(list((tmp_path / "two" / "frames").glob("part-*.parquet"))) == 2
    for table in ("frames", "batches", "records", "share", "anomalies"):
        assert rows(tmp_path / "one", table) == rows(tmp_path / "two", table), table
    for key in ("packets", "connections", "messages_by_api", "frames_by_status", "anomalies_by_kind", "rows"):
        assert one[key] == two[key], key
    assert one["byte_account"]["totals"] == two["byte_account"]["totals"]
    assert two["byte_account"]["balanced"] and two["workers"] == 2
