"""SYNTHETIC: transactions as Apache Kafka serves them to read_committed consumers (aborted-transaction index in
Fetch responses, COMMIT/ABORT markers), which Tansu cannot show (its Fetch responses list no aborted transactions).

The conversation follows a Java 3.9 client against a Kafka 3.9 broker (versions it negotiates: InitProducerId v4,
AddPartitionsToTxn v3, Produce v9, EndTxn v3, ListOffsets v7, Fetch v12), byte-encoded by the project's codec.
"""

from __future__ import annotations

from kafkatap.samples.make import Env, Spec
from kafkatap.samples.synthetic import CONTROL_ABORT, CONTROL_COMMIT, Wire, control_batch, record_batch

SPEC = Spec(
    name="synthetic_read_committed",
    description="SYNTHETIC (Apache Kafka 3.9 semantics, encoded by dissect.protocol): transactional producer "
                "kt-syn-txn-producer commits, aborts and commits on topic `payments` (2 partitions); a "
                "read_committed and a read_uncommitted consumer fetch everything; the read_committed Fetch "
                "responses carry the aborted-transaction index, so that consumer skips the aborted records.",
    tansu_port=19090,  # the simulated broker's port (nothing listens on it)
    synthetic=True,
)
TOPIC, PARTITIONS, BROKER = "payments", 2, 19090
PRODUCER_ID, EPOCH, TXN_ID = 4000, 0, "kt-syn-txn"
START_US = 1_795_300_000_000_000  # fixed clock: the capture is byte-for-byte reproducible
TRANSACTIONS = ((5, "commit"), (4, "abort"), (3, "commit"))  # records per partition, outcome


def _api_versions(conn) -> None:
    keys = [(0, 0, 9), (1, 0, 12), (2, 0, 7), (3, 0, 12), (10, 0, 4), (18, 0, 3), (22, 0, 4), (24, 0, 3), (26, 0, 3)]
    conn.call(18, 3, {"client_software_name": "apache-kafka-java", "client_software_version": "3.9.0"},
              {"api_keys": [{"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in keys]})
    conn.call(3, 12, {"topics": [{"topic_id": "AAAAAAAAAAAAAAAAAAAAAA", "name": TOPIC}],
                      "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
              {"brokers": [{"node_id": 1, "host": "127.0.0.1", "port": BROKER, "rack": None}],
               "cluster_id": "kt-synthetic", "controller_id": 1,
               "topics": [{"error_code": 0, "name": TOPIC, "topic_id": "qQvSDNBVQ2qdkW6KhBc1Pw", "is_internal": False,
                           "partitions": [{"error_code": 0, "partition_index": p, "leader_id": 1, "leader_epoch": 0,
                                           "replica_nodes": [1], "isr_nodes": [1], "offline_replicas": []}
                                          for p in range(PARTITIONS)]}]})


def run(env: Env) -> None:
    truth, log = env.truth, env.log
    wire = Wire(START_US)
    ts_ms = START_US // 1000
    truth.topic(TOPIC, PARTITIONS)
    truth.note("Synthetic: no broker ran; the capture is what Apache Kafka 3.9 would put on the wire for this "
               "script, and the truth is the script's own ledger.")

    pid = truth.client("kt-syn-txn-producer", "synthetic (Java client 3.9 semantics)", "transactional producer",
                       transactional_id=TXN_ID)
    prod = wire.connect(50101, BROKER, pid)
    _api_versions(prod)
    prod.call(10, 4, {"key_type": 1, "coordinator_keys": [TXN_ID]},
              {"coordinators": [{"key": TXN_ID, "node_id": 1, "host": "127.0.0.1", "port": BROKER, "error_code": 0}]})
    prod.call(22, 4, {"transactional_id": TXN_ID, "transaction_timeout_ms": 60000, "producer_id": -1,
                      "producer_epoch": -1}, {"producer_id": PRODUCER_ID, "producer_epoch": EPOCH})
    truth.producer(pid, PRODUCER_ID, EPOCH, TXN_ID)

    logs: dict[int, list[tuple[str, bytes, list[int]]]] = {p: [] for p in range(PARTITIONS)}  # the partition logs
    next_offset = {p: 0 for p in range(PARTITIONS)}
    sequence = {p: 0 for p in range(PARTITIONS)}
    aborted_first: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    for n, (count, outcome) in enumerate(TRANSACTIONS):
        prod.call(24, 3, {"v3_and_below_transactional_id": TXN_ID, "v3_and_below_producer_id": PRODUCER_ID,
                          "v3_and_below_producer_epoch": EPOCH,
                          "v3_and_below_topics": [{"name": TOPIC, "partitions": list(range(PARTITIONS))}]},
                  {"results_by_topic_v3_and_below": [{"name": TOPIC, "results_by_partition": [
                      {"partition_index": p, "partition_error_code": 0} for p in range(PARTITIONS)]}]})
        batches = {p: record_batch(0, [(f"txn{n}-k{i}".encode(), f"payment {n}/{p}/{i}".encode() * 4)
                                       for i in range(count)], ts_ms, producer_id=PRODUCER_ID,
                                   producer_epoch=EPOCH, base_sequence=sequence[p], transactional=True)
                   for p in range(PARTITIONS)}
        prod.call(0, 9, {"transactional_id": TXN_ID, "acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": TOPIC, "partition_data": [{"index": p, "records": batches[p]} for p in range(PARTITIONS)]}]},
            {"responses": [{"name": TOPIC, "partition_responses": [
                {"index": p, "error_code": 0, "base_offset": next_offset[p], "log_append_time_ms": -1,
                 "log_start_offset": 0, "record_errors": [], "error_message": None} for p in range(PARTITIONS)]}]})
        txn_outcome = "committed" if outcome == "commit" else "aborted"
        for p in range(PARTITIONS):
            offsets = list(range(next_offset[p], next_offset[p] + count))
            for off in offsets:
                truth.produced(pid, TOPIC, p, off, producer_id=PRODUCER_ID, producer_epoch=EPOCH,
                               transactional_id=TXN_ID, outcome=txn_outcome)
            logs[p].append(("data", record_batch(next_offset[p], [(f"txn{n}-k{i}".encode(),
                                                                   f"payment {n}/{p}/{i}".encode() * 4)
                                                                  for i in range(count)], ts_ms,
                                                 producer_id=PRODUCER_ID, producer_epoch=EPOCH,
                                                 base_sequence=sequence[p], transactional=True), offsets))
            if outcome == "abort":
                aborted_first[p].append(next_offset[p])
            next_offset[p] += count
            sequence[p] += count
        prod.call(26, 3, {"transactional_id": TXN_ID, "producer_id": PRODUCER_ID, "producer_epoch": EPOCH,
                          "committed": outcome == "commit"}, {"error_code": 0})
        for p in range(PARTITIONS):  # the broker writes the marker after EndTxn
            marker = CONTROL_COMMIT if outcome == "commit" else CONTROL_ABORT
            logs[p].append(("control", control_batch(next_offset[p], marker, ts_ms, PRODUCER_ID, EPOCH),
                            [next_offset[p]]))
            next_offset[p] += 1
        truth.doc.setdefault("transactions", []).append({
            "client_id": pid, "transactional_id": TXN_ID, "producer_id": PRODUCER_ID, "producer_epoch": EPOCH,
            "outcome": txn_outcome, "records": count * PARTITIONS})
        wire.advance(5_000)
    prod.close()

    isolation: dict[str, int] = {}
    for port, cid, level in ((50102, "kt-syn-rc-consumer", 1), (50103, "kt-syn-ru-consumer", 0)):
        name = "read_committed" if level else "read_uncommitted"
        truth.client(cid, "synthetic (Java client 3.9 semantics)", "consumer", isolation_level=name,
                     assign=[f"{TOPIC}/{p}" for p in range(PARTITIONS)])
        conn = wire.connect(port, BROKER, cid)
        _api_versions(conn)
        conn.call(2, 7, {"replica_id": -1, "isolation_level": level, "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": p, "current_leader_epoch": 0, "timestamp": -2} for p in range(PARTITIONS)]}]},
            {"topics": [{"name": TOPIC, "partitions": [
                {"partition_index": p, "error_code": 0, "timestamp": -1, "offset": 0, "leader_epoch": 0}
                for p in range(PARTITIONS)]}]})
        conn.call(1, 12, {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 52428800,
                          "isolation_level": level, "session_id": 0, "session_epoch": -1, "topics": [
                              {"topic": TOPIC, "partitions": [
                                  {"partition": p, "current_leader_epoch": 0, "fetch_offset": 0,
                                   "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1048576}
                                  for p in range(PARTITIONS)]}], "forgotten_topics_data": [], "rack_id": ""},
                  {"error_code": 0, "session_id": 0, "responses": [{"topic": TOPIC, "partitions": [
                      {"partition_index": p, "error_code": 0, "high_watermark": next_offset[p],
                       "last_stable_offset": next_offset[p], "log_start_offset": 0,
                       "aborted_transactions": [{"producer_id": PRODUCER_ID, "first_offset": first}
                                                for first in aborted_first[p]] if level else None,
                       "preferred_read_replica": -1, "records": b"".join(b for _, b, _ in logs[p])}
                      for p in range(PARTITIONS)]}]})
        received = 0
        for p in range(PARTITIONS):
            for kind, _batch, offsets in logs[p]:
                aborted = any(offsets[0] == first for first in aborted_first[p])
                if kind == "data" and not (level and aborted):
                    for off in offsets:
                        truth.consumed(cid, None, "none", TOPIC, p, off)
                        received += 1
        isolation[name] = received
        conn.close()
    truth.doc["isolation"] = {"records_received": isolation,
                              "aborted_transactions": {f"{TOPIC}/{p}": aborted_first[p] for p in range(PARTITIONS)}}
    log.merge(wire.requests_by_client(), wire.error_events)
    env.wire = wire
