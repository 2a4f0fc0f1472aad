"""A three-node Apache Kafka 4.4 KRaft cluster (replication factor 3, min.insync.replicas 2) under produce and
consume load from the Java reference clients, one node stopped (SIGTERM: a controlled shutdown) and started again
while the load runs. The capture holds every port of the cluster: the clients' traffic, the followers' replication
Fetches between brokers, and the controller quorum's (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch of the metadata
log, BrokerRegistration, BrokerHeartbeat).

Three combined broker+controller nodes rather than three brokers beside a separate controller: a three-voter quorum
is what makes stopping the quorum leader elect a new one over the wire, which a single separate controller never
does, and three separate controllers beside three brokers would be six JVMs on the two cores that make the samples.

The node stopped is the quorum leader (read from its quorum-state file, not from the wire), which also leads one of
the topic's three partitions: its partition and the quorum move to the others, and come back once it has caught up
(leader.imbalance.check.interval.seconds 5). What the clients saw comes from the clients: the producer's
acknowledged offsets with its own retry count (record-retry-total), the consumer's delivered offsets, and the
responses with errors their NetworkClient logged.
"""

from __future__ import annotations

import threading
import time

from kafkatap.samples.javaclients import LIBRARY, JavaClients, record
from kafkatap.samples.make import Env, Spec

SPEC = Spec(
    name="kafka44_cluster_restart",
    description="Apache Kafka 4.4, three KRaft nodes (broker+controller each), Java clients: kt-load produces 6 small "
                "records every 0.3 s to topic `orders` (3 partitions, replication factor 3, min.insync.replicas 2), "
                "KIP-848 consumer kt-reader (group kt-cluster) reads them; the quorum leader's node is stopped "
                "(controlled shutdown) and started again under the load, its partition and the quorum moving away "
                "and back. Captured on all six ports: client, replication and controller traffic.",
    kafka_port=19450,
    kafka_nodes=3,
    kafka_config=(("min.insync.replicas", 2), ("leader.imbalance.check.interval.seconds", 5)),
)
TOPIC, PARTITIONS, REPLICAS, GROUP = "orders", 3, 3, "kt-cluster"
BATCH, EVERY = 6, 0.3  # records per "produce" line, seconds between lines
WAIT = 60.0  # bound on any one step (a JVM starting on two busy cores)


def run(env: Env) -> None:
    truth, kafka = env.truth, env.kafka
    truth.topic(TOPIC, PARTITIONS)
    truth.note("Apache Kafka 4.4, three combined broker+controller KRaft nodes in one static quorum; "
               "min.insync.replicas=2, leader.imbalance.check.interval.seconds=5, acks=all: broker and client "
               "settings, not on the wire. broker_requests counts the brokers' own requests from their request logs "
               "(not exact at the capture's edges).")
    clients = JavaClients(env.workdir / "clients")
    start, programs = clients.start, clients.programs
    truth.client("kt-load", LIBRARY, "producer", **{"linger.ms": 5, "acks": "all", "enable.idempotence": True})
    truth.client("kt-load-admin", LIBRARY, "admin")  # creates the topic
    truth.client("kt-reader", LIBRARY, "consumer", **{"group.id": GROUP, "group.protocol": "consumer",
                                                      "enable.auto.commit": False, "max.poll.records": 50})
    lines = [0]
    loading = threading.Event()

    def load() -> None:
        while loading.is_set():
            producer.send(f"produce {BATCH}")
            lines[0] += 1
            time.sleep(EVERY)

    loader = threading.Thread(target=load, daemon=True)
    try:
        producer = start("SampleProducer", "kt-load", [kafka.bootstrap, "kt-load", TOPIC, str(PARTITIONS),
                                                       str(REPLICAS)])
        producer.wait_for("topic_created", WAIT)
        reader = start("GroupMember", "kt-reader", [f"bootstrap={kafka.bootstrap}", "client.id=kt-reader",
                                                    f"group.id={GROUP}", f"topic={TOPIC}", "max.poll.records=50",
                                                    "max.seconds=240"])
        reader.wait_for("partitions_assigned", WAIT, where=lambda e: e["partitions"])
        loading.set()
        loader.start()
        time.sleep(4)
        _restart(env, kafka.quorum_leader())
        time.sleep(8)  # the node catches up, rejoins the ISRs and takes its preferred leadership back
        loading.clear()
        loader.join()
        producer.wait_for("acked", WAIT, count=lines[0])
        produced = lines[0] * BATCH
        reader.wait_for("records", WAIT, where=lambda e: sum(len(r["offsets"]) for r in reader.events
                                                              if r["what"] == "records") >= produced)
        time.sleep(1)  # its last commit
        reader.stop()
        truth.event("kt-reader", "left")
        producer.stop()
    finally:
        loading.clear()
        for program in programs:
            program.kill()
    record(truth, env.log, programs, {"kt-reader": GROUP})
    acked = [e for e in producer.events if e["what"] == "acked"]
    truth.doc["producer_metrics"] = {"kt-load": {"record_retry_total": acked[-1]["record_retry_total"],
                                                 "record_error_total": acked[-1]["record_error_total"]}}


def _restart(env: Env, node_id: int | None) -> None:
    """Stop node `node_id` with SIGTERM, leave the cluster on two nodes for a while, start it again; the truth's
    `restarts` says when each step began and ended (seconds from the start, like the events)."""
    truth, kafka = env.truth, env.kafka
    if node_id is None:
        raise RuntimeError(f"no quorum leader in {kafka.workdir}")
    name, step = f"kafka-node-{node_id}", {}

    def mark(what: str) -> None:
        truth.event(name, what, node_id=node_id, wall=time.time())
        step[what] = truth.doc["events"][-1]["t"]

    mark("stopping")
    kafka.stop_node(node_id)
    mark("stopped")
    time.sleep(5)
    mark("starting")
    kafka.start_node(node_id)
    mark("started")
    truth.doc["restarts"] = [{"node_id": node_id, "port": kafka.ports[node_id - 1],
                              "controller_port": kafka.controller_ports[node_id - 1], "signal": "SIGTERM",
                              "was_quorum_leader": True, **step}]
