"""Topic ids are named from Metadata seen in the capture, even when the Metadata comes after the rows that need it."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from kafkatap.dissect.run import dissect_captures
from tests.support.kafka_messages import (NAMED, NEVER_NAMED, fetch_request, fetch_response, metadata_request,
                                          metadata_response)
from tests.support.pcap import TcpFlow, pcap_bytes, timed


def test_ids_seen_before_their_metadata_are_named_at_the_end(tmp_path: Path) -> None:
    flow = TcpFlow(client=("10.0.0.1", 40000), server=("10.0.0.2", 9092))
    frames = flow.handshake()
    frames += flow.send(0, fetch_request(1)) + flow.send(1, fetch_response(1))
    frames += flow.send(0, metadata_request(2))
    frames += flow.send(1, metadata_response(2))
    frames += flow.send(0, fetch_request(3)) + flow.send(1, fetch_response(3))
    capture = tmp_path / "ids.pcap"
    capture.write_bytes(pcap_bytes(timed(frames + flow.fin(0))))
    out = tmp_path / "out"
    summary = dissect_captures([str(capture)], str(out), records=True)

    assert summary["frames_by_status"] == {"ok": 3}
    assert summary["topic_ids_named_late"] == {"frames": 1, "batches": 1, "records": 1}
    rows = pq.read_table(out / "batches").to_pylist()
    assert [(r["correlation_id"], r["topic"], r["topic_id"], r["base_offset"], r["last_offset"], r["fetch_offset"],
             r["high_watermark"]) for r in rows] == [
        (1, "orders", NAMED, 5, 7, 5, 8), (1, NEVER_NAMED, NEVER_NAMED, 5, 5, 5, 8),
        (3, "orders", NAMED, 5, 7, 5, 8), (3, NEVER_NAMED, NEVER_NAMED, 5, 5, 5, 8)]
    fetches = [r for r in pq.read_table(out / "frames").to_pylist() if r["api_name"] == "Fetch"]
    assert [r["topics"] for r in fetches] == [["orders", NEVER_NAMED]] * 2
    records = pq.read_table(out / "records").to_pylist()
    assert [(r["topic"], r["offset"]) for r in records if r["correlation_id"] == 1] == [
        ("orders", 5), ("orders", 6), ("orders", 7), (NEVER_NAMED, 5)]
    assert pq.read_schema(out / "batches" / "part-00000.parquet").metadata  # docs survive the rewrite
