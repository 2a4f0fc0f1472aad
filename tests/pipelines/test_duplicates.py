"""duplicate_deliveries on hand-made frames: consumer groups, share groups and producers."""

from __future__ import annotations

import pytest

from kafkatap.dissect.tables.schema import BATCHES, FRAMES, RECORDS, SHARE
from kafkatap.pipelines.transforms.duplicates.table import duplicate_deliveries
from kafkatap.pipelines.transforms.fenced import fenced_epochs
from kafkatap.pipelines.transforms.members import member_spans, members
from kafkatap.pipelines.schema import DUPLICATE_DELIVERIES
from kafkatap.pipelines.storage import conform
from tests.support.dissected_rows import assert_frames_equal, batch, frame, record, rows, share, t, table

pytestmark = [pytest.mark.spark, pytest.mark.slow]

JOIN, SYNC, HB, COMMIT = 11, 14, 12, 8
HOST_A, HOST_B = "10.0.0.1", "10.0.0.2"


def dups(spark, frames, batches=(), share_rows=(), records=None):
    f = table(spark, FRAMES, frames)
    b = table(spark, BATCHES, list(batches))
    r = table(spark, RECORDS, records) if records is not None else None
    spans = member_spans(members(f, b))
    out = duplicate_deliveries(f, b, r, table(spark, SHARE, list(share_rows)), spans, fenced_epochs(f, b))
    return conform(out, DUPLICATE_DELIVERIES)


def expected(**values) -> dict:
    row = dict.fromkeys(DUPLICATE_DELIVERIES.names)
    row.update(possible=False, wire_only=False)
    row.update(values)
    return row


def member(name: str, host: str, ts: float, generation: int, **kw) -> dict:
    return frame(JOIN, "JoinGroup", ts, conn_id=f"coord-{name}", client_addr=f"{host}:4000", client_id=name,
                 group_id="g", member_id=name, generation_id=generation,
                 response={"member_id": name, "generation_id": generation}, **kw)


def fetched(name: str, host: str, ts: float, base: int, last: int, fetch_offset: int, corr: int) -> dict:
    return batch("fetch", ts, "t", 0, base, last, conn_id=f"fetch-{name}", client_addr=f"{host}:5000",
                 client_id=name, correlation_id=corr, fetch_offset=fetch_offset)


def test_rebalance_redelivers_a_range_to_another_member(spark):
    frames = [member("a", HOST_A, 1, 1), member("b", HOST_B, 2, 1),
              member("b", HOST_B, 15, 2, correlation_id=15)]
    batches = [
        fetched("a", HOST_A, 10, 20, 29, 20, 1), fetched("a", HOST_A, 10, 30, 39, 20, 1),
        # b restarts from the committed offset 25: records 20-24 are skipped, 25-39 delivered again
        fetched("b", HOST_B, 20, 20, 29, 25, 7), fetched("b", HOST_B, 20, 30, 39, 25, 7),
        fetched("b", HOST_B, 21, 40, 49, 40, 8),
    ]
    got = dups(spark, frames, batches)
    assert_frames_equal(got, table(spark, DUPLICATE_DELIVERIES, [expected(
        kind="classic_group", group_id="g", topic="t", partition=0, first_offset=25, last_offset=39, records=15,
        deliveries=2, first_delivery_ts=t(10), redelivery_ts=t(20), first_member_id="a", redelivery_member_id="b",
        first_conn_id="fetch-a", redelivery_conn_id="fetch-b", first_client_id="a", redelivery_client_id="b",
        cause="rebalance", wire_deliveries=2)]))


def test_third_delivery_counts_per_offset_and_commit_shows_wire_only(spark):
    frames = [member("a", HOST_A, 1, 1),
              frame(COMMIT, "OffsetCommit", 12, conn_id="coord-a", client_addr=f"{HOST_A}:4000", client_id="a",
                    group_id="g", member_id="a", request={"member_id": "a", "topics": [
                        {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 0}]}]})]
    batches = [fetched("a", HOST_A, 10, 0, 9, 0, 1), fetched("a", HOST_A, 20, 0, 9, 0, 2),
               fetched("a", HOST_A, 30, 0, 9, 5, 3)]
    got = [(r["first_offset"], r["last_offset"], r["records"], r["deliveries"], r["cause"], r["first_position"],
            r["wire_only"]) for r in rows(dups(spark, frames, batches))]
    # offsets 0-4 went out twice, 5-9 three times. The commit after the first fetch (position 0) says the
    # application consumed none of it; the third fetch going back to 5 says it consumed 0-4 of the second one: each
    # offset reached the application once, so both runs are wire only.
    assert got == [(0, 4, 5, 2, "refetch", 0, True), (5, 9, 5, 3, "refetch", 0, True)]


def test_unlinked_consumer_and_records_count_compacted_offsets(spark):
    batches = [batch("fetch", 1, "t", 1, 0, 9, client_id="solo", correlation_id=1, fetch_offset=0, record_count=3),
               batch("fetch", 2, "t", 1, 0, 9, client_id="solo", correlation_id=2, fetch_offset=0, record_count=3)]
    records = [record("fetch", 1, "t", 1, o, correlation_id=1, base_offset=0) for o in (0, 4, 9)]
    got = [(r["kind"], r["group_id"], r["first_offset"], r["last_offset"], r["records"], r["cause"])
           for r in rows(dups(spark, [frame(3, "Metadata", 0)], batches, records=records))]
    assert got == [("none", None, 0, 9, 3, "unlinked")]


def test_share_group_reacquisition_after_release(spark):
    share_rows = [
        share("acquired", 1, "t", 0, 0, 9, delivery_count=1, member_id="s1", conn_id="c1"),
        share("ack", 2, "t", 0, 0, 9, ack_type="release", member_id="s1", conn_id="c1"),
        share("acquired", 3, "t", 0, 0, 9, delivery_count=2, member_id="s2", conn_id="c2"),
        share("acquired", 5, "t", 0, 5, 9, delivery_count=3, member_id="s2", conn_id="c2"),
        # acquired once in the capture, but the broker counts a second delivery: the first was before the capture
        share("acquired", 4, "t", 0, 10, 19, delivery_count=2, member_id="s2", conn_id="c2"),
        # 20-24 likewise; 25-29 is acquired again in the capture, so its row says so instead
        share("acquired", 6, "t", 0, 20, 29, delivery_count=2, member_id="s1", conn_id="c1"),
        share("acquired", 7, "t", 0, 25, 29, delivery_count=3, member_id="s1", conn_id="c1"),
        share("acquired", 8, "t", 0, 30, 39, delivery_count=1, member_id="s1", conn_id="c1"),
    ]
    got = dups(spark, [frame(3, "Metadata", 0)], share_rows=share_rows)
    common = dict(kind="share_group", group_id="sg", topic="t", partition=0, records=5, first_delivery_ts=t(1),
                  redelivery_ts=t(3), first_member_id="s1", redelivery_member_id="s2", first_conn_id="c1",
                  redelivery_conn_id="c2", first_client_id="app", redelivery_client_id="app",
                  ack_history=["release@2026-01-01T00:00:02.000000Z"], cause="released")
    assert_frames_equal(got, table(spark, DUPLICATE_DELIVERIES, [
        expected(**common, first_offset=0, last_offset=4, deliveries=2, delivery_count=2),
        expected(**common, first_offset=5, last_offset=9, deliveries=3, delivery_count=3),
        expected(kind="share_group", group_id="sg", topic="t", partition=0, first_offset=25, last_offset=29,
                 records=5, deliveries=2, delivery_count=3, first_delivery_ts=t(6), redelivery_ts=t(7),
                 first_member_id="s1", redelivery_member_id="s1", first_conn_id="c1", redelivery_conn_id="c1",
                 first_client_id="app", redelivery_client_id="app", ack_history=[], cause="lock_timeout"),
        *[expected(kind="share_group", group_id="sg", topic="t", partition=0, first_offset=first, last_offset=last,
                   records=last - first + 1, deliveries=2, delivery_count=2, redelivery_ts=t(ts),
                   redelivery_member_id=member, redelivery_conn_id=conn, redelivery_client_id="app", ack_history=[],
                   cause="delivered_before_capture")
          for first, last, ts, member, conn in [(10, 19, 4, "s2", "c2"), (20, 24, 6, "s1", "c1")]],
    ]))


def test_producer_sequence_appended_twice_and_possible_resend(spark):
    batches = [
        batch("produce", 1, "t", 0, 0, 4, producer_id=5, producer_epoch=0, base_sequence=10, assigned_offset=100,
              correlation_id=1),
        batch("produce", 2, "t", 0, 0, 4, producer_id=5, producer_epoch=0, base_sequence=10, assigned_offset=100,
              correlation_id=2),
        batch("produce", 3, "t", 0, 0, 4, producer_id=5, producer_epoch=0, base_sequence=10, assigned_offset=107,
              correlation_id=3),
        batch("produce", 4, "t", 1, 0, 1, client_id="plain", correlation_id=4, assigned_offset=50, fingerprint=77),
        batch("produce", 5, "t", 1, 0, 1, client_id="plain", correlation_id=5, assigned_offset=52, fingerprint=77),
        # other records, or none readable: no re-send of the batches above
        batch("produce", 6, "t", 1, 0, 1, client_id="plain", correlation_id=6, assigned_offset=54, fingerprint=78),
        batch("produce", 7, "t", 1, 0, 1, client_id="plain", correlation_id=7, assigned_offset=56),
        batch("produce", 8, "t", 1, 0, 1, client_id="plain", correlation_id=8, assigned_offset=58),
        # the same records from another host's producer of the same (default) client id: no retry of theirs
        batch("produce", 4, "t", 1, 0, 1, client_id="plain", correlation_id=4, assigned_offset=60, fingerprint=79,
              conn_id="c2", client_addr="10.0.0.2:50000"),
        batch("produce", 5, "t", 1, 0, 1, client_id="plain", correlation_id=5, assigned_offset=62, fingerprint=79,
              conn_id="c3", client_addr="10.0.0.3:50000"),
    ]
    # the batches' fingerprints are their records' (the dissector's --records): the records table is not read again
    records = []
    got = [(r["kind"], r["partition"], r["first_offset"], r["last_offset"], r["original_offset"], r["deliveries"],
            r["cause"], r["possible"]) for r in rows(dups(spark, [frame(3, "Metadata", 0)], batches,
                                                          records=records))]
    assert got == [("producer", 0, 107, 111, 100, 2, "retry_appended_twice", False),
                   ("producer", 1, 52, 53, 50, 2, "possible_retry", True)]


def test_a_possible_resends_window_sorts_by_the_fingerprint_first(spark):
    """The window over non-idempotent batches sorts by their fingerprint first: Spark's sort compares rows by an
    8-byte prefix of its first key, which a client's batches share when it is their client id (on the 228k-frame
    chatty capture that sort took 1.6 s of tasks instead of 0.74)."""
    from kafkatap.pipelines.transforms.duplicates.producer import producer_duplicates

    b = table(spark, BATCHES, [batch("produce", 4, "t", 1, 0, 1, client_id="plain", correlation_id=4,
                                     fingerprint=1)])
    plan = producer_duplicates(b, True)._jdf.queryExecution().executedPlan().toString()
    window_sorts = [line.strip(" :+-") for line in plan.splitlines()
                    if "Sort [" in line and "fingerprint" in line]
    assert window_sorts and all(s.startswith("Sort [fingerprint") for s in window_sorts), plan
