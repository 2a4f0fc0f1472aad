"""sessions tables on hand-made frames: connections, members, producers, transactions, share members, links."""

from __future__ import annotations

import pytest

from kafkatap.dissect.run import dissect_captures
from kafkatap.dissect.tables.schema import BATCHES, FRAMES, SHARE
from kafkatap.dissect.tables.schema import CONNECTIONS as TCP_CONNECTIONS
from kafkatap.pipelines import schema
from kafkatap.pipelines.transforms.connections import connections
from kafkatap.pipelines.transforms.epochs import epoch_events
from kafkatap.pipelines.transforms.groups import group_commits, groups
from kafkatap.pipelines.transforms.links import fetch_links, link_deliveries
from kafkatap.pipelines.transforms.members import member_spans, members
from kafkatap.pipelines.transforms.producers import producers, transactions
from kafkatap.pipelines.transforms.share_members import share_members
from kafkatap.pipelines.storage import conform, read_table
from tests.support.dissected_rows import assert_frames_equal, batch, frame, rows, share, t, table
from kafkatap.samples import capture_path, load_truth

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CGH, JOIN, SYNC, LEAVE, FETCH, INIT, ADD_PARTS, END_TXN, SGH, SHARE_FETCH = 68, 11, 14, 13, 1, 22, 24, 26, 76, 78
OFFSET_COMMIT = 8


def test_connections(spark):
    frames = [frame(3, "Metadata", 1, latency_s=0.002, request_bytes=10, response_bytes=90),
              frame(1, "Fetch", 2, latency_s=0.004, request_bytes=20, response_bytes=500, client_id="other"),
              frame(1, "Fetch", 3, latency_s=0.006, error_code=6, error_name="NOT_LEADER_OR_FOLLOWER",
                    request_bytes=20, response_bytes=30),
              frame(0, "Produce", 4, ts_response=None, latency_us=None, status="unpaired_request",
                    request_bytes=5, response_bytes=None)]
    tcp = [dict(conn_id="c1", client_addr="10.0.0.1:50000", broker_addr="10.0.0.9:9092", first_seen=t(0),
                closed_by="rst", handshake_rtt_us=150, retransmissions=2, out_of_order=1, resets=1, zero_windows=3),
           dict(conn_id="c2", client_addr="10.0.0.2:50000", broker_addr="10.0.0.9:9092", first_seen=t(0),
                closed_by="fin", handshake_rtt_us=None, retransmissions=0, out_of_order=0, resets=0, zero_windows=0)]
    got = conform(connections(table(spark, FRAMES, frames), table(spark, TCP_CONNECTIONS, tcp)), schema.CONNECTIONS)
    assert_frames_equal(got, table(spark, schema.CONNECTIONS, [dict(
        conn_id="c1", client_addr="10.0.0.1:50000", broker_addr="10.0.0.9:9092", client_host="10.0.0.1",
        client_id="app", client_ids=["app", "other"], first_seen=t(1), last_seen=t(4),
        requests=4, requests_by_api={"Metadata": 1, "Fetch": 2, "Produce": 1}, request_bytes=55,
        response_bytes=620, errors=1, unpaired=1, latency_p50_us=4000, latency_p99_us=6000, handshake_rtt_us=150,
        retransmissions=2, out_of_order=1, resets=1, zero_windows=3)]))
    without = conform(connections(table(spark, FRAMES, frames), table(spark, TCP_CONNECTIONS, [])),
                      schema.CONNECTIONS)  # a dissector output older than its connections table
    assert rows(without.select("conn_id", "retransmissions", "handshake_rtt_us")) == [
        {"conn_id": "c1", "retransmissions": None, "handshake_rtt_us": None}]


def hb(ts, epoch_sent, epoch_answered, assignment=None, **kw):
    response = {"member_id": "m1", "member_epoch": epoch_answered}
    if assignment is not None:
        response["assignment"] = {"topic_partitions": [{"topic_id": "TID", "partitions": assignment}]}
    return frame(CGH, "ConsumerGroupHeartbeat", ts, group_id="g", member_id="m1", member_epoch=epoch_sent,
                 response_member_epoch=epoch_answered, response=response, **kw)


def test_kip848_member_assignments_and_leave(spark):
    frames = [hb(1, 0, 1, [0, 1]), hb(2, 1, 1), hb(3, 1, 2, [1, 2]), hb(4, -1, -1)]
    batches = [batch("fetch", 1, "orders", 0, 0, 0, topic_id="TID")]
    got = conform(members(table(spark, FRAMES, frames), table(spark, BATCHES, batches)), schema.MEMBERS)
    assert_frames_equal(got, table(spark, schema.MEMBERS, [dict(
        kind="consumer_group", group_id="g", member_id="m1", group_instance_id=None, client_id="app",
        client_host="10.0.0.1", conn_ids=["c1"], first_seen=t(1), last_seen=t(4), generations=[],
        member_epochs=[1, 2], joins=1, heartbeats=2, assignment_changes=2,
        partitions_gained=["orders:0", "orders:1", "orders:2"], partitions_lost=["orders:0"],
        final_assignment=["orders:1", "orders:2"], ended="left", end_ts=t(4), end_error=None, incarnation=1)]))


def test_a_kip848_member_removed_and_rejoining_under_its_member_id_is_a_new_incarnation(spark):
    """The Java consumer keeps its member id when it rejoins after its session timeout (Apache Kafka 4.4 sample):
    the expired life keeps its refusal and its time; the rejoin at epoch 0 is the member id's second row."""
    joined = {"member_id": "m1", "member_epoch": 4, "heartbeat_interval_ms": 1000,
              "assignment": {"topic_partitions": [{"topic_id": "TID", "partitions": [0]}]}}
    frames = [frame(CGH, "ConsumerGroupHeartbeat", 1, group_id="g", member_id="m1", member_epoch=0,
                    response_member_epoch=4, response=joined), hb(2, 4, 4),
              hb(9, 4, 0, error_code=25, error_name="UNKNOWN_MEMBER_ID"),
              frame(OFFSET_COMMIT, "OffsetCommit", 9.5, group_id="g", member_id="m1", error_code=25,
                    error_name="UNKNOWN_MEMBER_ID", request={"generation_id_or_member_epoch": -1, "member_id": "m1"}),
              hb(10, 0, 6, [1]), hb(11, 6, 6), hb(12, -1, -1)]
    batches = [batch("fetch", 1, "orders", 0, 0, 0, topic_id="TID")]
    got = [(r["member_id"], r["incarnation"], r["member_epochs"], r["joins"], r["final_assignment"], r["ended"],
            r["end_ts"], r["end_error"])
           for r in rows(members(table(spark, FRAMES, frames), table(spark, BATCHES, batches)))]
    assert sorted(got, key=lambda r: r[1]) == [
        ("m1", 1, [4], 1, ["orders:0"], "expired", "2026-01-01T00:00:09.501000Z", "UNKNOWN_MEMBER_ID"),
        ("m1", 2, [6], 1, ["orders:1"], "left", "2026-01-01T00:00:12.000000Z", None)]


def test_epoch_events_keep_only_changes_with_their_response(spark):
    frames = [hb(1, 0, 1), hb(2, 1, 1), hb(3, 1, 2), hb(4, 2, 2),
              frame(22, "InitProducerId", 5, correlation_id=9, transactional_id="tx",
                    response={"producer_id": 7, "producer_epoch": 0}),
              frame(78, "ShareFetch", 6, group_id="sg", member_id="s", share_session_epoch=0)]
    got = [(r["kind"], r["party"], r["epoch"], r["previous_epoch"], r["ts"], r["api_name"], r["transactional_id"])
           for r in rows(conform(epoch_events(table(spark, FRAMES, frames)), schema.EPOCH_EVENTS))]
    assert sorted(got, key=lambda r: r[4]) == [
        ("consumer_group", "g/m1", 1, None, "2026-01-01T00:00:01.001000Z", "ConsumerGroupHeartbeat", None),
        ("consumer_group", "g/m1", 2, 1, "2026-01-01T00:00:03.001000Z", "ConsumerGroupHeartbeat", None),
        ("producer", "pid:7", 0, None, "2026-01-01T00:00:05.001000Z", "InitProducerId", "tx"),
    ]


def test_classic_member_fenced_and_another_expired(spark):
    frames = [
        frame(JOIN, "JoinGroup", 1, group_id="cg", member_id="a", response={"member_id": "a", "generation_id": 1},
              request={"session_timeout_ms": 10000}),
        frame(SYNC, "SyncGroup", 2, group_id="cg", member_id="a", generation_id=1,
              response={"assignment": {"$bytes": "AAE="}}),
        frame(12, "Heartbeat", 3, group_id="cg", member_id="a", generation_id=1, error_code=25,
              error_name="UNKNOWN_MEMBER_ID"),
        frame(JOIN, "JoinGroup", 4, group_id="cg", member_id="b", client_id="b",
              response={"member_id": "b", "generation_id": 2}, request={"session_timeout_ms": 10000}),
        frame(3, "Metadata", 40),
    ]
    got = [(r["member_id"], r["generations"], r["joins"], r["heartbeats"], r["assignment_changes"], r["ended"],
            r["end_error"]) for r in rows(members(table(spark, FRAMES, frames), table(spark, BATCHES, [])))]
    assert got == [("a", [1], 1, 1, 1, "fenced", "UNKNOWN_MEMBER_ID"), ("b", [2], 1, 0, 0, "expired", None)]


def test_fetch_links_report_ambiguity(spark):
    frames = [
        frame(JOIN, "JoinGroup", 1, conn_id="k1", group_id="g", member_id="m1", client_id="x",
              response={"member_id": "m1", "generation_id": 1}),
        frame(JOIN, "JoinGroup", 1, conn_id="k2", group_id="g", member_id="m2", client_id="x",
              response={"member_id": "m2", "generation_id": 1}),
        frame(JOIN, "JoinGroup", 1, conn_id="k3", group_id="g", member_id="m3", client_id="y",
              response={"member_id": "m3", "generation_id": 1}),
        frame(FETCH, "Fetch", 2, conn_id="f1", client_id="x"),
        frame(FETCH, "Fetch", 2, conn_id="f2", client_id="y"),
        frame(FETCH, "Fetch", 2, conn_id="f3", client_id="z"),
        frame(FETCH, "Fetch", 2, conn_id="replica", client_id="y", request={"replica_id": 1}),
    ]
    f = table(spark, FRAMES, frames)
    got = [(r["conn_id"], r["link"], r["group_id"], r["member_id"], r["candidates"])
           for r in rows(fetch_links(f, member_spans(members(f, table(spark, BATCHES, [])))))]
    assert got == [("f1", "ambiguous", "g", None, ["g/m1", "g/m2"]), ("f2", "linked", "g", "m3", ["g/m3"]),
                   ("f3", "unlinked", None, None, [])]


def test_deliveries_link_to_the_members_alive_at_their_instant(spark):
    """Each delivery meets the members whose span holds its instant, ends included, to the microsecond: m1 [1, 3]
    and m2 [3, 5] of client x meet at 3, m3 [7, 8] leaves a gap, m4 [7.5, 9] overlaps it."""
    us = 1e-6
    spans = spark.createDataFrame(
        [("g", m, "x", "h", t(a), t(b)) for m, a, b in [("m1", 1, 3), ("m2", 3, 5), ("m3", 7, 8), ("m4", 7.5, 9)]],
        "group_id string, member_id string, client_id string, client_host string, span_start timestamp, "
        "span_end timestamp")
    at = {"before": t(1 - us), "start": t(1), "inside": t(2), "shared end": t(3), "after shared": t(3 + us),
          "end": t(5), "just after": t(5 + us), "gap": t(6), "overlap": t(7.75), "last": t(9), "none": None}
    deliveries = spark.createDataFrame([(name, "x", "h", ts) for name, ts in at.items()]
                                       + [("other host", "x", "h2", t(2))],
                                       "name string, client_id string, client_host string, ts timestamp")
    got = {r["name"]: (r["link"], r["member_id"]) for r in rows(link_deliveries(deliveries, spans))}
    assert got == {
        "before": ("unlinked", None), "start": ("linked", "m1"), "inside": ("linked", "m1"),
        "shared end": ("ambiguous", None), "after shared": ("linked", "m2"), "end": ("linked", "m2"),
        "just after": ("unlinked", None), "gap": ("unlinked", None), "overlap": ("ambiguous", None),
        "last": ("linked", "m4"), "none": ("unlinked", None), "other host": ("unlinked", None)}


def test_producer_transactions_and_fencing(spark):
    txn = dict(transactional_id="tx", producer_id=7)
    frames = [
        frame(INIT, "InitProducerId", 1, transactional_id="tx", response={"producer_id": 7, "producer_epoch": 0}),
        frame(ADD_PARTS, "AddPartitionsToTxn", 2, producer_epoch=0, **txn),
        frame(END_TXN, "EndTxn", 4, producer_epoch=0, request={"committed": True}, **txn),
        frame(ADD_PARTS, "AddPartitionsToTxn", 5, producer_epoch=0, **txn),
        frame(END_TXN, "EndTxn", 6, producer_epoch=0, request={"committed": False}, **txn),
        frame(ADD_PARTS, "AddPartitionsToTxn", 7, producer_epoch=0, error_code=90, error_name="PRODUCER_FENCED",
              **txn),
    ]
    batches = [batch("produce", 3, "t", 0, 0, 4, producer_id=7, producer_epoch=0, is_transactional=True),
               batch("produce", 5.5, "t", 1, 0, 1, producer_id=7, producer_epoch=0, is_transactional=True)]
    f, b = table(spark, FRAMES, frames), table(spark, BATCHES, batches)
    got = [(r["txn_index"], r["outcome"], r["batches"], r["records"], r["partitions"])
           for r in rows(conform(transactions(f, b), schema.TRANSACTIONS))]
    assert got == [(0, "commit", 1, 5, ["t:0"]), (1, "abort", 1, 2, ["t:1"]), (2, "fenced", 0, 0, [])]
    (p,) = rows(conform(producers(f, b), schema.PRODUCERS))
    assert (p["transactional_id"], p["epochs"], p["transactions"], p["commits"], p["aborts"], p["batches"],
            p["records"], p["ended"], p["end_error"]) == ("tx", [0], 2, 1, 1, 2, 7, "fenced", "PRODUCER_FENCED")


def test_every_producer_is_a_row_plain_ones_by_client_and_host(spark):
    """Producers without idempotence send producer id -1: each client id on each host is one plain producer."""
    batches = [batch("produce", 1, "t", 0, 0, 4, producer_id=7, producer_epoch=0, base_sequence=0),
               batch("produce", 2, "t", 0, 5, 9, client_id="plain-a"),
               batch("produce", 3, "t", 1, 0, 2, client_id="plain-a", conn_id="c2"),
               batch("produce", 4, "t", 1, 3, 3, client_id="plain-a", client_addr="10.0.0.2:50000"),
               batch("produce", 5, "t", 1, 4, 4, client_id="plain-b", is_control=True)]
    got = rows(conform(producers(table(spark, FRAMES, []), table(spark, BATCHES, batches)), schema.PRODUCERS))
    assert sorted((p["kind"], p["producer_id"], p["client_id"], p["client_host"], p["batches"], p["records"],
                   p["ended"]) for p in got) == [
        ("idempotent", 7, "app", "10.0.0.1", 1, 5, "active"),
        ("plain", -1, "plain-a", "10.0.0.1", 2, 8, "active"),  # two connections, one producer
        ("plain", -1, "plain-a", "10.0.0.2", 1, 1, "active")]  # a control batch is no producer's data


def test_groups_include_commit_only_ones_with_their_commit_lag(spark):
    def commit(ts, group, offset, **values):
        request = {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": offset}]}]}
        return frame(OFFSET_COMMIT, "OffsetCommit", ts, group_id=group, request=request, **values)

    frames = [frame(JOIN, "JoinGroup", 1, group_id="joined", member_id="m1"),
              commit(2, "joined", 10, member_id="m1"),
              commit(3, "manual", 5, client_id="assigner"), commit(4, "manual", 8, client_id="assigner"),
              commit(5, "manual", 12, client_id="assigner", error_code=25, error_name="UNKNOWN_MEMBER_ID")]
    batches = [batch("fetch", 4.5, "t", 0, 0, 9, high_watermark=20), batch("fetch", 1.5, "t", 0, 0, 9,
                                                                              high_watermark=15)]
    f, b = table(spark, FRAMES, frames), table(spark, BATCHES, batches)
    got = {g["group_id"]: g for g in rows(conform(groups(f), schema.GROUPS))}
    assert {k: (g["joined"], g["commit_only"], g["members"], g["commits"], g["client_ids"])
            for k, g in got.items()} == {"joined": (True, False, 1, 1, ["app"]),
                                         "manual": (False, True, 0, 3, ["assigner"])}
    committed = {c["group_id"]: c for c in rows(conform(group_commits(f, b), schema.COMMITS))}
    assert [(c["commits"], c["refused"], c["committed_offset"], c["high_watermark"], c["commit_lag"], c["member_ids"])
            for c in (committed["joined"], committed["manual"])] == [(1, 0, 10, 20, 10, ["m1"]),
                                                                     (3, 1, 8, 20, 12, [])]


def test_share_members(spark):
    frames = [
        frame(SGH, "ShareGroupHeartbeat", 1, group_id="sg", member_id="s1", member_epoch=0, response_member_epoch=1,
              response={"member_id": "s1", "member_epoch": 1}),
        frame(SHARE_FETCH, "ShareFetch", 2, group_id="sg", member_id="s1", share_session_epoch=0),
        frame(SHARE_FETCH, "ShareFetch", 3, group_id="sg", member_id="s1", share_session_epoch=1),
        frame(SGH, "ShareGroupHeartbeat", 4, group_id="sg", member_id="s1", member_epoch=-1,
              response_member_epoch=-1),
    ]
    share_rows = [share("acquired", 2, "t", 0, 0, 9, member_id="s1", delivery_count=1),
                  share("ack", 3, "t", 0, 0, 5, member_id="s1", ack_type="accept"),
                  share("ack", 3, "t", 0, 6, 9, member_id="s1", ack_type="release")]
    got = conform(share_members(table(spark, FRAMES, frames), table(spark, SHARE, share_rows)),
                  schema.SHARE_MEMBERS)
    assert_frames_equal(got, table(spark, schema.SHARE_MEMBERS, [dict(
        group_id="sg", member_id="s1", client_id="app", client_host="10.0.0.1", first_seen=t(1), last_seen=t(4),
        member_epochs=[1], share_sessions=1, max_share_session_epoch=1, share_fetches=2, acquired_ranges=1,
        acquired_records=10, accepted=6, released=4, rejected=0, renewed=0, ended="left", end_ts=t(4))]))


def sync(ts, member, generation, assignment=None, raw="AAE=", **kw):
    """A SyncGroup frame whose response assignment the dissector decoded (assignment: {topic: partitions}), or left
    as bytes (assignment None: raw only)."""
    value = {"$bytes": raw}
    if assignment is not None:
        value["$consumer"] = {"version": 0, "user_data": None, "assigned_partitions": [
            {"topic": topic, "partitions": parts} for topic, parts in assignment.items()]}
    return frame(SYNC, "SyncGroup", ts, group_id="cg", member_id=member, generation_id=generation,
                 response={"error_code": 0, "assignment": value}, **kw)


def test_classic_member_assignments_from_the_consumer_protocol(spark):
    frames = [
        frame(JOIN, "JoinGroup", 1, group_id="cg", member_id="a", response={"member_id": "a", "generation_id": 1}),
        sync(2, "a", 1, {"clicks": [3, 1], "views": [0]}),
        sync(3, "a", 1, {"clicks": [1, 3], "views": [0]}),  # the same assignment again: no change
        sync(4, "a", 2, {"clicks": [1, 2]}),
        sync(5, "a", 3, None, raw="", error_code=27, error_name="REBALANCE_IN_PROGRESS"),  # refused: not received
        sync(6, "a", 4, {}, raw="AAAAAAAA/////w=="),  # nothing assigned
        sync(7, "a", 5, None, raw=""),  # empty bytes: nothing assigned either, no change
        sync(8, "b", 1, None, raw="AAE="), sync(9, "b", 2, None, raw="AAE="), sync(10, "b", 3, None, raw="AAI="),
    ]
    got = {r["member_id"]: (r["assignment_changes"], r["partitions_gained"], r["partitions_lost"],
                            r["final_assignment"])
           for r in rows(members(table(spark, FRAMES, frames), table(spark, BATCHES, [])))}
    assert got == {
        "a": (3, ["clicks:1", "clicks:2", "clicks:3", "views:0"], ["clicks:1", "clicks:2", "clicks:3", "views:0"], []),
        "b": (2, [], [], []),  # another protocol's bytes: only their changes are known
    }


@pytest.fixture(scope="module")
def classic_samples(spark, tmp_path_factory):
    """members() of the classic group samples: {sample: (truth, rows)}."""
    out = {}
    for name in ("classic_group", "synthetic_classic_rebalance"):
        if not capture_path(name).exists():
            continue
        truth = load_truth(name)
        work = tmp_path_factory.mktemp(name)
        dissect_captures([str(capture_path(name))], str(work), ports=truth["broker_ports"])
        got = members(read_table(spark, str(work), "frames", FRAMES), table(spark, BATCHES, []))
        out[name] = (truth, rows(got))
    if not out:
        pytest.skip("classic samples not generated")
    return out


def test_classic_sample_assignments_match_the_truth(classic_samples):
    """synthetic_classic_rebalance's truth states each generation's assignment: A owns events/0-1, then events/0 and
    B events/1."""
    if "synthetic_classic_rebalance" not in classic_samples:
        pytest.skip("sample not generated")
    truth, got = classic_samples["synthetic_classic_rebalance"]
    by_id = {r["member_id"]: r for r in got}
    last = {}
    for event in truth["events"]:
        if event["what"] == "generation":
            last[event["member_id"]] = sorted(tp.replace("/", ":") for tp in event["assignment"])
    assert last and {m: by_id[m]["final_assignment"] for m in last} == last
    a = next(m for m in last if "member-a" in m)
    assert by_id[a]["assignment_changes"] == 2
    assert (by_id[a]["partitions_gained"], by_id[a]["partitions_lost"]) == (["events:0", "events:1"], ["events:1"])


def test_classic_group_sample_assignments_cover_the_topic(classic_samples):
    """classic_group's truth names each member's generations, not assignments: every member that got one holds part
    of `clicks`, and the members of the last generation hold its 4 partitions exactly once between them."""
    if "classic_group" not in classic_samples:
        pytest.skip("sample not generated")
    truth, got = classic_samples["classic_group"]
    generations = truth["groups"][0]["generations_by_member"]
    member_ids = {g["member_id"] for gens in generations.values() for g in gens}
    by_id = {r["member_id"]: r for r in got}
    assert member_ids <= set(by_id)
    for member in member_ids:
        r = by_id[member]
        assert r["assignment_changes"] >= 1 and r["partitions_gained"], member
        assert set(r["partitions_gained"]) <= {f"clicks:{p}" for p in range(4)}
    newest = max(g["generation_id"] for gens in generations.values() for g in gens)
    final = [r["final_assignment"] for r in got if newest in r["generations"]]
    assert len(final) == 2 and sorted(tp for a in final for tp in a) == [f"clicks:{p}" for p in range(4)]
