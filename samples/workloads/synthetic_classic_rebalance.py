"""SYNTHETIC: a classic consumer group rebalance as Apache Kafka answers it, which Tansu does not: the member that
commits after the group moved on is refused ILLEGAL_GENERATION (Tansu answered UNKNOWN_MEMBER_ID), heartbeats say
REBALANCE_IN_PROGRESS, and the records it fetched but could not commit are delivered again to the new owner.

Java 3.9 client against a Kafka 3.9 broker: JoinGroup v9, SyncGroup v5, Heartbeat v4, OffsetFetch v8, OffsetCommit
v8, Fetch v12, LeaveGroup v5, Produce v9; byte-encoded by the project's codec.
"""

from __future__ import annotations

import struct

from kafkatap.samples.make import Env, Spec
from kafkatap.samples.synthetic import Connection, Wire, record_batch

SPEC = Spec(
    name="synthetic_classic_rebalance",
    description="SYNTHETIC (Apache Kafka 3.9 semantics, encoded by dissect.protocol): kt-syn-member-a owns both "
                "partitions of `events` in generation 1; kt-syn-member-b joins, the group rebalances to generation "
                "2, member A's commit for generation 1 is refused ILLEGAL_GENERATION, and offsets 10-14 it had fetched "
                "but not committed are delivered again: events/0 to member A itself, events/1 to member B.",
    tansu_port=19091,  # the simulated broker's port (nothing listens on it)
    synthetic=True,
)
TOPIC, GROUP, BROKER = "events", "kt-syn-classic", 19091
START_US = 1_795_310_000_000_000
LIBRARY = "synthetic (Java client 3.9 semantics)"
MEMBER_A = "kt-syn-member-a-0f6c1c52-8d3e-4a43-9f5e-2b9c4c1a7e01"
MEMBER_B = "kt-syn-member-b-5b1e9a77-3c2d-4f1b-8e0a-6d2f7c9b1a02"
NONE, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, MEMBER_ID_REQUIRED = 0, 22, 27, 79


def _subscription() -> bytes:
    """ConsumerProtocolSubscription v0: the topics, no user data."""
    return struct.pack(">hih", 0, 1, len(TOPIC)) + TOPIC.encode() + struct.pack(">i", -1)


def _assignment(partitions: list[int]) -> bytes:
    """ConsumerProtocolAssignment v0."""
    out = struct.pack(">hih", 0, 1, len(TOPIC)) + TOPIC.encode() + struct.pack(">i", len(partitions))
    return out + b"".join(struct.pack(">i", p) for p in partitions) + struct.pack(">i", -1)


class _Partition:
    """One partition's log on the simulated broker."""

    def __init__(self, ts_ms: int) -> None:
        self.records: list[bytes] = []
        self.ts_ms = ts_ms

    def batch(self, start: int, end: int) -> bytes:
        return record_batch(start, [(f"k{i}".encode(), self.records[i]) for i in range(start, end)], self.ts_ms)


def _join(conn: Connection, member_id: str, generation: int, leader: str, members: list[str],
          first: bool) -> None:
    request = {"group_id": GROUP, "session_timeout_ms": 45000, "rebalance_timeout_ms": 300000, "member_id": "",
               "group_instance_id": None, "protocol_type": "consumer",
               "protocols": [{"name": "range", "metadata": _subscription()}], "reason": None}
    if first:  # KIP-394: the broker hands out the member id and asks the client to come back with it
        conn.call(11, 9, request, {"error_code": MEMBER_ID_REQUIRED, "generation_id": -1, "protocol_type": None,
                                   "protocol_name": None, "leader": "", "member_id": member_id, "members": []})
    conn.call(11, 9, {**request, "member_id": member_id, "reason": None if first else "rebalance"},
              {"error_code": NONE, "generation_id": generation, "protocol_type": "consumer", "protocol_name": "range",
               "leader": leader, "skip_assignment": False, "member_id": member_id,
               "members": [{"member_id": m, "group_instance_id": None, "metadata": _subscription()}
                           for m in (members if member_id == leader else [])]})


def _sync(conn: Connection, member_id: str, generation: int, plan: dict[str, list[int]], leader: bool) -> None:
    conn.call(14, 5, {"group_id": GROUP, "generation_id": generation, "member_id": member_id,
                      "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
                      "assignments": [{"member_id": m, "assignment": _assignment(p)} for m, p in plan.items()]
                      if leader else []},
              {"error_code": NONE, "protocol_type": "consumer", "protocol_name": "range",
               "assignment": _assignment(plan[member_id])})


def _fetch(conn: Connection, log: dict[int, _Partition], positions: dict[int, int], end: dict[int, int]) -> None:
    conn.call(1, 12, {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 52428800,
                      "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                      "topics": [{"topic": TOPIC, "partitions": [
                          {"partition": p, "current_leader_epoch": 0, "fetch_offset": off, "last_fetched_epoch": -1,
                           "log_start_offset": -1, "partition_max_bytes": 1048576} for p, off in positions.items()]}],
                      "forgotten_topics_data": [], "rack_id": ""},
              {"error_code": NONE, "session_id": 0, "responses": [{"topic": TOPIC, "partitions": [
                  {"partition_index": p, "error_code": NONE, "high_watermark": len(log[p].records),
                   "last_stable_offset": len(log[p].records), "log_start_offset": 0, "aborted_transactions": None,
                   "preferred_read_replica": -1, "records": log[p].batch(off, end[p])}
                  for p, off in positions.items()]}]})


def _commit(conn: Connection, member_id: str, generation: int, offsets: dict[int, int], error: int) -> None:
    conn.call(8, 8, {"group_id": GROUP, "generation_id_or_member_epoch": generation, "member_id": member_id,
                     "group_instance_id": None, "topics": [{"name": TOPIC, "partitions": [
                         {"partition_index": p, "committed_offset": off, "committed_leader_epoch": 0,
                          "committed_metadata": ""} for p, off in offsets.items()]}]},
              {"topics": [{"name": TOPIC, "partitions": [{"partition_index": p, "error_code": error}
                                                         for p in offsets]}]})


def _offset_fetch(conn: Connection, partitions: list[int], committed: dict[int, int]) -> None:
    conn.call(9, 8, {"groups": [{"group_id": GROUP, "topics": [{"name": TOPIC, "partition_indexes": partitions}]}],
                     "require_stable": True},
              {"groups": [{"group_id": GROUP, "error_code": NONE, "topics": [{"name": TOPIC, "partitions": [
                  {"partition_index": p, "committed_offset": committed.get(p, -1), "committed_leader_epoch": -1,
                   "metadata": "", "error_code": NONE} for p in partitions]}]}]})


def _coordinator(conn: Connection) -> None:
    conn.call(10, 4, {"key_type": 0, "coordinator_keys": [GROUP]},
              {"coordinators": [{"key": GROUP, "node_id": 1, "host": "127.0.0.1", "port": BROKER, "error_code": 0}]})


def run(env: Env) -> None:
    truth = env.truth
    wire = Wire(START_US)
    ts_ms = START_US // 1000
    truth.topic(TOPIC, 2)
    truth.note("Synthetic: no broker ran; the capture is what Apache Kafka 3.9 would put on the wire for this "
               "script, and the truth is the script's own ledger.")
    log = {p: _Partition(ts_ms) for p in (0, 1)}

    producer = truth.client("kt-syn-producer", LIBRARY, "producer", acks="all")
    prod = wire.connect(50201, BROKER, producer)

    def produce(n: int) -> None:
        batches = {}
        for p in (0, 1):
            start = len(log[p].records)
            log[p].records += [f"event {p}/{i}".encode() * 6 for i in range(start, start + n)]
            batches[p] = log[p].batch(start, start + n)
            for off in range(start, start + n):
                truth.produced(producer, TOPIC, p, off)
        prod.call(0, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": TOPIC, "partition_data": [{"index": p, "records": batches[p]} for p in (0, 1)]}]},
            {"responses": [{"name": TOPIC, "partition_responses": [
                {"index": p, "error_code": NONE, "base_offset": len(log[p].records) - n, "log_append_time_ms": -1,
                 "log_start_offset": 0, "record_errors": [], "error_message": None} for p in (0, 1)]}]})

    produce(10)
    a_id = truth.client("kt-syn-member-a", LIBRARY, "consumer", group_id=GROUP, enable_auto_commit=False)
    b_id = truth.client("kt-syn-member-b", LIBRARY, "consumer", group_id=GROUP, enable_auto_commit=False)
    a = wire.connect(50202, BROKER, a_id)
    _coordinator(a)
    _join(a, MEMBER_A, 1, MEMBER_A, [MEMBER_A], first=True)
    _sync(a, MEMBER_A, 1, {MEMBER_A: [0, 1]}, leader=True)
    truth.event(a_id, "generation", generation_id=1, member_id=MEMBER_A, assignment=[f"{TOPIC}/0", f"{TOPIC}/1"])
    _offset_fetch(a, [0, 1], {})
    _fetch(a, log, {0: 0, 1: 0}, {0: 10, 1: 10})
    for p in (0, 1):
        for off in range(10):
            truth.consumed(a_id, GROUP, "classic_group", TOPIC, p, off)
    _commit(a, MEMBER_A, 1, {0: 10, 1: 10}, NONE)
    wire.advance(3_000_000)

    produce(5)
    _fetch(a, log, {0: 10, 1: 10}, {0: 15, 1: 15})  # member A holds 10-14 of both partitions, not yet committed
    for p in (0, 1):
        for off in range(10, 15):
            truth.consumed(a_id, GROUP, "classic_group", TOPIC, p, off)
    b = wire.connect(50203, BROKER, b_id)
    _coordinator(b)
    b.call(11, 9, {"group_id": GROUP, "session_timeout_ms": 45000, "rebalance_timeout_ms": 300000, "member_id": "",
                   "group_instance_id": None, "protocol_type": "consumer",
                   "protocols": [{"name": "range", "metadata": _subscription()}], "reason": None},
           {"error_code": MEMBER_ID_REQUIRED, "generation_id": -1, "protocol_type": None, "protocol_name": None,
            "leader": "", "member_id": MEMBER_B, "members": []})
    a.call(12, 4, {"group_id": GROUP, "generation_id": 1, "member_id": MEMBER_A, "group_instance_id": None},
           {"error_code": REBALANCE_IN_PROGRESS})
    truth.event(a_id, "heartbeat_refused", error_name="REBALANCE_IN_PROGRESS")
    _join(a, MEMBER_A, 2, MEMBER_A, [MEMBER_A, MEMBER_B], first=False)
    _join(b, MEMBER_B, 2, MEMBER_A, [MEMBER_A, MEMBER_B], first=False)
    plan = {MEMBER_A: [0], MEMBER_B: [1]}
    _sync(a, MEMBER_A, 2, plan, leader=True)
    _sync(b, MEMBER_B, 2, plan, leader=False)
    for cid, member in ((a_id, MEMBER_A), (b_id, MEMBER_B)):
        truth.event(cid, "generation", generation_id=2, member_id=member, assignment=[f"{TOPIC}/{p}" for p in
                                                                                      plan[member]])
    # member A's application still commits what it processed in generation 1: refused, the group has moved on
    _commit(a, MEMBER_A, 1, {0: 15, 1: 15}, ILLEGAL_GENERATION)
    truth.fenced("classic_group", "ILLEGAL_GENERATION", a_id, group_id=GROUP, member_id=MEMBER_A,
                 detail="OffsetCommit for generation 1 after the group rebalanced to generation 2; offsets 10-14 "
                        "stay uncommitted and are delivered again (events/0 to member A, events/1 to member B)")
    _offset_fetch(a, [0], {0: 10})
    _offset_fetch(b, [1], {1: 10})
    _fetch(a, log, {0: 10}, {0: 15})
    _fetch(b, log, {1: 10}, {1: 15})
    for off in range(10, 15):
        truth.consumed(a_id, GROUP, "classic_group", TOPIC, 0, off)
        truth.consumed(b_id, GROUP, "classic_group", TOPIC, 1, off)
    _commit(a, MEMBER_A, 2, {0: 15}, NONE)
    _commit(b, MEMBER_B, 2, {1: 15}, NONE)
    wire.advance(3_000_000)
    for conn, member in ((b, MEMBER_B), (a, MEMBER_A)):
        conn.call(13, 5, {"group_id": GROUP, "members": [{"member_id": member, "group_instance_id": None,
                                                          "reason": "the consumer is being closed"}]},
                  {"error_code": NONE, "members": [{"member_id": member, "group_instance_id": None,
                                                    "error_code": NONE}]})
    truth.doc["groups"] = [{"group_id": GROUP, "kind": "classic_group", "generations_by_member": {
        a_id: [{"generation_id": 1, "member_id": MEMBER_A}, {"generation_id": 2, "member_id": MEMBER_A}],
        b_id: [{"generation_id": 2, "member_id": MEMBER_B}]}}]
    for conn in (prod, a, b):
        conn.close()
    env.log.merge(wire.requests_by_client(), wire.error_events)
    env.wire = wire
