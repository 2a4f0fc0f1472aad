"""Storage helpers, capture-set grouping and the summary merge of the distributed dissect job."""

from __future__ import annotations

import json

import pytest

from kafkatap.pipelines import schema
from kafkatap.pipelines.captures import capture_sets, list_captures, merge_summaries
from kafkatap.pipelines.storage import window_interval


def test_window_interval():
    assert [window_interval(w) for w in ("1s", "500ms", "5m", "1h", "2d")] == [
        "1 seconds", "500 milliseconds", "5 minutes", "1 hours", "2 days"]
    with pytest.raises(ValueError):
        window_interval("fast")


def test_capture_sets_group_rotated_files_in_order():
    files = ["/c/a.pcapng", "/c/a.pcapng2", "/c/a.pcapng10", "/c/a.pcapng1", "/c/b-00002.pcapng", "/c/b-00001.pcapng",
             "/d/a.pcapng", "/c/other.pcap"]
    assert capture_sets(files) == [
        ["/c/a.pcapng", "/c/a.pcapng1", "/c/a.pcapng2", "/c/a.pcapng10"],
        ["/c/b-00001.pcapng", "/c/b-00002.pcapng"],
        ["/c/other.pcap"],
        ["/d/a.pcapng"],
    ]
    assert capture_sets(files[:2], one_per_file=True) == [["/c/a.pcapng"], ["/c/a.pcapng2"]]


def test_list_captures_matches_the_last_component(tmp_path):
    for name in ("x.pcapng", "y.pcapng", "z.txt"):
        (tmp_path / name).write_bytes(b"")
    assert list_captures(str(tmp_path / "*.pcapng")) == [str(tmp_path / "x.pcapng"), str(tmp_path / "y.pcapng")]
    assert list_captures(f"file://{tmp_path}/x.*") == [str(tmp_path / "x.pcapng")]


def test_merge_summaries():
    a = {"files": ["a"], "packets": 10, "capture_span": {"first_ts_us": 5, "last_ts_us": 9, "first_ts": "2026-01-01"},
         "rows": {"frames": 3}, "byte_account": {"balanced": True}}
    b = {"files": ["b"], "packets": 4, "capture_span": {"first_ts_us": 2, "last_ts_us": 7, "first_ts": "2025-12-31"},
         "rows": {"frames": 1, "batches": 2}, "byte_account": {"balanced": False}}
    merged = merge_summaries([a, b])
    assert merged == {"files": ["a", "b"], "packets": 14,
                      "capture_span": {"first_ts_us": 2, "last_ts_us": 9, "first_ts": "2025-12-31"},
                      "rows": {"frames": 4, "batches": 2}, "byte_account": {"balanced": False},
                      "capture_sets": [a, b]}
    json.dumps(merged)


def test_every_output_column_is_documented():
    for name, table in schema.TABLES.items():
        assert table.metadata[b"doc"], name
        for field in table:
            assert field.metadata and field.metadata[b"doc"], f"{name}.{field.name}"
    assert "duplicate_records" in schema.SUMMARY_KEYS and "fenced_epochs" in schema.SUMMARY_KEYS

