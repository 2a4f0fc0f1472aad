"""The real broker the samples run against (samples/kafka.py): it starts, formats its storage with the features the
samples need, serves clients, replicates, and is gone when stopped."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkatap.samples.brokers import port_is_free
from kafkatap.samples.kafka import FEATURES, Kafka

pytestmark = [pytest.mark.live, pytest.mark.slow]


def _round_trip(bootstrap: str, topic: str, partitions: int, replicas: int, records: int = 30) -> dict[int, list]:
    """Create `topic`, produce `records` with acks=all, read them back from the beginning (bounded polls)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, replicas)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(records):
        producer.produce(topic, value=f"r{i}".encode(), partition=i % partitions)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "group.protocol": "consumer",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: dict[int, list] = {}
    try:
        for _ in range(150):
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.setdefault(msg.partition(), []).append(msg.offset())
            if sum(map(len, got.values())) == records:
                break
    finally:
        consumer.close()
    return got


def test_one_node_serves_a_kip848_consumer(kafka_node: Kafka) -> None:
    got = _round_trip(kafka_node.bootstrap, "smoke-1", partitions=2, replicas=1)
    assert {p: sorted(o) for p, o in got.items()} == {0: list(range(15)), 1: list(range(15))}


def test_one_node_has_the_features_the_samples_need(kafka_node: Kafka) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_node.bootstrap})
    finalized = admin.describe_cluster(include_authorized_operations=False).result(10)
    assert finalized.nodes and len(finalized.nodes) == 1
    log = kafka_node.logs[0].read_text()
    for name, level in FEATURES.items():  # the controller logs each finalized feature level it replays
        assert f"Replayed a FeatureLevelRecord setting feature {name} to {level} " in log, name


def test_three_nodes_replicate_a_topic(kafka_cluster: Kafka) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    got = _round_trip(kafka_cluster.bootstrap, "smoke-3", partitions=3, replicas=3)
    assert {p: sorted(o) for p, o in got.items()} == {p: list(range(10)) for p in range(3)}
    partitions = admin.list_topics("smoke-3", timeout=10).topics["smoke-3"].partitions
    assert all(sorted(p.replicas) == [1, 2, 3] and sorted(p.isrs) == [1, 2, 3] for p in partitions.values())


def test_a_stopped_cluster_frees_its_ports(tmp_path) -> None:
    with Kafka(tmp_path, nodes=1) as node:
        assert not port_is_free(node.port)
    assert port_is_free(node.port) and all(p.poll() is not None for p in node.procs)
