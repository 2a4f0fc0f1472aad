"""share_records and share_spso on hand-made frames: one test per rule of the share-partition state machine."""

from __future__ import annotations

import pytest

from kafkatap.dissect.tables.schema import BATCHES, FRAMES, SHARE
from kafkatap.pipelines import schema
from kafkatap.pipelines.storage import conform
from tests.support.dissected_rows import frame, rows, share, table
from kafkatap.pipelines.transforms.share_records import share_records
from kafkatap.pipelines.transforms.share_spso import spso_pinned, spso_windows

pytestmark = pytest.mark.spark

FETCH, ACK = 78, 79
LOCK_MS = 1000


def fetch(ts: float, corr: int, conn: str = "c1", error: int = 0, lock_ms: int = LOCK_MS) -> dict:
    """The ShareFetch exchange an acquired row came in (its lock duration, its top-level error)."""
    return frame(FETCH, "ShareFetch", ts, correlation_id=corr, conn_id=conn, error_code=error,
                 response={"error_code": error, "acquisition_lock_timeout_ms": lock_ms})


def acq(ts: float, corr: int, lo: int, hi: int, count: int, member: str = "m1", conn: str = "c1") -> dict:
    return share("acquired", ts, "t", 0, lo, hi, correlation_id=corr, delivery_count=count, member_id=member,
                 client_id=f"app-{member}", conn_id=conn)


def ack(ts: float, corr: int, lo: int, hi: int, kind: str, member: str = "m1", conn: str = "c1",
        error: int = 0) -> dict:
    return share("ack", ts, "t", 0, lo, hi, correlation_id=corr, ack_type=kind, member_id=member, conn_id=conn,
                 api_key=ACK, error_code=error)


def build(spark, frames, share_rows):
    f = table(spark, FRAMES, frames)
    got = conform(share_records(f, table(spark, SHARE, share_rows)), schema.TABLES["share_records"])
    return f, got


def states(df) -> list[tuple]:
    return [(r["first_offset"], r["last_offset"], r["final_state"], r["archive_reason"],
             [(d["member_id"], d["delivery_count"], d["ack_type"], d["end"]) for d in r["deliveries"]])
            for r in sorted(rows(df), key=lambda r: r["first_offset"])]


def test_accept_release_reject_and_ranges_cut_where_acks_differ(spark):
    _, got = build(spark, [fetch(1, 1, conn="c1"), fetch(3, 2, conn="c2"), fetch(9, 3, conn="c1")], [
        acq(1, 1, 0, 9, 1),
        ack(2, 10, 0, 3, "accept"), ack(2, 10, 4, 5, "release"), ack(2, 10, 6, 9, "reject"),
        acq(3, 2, 4, 5, 2, member="m2", conn="c2"),
        ack(4, 11, 4, 5, "accept", member="m2", conn="c2"),
        acq(9, 3, 10, 10, 1)])
    assert states(got) == [
        (0, 3, "acknowledged", None, [("m1", 1, "accept", "accepted")]),
        (4, 5, "acknowledged", None, [("m1", 1, "release", "released"), ("m2", 2, "accept", "accepted")]),
        (6, 9, "archived", "rejected", [("m1", 1, "reject", "rejected")]),
        (10, 10, "acquired", None, [("m1", 1, None, "held")]),
    ]
    by_first = {r["first_offset"]: r for r in rows(got)}
    assert by_first[4]["time_to_terminal_ms"] == 3000.0 and by_first[4]["members"] == ["m1", "m2"]
    assert by_first[4]["deliveries"][0]["lock_ms"] == LOCK_MS and by_first[4]["lock_expiries"] == 0
    assert by_first[10]["holder"] == "m1" and by_first[10]["terminal_ts"] is None


def test_lock_timeout_reacquisition_and_refused_acks(spark):
    _, got = build(spark, [fetch(1, 1), fetch(1.5, 2, conn="c2"), fetch(4, 3, conn="c2"),
                           frame(ACK, "ShareAcknowledge", 1.8, correlation_id=12, conn_id="c1", error_code=122,
                                 response={"error_code": 122})], [
        acq(1, 1, 0, 0, 1), acq(1, 1, 1, 1, 1),
        # offset 0: re-acquired by m2 0.5 s later without an ack (the broker took it back before the lock ran out);
        # m1's late ack is refused by a session error at the top of the response
        acq(1.5, 2, 0, 0, 2, member="m2", conn="c2"),
        ack(1.8, 12, 0, 0, "accept"),
        ack(1.9, 13, 0, 0, "accept", member="m2", conn="c2"),
        # offset 1: held past its 1 s lock, then handed to m2 at 4 s, which accepts it
        acq(4, 3, 1, 1, 2, member="m2", conn="c2"),
        ack(4.5, 14, 1, 1, "accept", member="m2", conn="c2")])
    by_first = {r["first_offset"]: r for r in rows(got)}
    first = by_first[0]["deliveries"]
    assert [(d["member_id"], d["ack_type"], d["ack_error"], d["end"]) for d in first] == [
        ("m1", "accept", "SHARE_SESSION_NOT_FOUND", "reacquired"), ("m2", "accept", None, "accepted")]
    assert [d["end"] for d in by_first[1]["deliveries"]] == ["lock_timeout", "accepted"]
    assert by_first[0]["lock_expiries"] == 1 and by_first[1]["lock_expiries"] == 1
    assert {r["final_state"] for r in rows(got)} == {"acknowledged"}


def test_held_past_the_lock_at_capture_end_is_a_lock_timeout(spark):
    _, got = build(spark, [fetch(1, 1), frame(3, "Metadata", 5)], [acq(1, 1, 0, 4, 1)])
    (r,) = rows(got)
    assert r["deliveries"][0]["end"] == "lock_timeout" and r["lock_expiries"] == 1
    assert r["final_state"] == "unknown" and r["holder"] is None  # no limit known, nothing acquired after it


def describe_configs(ts: float, resource_type: int, name: str, config: str, value: str) -> dict:
    return frame(32, "DescribeConfigs", ts, response={"results": [
        {"error_code": 0, "resource_type": resource_type, "resource_name": name,
         "configs": [{"name": config, "value": value}]}]})


@pytest.mark.parametrize("config", [(32, "sg", "share.delivery.count.limit"),
                                    (4, "1", "group.share.delivery.count.limit")])
def test_delivery_limit_from_describe_configs(spark, config):
    resource_type, name, key = config
    _, got = build(spark, [describe_configs(0.5, resource_type, name, key, "3"), fetch(1, 1), fetch(2, 2),
                           fetch(3, 3)], [
        acq(1, 1, 0, 1, 1), ack(1.5, 10, 0, 1, "release"),
        acq(2, 2, 0, 1, 2), ack(2.5, 11, 0, 1, "release"),
        acq(3, 3, 0, 0, 3), ack(3.5, 12, 0, 0, "release")])  # offset 1 is not acquired again (yet)
    by_first = {r["first_offset"]: r for r in rows(got)}
    assert (by_first[0]["final_state"], by_first[0]["archive_reason"]) == ("archived", "delivery_limit")
    assert by_first[0]["terminal_ts"] == "2026-01-01T00:00:03.500000Z"
    assert by_first[1]["final_state"] == "available"  # released at count 2 of 3: it will come back
    assert {(r["delivery_limit"], r["delivery_limit_source"]) for r in rows(got)} == {(3, "describe_configs")}


def test_delivery_limit_inferred_when_records_stop_coming_back(spark):
    _, got = build(spark, [fetch(1, 1), fetch(2, 2), fetch(5, 3)], [
        acq(1, 1, 0, 0, 1), ack(1.5, 10, 0, 0, "release"),
        acq(2, 2, 0, 0, 2), ack(2.5, 11, 0, 0, "release"),  # never handed out again though offset 1 is, later
        acq(5, 3, 1, 1, 1), ack(5.5, 12, 1, 1, "release")])  # released at count 1 < 2: comes back
    by_first = {r["first_offset"]: r for r in rows(got)}
    assert (by_first[0]["final_state"], by_first[0]["archive_reason"], by_first[0]["delivery_limit"],
            by_first[0]["delivery_limit_source"]) == ("archived", "delivery_limit", 2, "inferred")
    assert by_first[1]["final_state"] == "available"


def test_released_with_no_limit_and_nothing_after_is_unknown(spark):
    _, got = build(spark, [fetch(1, 1)], [acq(1, 1, 0, 0, 4), ack(1.5, 10, 0, 0, "release")])
    (r,) = rows(got)
    assert (r["final_state"], r["archive_reason"], r["delivery_limit"]) == ("unknown", None, None)


def test_renew_extends_the_lock(spark):
    _, got = build(spark, [fetch(1, 1), fetch(2.5, 2, conn="c2")], [
        acq(1, 1, 0, 0, 1), ack(1.8, 10, 0, 0, "renew"),
        acq(2.5, 2, 0, 0, 2, member="m2", conn="c2")])  # 1.5 s after acquisition, 0.7 s after the renew
    (r,) = rows(got)
    assert [d["end"] for d in r["deliveries"]] == ["reacquired", "held"]


def test_spso_pinned_by_a_stuck_range_and_share_lag(spark):
    frames, records = build(spark, [fetch(1, 1), fetch(1, 2, conn="c2"), fetch(9, 3)], [
        acq(1, 1, 0, 4, 1), acq(1, 2, 5, 9, 1, member="m2", conn="c2"),
        ack(2, 10, 5, 9, "accept", member="m2", conn="c2"),  # 5-9 done at 2 s, 0-4 still held by m1
        ack(3.5, 11, 0, 4, "accept"),  # SPSO moves to 10 at 3.5 s
        acq(9, 3, 10, 11, 1)])
    batches = table(spark, BATCHES, [])
    pinned = rows(conform(spso_pinned(records, frames), schema.TABLES["share_spso/pinned"]))
    assert [(p["pinned_offset"], p["pinned_last_offset"], p["holder"], p["start_ts"], p["end_ts"],
             p["records_behind"], p["duration_ms"]) for p in pinned] == [
        (0, 4, "m1", "2026-01-01T00:00:02.000000Z", "2026-01-01T00:00:03.500000Z", 5, 1500.0)]
    windows = rows(conform(spso_windows(records, batches, "1 seconds"), schema.TABLES["share_spso/windows"]))
    got = {w["window_end"][17:19]: (w["spso"], w["log_end_offset"], w["terminal_above_spso"], w["share_lag"],
                                    w["pinned"]) for w in windows}
    assert got["02"] == (0, 10, 0, 10, False)
    assert got["03"] == (0, 10, 5, 5, True)
    assert got["04"] == (10, 10, 0, 0, False)
    assert got["10"] == (10, 12, 0, 2, False)
