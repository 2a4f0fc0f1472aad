"""The pairing rule every real capture must keep: a request lacks a response only when its client went away with it
still in flight. Kafka answers a connection's requests in order, so no request of that connection sent after it was
answered; anything else is a pairing bug, not traffic."""

from __future__ import annotations

from collections import Counter


def assert_paired_but_in_flight(frames: list[dict]) -> None:
    """Fails on any status but `ok` and `unpaired_request`, or on an unpaired request sent before an answered one of
    its connection."""
    statuses = Counter(row["status"] for row in frames)
    assert set(statuses) <= {"ok", "unpaired_request"}, statuses
    last_answered: dict[str, float] = {}
    for row in frames:
        if row["status"] == "ok":
            last_answered[row["conn_id"]] = max(last_answered.get(row["conn_id"], 0), row["ts_request"].timestamp())
    for row in frames:
        if row["status"] == "unpaired_request":
            assert row["ts_request"].timestamp() > last_answered.get(row["conn_id"], 0), row
