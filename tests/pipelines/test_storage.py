"""Storage helpers and the listing of captures for the Spark dissect."""

from __future__ import annotations

import pytest

from kafkatap.pipelines import schema
from kafkatap.pipelines.filesystems import list_captures
from kafkatap.pipelines.storage import window_interval


def test_window_interval():
    assert [window_interval(w) for w in ("1s", "500ms", "5m", "1h", "2d")] == [
        "1 seconds", "500 milliseconds", "5 minutes", "1 hours", "2 days"]
    with pytest.raises(ValueError):
        window_interval("fast")


def test_list_captures_matches_the_last_component(tmp_path):
    for name in ("x.pcapng", "y.pcapng", "z.txt"):
        (tmp_path / name).write_bytes(b"")
    assert list_captures(str(tmp_path / "*.pcapng")) == [str(tmp_path / "x.pcapng"), str(tmp_path / "y.pcapng")]
    assert list_captures(f"file://{tmp_path}/x.*") == [str(tmp_path / "x.pcapng")]


def test_every_output_column_is_documented():
    for name, table in schema.TABLES.items():
        assert table.metadata[b"doc"], name
        for field in table:
            assert field.metadata and field.metadata[b"doc"], f"{name}.{field.name}"
    assert "duplicate_records" in schema.SUMMARY_KEYS and "fenced_epochs" in schema.SUMMARY_KEYS

