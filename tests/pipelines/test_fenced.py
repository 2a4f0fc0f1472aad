"""fenced_epochs on hand-made frames: broker-reported fencings with their evidence, and inferred zombies."""

from __future__ import annotations

import pytest

from kafkatap.dissect.tables.schema import BATCHES, FRAMES
from kafkatap.pipelines.intermediates import EMPTIED_BYTES, known_empty, once_per_run
from kafkatap.pipelines.transforms.causes import CAUSE
from kafkatap.pipelines.transforms.fenced import fenced_epochs
from kafkatap.pipelines.schema import FENCED_EPOCHS
from kafkatap.pipelines.storage import conform
from tests.support.dissected_rows import assert_frames_equal, batch, frame, t, table

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CGH, INIT, END_TXN, PRODUCE, JOIN, HB, COMMIT, LEAVE, ADD_PARTS, SGH = 68, 22, 26, 0, 11, 12, 8, 13, 24, 88


def fenced(spark, frames, batches=()):
    return conform(fenced_epochs(table(spark, FRAMES, frames), table(spark, BATCHES, list(batches))), FENCED_EPOCHS)


def run(spark, frames, batches=()):
    return sorted((r.asDict() for r in fenced(spark, frames, batches).collect()), key=lambda r: (r["ts"], r["kind"]))


def expected(**values) -> dict:
    row = dict.fromkeys(FENCED_EPOCHS.names)
    row.update(values)
    return row


def assert_frame(spark, actual, rows):
    """Whole-frame comparison inside Spark (timestamps stay UTC-aware; row order does not matter), of the evidence
    columns: the causes have tests of their own below."""
    assert_frames_equal(actual.drop(*CAUSE), table(spark, FENCED_EPOCHS, rows).drop(*CAUSE))


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


def test_a_brokers_verification_of_a_transactional_produce_is_not_the_producers_request(spark):
    """Transactions v2 (Apache Kafka 4.4 sample): the partition leader verifies a transactional Produce with the
    coordinator (AddPartitionsToTxn v5, broker to broker) before answering the producer; its PRODUCER_FENCED is the
    broker's, the producer's refusals are its Produce's and its EndTxn's."""
    frames = [
        frame(INIT, "InitProducerId", 1, correlation_id=1, transactional_id="tx",
              response={"producer_id": 7, "producer_epoch": 4}),
        frame(INIT, "InitProducerId", 2, correlation_id=1, conn_id="c2", transactional_id="tx",
              response={"producer_id": 7, "producer_epoch": 5}),
        frame(ADD_PARTS, "AddPartitionsToTxn", 3, api_version=5, correlation_id=9, conn_id="c3",
              client_id="AddPartitionsManager-client-1", producer_id=7, producer_epoch=4, error_code=90,
              error_name="PRODUCER_FENCED"),
        frame(END_TXN, "EndTxn", 4, api_version=5, correlation_id=5, transactional_id="tx", producer_id=7,
              producer_epoch=4, error_code=90, error_name="PRODUCER_FENCED", request={"committed": False}),
    ]
    assert [(r["client_id"], r["api_name"], r["requests"]) for r in run(spark, frames)] == [("app", "EndTxn", 1)]


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


@pytest.mark.parametrize("commit_at", [3.1, 2.9])
def test_a_kip848_member_refused_again_without_its_epoch_is_one_fencing(spark, commit_at):
    """The Java consumer, once fenced, commits with member epoch -1 and is refused again (Apache Kafka 4.4 sample):
    one fencing at the epoch it was refused at, counting both requests, whichever answer comes first."""
    frames = [
        frame(CGH, "ConsumerGroupHeartbeat", 1, correlation_id=1, group_id="g", member_id="m1", member_epoch=0,
              response_member_epoch=4, response={"member_id": "m1", "member_epoch": 4}),
        frame(CGH, "ConsumerGroupHeartbeat", 3, correlation_id=2, group_id="g", member_id="m1", member_epoch=4,
              error_code=25, error_name="UNKNOWN_MEMBER_ID"),
        frame(COMMIT, "OffsetCommit", commit_at, correlation_id=3, group_id="g", member_id="m1", error_code=25,
              error_name="UNKNOWN_MEMBER_ID", request={"generation_id_or_member_epoch": -1, "member_id": "m1"}),
    ]
    assert [(r["member_id"], r["error_name"], r["requests"]) for r in run(spark, frames)] == [
        ("m1", "UNKNOWN_MEMBER_ID", 2)]


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


@pytest.mark.own_run  # its blocks its own: the suite's one small run would hold them
def test_a_large_run_without_fencings_plans_none_and_one_with_them_finds_the_same(spark):
    """Over inputs large enough to ask (`EMPTIED_BYTES`), a capture without any fencing gets the table planned as
    empty (its fencers, causes and leader epochs never computed), and one with fencings the rows it gets anywhere."""
    beat = [frame(CGH, "ConsumerGroupHeartbeat", s, correlation_id=s, group_id="g", member_id="m1", member_epoch=e,
                  response_member_epoch=e + 1, response={"member_id": "m1", "member_epoch": e + 1})
            for s, e in ((1, 0), (2, 1))]
    stale = [frame(CGH, "ConsumerGroupHeartbeat", 3, correlation_id=3, group_id="g", member_id="m1", member_epoch=1,
                   error_code=110, error_name="FENCED_MEMBER_EPOCH"),
             frame(1, "Fetch", 4, correlation_id=4, error_code=74, error_name="FENCED_LEADER_EPOCH")]
    with once_per_run(spark, 0):
        outside = run(spark, beat + stale)
    assert [r["error_name"] for r in outside] == ["FENCED_MEMBER_EPOCH", "FENCED_LEADER_EPOCH"]
    with once_per_run(spark, EMPTIED_BYTES + 1):
        assert known_empty(fenced_epochs(table(spark, FRAMES, beat), table(spark, BATCHES, [])))
        assert run(spark, beat + stale) == outside


def _join(ts, member, generation, timeout_ms=6000, **values):
    return frame(JOIN, "JoinGroup", ts, correlation_id=int(ts * 10), group_id="cg", member_id=member,
                 generation_id=generation, request={"session_timeout_ms": timeout_ms},
                 response={"member_id": member, "generation_id": generation}, **values)


def _beat(ts, member, generation, **values):
    return frame(HB, "Heartbeat", ts, correlation_id=int(ts * 10), group_id="cg", member_id=member,
                 generation_id=generation, **values)


def _refused_commit(ts, member, generation, error="UNKNOWN_MEMBER_ID", code=25):
    return frame(COMMIT, "OffsetCommit", ts, correlation_id=int(ts * 10), group_id="cg", member_id=member,
                 error_code=code, error_name=error, request={"generation_id_or_member_epoch": generation})


def test_a_classic_member_silent_past_its_session_timeout_is_explained(spark):
    frames = [_join(1, "m1", 1), _beat(2, "m1", 1), _join(3, "m2", 2, client_id="other"), _beat(4, "m2", 2),
              _refused_commit(12, "m1", 1)]
    (r,) = run(spark, frames)
    assert (r["cause"], r["last_ok_ts"], r["silent_s"], r["session_timeout_ms"], r["group_generation"],
            r["current_epoch"]) == ("session_timeout", t(2).replace(tzinfo=None), 10.0, 6000, 2, 2)
    assert r["current_epoch_source"].startswith("JoinGroup response corr=30 ")  # the group's, handed to m2
    assert r["explanation"] == (
        "app (member m1) sent nothing the coordinator accepted for 10.0 s after 2026-01-01T00:00:02.000000Z, longer "
        "than its session timeout (6.0 s, from its JoinGroup): the coordinator removed it and the group went on to "
        "generation 2; its OffsetCommit at 2026-01-01T00:00:12.000000Z was refused UNKNOWN_MEMBER_ID.")


def test_a_member_that_missed_a_rebalance_left_or_was_replaced(spark):
    missed = [_join(1, "m1", 1), _join(2, "m2", 2, client_id="other"), _beat(3, "m1", 1),
              _beat(4, "m1", 1, error_code=22, error_name="ILLEGAL_GENERATION")]
    (r,) = [r for r in run(spark, missed) if not r["inferred"]]
    assert (r["cause"], r["stale_epoch"], r["group_generation"]) == ("new_generation", 1, 2)
    assert "used generation 1 while the group was in generation 2: it missed a rebalance" in r["explanation"]
    left = [_join(1, "m1", 1), _beat(2, "m1", 1),
            frame(LEAVE, "LeaveGroup", 3, group_id="cg", member_id="m1"), _refused_commit(4, "m1", 1)]
    (r,) = run(spark, left)
    assert r["cause"] == "left" and r["explanation"].startswith("app (member m1) had left the group; its OffsetCommit")
    replaced = [_join(1, "m1", 1, group_instance_id="i-1"), _beat(2, "m1", 1, group_instance_id="i-1"),
                _join(3, "m2", 2, group_instance_id="i-1", client_id="new"),
                _beat(4, "m1", 1, group_instance_id="i-1", error_code=82, error_name="FENCED_INSTANCE_ID")]
    (r,) = [r for r in run(spark, replaced) if not r["inferred"]]
    assert r["cause"] == "replaced" and "member m2 joined as its static instance i-1 at " in r["explanation"]


def test_a_kip848_member_silent_for_its_heartbeats_and_a_fenced_producer_are_explained(spark):
    def hb(ts, epoch, answered=None, **values):
        response = {"member_id": "m1", "member_epoch": answered, "heartbeat_interval_ms": 1000} if answered else {}
        return frame(CGH, "ConsumerGroupHeartbeat", ts, correlation_id=int(ts * 10), group_id="g", member_id="m1",
                     member_epoch=epoch, response_member_epoch=answered, response=response, **values)

    frames = [hb(1, 0, 3), hb(2, 3, 3), hb(9, 3, None, error_code=25, error_name="UNKNOWN_MEMBER_ID")]
    (r,) = run(spark, frames)
    assert (r["cause"], r["silent_s"], r["heartbeat_interval_ms"], r["session_timeout_ms"]) == (
        "session_timeout", 7.0, 1000, None)
    assert "more than 2 of its heartbeat intervals (1.0 s; the session timeout itself is a broker setting)" in \
        r["explanation"]
    producers = [
        frame(INIT, "InitProducerId", 1, correlation_id=1, transactional_id="tx", client_id="first",
              response={"producer_id": 7, "producer_epoch": 0}),
        frame(INIT, "InitProducerId", 2, correlation_id=1, conn_id="c2", transactional_id="tx", client_id="second",
              response={"producer_id": 7, "producer_epoch": 1}),
        frame(ADD_PARTS, "AddPartitionsToTxn", 3, correlation_id=2, transactional_id="tx", producer_id=7,
              producer_epoch=0, client_id="first", error_code=90, error_name="PRODUCER_FENCED")]
    (r,) = run(spark, producers)
    assert r["cause"] == "new_instance" and r["explanation"] == (
        "Producer tx (first) used epoch 0 after second initialised the same producer at "
        "2026-01-01T00:00:02.001000Z with epoch 1; its AddPartitionsToTxn at 2026-01-01T00:00:03.000000Z was "
        "refused PRODUCER_FENCED.")


def test_under_transactions_v2_the_fencer_is_the_instance_whose_endtxn_holds_the_current_epoch(spark):
    """Transactions v2 (Apache Kafka 4.4 sample): every EndTxn v5+ response hands its producer the next epoch, so the
    current epoch a late refusal names came from the new instance's own EndTxn; its InitProducerId is the fencer."""
    frames = [
        frame(INIT, "InitProducerId", 1, correlation_id=1, transactional_id="tx", client_id="first",
              response={"producer_id": 7, "producer_epoch": 4}),
        frame(END_TXN, "EndTxn", 2, api_version=5, correlation_id=2, transactional_id="tx", client_id="first",
              producer_id=7, producer_epoch=4, request={"committed": True},
              response={"producer_id": 7, "producer_epoch": 5}),
        frame(INIT, "InitProducerId", 3, correlation_id=1, conn_id="c2", transactional_id="tx", client_id="second",
              response={"producer_id": 7, "producer_epoch": 6}),
        frame(END_TXN, "EndTxn", 4, api_version=5, correlation_id=2, conn_id="c2", transactional_id="tx",
              client_id="second", producer_id=7, producer_epoch=6, request={"committed": True},
              response={"producer_id": 7, "producer_epoch": 7}),
        frame(END_TXN, "EndTxn", 5, api_version=5, correlation_id=3, transactional_id="tx", client_id="first",
              producer_id=7, producer_epoch=5, error_code=90, error_name="PRODUCER_FENCED",
              request={"committed": True}),
    ]
    (r,) = run(spark, frames)
    assert (r["stale_epoch"], r["current_epoch"], r["current_epoch_source"]) == (
        5, 7, "EndTxn response corr=2 conn=c2 at 2026-01-01T00:00:04.001000Z")
    assert (r["fenced_by_client_id"], r["fenced_by_conn_id"], r["cause"]) == ("second", "c2", "new_instance")
    assert r["explanation"] == (
        "Producer tx (first) used epoch 5 after second initialised the same producer at "
        "2026-01-01T00:00:03.001000Z with epoch 6 and its transactions since brought it to epoch 7; its EndTxn at "
        "2026-01-01T00:00:05.000000Z was refused PRODUCER_FENCED.")


def test_a_kip848_fencing_names_the_group_epoch_beside_the_member_epoch(spark):
    """The member's own epoch stays the comparison; the group's is the highest epoch handed to any member."""
    def hb(ts, member, epoch, answered=None, **values):
        response = {"member_id": member, "member_epoch": answered, "heartbeat_interval_ms": 1000} if answered else {}
        return frame(CGH, "ConsumerGroupHeartbeat", ts, correlation_id=int(ts * 10), group_id="g", member_id=member,
                     member_epoch=epoch, response_member_epoch=answered, response=response, **values)

    silent = [hb(1, "m1", 0, 3), hb(2, "m1", 3, 3), hb(3, "m2", 0, 4), hb(4, "m2", 4, 5), hb(8.5, "m2", 5, 5),
              hb(9, "m1", 3, None, error_code=25, error_name="UNKNOWN_MEMBER_ID")]
    (r,) = run(spark, silent)
    assert (r["cause"], r["stale_epoch"], r["current_epoch"], r["group_epoch"], r["group_generation"]) == (
        "session_timeout", 3, 3, 5, None)
    assert "the coordinator removed it and the group went on to epoch 5; its ConsumerGroupHeartbeat" in \
        r["explanation"]
    stale = [hb(1, "m1", 0, 3), hb(2, "m1", 3, 4), hb(2.5, "m2", 0, 6),
             hb(3, "m1", 3, None, error_code=110, error_name="FENCED_MEMBER_EPOCH")]
    (r,) = [r for r in run(spark, stale) if not r["inferred"]]
    assert (r["cause"], r["stale_epoch"], r["current_epoch"], r["group_epoch"]) == ("stale_epoch", 3, 4, 6)
    assert "used epoch 3 after the coordinator had handed it 4 (the group at epoch 6); its" in r["explanation"]


@pytest.mark.parametrize("api_key, api_name, kind", [(CGH, "ConsumerGroupHeartbeat", "consumer_group"),
                                                     (SGH, "StreamsGroupHeartbeat", "streams_group")])
def test_kip848_and_streams_members_are_explained_under_the_same_rules(spark, api_key, api_name, kind):
    """A streams group member (KIP-1071) is fenced by its member epoch as a KIP-848 consumer is: removed after its
    heartbeat intervals of silence, behind the epoch handed to it, or replaced as a static member by another member
    whose heartbeats name the same `instance_id` (the dissector's group_instance_id column does not hold it)."""
    def hb(ts, member, epoch, answered=None, instance=None, **values):
        response = {"member_id": member, "member_epoch": answered, "heartbeat_interval_ms": 1000} if answered else {}
        return frame(api_key, api_name, ts, correlation_id=int(ts * 10), group_id="g", member_id=member,
                     member_epoch=epoch, response_member_epoch=answered, response=response,
                     request={"instance_id": instance} if instance else None, **values)

    silent = [hb(1, "m1", 0, 3), hb(2, "m1", 3, 3), hb(3, "m2", 0, 4), hb(4, "m2", 4, 5), hb(8.5, "m2", 5, 5),
              hb(9, "m1", 3, None, error_code=25, error_name="UNKNOWN_MEMBER_ID")]
    (r,) = run(spark, silent)
    assert (r["kind"], r["cause"], r["silent_s"], r["heartbeat_interval_ms"], r["group_epoch"]) == (
        kind, "session_timeout", 7.0, 1000, 5)
    assert f"the coordinator removed it and the group went on to epoch 5; its {api_name} at " in r["explanation"]
    stale = [hb(1, "m1", 0, 3), hb(2, "m1", 3, 4), hb(2.5, "m2", 0, 6),
             hb(3, "m1", 3, None, error_code=110, error_name="FENCED_MEMBER_EPOCH")]
    (r,) = [r for r in run(spark, stale) if not r["inferred"]]
    assert (r["kind"], r["cause"], r["stale_epoch"], r["current_epoch"], r["group_epoch"]) == (
        kind, "stale_epoch", 3, 4, 6)
    replaced = [hb(1, "m1", 0, 3, "i-1"), hb(2, "m1", 3, 3, "i-1"), hb(3, "m2", 0, 4, "i-1"),
                hb(3.5, "m1", 3, None, "i-1", error_code=110, error_name="FENCED_MEMBER_EPOCH")]
    (r,) = [r for r in run(spark, replaced) if not r["inferred"]]
    assert (r["kind"], r["cause"]) == (kind, "replaced")
    assert "was replaced: member m2 joined as its static instance i-1 at 2026-01-01T00:00:03" in r["explanation"]


def test_a_refusal_the_capture_does_not_explain_says_so(spark):
    """The epoch the member used is the one handed to it (the broker moved on out of sight, or the error was
    injected, as the day_in_the_life sample's mock does): no cause, and a sentence saying what is not shown."""
    frames = [
        frame(CGH, "ConsumerGroupHeartbeat", 1, correlation_id=1, group_id="g", member_id="m1", member_epoch=0,
              response_member_epoch=3, response={"member_id": "m1", "member_epoch": 3}),
        frame(CGH, "ConsumerGroupHeartbeat", 2, correlation_id=2, group_id="g", member_id="m1", member_epoch=3,
              error_code=110, error_name="FENCED_MEMBER_EPOCH")]
    (r,) = run(spark, frames)
    assert r["cause"] is None and r["explanation"] == (
        "app's ConsumerGroupHeartbeat at 2026-01-01T00:00:02.000000Z was refused FENCED_MEMBER_EPOCH with epoch 3, "
        "the latest one the capture shows handed to it being 3: the capture does not show why (the broker changed "
        "it without a response in the capture, or the error was not about its epoch).")
