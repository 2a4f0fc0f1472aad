"""Apache Kafka 4.4 for the live tests: one node, and a three-node cluster, each started once per session on free
ports of 127.0.0.1 (from the jars `make kafka` fetches) and stopped by process id when the session ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkatap.samples.kafka import Kafka


@pytest.fixture(scope="session")
def kafka_node(tmp_path_factory) -> Iterator[Kafka]:
    """One combined broker+controller node (about 5 s to start)."""
    with Kafka(tmp_path_factory.mktemp("kafka-node"), nodes=1) as node:
        yield node


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory) -> Iterator[Kafka]:
    """Three combined nodes in one static quorum: replication factor 3 (about 10 s to start)."""
    with Kafka(tmp_path_factory.mktemp("kafka-cluster"), nodes=3) as cluster:
        yield cluster
