"""fenced_epochs on hand-made frames: broker-reported fencings with their evidence, and inferred zombies."""

from __future__ import annotations

import pytest

from kafkatap.dissect.tables.schema import BATCHES, FRAMES
from kafkatap.pipelines.transforms.fenced import fenced_epochs
from kafkatap.pipelines.schema import FENCED_EPOCHS
from kafkatap.pipelines.storage import conform
from kafkatap.pipelines.testing import assert_frames_equal, batch, frame, t, table

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CGH, INIT, END_TXN, PRODUCE, JOIN, HB, COMMIT = 68, 22, 26, 0, 11, 12, 8


def fenced(spark, frames, batches=()):
    return conform(fenced_epochs(table(spark, FRAMES, frames), table(spark, BATCHES, list(batches))), FENCED_EPOCHS)


def run(spark, frames, batches=()):
    return sorted((r.asDict() for r in fenced(spark, frames, batches).collect()), key=lambda r: (r["ts"], r["kind"]))


def expected(**values) -> dict:
    row = dict.fromkeys(FENCED_EPOCHS.names)
    row.update(values)
    return row


def assert_frame(spark, actual, rows):
    """Whole-frame comparison inside Spark (timestamps stay UTC-aware; row order does not matter)."""
    assert_frames_equal(actual, table(spark, FENCED_EPOCHS, rows))


def test_kip848_fenced_member_epoch_with_its_evidence(spark):
    frames = [
        frame(CGH, "ConsumerGroupHeartbeat", 1, correlation_id=1, group_id="g", member_id="m1", member_epoch=0,
              response_member_epoch=3, response={"member_id": "m1", "member_epoch": 3}),
        frame(CGH, "ConsumerGroupHeartbeat", 2, correlation_id=2, group_id="g", member_id="m1", member_epoch=3,
              response_member_epoch=5, response={"member_id": "m1", "member_epoch": 5}),
        frame(CGH, "ConsumerGroupHeartbeat", 3, correlation_id=3, group_id="g", member_id="m1", member_epoch=3,
              error_code=110, error_name="FENCED_MEMBER_EPOCH"),
        frame(CGH, "ConsumerGroupHeartbeat", 3.5, correlation_id=4, group_id="g", member_id="m1", member_epoch=3,
              error_code=110, error_name="FENCED_MEMBER_EPOCH"),
    ]
    assert_frame(spark, fenced(spark, frames), [expected(
        kind="consumer_group", group_id="g", member_id="m1", client_id="app", stale_epoch=3, current_epoch=5,
        current_epoch_source="ConsumerGroupHeartbeat response corr=2 conn=c1 at 2026-01-01T00:00:02.001000Z",
        error_code=110, error_name="FENCED_MEMBER_EPOCH", api_key=CGH, api_name="ConsumerGroupHeartbeat",
        correlation_id=3, conn_id="c1", ts=t(3), inferred=False, requests=2)])


def test_producer_fenced_by_a_newer_instance_and_a_silent_zombie_produce(spark):
    frames = [
        frame(INIT, "InitProducerId", 1, correlation_id=1, transactional_id="tx",
              response={"producer_id": 7, "producer_epoch": 0}),
        frame(INIT, "InitProducerId", 2, correlation_id=1, conn_id="c2", transactional_id="tx",
              response={"producer_id": 7, "producer_epoch": 1}),
        frame(END_TXN, "EndTxn", 3, correlation_id=5, transactional_id="tx", producer_id=7, producer_epoch=0,
              error_code=90, error_name="PRODUCER_FENCED", request={"committed": True}),
        frame(PRODUCE, "Produce", 4, correlation_id=6, transactional_id="tx"),
    ]
    batches = [batch("produce", 4, "t", 0, 0, 0, correlation_id=6, producer_id=7, producer_epoch=0)]
    source = "InitProducerId response corr=1 conn=c2 at 2026-01-01T00:00:02.001000Z"
    common = dict(kind="producer", transactional_id="tx", producer_id=7, client_id="app", stale_epoch=0,
                  current_epoch=1, current_epoch_source=source, conn_id="c1", requests=1,
                  fenced_by_client_id="app", fenced_by_conn_id="c2", fenced_by_ts=t(2.001))
    assert_frame(spark, fenced(spark, frames, batches), [
        expected(**common, error_code=90, error_name="PRODUCER_FENCED", api_key=END_TXN, api_name="EndTxn",
                 correlation_id=5, ts=t(3), inferred=False),
        expected(**common, error_code=0, error_name="NONE", api_key=PRODUCE, api_name="Produce", correlation_id=6,
                 ts=t(4), inferred=True),
    ])


def test_unknown_member_id_counts_only_after_membership(spark):
    frames = [
        # A first join refused with UNKNOWN_MEMBER_ID: an ordinary join race, not a fencing.
        frame(HB, "Heartbeat", 0.5, group_id="cg", member_id="early", generation_id=1, error_code=25,
              error_name="UNKNOWN_MEMBER_ID"),
        frame(JOIN, "JoinGroup", 1, correlation_id=1, group_id="cg", member_id="m2", generation_id=1,
              response={"member_id": "m2", "generation_id": 1}),
        frame(COMMIT, "OffsetCommit", 9, correlation_id=9, group_id="cg", member_id="m2", error_code=25,
              error_name="UNKNOWN_MEMBER_ID", request={"generation_id_or_member_epoch": 1, "member_id": "m2"}),
    ]
    assert [(r["kind"], r["member_id"], r["stale_epoch"], r["current_epoch"], r["api_name"], r["inferred"])
            for r in run(spark, frames)] == [("classic_group", "m2", 1, 1, "OffsetCommit", False)]


def test_illegal_generation_and_stale_heartbeat_inferred(spark):
    frames = [
        frame(JOIN, "JoinGroup", 1, correlation_id=1, group_id="cg", member_id="m", generation_id=4,
              response={"member_id": "m", "generation_id": 4}),
        frame(JOIN, "JoinGroup", 2, correlation_id=2, group_id="cg", member_id="m", generation_id=5,
              response={"member_id": "m", "generation_id": 5}),
        frame(HB, "Heartbeat", 3, correlation_id=3, group_id="cg", member_id="m", generation_id=4,
              error_code=22, error_name="ILLEGAL_GENERATION"),
        frame(HB, "Heartbeat", 4, correlation_id=4, group_id="cg", member_id="m", generation_id=4,
              error_code=27, error_name="REBALANCE_IN_PROGRESS"),
        frame(HB, "Heartbeat", 5, correlation_id=5, group_id="cg", member_id="m", generation_id=5),
    ]
    got = [(r["error_name"], r["stale_epoch"], r["current_epoch"], r["inferred"]) for r in run(spark, frames)]
    assert got == [("ILLEGAL_GENERATION", 4, 5, False), ("REBALANCE_IN_PROGRESS", 4, 5, True)]


def test_share_session_epoch_and_leader_epoch(spark):
    frames = [
        frame(78, "ShareFetch", 1, correlation_id=1, group_id="sg", member_id="s1", share_session_epoch=0),
        frame(78, "ShareFetch", 2, correlation_id=2, group_id="sg", member_id="s1", share_session_epoch=1),
        frame(78, "ShareFetch", 3, correlation_id=3, group_id="sg", member_id="s1", share_session_epoch=1,
              error_code=122, error_name="INVALID_SHARE_SESSION_EPOCH"),
        frame(1, "Fetch", 4, correlation_id=4, error_code=74, error_name="FENCED_LEADER_EPOCH"),
    ]
    got = [(r["kind"], r["member_id"], r["stale_epoch"], r["current_epoch"], r["error_name"])
           for r in run(spark, frames)]
    assert got == [("share_group", "s1", 1, 2, "INVALID_SHARE_SESSION_EPOCH"),
                   ("partition_leader", None, None, None, "FENCED_LEADER_EPOCH")]


def test_leader_epoch_fencing_per_partition_with_the_current_epoch(spark):
    handed = {"topics": [{"name": "t", "topic_id": "AAA", "partitions": [
        {"partition_index": 0, "leader_epoch": 6}, {"partition_index": 1, "leader_epoch": 3}]}]}
    frames = [
        frame(3, "Metadata", 0, correlation_id=1, response=handed),
        frame(3, "Metadata", 0.5, correlation_id=2, response={"topics": [
            {"name": "t", "topic_id": "AAA", "partitions": [{"partition_index": 0, "leader_epoch": 7}]}]}),
        # Fetch v11 names topics: partition 0 is behind the epoch Metadata handed out, partition 1 is fine
        frame(1, "Fetch", 4, correlation_id=4, api_version=11, error_code=74, error_name="FENCED_LEADER_EPOCH",
              request={"topics": [{"topic": "t", "partitions": [{"partition": 0, "current_leader_epoch": 5},
                                                               {"partition": 1, "current_leader_epoch": 3}]}]},
              response={"responses": [{"topic": "t", "partitions": [{"partition_index": 0, "error_code": 74},
                                                                    {"partition_index": 1, "error_code": 0}]}]}),
        # Fetch v13 names topics by id; the response states the leader's epoch itself
        frame(1, "Fetch", 6, correlation_id=6, api_version=13, error_code=74, error_name="FENCED_LEADER_EPOCH",
              request={"topics": [{"topic_id": "AAA", "partitions": [{"partition": 1, "current_leader_epoch": 2}]}]},
              response={"responses": [{"topic_id": "AAA", "partitions": [
                  {"partition_index": 1, "error_code": 74, "current_leader": {"leader_id": 1, "leader_epoch": 4}}]}]}),
    ]
    got = [(r["topic"], r["partition"], r["stale_epoch"], r["current_epoch"], r["current_epoch_source"])
           for r in run(spark, frames)]
    assert got == [
        ("t", 0, 5, 7, "Metadata response corr=2 conn=c1 at 2026-01-01T00:00:00.501000Z"),
        ("t", 1, 2, 4, "Fetch response corr=6 conn=c1 (current_leader)"),
    ]


def test_no_frames_no_fencings(spark):
    assert run(spark, [frame(3, "Metadata", 1)]) == []
