"""rebalances, ownership_conflicts, e2e_latency and who fenced whom, on hand-made frames."""

from __future__ import annotations

import math

import pytest

from kafkatap.dissect.tables.schema import BATCHES, FRAMES, RECORDS
from kafkatap.pipelines import schema
from kafkatap.pipelines.storage import conform
from tests.support.dissected_rows import assert_frames_equal, batch, frame, record, t, table
from kafkatap.pipelines.transforms.conflicts import ownership_conflicts
from kafkatap.pipelines.transforms.e2e import e2e_latency
from kafkatap.pipelines.transforms.fenced import fenced_epochs
from kafkatap.pipelines.transforms.members import member_spans, members
from kafkatap.pipelines.transforms.rebalances import rebalances

pytestmark = [pytest.mark.spark, pytest.mark.slow]

JOIN, SYNC, HB, LEAVE, CGH, FETCH, PRODUCE = 11, 14, 12, 13, 68, 1, 0


def join(ts, member, generation, conn, **kw):
    return frame(JOIN, "JoinGroup", ts, conn_id=conn, client_id=member, group_id="g", member_id=member,
                 correlation_id=int(ts * 10), response={"member_id": member, "generation_id": generation}, **kw)


def sync(ts, member, generation, conn, parts, **kw):
    assignment = {"$bytes": "AA==", "$consumer": {"version": 0, "assigned_partitions": [
        {"topic": "t", "partitions": parts}]}}
    return frame(SYNC, "SyncGroup", ts, conn_id=conn, client_id=member, group_id="g", member_id=member,
                 generation_id=generation, correlation_id=int(ts * 10), response={"assignment": assignment}, **kw)


def rip(ts, member, generation, conn):
    return frame(HB, "Heartbeat", ts, conn_id=conn, client_id=member, group_id="g", member_id=member,
                 generation_id=generation, correlation_id=int(ts * 10), error_code=27,
                 error_name="REBALANCE_IN_PROGRESS")


def classic_frames():
    """a forms the group (gen 1); b joins: a's heartbeat hears REBALANCE_IN_PROGRESS, a failed round (gen 2: b's
    SyncGroup refused) then gen 3; then b leaves (gen 4)."""
    return [
        join(1, "a", 1, "ca"), sync(2, "a", 1, "ca", [0, 1]),
        join(10, "b", 2, "cb"), rip(11, "a", 1, "ca"), join(12, "a", 2, "ca"),
        sync(13, "a", 2, "ca", [0]),
        sync(13.5, "b", 2, "cb", [1], error_code=27, error_name="REBALANCE_IN_PROGRESS"),
        join(14, "b", 3, "cb"), join(14.5, "a", 3, "ca"), sync(15, "a", 3, "ca", [0]), sync(16, "b", 3, "cb", [1]),
        frame(LEAVE, "LeaveGroup", 20, conn_id="cb", client_id="b", group_id="g", member_id="b"),
        rip(21, "a", 3, "ca"), join(22, "a", 4, "ca"), sync(23, "a", 4, "ca", [0, 1]),
    ]


def test_classic_episodes_with_a_failed_round(spark):
    got = conform(rebalances(table(spark, FRAMES, classic_frames()), table(spark, BATCHES, [])), schema.REBALANCES)
    base = dict(group_id="g", kind="classic_group")
    assert_frames_equal(got.drop("evidence"), table(spark, schema.REBALANCES, [
        dict(base, start_ts=t(1), end_ts=t(2.001), duration_s=1.001, generation_or_epoch=1, rounds=1,
             members_before=0, members_after=1, members_joined=["a"], members_left=[], partitions_moved=2,
             moved_partitions=["t:0", "t:1"], stalled_s=1.001, trigger="member_joined", trigger_member_id="a"),
        # opened by b's JoinGroup request; gen 2 failed (b never synced), gen 3 closed it with b's SyncGroup
        dict(base, start_ts=t(10), end_ts=t(16.001), duration_s=6.001, generation_or_epoch=3, rounds=2,
             members_before=1, members_after=2, members_joined=["b"], members_left=[], partitions_moved=1,
             moved_partitions=["t:1"], stalled_s=4.001, trigger="member_joined", trigger_member_id="b"),
        # opened by b's LeaveGroup request (before a hears REBALANCE_IN_PROGRESS); a releases everything at its
        # JoinGroup (eager): t:1 unowned from b's leave (20) to a's SyncGroup (23.001)
        dict(base, start_ts=t(20), end_ts=t(23.001), duration_s=3.001, generation_or_epoch=4, rounds=1,
             members_before=2, members_after=1, members_joined=[], members_left=["b"], partitions_moved=1,
             moved_partitions=["t:1"], stalled_s=3.001, trigger="member_left", trigger_member_id="b"),
    ]).drop("evidence"))
    evidence = [r["evidence"] for r in got.orderBy("start_ts").collect()]
    assert evidence[1] == ("opened by JoinGroup request corr=100 conn=cb; closed by SyncGroup response corr=160 "
                           "conn=cb at 2026-01-01T00:00:16.001000Z")
    assert evidence[2].startswith("opened by LeaveGroup request corr=20000 conn=cb;")


def hb(ts, member, sent, answered, parts=None, **kw):
    response = {"member_id": member, "member_epoch": answered}
    if parts is not None:
        response["assignment"] = {"topic_partitions": [{"topic_id": "TID", "partitions": parts}]}
    return frame(CGH, "ConsumerGroupHeartbeat", ts, conn_id=f"c{member}", client_id=member, group_id="k",
                 member_id=member, member_epoch=sent, response_member_epoch=answered, correlation_id=int(ts * 10),
                 response=response, **kw)


def test_kip848_episode_lasts_until_every_member_reconciled(spark):
    frames = [
        hb(1, "a", 0, 1, [0, 1]),
        # b joins: a is told to revoke 1 at epoch 1, reconciles to epoch 2; b gets 1 at epoch 2
        hb(5, "b", 0, 2, []), hb(6, "a", 1, 1, [0]), hb(7, "a", 1, 2), hb(8, "b", 2, 2, [1]),
        # b expires (no leave, no error): a is handed everything at epoch 3
        hb(20, "a", 2, 3, [0, 1]),
    ]
    batches = [batch("fetch", 1, "orders", 0, 0, 0, topic_id="TID")]
    got = conform(rebalances(table(spark, FRAMES, frames), table(spark, BATCHES, batches)), schema.REBALANCES)
    keys = ["generation_or_epoch", "start_ts", "end_ts", "members_joined", "members_left", "moved_partitions",
            "stalled_s", "trigger"]
    got = [tuple(r[k] for k in keys) for r in got.orderBy("end_ts").collect()]  # the session time zone is UTC
    assert [(g[0], g[3], g[4], g[5], g[7]) for g in got] == [
        (1, ["a"], [], ["orders:0", "orders:1"], "member_joined"),
        (2, ["b"], [], ["orders:1"], "member_joined"),
        (3, [], ["b"], ["orders:1"], "member_expired"),
    ]
    # orders:1 unowned from a's revocation (6.001) to b's assignment (8.001); then from b's last request (8.001,
    # it went silent) to a's assignment at epoch 3 (20.001)
    assert [(g[1].isoformat(), g[2].isoformat(), round(g[6], 3)) for g in got][1:] == [
        ("2026-01-01T00:00:05.001000", "2026-01-01T00:00:08.001000", 2.0),
        ("2026-01-01T00:00:20.001000", "2026-01-01T00:00:20.001000", 12.0)]


def test_kip848_revocation_at_the_same_epoch_opens_the_next_episode_and_a_leave_opens_one(spark):
    """As librdkafka's mock hands targets: a joiner waits at epoch 0 while the current member is told, still at its
    epoch, to give a partition up; that revocation is the next episode's first step, not the end of the last one."""
    frames = [
        hb(1, "a", 0, 2, [0, 1]), hb(1.5, "a", 2, 2),
        hb(5, "b", 0, 0), hb(6, "a", 2, 2, [0]), hb(6.1, "a", 2, 3), hb(6.2, "b", 0, 3, [1]),
        hb(10, "b", -1, -1), hb(10.5, "a", 3, 4, [0, 1]),
    ]
    got = rebalances(table(spark, FRAMES, frames), table(spark, BATCHES, []))
    got = [(r["generation_or_epoch"], r["start_ts"].isoformat()[17:], r["end_ts"].isoformat()[17:], r["trigger"],
            r["evidence"].split(";")[0]) for r in got.orderBy("end_ts").collect()]
    assert got == [
        (2, "01.001000", "01.001000", "member_joined", "opened by ConsumerGroupHeartbeat response corr=10 conn=ca at "
                                                       "2026-01-01T00:00:01.001000Z"),
        (3, "06.001000", "06.201000", "member_joined", "opened by ConsumerGroupHeartbeat response corr=60 conn=ca at "
                                                       "2026-01-01T00:00:06.001000Z"),
        (4, "10", "10.501000", "member_left", "opened by ConsumerGroupHeartbeat request corr=100 conn=cb"),
    ]


def test_ownership_conflict_of_a_zombie_the_broker_expired(spark):
    frames = [
        join(1, "a", 1, "ca"), join(1.5, "b", 1, "cb"),
        sync(2, "a", 1, "ca", [0]), sync(2, "b", 1, "cb", [1]),
        # b stalls; the broker expires it and hands t:1 to a; b hears of it only at its next heartbeat
        rip(10, "a", 1, "ca"), join(11, "a", 2, "ca"), sync(12, "a", 2, "ca", [0, 1]),
        frame(FETCH, "Fetch", 13, conn_id="fb", client_id="b", client_addr="10.0.0.1:50001"),
        frame(HB, "Heartbeat", 16, conn_id="cb", client_id="b", group_id="g", member_id="b", generation_id=1,
              correlation_id=160, error_code=25, error_name="UNKNOWN_MEMBER_ID"),
        frame(HB, "Heartbeat", 17, conn_id="ca", client_id="a", group_id="g", member_id="a", generation_id=2),
    ]
    batches = [batch("fetch", 13.001, "t", 1, 5, 9, conn_id="fb", client_id="b", correlation_id=5, fetch_offset=5),
               batch("fetch", 14.001, "t", 1, 10, 12, conn_id="fb", client_id="b", correlation_id=6,
                     fetch_offset=10)]
    f, b = table(spark, FRAMES, frames), table(spark, BATCHES, batches)
    got = conform(ownership_conflicts(f, b, member_spans(members(f, b))), schema.OWNERSHIP_CONFLICTS)
    common = dict(kind="classic_group", group_id="g", topic="t", partition=1, first_member_id="b",
                  first_client_id="b", second_member_id="a", second_client_id="a",
                  second_evidence="handed by SyncGroup response corr=120 conn=ca at 2026-01-01T00:00:12.001000Z")
    assert_frames_equal(got, table(spark, schema.OWNERSHIP_CONFLICTS, [
        dict(common, source="assignment", overlap_start=t(12.001), overlap_end=t(16.001), overlap_s=4.0, fetches=2,
             first_evidence="held since SyncGroup response corr=20 conn=cb at 2026-01-01T00:00:02.001000Z, until "
                            "Heartbeat response corr=160 conn=cb UNKNOWN_MEMBER_ID"),
    ]))


def test_ownership_conflict_of_a_member_fetching_a_partition_it_was_told_to_give_up(spark):
    frames = [
        join(1, "a", 1, "ca"), join(1.5, "b", 1, "cb"), sync(2, "a", 1, "ca", [0]), sync(2, "b", 1, "cb", [1]),
        rip(10, "a", 1, "ca"), join(11, "a", 2, "ca"), join(11, "b", 2, "cb"),
        sync(12, "a", 2, "ca", [0, 1]), sync(12, "b", 2, "cb", []),
        frame(HB, "Heartbeat", 17, conn_id="ca", client_id="a", group_id="g", member_id="a", generation_id=2),
        frame(HB, "Heartbeat", 17, conn_id="cb", client_id="b", group_id="g", member_id="b", generation_id=2),
    ]
    batches = [batch("fetch", 13.001, "t", 1, 5, 9, conn_id="fb", client_id="b", correlation_id=5, fetch_offset=5),
               batch("fetch", 14.001, "t", 1, 10, 12, conn_id="fb", client_id="b", correlation_id=6,
                     fetch_offset=10)]
    f, b = table(spark, FRAMES, frames), table(spark, BATCHES, batches)
    got = conform(ownership_conflicts(f, b, member_spans(members(f, b))), schema.OWNERSHIP_CONFLICTS)
    assert_frames_equal(got, table(spark, schema.OWNERSHIP_CONFLICTS, [dict(
        kind="classic_group", group_id="g", topic="t", partition=1, source="fetch", first_member_id="b",
        first_client_id="b", second_member_id="a", second_client_id="a", overlap_start=t(13.001),
        overlap_end=t(14.001), overlap_s=1.0, fetches=2,
        first_evidence="2 Fetch responses after it was handed away, the first corr=5 conn=fb at "
                       "2026-01-01T00:00:13.001000Z",
        second_evidence="owner, handed by SyncGroup response corr=120 conn=ca at 2026-01-01T00:00:12.001000Z")]))


def test_no_conflict_when_the_old_owner_released_first(spark):
    f = table(spark, FRAMES, classic_frames())
    b = table(spark, BATCHES, [])
    assert ownership_conflicts(f, b, member_spans(members(f, b))).count() == 0


def test_member_fenced_by_the_member_that_took_its_partitions(spark):
    frames = [
        join(1, "a", 1, "ca"), join(1.5, "b", 1, "cb"), sync(2, "a", 1, "ca", [0]), sync(2, "b", 1, "cb", [1]),
        rip(10, "a", 1, "ca"), join(11, "a", 2, "ca"), sync(12, "a", 2, "ca", [0, 1]),
        frame(HB, "Heartbeat", 16, conn_id="cb", client_id="b", group_id="g", member_id="b", generation_id=1,
              correlation_id=160, error_code=25, error_name="UNKNOWN_MEMBER_ID"),
    ]
    (row,) = fenced_epochs(table(spark, FRAMES, frames), table(spark, BATCHES, [])).collect()
    assert (row["member_id"], row["fenced_by_client_id"], row["fenced_by_conn_id"], row["fenced_by_member_id"],
            row["fenced_by_ts"].timestamp()) == ("b", "a", "ca", "a", t(12.001).timestamp())


def test_e2e_latency_from_produce_to_first_delivery_per_consumer(spark):
    batches = [
        # offsets 100..103 written at 1.0, 104..105 at 1.5
        batch("produce", 1.0, "t", 0, 0, 3, assigned_offset=100, conn_id="p"),
        batch("produce", 1.5, "t", 0, 0, 1, assigned_offset=104, conn_id="p"),
        # consumer x (no group): fetches 98..105 from fetch offset 100 at 2.0, again at 3.0 (not a first delivery)
        batch("fetch", 2.0, "t", 0, 98, 105, conn_id="fx", client_id="x", fetch_offset=100),
        batch("fetch", 3.0, "t", 0, 98, 105, conn_id="fx", client_id="x", fetch_offset=100),
        # share group s: 96..101 at 2.5; 96..99 were produced before the capture
        batch("share_fetch", 2.5, "t", 0, 96, 101, conn_id="fs", client_id="y", group_id="s"),
    ]
    records = [record("produce", 1.0, "t", 0, o, timestamp=t(0.9)) for o in range(0, 4)]
    records = [record("fetch", 2.0, "t", 0, o, timestamp=t(0.9)) for o in range(100, 104)]
    links = table(spark, schema.FETCH_LINKS, [])
    got = conform(e2e_latency(table(spark, BATCHES, batches), table(spark, RECORDS, records), links, "10 seconds"),
                  schema.E2E_LATENCY)
    window = dict(window_start=t(0), window_end=t(10), topic="t", partition=0)
    assert_frames_equal(got, table(spark, schema.E2E_LATENCY, [
        dict(window, group_id=None, client_id="x", records=6, produce_seen=6, produce_missing=0, p50_ms=1000.0,
             p95_ms=1000.0, p99_ms=1000.0, max_ms=1000.0, create_time_p50_ms=1100.0, create_time_p99_ms=1100.0),
        dict(window, group_id="s", client_id=None, records=6, produce_seen=2, produce_missing=4, p50_ms=1500.0,
             p95_ms=1500.0, p99_ms=1500.0, max_ms=1500.0, create_time_p50_ms=1600.0, create_time_p99_ms=1600.0),
    ]))


def test_e2e_latency_percentiles_are_exact_over_a_large_window(spark):
    """30,001 offsets written at 1.0 s and each delivered alone, 1 s plus a distinct number of microseconds later:
    p50, p95 and p99 are the values at nearest rank ceil(q * n), as on a small window, not an approximation (a
    percentile_approx summary of this many values is off by a few ranks)."""
    from pyspark.sql import functions as F

    n, base_ms = 30_001, 1000.0
    produced = table(spark, BATCHES, [batch("produce", 1.0, "t", 0, 0, n - 1, assigned_offset=0, conn_id="p")])
    one = table(spark, BATCHES, [batch("fetch", 2.0, "t", 0, 0, 0, conn_id="f", client_id="x")])
    later_us = F.pmod(F.col("id") * 7919, F.lit(n))  # a permutation of 0 .. n-1
    fetched = (one.crossJoin(spark.range(n))
               .withColumn("base_offset", F.col("id")).withColumn("last_offset", F.col("id"))
               .withColumn("ts", F.timestamp_micros(F.unix_micros("ts") + later_us)).drop("id"))
    links = table(spark, schema.FETCH_LINKS, [])
    (row,) = e2e_latency(produced.unionByName(fetched), None, links, "1 hour").collect()
    at_rank = {q: base_ms + (math.ceil(q * n) - 1) / 1000 for q in (0.5, 0.95, 0.99)}
    assert (row.records, row.produce_seen) == (n, n)
    assert (row.p50_ms, row.p95_ms, row.p99_ms, row.max_ms) == (at_rank[0.5], at_rank[0.95], at_rank[0.99],
                                                                 base_ms + (n - 1) / 1000)
